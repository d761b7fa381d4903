//! Log services in each flavor's layout ([`LogLayout`]): a typed SEL, HPE's IML + IEL, or bmcweb's two
//! `EventLog`s. Host events (the host's SEL: faults, power, POST) fill the System-side service of every
//! layout; the Manager-side services of iLO and bmcweb list the BMC's own events, rendered from the
//! device's action log (what was executed, by whom).
//!
//! Why several layouts: a client that only understands `EntryType: SEL` shows "0 entries" on iLO and
//! OpenBMC while a critical PSU failure sits in their logs; the sim has to look like them to catch it.

use axum::response::Response;
use http::Method;
use serde_json::{Value, json};

use super::RedfishBmc;
use super::flavor::LogLayout;
use super::resources::{collection, get_only, health, link, method_not_allowed, no_content, not_found, ok};
use crate::actions::{Action, ActionKind, Origin};
use crate::sel::SelEntry;

/// Which resource a LogServices collection hangs off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Owner {
    System,
    Manager,
}

/// What a log service lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The host's SEL records.
    Host,
    /// The BMC's executed actions (non-no-op).
    Actions,
}

#[derive(Debug, Clone, Copy)]
struct Service {
    id: &'static str,
    name: &'static str,
    source: Source,
}

fn services(bmc: &RedfishBmc, owner: Owner) -> Vec<Service> {
    let f = bmc.flavor;
    let host_owner = if f.sel_under_system { Owner::System } else { Owner::Manager };
    let mut v = Vec::new();
    if owner == host_owner {
        let name = match f.logs {
            LogLayout::Sel => "System Event Log",
            LogLayout::HpeImlIel => "Integrated Management Log",
            LogLayout::OpenbmcEventLogs => "System Event Log",
        };
        v.push(Service { id: f.sel_id, name, source: Source::Host });
    }
    match (f.logs, owner) {
        (LogLayout::HpeImlIel, Owner::Manager) => {
            v.push(Service { id: "IEL", name: "iLO Event Log", source: Source::Actions })
        }
        (LogLayout::OpenbmcEventLogs, Owner::Manager) => {
            v.push(Service { id: "EventLog", name: "BMC Event Log", source: Source::Actions })
        }
        _ => {}
    }
    v
}

/// Whether `owner` has a `LogServices` collection in this flavor.
pub(super) fn has_logs(bmc: &RedfishBmc, owner: Owner) -> bool {
    !services(bmc, owner).is_empty()
}

pub(super) fn collection_path(bmc: &RedfishBmc, owner: Owner) -> String {
    match owner {
        Owner::System => format!("{}/LogServices", bmc.system_path()),
        Owner::Manager => format!("{}/LogServices", bmc.manager_path()),
    }
}

pub(super) fn ipmi_sensor_type_name(t: u8) -> &'static str {
    match t {
        0x01 => "Temperature",
        0x02 => "Voltage",
        0x04 => "Fan",
        0x08 => "Power Supply / Converter",
        0x09 => "Power Unit",
        0x0C => "Memory",
        0x0F => "System Firmware Progress",
        0x10 => "Event Logging Disabled",
        0x13 => "Critical Interrupt",
        0x20 => "OS Stop / Shutdown",
        0x27 => "LAN",
        _ => "OEM",
    }
}

/// A host record in the flavor's entry shape.
fn host_entry(layout: LogLayout, base: &str, e: &SelEntry) -> Value {
    let mut v = json!({
        "@odata.id": format!("{base}/Entries/{}", e.id),
        "@odata.type": "#LogEntry.v1_15_0.LogEntry",
        "Id": e.id.to_string(),
        "Name": format!("Log Entry {}", e.id),
        "Created": e.created(),
        "Message": e.message,
        "Severity": health(e.severity),
    });
    match layout {
        LogLayout::Sel => {
            v["EntryType"] = json!("SEL");
            v["MessageId"] = json!(e.message_id);
            v["SensorType"] = json!(ipmi_sensor_type_name(e.sensor_type));
            v["SensorNumber"] = json!(e.sensor_number);
            v["EntryCode"] = json!(if e.deassertion { "Deassert" } else { "Assert" });
        }
        LogLayout::HpeImlIel => {
            v["EntryType"] = json!("Oem");
            v["OemRecordFormat"] = json!("Hpe-IML");
        }
        LogLayout::OpenbmcEventLogs => {
            v["EntryType"] = json!("Event");
            v["MessageId"] = json!(e.message_id);
            v["MessageArgs"] = json!([]);
        }
    }
    v
}

fn action_text(a: ActionKind) -> &'static str {
    match a {
        ActionKind::PowerOn => "Server power on requested",
        ActionKind::PowerOff => "Server power removed",
        ActionKind::PowerCycle => "Server power cycled",
        ActionKind::HardReset => "Server reset",
        ActionKind::SoftOff => "Server graceful shutdown requested",
        ActionKind::GracefulRestart => "Server graceful restart requested",
        ActionKind::Nmi => "Diagnostic interrupt (NMI) sent",
        ActionKind::BmcReset => "Management controller reset",
        ActionKind::SelClear => "Event log cleared",
        ActionKind::ConfigApply => "Configuration applied",
        ActionKind::ConfigReload => "Configuration reloaded",
        ActionKind::FirmwareUpdate => "Firmware update started",
    }
}

