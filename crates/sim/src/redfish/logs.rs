//! Log services: the SEL as a Redfish `LogService` with `LogEntry` members, and its ClearLog action.

use axum::response::Response;
use http::Method;
use serde_json::{Value, json};

use super::RedfishBmc;
use super::resources::{collection, get_only, health, link, method_not_allowed, no_content, not_found, ok};
use crate::actions::Origin;
use crate::sel::SelEntry;

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

pub(super) fn log_entry(base: &str, e: &SelEntry) -> Value {
    json!({
        "@odata.id": format!("{base}/Entries/{}", e.id),
        "@odata.type": "#LogEntry.v1_15_0.LogEntry",
        "Id": e.id.to_string(),
        "Name": format!("Log Entry {}", e.id),
        "EntryType": "SEL",
        "Created": e.created(),
        "Message": e.message,
        "MessageId": e.message_id,
        "Severity": health(e.severity),
        "SensorType": ipmi_sensor_type_name(e.sensor_type),
        "SensorNumber": e.sensor_number,
        "EntryCode": if e.deassertion { "Deassert" } else { "Assert" },
    })
}

pub(super) fn log_services(
    bmc: &RedfishBmc,
    method: &Method,
    path: &str,
    tail: &[&str],
    origin: &Origin,
) -> Response {
    let coll = bmc.log_services_path();
    let sel = bmc.flavor.sel_id;
    let base = format!("{coll}/{sel}");
    match tail {
        [] => get_only(method, || {
            ok(collection(&coll, "LogServiceCollection", "Log Service Collection", vec![base]))
        }),
        [id] if *id == sel => get_only(method, || {
            ok(json!({
                "@odata.id": base,
                "@odata.type": "#LogService.v1_4_0.LogService",
                "Id": sel,
                "Name": "System Event Log",
                "ServiceEnabled": true,
                "MaxNumberOfRecords": crate::sel::SEL_CAPACITY,
                "OverWritePolicy": "WrapsWhenFull",
                "LogEntryType": "SEL",
                "DateTime": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S+00:00").to_string(),
                "Status": { "State": "Enabled", "Health": "OK" },
                "Entries": link(&format!("{base}/Entries")),
                "Actions": { "#LogService.ClearLog": { "target": format!("{base}/Actions/LogService.ClearLog") } },
            }))
        }),
        [id, "Entries"] if *id == sel => get_only(method, || {
            let entries = bmc.host.sel_entries();
            let members: Vec<Value> = entries.iter().map(|e| log_entry(&base, e)).collect();
            ok(json!({
                "@odata.id": format!("{base}/Entries"),
                "@odata.type": "#LogEntryCollection.LogEntryCollection",
                "Name": "System Event Log Entries",
                "Members@odata.count": members.len(),
                "Members": members,
            }))
        }),
        [id, "Entries", eid] if *id == sel => get_only(method, || {
            let e =
                eid.parse::<u16>().ok().and_then(|n| bmc.host.sel_entries().into_iter().find(|e| e.id == n));
            match e {
                Some(e) => ok(log_entry(&base, &e)),
                None => not_found(path),
            }
        }),
        [id, "Actions", "LogService.ClearLog"] if *id == sel => {
            if *method != Method::POST {
                return method_not_allowed("POST");
            }
            bmc.host.sel_clear_by(origin);
            no_content()
        }
        _ => not_found(path),
    }
}
