//! Log services and their entries: finding the BMC's event logs under Managers and Systems, reading a
//! bounded number of entries, clearing a log.

use reqwest::Method;

use super::lognav::{Found, Holder, Limited, guessed_entries};
use super::since::EntryMark;
use super::{Client, Listing};
use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model::{self, LogEntries, LogKind, LogService};

impl Client {
    /// Log services behind a `LogServices` collection link (of a Manager, System or Chassis).
    pub async fn log_services(&self, link: &str) -> Result<Listing<LogService>, RedfishError> {
        self.typed(link, LogService::from_value, |l| &mut l.warnings).await
    }

    /// Entries of a log, at most `max` (newest-first order is the BMC's; many serve oldest first).
    pub async fn log_entries(&self, log: &LogService, max: usize) -> Result<LogEntries, RedfishError> {
        let Some(link) = &log.entries else {
            return Err(RedfishError::Missing {
                bmc: self.bmc().to_owned(),
                url: log.odata_id.clone(),
                what: "Entries link",
            });
        };
        Ok(entries_of(log, self.members_limited(link, max).await?))
    }

    /// Entries of a log new since `mark` (a previous read's newest entry of this log), with at least the
    /// newest `keep`, at most `max`: read back to the mark rather than whole where the log's order and the
    /// service's paging allow (see [`super::since`]); whole without a mark.
    pub async fn log_entries_since(
        &self,
        log: &LogService,
        max: usize,
        keep: usize,
        mark: Option<&EntryMark>,
    ) -> Result<LogEntries, RedfishError> {
        let (Some(link), Some(mark)) = (&log.entries, mark) else { return self.log_entries(log, max).await };
        let (l, more, how) = self.members_since(link, max, keep, mark).await?;
        let mut out = entries_of(log, (l, more));
        out.read_to_mark = how.to_mark;
        Ok(out)
    }

    /// The BMC's event history (Managers first, then Systems), with up to `max` entries per log: every
    /// SEL-like log (by type or name) and every other event log (bmcweb `EventLog` with `EntryType: Event`,
    /// HPE iLO `IML` and `IEL` with `EntryType: Oem`), each entry list labelled with its log. When no log
    /// on the BMC is of either kind, logs whose entries are `EntryType: SEL` or `Event` are used (the DMTF
    /// mockup names its SEL "Log1"). Journals, dumps and POST codes are never read.
    ///
    /// The navigation runs breadth first and concurrently (Managers and Systems at once, then every
    /// `LogServices` collection at once), so it costs the depth of the tree in round trips, not its size;
    /// and the collections the schema puts at fixed URIs are read with the documents that link them
    /// (`lognav`), so that depth is three round trips with or without `$expand`.
    pub async fn event_logs(&self, max: usize) -> Result<EventLogs, RedfishError> {
        self.event_logs_since(max, max, &[]).await
    }

    /// [`Client::event_logs`] with the logs in `marks` read only back to their mark (with at least the
    /// newest `keep` entries each; [`Client::log_entries_since`]).
    pub async fn event_logs_since(
        &self,
        max: usize,
        keep: usize,
        marks: &[EntryMark],
    ) -> Result<EventLogs, RedfishError> {
        let mut out = EventLogs::default();
        let root = &self.inner.root;
        let managers = async {
            match &root.managers {
                Some(l) => Some(self.holder_log_services(l, Holder::Managers, max, marks).await),
                None => None,
            }
        };
        let systems = async {
            match &root.systems {
                Some(l) => Some(self.holder_log_services(l, Holder::Systems, max, marks).await),
                None => None,
            }
        };
        let (managers, systems) = tokio::join!(managers, systems);
        let mut all = Vec::new();
        for found in [managers, systems].into_iter().flatten() {
            let found = found?;
            out.warnings.extend(found.warnings);
            all.extend(found.services);
        }
        let by_kind = all.iter().any(|f| f.service.kind() != LogKind::Other);
        let mut candidates: Vec<Found> =
            all.into_iter().filter(|f| !by_kind || f.service.kind() != LogKind::Other).collect();
        out.services = if by_kind { candidates.len() } else { 0 };
        let reads = candidates.iter_mut().map(|f| async move {
            let r = match guessed_entries(f) {
                Some(read) => read.map(|l| entries_of(&f.service, l)),
                None => self.log_entries_since(&f.service, max, keep, mark_of(marks, &f.service)).await,
            };
            (&f.service, r)
        });
        for (log, r) in futures::future::join_all(reads).await {
            let event_entry = |x: &model::LogEntry| matches!(x.entry_type.as_deref(), Some("SEL" | "Event"));
            match r {
                Ok(e) if by_kind || e.entries.iter().any(event_entry) => {
                    if !by_kind {
                        out.services += 1;
                    }
                    out.read.push(log.clone());
                    out.logs.push(e)
                }
                Ok(_) => {}
                Err(e) => out
                    .warnings
                    .push(FieldWarning { at: log.odata_id.clone(), problem: format!("unreadable: {e}") }),
            }
        }
        Ok(out)
    }

