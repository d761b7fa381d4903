//! GPU driver events (XID / SXID) in a BMC's logs, tied to the GPU they happened on.
//!
//! Why: NVIDIA's HGX and GB200/GB300 firmware logs every XID the GPU driver reports into the GPU
//! baseboard's event log (`Systems/HGX_Baseboard_N/LogServices/EventLog`): one entry per XID, Critical,
//! `ResourceEvent.1.0.ResourceErrorsDetected`, whose `OriginOfCondition` is the GPU's chassis
//! (`Chassis/HGX_GPU_0`) and whose first message argument names the GPU (`GPU_0 Driver Event Message`).
//! A node with hundreds of them is readable only as "which GPU, which XID, how often, last when"; that is
//! what these functions make of the entries. Pure functions over entries and the GPUs listed, so the
//! tests (over captured trees and over documents in the same shape) and the callers share them.

use serde::Serialize;
use serde_json::Value;

use lifeline_types::Health;

use crate::component_model::{GpuDriverEvent, gpu_driver_event};
use crate::log_model::LogEntry;

/// A GPU as log entries are matched to it.
#[derive(Debug, Clone, Copy)]
pub struct GpuKey<'a> {
    /// The GPU's `@odata.id` (a Processor, or an iLO device).
    pub resource: &'a str,
    /// Its `Id` (`GPU_0`, `GPU_SXM_1`).
    pub id: Option<&'a str>,
    /// Its chassis (`Links.Chassis`), when the BMC links one.
    pub chassis: Option<&'a str>,
}

/// One driver event read from a log entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoggedGpuEvent {
    /// The entry's `@odata.id`.
    pub entry: Option<String>,
    pub event: GpuDriverEvent,
    /// `Created` as served.
    pub created: Option<String>,
    #[serde(skip)]
    pub created_at: Option<chrono::DateTime<chrono::FixedOffset>>,
    pub severity: Option<Health>,
    pub message_id: Option<String>,
}

/// The events of one kind and number on one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct GpuEventTally {
    /// `XID` or `SXID`.
    pub kind: String,
    pub number: u32,
    /// Entries logged.
    pub count: usize,
    /// The newest entry's `Created` and `@odata.id` (by time, then as served).
    pub newest: Option<String>,
    pub newest_entry: Option<String>,
    /// The worst severity among them.
    pub severity: Option<Health>,
}

/// Log entries' driver events, each on the GPU it names (index into the keys given), and those naming
/// none of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attributed {
    pub per_gpu: Vec<Vec<LoggedGpuEvent>>,
    pub unattributed: Vec<LoggedGpuEvent>,
}

/// The driver event an entry records, if it records one: an `XID n` / `SXID n` in its message, else in its
/// arguments (NVIDIA puts the driver's own line there: `[Sat Mar 14 22:00:43 2026][7][0] XID 45 ...`),
/// else a `MessageId` naming one with the number among its arguments.
pub fn logged_event(e: &LogEntry) -> Option<LoggedGpuEvent> {
    let event = gpu_driver_event(None, e.message.as_deref(), None)
        .or_else(|| e.message_args.iter().find_map(|a| gpu_driver_event(None, Some(a), None)))
        .or_else(|| {
            let args = Value::from(e.message_args.clone());
            gpu_driver_event(e.message_id.as_deref(), None, Some(&args))
        })?;
    Some(LoggedGpuEvent {
        entry: e.odata_id.clone(),
        event,
        created: e.created.clone(),
        created_at: e.created_at,
        severity: e.severity,
        message_id: e.message_id.clone(),
    })
}

fn last_segment(path: &str) -> &str {
    path.trim_end_matches('/').rsplit('/').next().unwrap_or(path)
}

/// A GPU's name as the firmware writes it in one place or another: `HGX_GPU_SXM_1` (chassis) and
/// `GPU_SXM_1` (processor, message argument) are one GPU.
fn bare(name: &str) -> String {
    let n = name.trim().to_ascii_uppercase();
    n.strip_prefix("HGX_").map(str::to_owned).unwrap_or(n)
}

