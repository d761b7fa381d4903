//! Per-log high-water marks: the newest entry read from each log of a BMC, so that a sweep hands the fault
//! rules every entry that is new since the last read (the whole window, however many arrived), once.
//!
//! Why here and pure: the store keeps the marks (the engine loads and saves them around a sweep), the sweep
//! selects the window from what it read; keeping the selection a function of (entries, marks) makes it
//! testable without a BMC. A log read for the first time yields its newest N (as a sweep without marks
//! would show), not its whole history: an old Critical entry that no one acted on is already in `sel`.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::events::{EventEntry, EventLog};

/// The newest entry read from one log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct LogMark {
    /// The log's label (`Systems/1/IML`, `Managers/1/IEL`; `SEL` over IPMI), as [`EventEntry::log`].
    pub log: String,
    pub id: String,
    pub time: Option<DateTime<Utc>>,
}

/// What is new since the marks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct LogWindow {
    /// Entries new since each log's mark, newest first.
    pub entries: Vec<EventEntry>,
    /// The marks after this read (an empty log read for the first time is marked with an empty id; an
    /// empty log already marked keeps its mark and is not listed).
    pub marks: Vec<LogMark>,
    /// Logs not read to their end: entries older than those read are not in the window (one line each).
    pub incomplete: Vec<String>,
}

/// Marks per device, as a sweep is handed them.
pub type Marks = HashMap<String, Vec<LogMark>>;

/// Orders entries as `newest_first` does: by time, then numeric id.
fn key(time: Option<DateTime<Utc>>, id: &str) -> (Option<DateTime<Utc>>, u64, String) {
    (time, id.parse().unwrap_or(0), id.to_owned())
}

/// The entries of `log` new since `marks` (of this device), with the marks to keep. `first`: how many of a
/// log read for the first time count as new.
pub fn window(log: &EventLog, marks: &[LogMark], first: usize) -> LogWindow {
    let mut out = LogWindow::default();
    for source in &log.logs {
        let entries: Vec<&EventEntry> =
            log.read.iter().filter(|e| e.log.as_deref().unwrap_or("SEL") == source.id).collect();
        if source.truncated {
            out.incomplete.push(format!(
                "{}: not read to its end ({} entries read); older entries are not in the window",
                source.id, source.entries
            ));
        }
        let new: Vec<&EventEntry> = match marks.iter().find(|m| m.log == source.id) {
            None => entries.iter().take(first).copied().collect(),
            Some(m) => {
                let mark = key(m.time, &m.id);
                entries.iter().take_while(|e| e.id != m.id && key(e.time, &e.id) > mark).copied().collect()
            }
        };
        out.entries.extend(new.into_iter().cloned());
        match (entries.first(), marks.iter().any(|m| m.log == source.id)) {
            (Some(newest), _) => {
                out.marks.push(LogMark { log: source.id.clone(), id: newest.id.clone(), time: newest.time })
            }
            // Read and empty: marked, so that its first entries are new rather than a first read.
            (None, false) => {
                out.marks.push(LogMark { log: source.id.clone(), id: String::new(), time: None })
            }
            (None, true) => {}
        }
    }
    crate::events::newest_first(&mut out.entries);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::LogSource;
    use lifeline_types::{BmcProtocol, Health};

    fn entry(log: &str, id: u32, secs: i64) -> EventEntry {
        EventEntry {
            id: id.to_string(),
            time: DateTime::from_timestamp(secs, 0),
            time_note: None,
            severity: Health::Ok,
            message: format!("{log} {id}"),
            sensor: None,
            log: Some(log.into()),
        }
    }

    fn log(entries: Vec<EventEntry>, truncated: &[&str]) -> EventLog {
        let mut read = entries;
        crate::events::newest_first(&mut read);
        let mut ids: Vec<String> = read.iter().filter_map(|e| e.log.clone()).collect();
        ids.sort();
        ids.dedup();
        EventLog {
            bmc: "n1".into(),
            protocol: BmcProtocol::Redfish,
            entries: read.iter().take(3).cloned().collect(),
            read,
            critical: vec![],
            total: None,
            logs: ids
                .into_iter()
                .map(|id| LogSource {
                    truncated: truncated.contains(&id.as_str()),
                    id,
                    path: None,
                    kind: "event".into(),
                    entries: 0,
                })
                .collect(),
            no_log_service: false,
            warnings: vec![],
        }
    }

    fn ids(w: &LogWindow) -> Vec<String> {
        w.entries.iter().map(|e| format!("{} {}", e.log.as_deref().unwrap(), e.id)).collect()
    }

    #[test]
    fn the_window_is_everything_since_each_logs_mark_once() {
        // Two logs, oldest first as iLO lists them; 1..=5 in IML, 1..=2 in IEL.
        let mut es: Vec<EventEntry> = (1..=5).map(|i| entry("IML", i, 100 + i64::from(i))).collect();
        es.extend((1..=2).map(|i| entry("IEL", i, 50 + i64::from(i))));
        let first = window(&log(es.clone(), &[]), &[], 2);
        assert_eq!(ids(&first), ["IML 5", "IML 4", "IEL 2", "IEL 1"], "first read: the newest 2 per log");
        // Ten more in the IML (more than the newest N a sweep shows), none in the IEL.
        es.extend((6..=15).map(|i| entry("IML", i, 100 + i64::from(i))));
        let second = window(&log(es.clone(), &[]), &first.marks, 2);
        assert_eq!(second.entries.len(), 10, "{:?}", ids(&second));
        assert_eq!(ids(&second)[0], "IML 15");
        assert_eq!(ids(&second)[9], "IML 6");
        let third = window(&log(es.clone(), &[]), &second.marks, 2);
        assert!(third.entries.is_empty(), "nothing new: {:?}", ids(&third));
        // A burst in one second is ordered by id.
        es.push(entry("IML", 16, 115));
        assert_eq!(ids(&window(&log(es, &[]), &third.marks, 2)), ["IML 16"]);
    }

    #[test]
    fn an_empty_log_is_marked_so_its_first_entries_are_new() {
        let mut empty = log(vec![], &[]);
        empty.logs.push(LogSource {
            id: "SEL".into(),
            path: None,
            kind: "sel".into(),
            entries: 0,
            truncated: false,
        });
        let w = window(&empty, &[], 1);
        assert_eq!(w.marks, [LogMark { log: "SEL".into(), id: String::new(), time: None }]);
        let es = (1..=3).map(|i| entry("SEL", i, i64::from(i))).collect();
        assert_eq!(ids(&window(&log(es, &[]), &w.marks, 1)), ["SEL 3", "SEL 2", "SEL 1"]);
    }

    #[test]
    fn a_log_not_read_to_its_end_says_so() {
        let es = vec![entry("IML", 1, 1)];
        let w = window(&log(es, &["IML"]), &[], 5);
        assert_eq!(w.incomplete.len(), 1);
        assert!(w.incomplete[0].starts_with("IML: not read to its end"), "{:?}", w.incomplete);
    }

    #[test]
    fn a_cleared_log_starts_over_from_its_mark_time() {
        let mark = [LogMark { log: "SEL".into(), id: "900".into(), time: DateTime::from_timestamp(1000, 0) }];
        // Cleared: ids restart, only entries after the mark's time are new.
        let es = vec![entry("SEL", 1, 900), entry("SEL", 2, 1001)];
        assert_eq!(ids(&window(&log(es, &[]), &mark, 5)), ["SEL 2"]);
    }
}