    /// The event history from log services found earlier ([`EventLogs::read`] of a previous call, e.g.
    /// remembered across processes): their entries only, concurrently, in one round trip (two when the BMC
    /// links entries instead of embedding them). Fails when any of them fails, so the caller navigates
    /// afresh ([`Client::event_logs`]) rather than reporting a partial history as the whole.
    pub async fn event_logs_at(
        &self,
        services: &[LogService],
        max: usize,
    ) -> Result<EventLogs, RedfishError> {
        self.event_logs_at_since(services, max, max, &[]).await
    }

    /// [`Client::event_logs_at`] with the logs in `marks` read only back to their mark.
    pub async fn event_logs_at_since(
        &self,
        services: &[LogService],
        max: usize,
        keep: usize,
        marks: &[EntryMark],
    ) -> Result<EventLogs, RedfishError> {
        let reads = futures::future::join_all(
            services.iter().map(|l| self.log_entries_since(l, max, keep, mark_of(marks, l))),
        )
        .await;
        let mut out = EventLogs { services: services.len(), ..EventLogs::default() };
        for (log, r) in services.iter().zip(reads) {
            out.logs.push(r?);
            out.read.push(log.clone());
        }
        Ok(out)
    }
    /// The event logs behind one `LogServices` collection (of one system: an HGX baseboard's, where
    /// NVIDIA's firmware logs the GPUs' driver events), each read up to `max` entries, concurrently; journals,
    /// dumps and POST codes are not read. What cannot be read is a warning, not an error: the caller reads
    /// these beside a health read that must not fail for them.
    pub async fn event_logs_of(&self, log_services: &str, max: usize) -> Listing<LogEntries> {
        let mut out = Listing { items: Vec::new(), warnings: Vec::new() };
        let services = match self.log_services(log_services).await {
            Ok(l) => l,
            Err(e) => {
                out.warnings
                    .push(FieldWarning { at: log_services.to_owned(), problem: format!("unreadable: {e}") });
                return out;
            }
        };
        out.warnings.extend(services.warnings);
        let events: Vec<&LogService> =
            services.items.iter().filter(|s| s.kind() != LogKind::Other && s.entries.is_some()).collect();
        let reads = futures::future::join_all(events.iter().map(|s| self.log_entries(s, max))).await;
        for (s, r) in events.into_iter().zip(reads) {
            match r {
                Ok(e) => out.items.push(e),
                Err(e) => out
                    .warnings
                    .push(FieldWarning { at: s.odata_id.clone(), problem: format!("unreadable: {e}") }),
            }
        }
        out
    }

    /// [`Client::event_logs`] as a listing (the name predates non-SEL event logs).
    pub async fn sel(&self, max: usize) -> Result<Listing<LogEntries>, RedfishError> {
        let l = self.event_logs(max).await?;
        Ok(Listing { items: l.logs, warnings: l.warnings })
    }

    pub async fn clear_log(&self, log: &LogService) -> Result<(), RedfishError> {
        let target = log.clear_target.clone().ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: log.odata_id.clone(),
            what: "#LogService.ClearLog action",
        })?;
        self.send_json(Method::POST, &target, Some(&serde_json::json!({}))).await.map(|_| ())
    }
}

/// The event history of a BMC: the logs read, how many event-history services exist, and what could not be
/// read. `services == 0` is the explicit "no SEL-like log service found": an empty `logs` then means
/// nothing could be read, not an empty history.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct EventLogs {
    pub logs: Vec<LogEntries>,
    /// The log services `logs` were read from (to read them directly next time).
    pub read: Vec<LogService>,
    pub services: usize,
    pub warnings: Vec<FieldWarning>,
}

/// The mark of `log` among `marks` (by the service's `@odata.id`).
fn mark_of<'a>(marks: &'a [EntryMark], log: &LogService) -> Option<&'a EntryMark> {
    marks.iter().find(|m| m.log.trim_end_matches('/') == log.odata_id.trim_end_matches('/'))
}

/// A log's entries from its collection's members (and whether more existed).
fn entries_of(log: &LogService, (l, more): Limited) -> LogEntries {
    let mut out = LogEntries {
        log: log.odata_id.clone(),
        log_id: log.id.clone().or_else(|| log.name.clone()),
        kind: Some(log.kind()),
        warnings: l.warnings,
        truncated: more,
        ..Default::default()
    };
    for (id, v) in l.items {
        out.entries.push(model::log_entry_from_value(&v, &id, &mut out.warnings));
    }
    out
}