fn same_path(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The one GPU among `gpus` whose names include `name` (`None` when none does, or more than one: two
/// baseboards each with a `GPU_0` cannot be told apart by the name alone).
fn by_name(name: &str, gpus: &[GpuKey<'_>]) -> Option<usize> {
    let want = bare(name);
    if want.is_empty() {
        return None;
    }
    let mut found = gpus.iter().enumerate().filter(|(_, g)| {
        g.id.is_some_and(|id| bare(id) == want)
            || bare(last_segment(g.resource)) == want
            || g.chassis.is_some_and(|c| bare(last_segment(c)) == want)
    });
    let first = found.next()?.0;
    found.next().is_none().then_some(first)
}

/// The GPU an entry is about: its `OriginOfCondition` when that is a GPU or a GPU's chassis (by path, then
/// by name), else the GPU its first message argument names (`GPU_SXM_3 Driver Event Message`: HGX
/// firmware that gives the baseboard as the origin names the GPU only there).
pub fn gpu_of(e: &LogEntry, gpus: &[GpuKey<'_>]) -> Option<usize> {
    if let Some(origin) = e.origin.as_deref() {
        let exact = gpus
            .iter()
            .position(|g| same_path(g.resource, origin) || g.chassis.is_some_and(|c| same_path(c, origin)));
        if let Some(i) = exact.or_else(|| by_name(last_segment(origin), gpus)) {
            return Some(i);
        }
    }
    let first = e.message_args.first()?;
    by_name(first.split_whitespace().next().unwrap_or(""), gpus)
}

/// Every driver event among `entries`, on its GPU; an entry read twice (the same `@odata.id` in two logs:
/// GB300 firmware lists each XID both in the baseboard's event log and in the GPU's own `XID` log) counts
/// once.
pub fn attribute<'e>(entries: impl IntoIterator<Item = &'e LogEntry>, gpus: &[GpuKey<'_>]) -> Attributed {
    let mut out = Attributed { per_gpu: vec![Vec::new(); gpus.len()], unattributed: Vec::new() };
    let mut seen = std::collections::HashSet::new();
    for e in entries {
        if let Some(id) = &e.odata_id
            && !seen.insert(id.trim_end_matches('/').to_owned())
        {
            continue;
        }
        let Some(ev) = logged_event(e) else { continue };
        match gpu_of(e, gpus) {
            Some(i) => out.per_gpu[i].push(ev),
            None => out.unattributed.push(ev),
        }
    }
    out
}

/// One GPU's events by kind and number: most logged first (then by kind and number).
pub fn tally(events: &[LoggedGpuEvent]) -> Vec<GpuEventTally> {
    let mut groups: std::collections::BTreeMap<(String, u32), Vec<&LoggedGpuEvent>> = Default::default();
    for e in events {
        groups.entry((e.event.kind.clone(), e.event.number)).or_default().push(e);
    }
    let mut out: Vec<GpuEventTally> = groups
        .into_iter()
        .map(|((kind, number), list)| {
            let newest = list.iter().max_by(|a, b| {
                (a.created_at, a.created.as_deref()).cmp(&(b.created_at, b.created.as_deref()))
            });
            let severity = list.iter().filter_map(|e| e.severity).reduce(Health::worst);
            GpuEventTally {
                kind,
                number,
                count: list.len(),
                newest: newest.and_then(|e| e.created.clone()),
                newest_entry: newest.and_then(|e| e.entry.clone()),
                severity,
            }
        })
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.kind.cmp(&b.kind)).then(a.number.cmp(&b.number)));
    out
}

/// The tallies in a line: `XID 45 ×92, XID 149 ×70 (newest XID 149 at 2026-07-08T18:32:27+00:00)`.
pub fn summary_line(t: &[GpuEventTally]) -> String {
    let list: Vec<String> = t.iter().map(|x| format!("{} {} ×{}", x.kind, x.number, x.count)).collect();
    let newest = t.iter().filter(|x| x.newest.is_some()).max_by(|a, b| {
        let at = |x: &GpuEventTally| {
            x.newest.as_deref().and_then(|c| chrono::DateTime::parse_from_rfc3339(c).ok())
        };
        (at(a), a.newest.as_deref()).cmp(&(at(b), b.newest.as_deref()))
    });
    match newest {
        Some(n) => format!(
            "{} (newest {} {} at {})",
            list.join(", "),
            n.kind,
            n.number,
            n.newest.as_deref().unwrap_or("")
        ),
        None => list.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::FieldWarning;
    use crate::log_model::log_entry_from_value;
    use proptest::prelude::*;
    use serde_json::json;

    fn entry(v: Value) -> LogEntry {
        let mut w: Vec<FieldWarning> = Vec::new();
        let e = log_entry_from_value(&v, "/e", &mut w);
        assert!(w.is_empty(), "{w:?}");
        e
    }

    /// An entry in the shape NVIDIA's GB300 firmware logs an XID (written for this test, not copied).
    fn gb_xid(id: u32, gpu: u32, xid: u32, created: &str) -> LogEntry {
        entry(json!({
            "@odata.id": format!("/redfish/v1/Systems/HGX_Baseboard_0/LogServices/EventLog/Entries/{id}"),
            "Id": id.to_string(),
            "Created": created,
            "EntryType": "Event",
            "Links": {"OriginOfCondition": {"@odata.id": format!("/redfish/v1/Chassis/HGX_GPU_{gpu}")}},
            "Message": format!("The resource property GPU_{gpu} Driver Event Message has detected errors of type '[Mon Jan  5 10:00:00 2026][1][0] XID {xid} test'."),
            "MessageArgs": [format!("GPU_{gpu} Driver Event Message"), format!("[Mon Jan  5 10:00:00 2026][1][0] XID {xid} test")],
            "MessageId": "ResourceEvent.1.0.ResourceErrorsDetected",
            "Resolved": false,
            "Severity": "Critical"
        }))
    }

    const GB_GPUS: [(&str, &str, &str); 2] = [
        ("/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_0", "GPU_0", "/redfish/v1/Chassis/HGX_GPU_0"),
        ("/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_1", "GPU_1", "/redfish/v1/Chassis/HGX_GPU_1"),
    ];

    fn keys<'a>(g: &'a [(&'a str, &'a str, &'a str)]) -> Vec<GpuKey<'a>> {
        g.iter().map(|(r, id, c)| GpuKey { resource: r, id: Some(id), chassis: Some(c) }).collect()
    }

    #[test]
    fn gb300_xids_go_to_their_gpu_and_are_tallied() {
        let entries = vec![
            gb_xid(1, 0, 45, "2026-01-05T10:00:00+00:00"),
            gb_xid(2, 1, 149, "2026-01-05T10:00:01+00:00"),
            gb_xid(3, 0, 45, "2026-01-06T10:00:00+00:00"),
            gb_xid(4, 0, 94, "2026-01-05T11:00:00+00:00"),
            // The same entry listed again (the GPU's own XID log): counted once.
            gb_xid(3, 0, 45, "2026-01-06T10:00:00+00:00"),
            // Not a driver event.
            entry(json!({"@odata.id": "/x/5", "Message": "hmc_ready.sh completed", "Severity": "OK"})),
        ];
        let g = keys(&GB_GPUS);
        let a = attribute(&entries, &g);
        assert!(a.unattributed.is_empty());
        assert_eq!(a.per_gpu[0].len(), 3);
        assert_eq!(a.per_gpu[1].len(), 1);
        let t = tally(&a.per_gpu[0]);
        assert_eq!(
            t.iter().map(|x| (x.number, x.count, x.newest.as_deref())).collect::<Vec<_>>(),
            vec![(45, 2, Some("2026-01-06T10:00:00+00:00")), (94, 1, Some("2026-01-05T11:00:00+00:00"))]
        );
        assert_eq!(t[0].severity, Some(Health::Critical));
        assert_eq!(
            t[0].newest_entry.as_deref(),
            Some("/redfish/v1/Systems/HGX_Baseboard_0/LogServices/EventLog/Entries/3")
        );
        assert_eq!(summary_line(&t), "XID 45 ×2, XID 94 ×1 (newest XID 45 at 2026-01-06T10:00:00+00:00)");
    }

    #[test]
    fn a_baseboard_origin_leaves_the_gpu_to_the_message_argument() {
        // HGX H100 firmware in the shape NVIDIA's own tooling parses: the baseboard as origin, the GPU
        // named in the first argument; the chassis and processor names differ by the `HGX_` prefix.
        let gpus = [
            ("/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_SXM_1", "GPU_SXM_1", ""),
            ("/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_SXM_3", "GPU_SXM_3", ""),
        ];
        let g: Vec<GpuKey<'_>> =
            gpus.iter().map(|(r, id, _)| GpuKey { resource: r, id: Some(id), chassis: None }).collect();
        let e = entry(json!({
            "@odata.id": "/e/1", "Created": "2024-05-01T10:00:00Z", "Severity": "Critical",
            "Links": {"OriginOfCondition": {"@odata.id": "/redfish/v1/Chassis/HGX_Baseboard_0"}},
            "MessageId": "ResourceEvent.1.0.ResourceErrorsDetected",
            "MessageArgs": ["GPU_SXM_3 Driver Event Message", "[Wed May  1 10:00:00 2024][3][0] XID 62 PMU halt"]
        }));
        assert_eq!(gpu_of(&e, &g), Some(1));
        let ev = logged_event(&e).unwrap();
        assert_eq!((ev.event.kind.as_str(), ev.event.number), ("XID", 62));
        // By chassis name alone (no link from the processor): HGX_GPU_SXM_1 is GPU_SXM_1.
        let e = entry(
            json!({"Message": "XID 79", "Links": {"OriginOfCondition": {"@odata.id": "/redfish/v1/Chassis/HGX_GPU_SXM_1"}}}),
        );
        assert_eq!(gpu_of(&e, &g), Some(0));
        // A name two GPUs share is not a match.
        let twice = [("/S/B0/Processors/GPU_0", "GPU_0", ""), ("/S/B1/Processors/GPU_0", "GPU_0", "")];
        let g2: Vec<GpuKey<'_>> =
            twice.iter().map(|(r, id, _)| GpuKey { resource: r, id: Some(id), chassis: None }).collect();
        let e = entry(json!({"Message": "XID 79", "MessageArgs": ["GPU_0 Driver Event Message"]}));
        assert_eq!(gpu_of(&e, &g2), None);
        // Exact path wins over names.
        let e = entry(
            json!({"Message": "XID 79", "Links": {"OriginOfCondition": {"@odata.id": "/S/B1/Processors/GPU_0/"}}}),
        );
        assert_eq!(gpu_of(&e, &g2), Some(1));
        let a = attribute([&entry(json!({"Message": "SXID 20034 on NVSwitch 2"}))], &g2);
        assert_eq!(a.unattributed.len(), 1);
    }

    #[test]
    fn message_args_are_read_leniently() {
        let e = entry(
            json!({"MessageArgs": ["a", 62, true, null, {"x": 1}], "MessageId": "Nvidia.1.0.XidError"}),
        );
        assert_eq!(e.message_args, vec!["a", "62", "true"]);
        let ev = logged_event(&e).unwrap();
        assert_eq!(ev.event.number, 62);
        let e = entry(json!({"MessageArgs": "not an array"}));
        assert!(e.message_args.is_empty());
    }

    proptest! {
        /// Whatever entries and GPUs: every driver event lands exactly once, on a GPU or unattributed, and
        /// the tallies add up to the events.
        #[test]
        fn every_event_lands_once(
            specs in proptest::collection::vec((0u32..6, 0u32..4, 0u32..200, any::<bool>()), 0..40),
            ngpu in 0usize..4,
        ) {
            let entries: Vec<LogEntry> = specs.iter().map(|(id, gpu, xid, origin)| {
                let mut v = json!({"@odata.id": format!("/e/{id}"), "Message": format!("XID {xid}"),
                    "MessageArgs": [format!("GPU_{gpu} Driver Event Message")]});
                if *origin {
                    v["Links"] = json!({"OriginOfCondition": {"@odata.id": format!("/redfish/v1/Chassis/HGX_GPU_{gpu}")}});
                }
                entry(v)
            }).collect();
            let names: Vec<(String, String)> = (0..ngpu)
                .map(|i| (format!("/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_{i}"), format!("GPU_{i}")))
                .collect();
            let g: Vec<GpuKey<'_>> = names.iter().map(|(r, id)| GpuKey { resource: r, id: Some(id), chassis: None }).collect();
            let a = attribute(&entries, &g);
            let distinct: std::collections::HashSet<u32> = specs.iter().map(|s| s.0).collect();
            let landed = a.per_gpu.iter().map(Vec::len).sum::<usize>() + a.unattributed.len();
            prop_assert_eq!(landed, distinct.len());
            for evs in &a.per_gpu {
                prop_assert_eq!(tally(evs).iter().map(|t| t.count).sum::<usize>(), evs.len());
            }
        }
    }
}