/// A BMC event (an executed action) in the flavor's entry shape.
fn action_entry(layout: LogLayout, base: &str, a: &Action) -> Value {
    let mut v = json!({
        "@odata.id": format!("{base}/Entries/{}", a.seq),
        "@odata.type": "#LogEntry.v1_15_0.LogEntry",
        "Id": a.seq.to_string(),
        "Name": format!("Log Entry {}", a.seq),
        "Created": a.time.format("%Y-%m-%dT%H:%M:%S+00:00").to_string(),
        "Message": format!("{} by {} over {}.", action_text(a.action), a.origin,
            serde_json::to_value(a.protocol).ok().and_then(|p| p.as_str().map(str::to_owned)).unwrap_or_default()),
        "Severity": "OK",
    });
    if layout == LogLayout::HpeImlIel {
        v["EntryType"] = json!("Oem");
        v["OemRecordFormat"] = json!("Hpe-iLOEventLog");
    } else {
        let pascal: String =
            a.action.to_string().split('-').map(|w| w[..1].to_uppercase() + &w[1..]).collect();
        v["EntryType"] = json!("Event");
        v["MessageId"] = json!(format!("OpenBMC.0.1.{pascal}"));
        v["MessageArgs"] = json!([]);
    }
    v
}

fn entries(bmc: &RedfishBmc, svc: Service, base: &str) -> Vec<Value> {
    let layout = bmc.flavor.logs;
    match svc.source {
        Source::Host => bmc.host.sel_entries().iter().map(|e| host_entry(layout, base, e)).collect(),
        Source::Actions => bmc
            .host
            .actions()
            .entries()
            .iter()
            .filter(|a| !a.noop)
            .map(|a| action_entry(layout, base, a))
            .collect(),
    }
}

fn service_doc(bmc: &RedfishBmc, svc: Service, base: &str) -> Value {
    let entry_type = match bmc.flavor.logs {
        LogLayout::Sel => "SEL",
        LogLayout::HpeImlIel => "OEM",
        LogLayout::OpenbmcEventLogs => "Event",
    };
    let (max, actions) = match svc.source {
        Source::Host => (
            crate::sel::SEL_CAPACITY,
            json!({ "#LogService.ClearLog": { "target": format!("{base}/Actions/LogService.ClearLog") } }),
        ),
        Source::Actions => (crate::actions::CAPACITY, json!({})),
    };
    json!({
        "@odata.id": base,
        "@odata.type": "#LogService.v1_4_0.LogService",
        "Id": svc.id,
        "Name": svc.name,
        "ServiceEnabled": true,
        "MaxNumberOfRecords": max,
        "OverWritePolicy": "WrapsWhenFull",
        "LogEntryType": entry_type,
        "DateTime": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S+00:00").to_string(),
        "Status": { "State": "Enabled", "Health": "OK" },
        "Entries": link(&format!("{base}/Entries")),
        "Actions": actions,
    })
}

/// Routes `…/LogServices/{tail}` of `owner`.
pub(super) fn route(
    bmc: &RedfishBmc,
    owner: Owner,
    method: &Method,
    path: &str,
    tail: &[&str],
    origin: &Origin,
) -> Response {
    let coll = collection_path(bmc, owner);
    let svcs = services(bmc, owner);
    let find = |id: &str| svcs.iter().copied().find(|s| s.id == id);
    match tail {
        [] => get_only(method, || {
            let members = svcs.iter().map(|s| format!("{coll}/{}", s.id)).collect();
            ok(collection(&coll, "LogServiceCollection", "Log Service Collection", members))
        }),
        [id] => match find(id) {
            Some(svc) => get_only(method, || ok(service_doc(bmc, svc, &format!("{coll}/{id}")))),
            None => not_found(path),
        },
        [id, "Entries"] => match find(id) {
            Some(svc) => get_only(method, || {
                let base = format!("{coll}/{id}");
                let members = entries(bmc, svc, &base);
                ok(json!({
                    "@odata.id": format!("{base}/Entries"),
                    "@odata.type": "#LogEntryCollection.LogEntryCollection",
                    "Name": format!("{} Entries", svc.name),
                    "Members@odata.count": members.len(),
                    "Members": members,
                }))
            }),
            None => not_found(path),
        },
        [id, "Entries", eid] => match find(id) {
            Some(svc) => get_only(method, || {
                let base = format!("{coll}/{id}");
                let want = format!("{base}/Entries/{eid}");
                entries(bmc, svc, &base)
                    .into_iter()
                    .find(|e| e["@odata.id"] == want.as_str())
                    .map_or_else(|| not_found(path), ok)
            }),
            None => not_found(path),
        },
        [id, "Actions", "LogService.ClearLog"] if find(id).is_some_and(|s| s.source == Source::Host) => {
            if *method != Method::POST {
                return method_not_allowed("POST");
            }
            bmc.host.sel_clear_by(origin);
            no_content()
        }
        _ => not_found(path),
    }
}
