//! The GPU driver events (XID / SXID) a BMC has logged, per GPU, for `health` and `bmc info --gpus`.
//!
//! Why: NVIDIA's HGX and GB200/GB300 firmware logs every XID the GPU driver reports into the GPU
//! baseboard's event log (`Systems/HGX_Baseboard_N/LogServices/EventLog`), hundreds on a busy node, each
//! naming its GPU. Out of band this is the one record of which GPU has been failing and how, and it must
//! read as that ("GPU_0: XID 45 ×92, XID 149 ×70, newest ...") rather than as hundreds of log lines.
//!
//! They are history, not the verdict: an XID logged in March says nothing of the GPU's state now (the
//! BMC's conditions and the GPU's health do, and count). Only the baseboards' logs are read, beside the
//! other reads below the system, so a BMC without an HGX baseboard pays nothing.

use lifeline_redfish::gpu_events::{GpuKey, attribute, summary_line, tally};
use lifeline_redfish::model::{ComputerSystem, LogEntries};

use crate::below::{GpuHealth, is_gpu_baseboard};

/// The event logs of `systems`' GPU baseboards, read to their end (up to
/// [`crate::events::LOG_ENTRIES_READ`] entries each), and what could not be read.
pub(crate) async fn read(
    client: &lifeline_redfish::Client,
    systems: &[ComputerSystem],
) -> (Vec<LogEntries>, Vec<String>) {
    let links: Vec<&str> =
        systems.iter().filter(|s| is_gpu_baseboard(s)).filter_map(|s| s.log_services.as_deref()).collect();
    let reads = futures::future::join_all(
        links.iter().map(|l| client.event_logs_of(l, crate::events::LOG_ENTRIES_READ)),
    )
    .await;
    let mut logs = Vec::new();
    let mut warnings = Vec::new();
    for l in reads {
        warnings.extend(l.warnings.iter().map(|w| format!("{}: {}", w.at, w.problem)));
        for e in l.items {
            if e.truncated {
                warnings.push(format!(
                    "{}: not read to its end ({} entries read): GPU driver events beyond them not counted",
                    e.log,
                    e.entries.len()
                ));
            }
            logs.push(e);
        }
    }
    (logs, warnings)
}

/// Each GPU's logged driver events into its [`GpuHealth::logged_events`]; a warning for the events that
/// name no GPU the BMC lists (a GPU gone from the listing, or firmware naming it in a way not recognised).
pub(crate) fn attach(logs: &[LogEntries], gpus: &mut [GpuHealth]) -> Vec<String> {
    let keys: Vec<GpuKey<'_>> = gpus
        .iter()
        .map(|g| GpuKey { resource: &g.resource, id: g.id.as_deref(), chassis: g.detail.chassis.as_deref() })
        .collect();
    let a = attribute(logs.iter().flat_map(|l| l.entries.iter()), &keys);
    for (g, events) in gpus.iter_mut().zip(&a.per_gpu) {
        g.logged_events = tally(events);
    }
    if a.unattributed.is_empty() {
        return Vec::new();
    }
    let where_: Vec<&str> = logs.iter().map(|l| l.log.as_str()).collect();
    vec![format!(
        "{} GPU driver events in {} name no GPU the BMC lists: {}",
        a.unattributed.len(),
        where_.join(", "),
        summary_line(&tally(&a.unattributed))
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use lifeline_redfish::component_model::{ComponentKind, component_from_value};
    use lifeline_redfish::model::LogEntries;
    use serde_json::json;

    /// A GPU as `health` lists it, from a processor document in the GB300 shape (written for this test).
    fn gpu(id: &str) -> GpuHealth {
        let at = format!("/redfish/v1/Systems/HGX_Baseboard_0/Processors/{id}");
        let doc = json!({
            "@odata.id": at, "Id": id, "Name": "Processor", "ProcessorType": "GPU",
            "Links": {"Chassis": {"@odata.id": format!("/redfish/v1/Chassis/HGX_{id}")}},
            "Status": {"Health": "OK", "State": "Enabled"}
        });
        let mut w = Vec::new();
        let c = component_from_value(ComponentKind::Processor, &doc, &at, &mut w);
        assert!(w.is_empty(), "{w:?}");
        crate::below::gpu_health(&c, "/redfish/v1/Systems/HGX_Baseboard_0").expect("a GPU")
    }

    /// A baseboard event log in the shape NVIDIA's GB300 firmware serves it (entries written for this
    /// test): XIDs on GPU_0 and GPU_1, one on a GPU the BMC does not list, one entry that is no XID.
    fn log() -> LogEntries {
        let xid = |n: u32, g: u32, x: u32, t: &str| {
            json!({
                "@odata.id": format!("/redfish/v1/Systems/HGX_Baseboard_0/LogServices/EventLog/Entries/{n}"),
                "Id": n.to_string(), "Created": t, "Severity": "Critical", "Resolved": false,
                "Links": {"OriginOfCondition": {"@odata.id": format!("/redfish/v1/Chassis/HGX_GPU_{g}")}},
                "MessageId": "ResourceEvent.1.0.ResourceErrorsDetected",
                "MessageArgs": [format!("GPU_{g} Driver Event Message"), format!("[t][{n}][0] XID {x} detail")],
                "Message": format!("The resource property GPU_{g} Driver Event Message has detected errors of type '[t][{n}][0] XID {x} detail'.")
            })
        };
        let docs = [
            xid(10, 0, 79, "2026-02-01T00:00:00+00:00"),
            xid(11, 0, 79, "2026-02-03T00:00:00+00:00"),
            xid(12, 0, 48, "2026-02-02T00:00:00+00:00"),
            xid(13, 1, 79, "2026-02-04T00:00:00+00:00"),
            xid(14, 7, 62, "2026-02-05T00:00:00+00:00"),
            json!({"@odata.id": "/e/15", "Message": "hmc_ready.sh completed", "Severity": "OK"}),
        ];
        let mut w = Vec::new();
        LogEntries {
            log: "/redfish/v1/Systems/HGX_Baseboard_0/LogServices/EventLog".into(),
            entries: docs
                .iter()
                .map(|d| lifeline_redfish::model::log_entry_from_value(d, "/e", &mut w))
                .collect(),
            ..LogEntries::default()
        }
    }

    #[test]
    fn each_gpu_gets_its_xids_and_the_rest_is_said() {
        let mut gpus = vec![gpu("GPU_0"), gpu("GPU_1"), gpu("GPU_2")];
        let warnings = attach(&[log()], &mut gpus);
        let got = |g: &GpuHealth| {
            g.logged_events.iter().map(|t| (t.number, t.count, t.newest.clone().unwrap())).collect::<Vec<_>>()
        };
        assert_eq!(
            got(&gpus[0]),
            vec![(79, 2, "2026-02-03T00:00:00+00:00".into()), (48, 1, "2026-02-02T00:00:00+00:00".into())]
        );
        assert_eq!(got(&gpus[1]), vec![(79, 1, "2026-02-04T00:00:00+00:00".into())]);
        assert!(gpus[2].logged_events.is_empty());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("1 GPU driver events in /redfish/v1/Systems/HGX_Baseboard_0/"),
            "{warnings:?}"
        );
        assert!(warnings[0].contains("XID 62 ×1"), "{warnings:?}");
        // In the JSON only where there are some.
        let v = serde_json::to_value(&gpus[2]).unwrap();
        assert!(v.get("logged_events").is_none(), "{v}");
        let v = serde_json::to_value(&gpus[0]).unwrap();
        assert_eq!(v["logged_events"][0]["count"], 2, "{v}");
    }
}
