//! Redfish `UpdateService` of a simulated BMC: `SimpleUpdate` (the image named by a URL), the DSP0266
//! multipart push (read as it streams in: the parameters and the image's first line are kept, the rest
//! is counted and dropped, so 100 BMCs pushed at once cost the simulator no image copies), a task per
//! update under `TaskService/Tasks`, and `FirmwareInventory` from the host's firmware state
//! (`crate::firmware`).
//!
//! Apply times as vendors list them: iDRAC, iLO and Supermicro stage host firmware for the next reset
//! (`OnReset` only here), bmcweb and the generic flavors also apply at once (`Immediate`).

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Map, Value, json};

use super::resources::{
    collection, get_only, link, method_not_allowed, not_found, ok, param_not_in_list, parse_json,
};
use super::{RedfishBmc, error, json_response};
use crate::actions::{ActionKind, Origin};
use crate::fault::Fault;
use crate::firmware::{Apply, image_version, url_version};
use crate::spec::RedfishFlavor;

const UPDATE: &str = "/redfish/v1/UpdateService";
const FIRMWARE: &str = "/redfish/v1/UpdateService/FirmwareInventory";
const SIMPLE: &str = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate";
/// Where multipart pushes go (bmcweb's path).
pub(super) const MULTIPART: &str = "/redfish/v1/UpdateService/update-multipart";
const TASKS: &str = "/redfish/v1/TaskService/Tasks";
/// How much of a push is kept to find its parameters and the image's first line.
const HEAD_LIMIT: usize = 64 * 1024;
/// The largest image accepted (`MaxImageSizeBytes`).
const MAX_IMAGE: u64 = 4 << 30;

fn apply_times(bmc: &RedfishBmc) -> &'static [&'static str] {
    match bmc.flavor.kind {
        RedfishFlavor::IdracLike | RedfishFlavor::IloLike | RedfishFlavor::SupermicroLike => &["OnReset"],
        _ => &["Immediate", "OnReset"],
    }
}

pub(super) fn service(bmc: &RedfishBmc) -> Value {
    let times = apply_times(bmc);
    json!({
        "@odata.id": UPDATE,
        "@odata.type": "#UpdateService.v1_11_0.UpdateService",
        "Id": "UpdateService",
        "Name": "Update Service",
        "ServiceEnabled": true,
        "FirmwareInventory": link(FIRMWARE),
        "MultipartHttpPushUri": MULTIPART,
        "MultipartHttpPushUri@Redfish.OperationApplyTimeSupport": {
            "@odata.type": "#Settings.v1_3_5.OperationApplyTimeSupport",
            "SupportedValues": times,
        },
        "MaxImageSizeBytes": MAX_IMAGE,
        "Actions": { "#UpdateService.SimpleUpdate": {
            "target": SIMPLE,
            "TransferProtocol@Redfish.AllowableValues": ["HTTP", "HTTPS"],
        }},
    })
}

pub(super) fn firmware_inventory(bmc: &RedfishBmc) -> Value {
    let members = bmc.host.firmware_items().iter().map(|i| format!("{FIRMWARE}/{}", i.id)).collect();
    collection(FIRMWARE, "SoftwareInventoryCollection", "Firmware Inventory", members)
}

pub(super) fn firmware_item(bmc: &RedfishBmc, which: &str) -> Option<Value> {
    let i = bmc.host.firmware_items().into_iter().find(|i| i.id == which)?;
    Some(json!({
        "@odata.id": format!("{FIRMWARE}/{}", i.id),
        "@odata.type": "#SoftwareInventory.v1_9_0.SoftwareInventory",
        "Id": i.id,
        "Name": i.name,
        "Version": i.version,
        "Updateable": true,
        "Status": { "State": "Enabled", "Health": "OK" },
    }))
}

fn bad(message: &str) -> Response {
    error(StatusCode::BAD_REQUEST, "ActionParameterMissing", message, &[])
}

/// The component id of the one `Targets` entry, or a 400.
fn target_item(bmc: &RedfishBmc, params: &Map<String, Value>) -> Result<String, Response> {
    let targets: Vec<&str> = params
        .get("Targets")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let [t] = targets.as_slice() else {
        return Err(bad("Targets must name exactly one FirmwareInventory member."));
    };
    let id = t.strip_prefix(FIRMWARE).and_then(|r| r.strip_prefix('/')).unwrap_or_default();
    if bmc.host.firmware_items().iter().any(|i| i.id == id) {
        Ok(id.to_owned())
    } else {
        Err(param_not_in_list(t, "Targets"))
    }
}

fn apply_time(bmc: &RedfishBmc, params: &Map<String, Value>) -> Result<Apply, Response> {
    let times = apply_times(bmc);
    let asked = params.get("@Redfish.OperationApplyTime").and_then(Value::as_str).unwrap_or(times[0]);
    if !times.contains(&asked) {
        return Err(param_not_in_list(asked, "@Redfish.OperationApplyTime"));
    }
    Ok(if asked == "Immediate" { Apply::Immediate } else { Apply::OnReset })
}

fn start(
    bmc: &RedfishBmc,
    via: &str,
    item: &str,
    version: Option<String>,
    apply: Apply,
    origin: &Origin,
) -> Response {
    let h = &bmc.host;
    let fail = h.active_faults().contains(&Fault::FirmwareFail);
    let Some(id) =
        h.firmware().start(|| h.firmware_defaults(), h.firmware_clock(), via, item, version, apply, fail)
    else {
        return not_found(item);
    };
    h.actions().record(origin, ActionKind::FirmwareUpdate, false);
    let mut r = json_response(StatusCode::ACCEPTED, task_doc(bmc, id).unwrap_or(Value::Null));
    if let Ok(v) = HeaderValue::from_str(&format!("{TASKS}/{id}")) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

fn task_doc(bmc: &RedfishBmc, id: u32) -> Option<Value> {
    let h = &bmc.host;
    let t = h.firmware().task(|| h.firmware_defaults(), h.firmware_clock(), id)?;
    let status = match t.state {
        "Exception" => "Critical",
        _ => "OK",
    };
    Some(json!({
        "@odata.id": format!("{TASKS}/{id}"),
        "@odata.type": "#Task.v1_7_1.Task",
        "Id": id.to_string(),
        "Name": "Firmware update",
        "TaskState": t.state,
        "TaskStatus": status,
        "PercentComplete": t.percent,
        "TaskMonitor": format!("{TASKS}/{id}/Monitor"),
        "StartTime": t.started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "Payload": { "TargetUri": t.via, "HttpOperation": "POST" },
        "Messages": [{ "MessageId": "Update.1.0.UpdateInProgress", "Message": t.message }],
    }))
}

/// `POST SimpleUpdate`.
pub(super) fn simple_update(bmc: &RedfishBmc, method: &Method, body: &Bytes, origin: &Origin) -> Response {
    if *method != Method::POST {
        return method_not_allowed("POST");
    }
    let params = match parse_json(body) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let Some(uri) = params.get("ImageURI").and_then(Value::as_str) else {
        return bad("The action requires the parameter ImageURI.");
    };
    if let Some(p) = params.get("TransferProtocol").and_then(Value::as_str)
        && !matches!(p, "HTTP" | "HTTPS")
    {
        return param_not_in_list(p, "TransferProtocol");
    }
    let (item, apply) = match target_item(bmc, &params).and_then(|i| Ok((i, apply_time(bmc, &params)?))) {
        Ok(x) => x,
        Err(r) => return r,
    };
    start(bmc, SIMPLE, &item, url_version(uri), apply, origin)
}

/// `POST MultipartHttpPushUri`, read as it streams in.
pub(super) async fn multipart(
    bmc: &Arc<RedfishBmc>,
    headers: &HeaderMap,
    body: Body,
    origin: &Origin,
) -> Response {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let Some(boundary) =
        ct.split(';').find_map(|p| p.trim().strip_prefix("boundary=")).map(|b| b.trim_matches('"'))
    else {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            "multipart/form-data with a boundary expected.",
            &[],
        );
    };
    let mut head: Vec<u8> = Vec::new();
    let mut total: u64 = 0;
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            return error(StatusCode::BAD_REQUEST, "GeneralError", "The upload was cut short.", &[]);
        };
        total += chunk.len() as u64;
        if total > MAX_IMAGE + HEAD_LIMIT as u64 {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "GeneralError",
                "The image is larger than MaxImageSizeBytes.",
                &[],
            );
        }
        if head.len() < HEAD_LIMIT {
            let take = chunk.len().min(HEAD_LIMIT - head.len());
            head.extend_from_slice(&chunk[..take]);
        }
    }
    let Some((params, image)) = split_parts(&head, boundary) else {
        return bad("The push needs an UpdateParameters part and an UpdateFile part.");
    };
    let params = match parse_json(&Bytes::copy_from_slice(params)) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let (item, apply) = match target_item(bmc, &params).and_then(|i| Ok((i, apply_time(bmc, &params)?))) {
        Ok(x) => x,
        Err(r) => return r,
    };
    start(bmc, MULTIPART, &item, image_version(image), apply, origin)
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// The `UpdateParameters` part's body and the start of the `UpdateFile` part's body.
fn split_parts<'a>(head: &'a [u8], boundary: &str) -> Option<(&'a [u8], &'a [u8])> {
    let delim = format!("\r\n--{boundary}");
    let part = |name: &str| -> Option<usize> {
        let at = find(head, format!("name=\"{name}\"").as_bytes())?;
        Some(at + find(&head[at..], b"\r\n\r\n")? + 4)
    };
    let p = part("UpdateParameters")?;
    let p_end = p + find(&head[p..], delim.as_bytes())?;
    let f = part("UpdateFile")?;
    Some((&head[p..p_end], &head[f..]))
}

/// `TaskService/Tasks[/ID[/Monitor]]`.
pub(super) fn tasks(bmc: &RedfishBmc, method: &Method, path: &str, tail: &[&str]) -> Response {
    get_only(method, || match tail {
        [] => ok(
            json!({"@odata.id": "/redfish/v1/TaskService", "@odata.type": "#TaskService.v1_2_0.TaskService",
            "Id": "TaskService", "Name": "Task Service", "ServiceEnabled": true, "Tasks": link(TASKS)}),
        ),
        ["Tasks"] => {
            let members = bmc.host.firmware().task_ids().iter().map(|i| format!("{TASKS}/{i}")).collect();
            ok(collection(TASKS, "TaskCollection", "Tasks", members))
        }
        ["Tasks", id] | ["Tasks", id, "Monitor"] => {
            match id.parse().ok().and_then(|id| task_doc(bmc, id)) {
                Some(v) => {
                    let running = v["TaskState"] == "Running";
                    // A task monitor answers 202 while the task runs (DSP0266).
                    let code = if running && tail.len() == 3 { StatusCode::ACCEPTED } else { StatusCode::OK };
                    json_response(code, v)
                }
                None => not_found(path),
            }
        }
        _ => not_found(path),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_of_a_push_are_found_in_its_head() {
        let body = b"--b\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\nContent-Type: application/json\r\n\r\n{\"Targets\":[]}\r\n--b\r\nContent-Disposition: form-data; name=\"UpdateFile\"; filename=\"x\"\r\n\r\nLIFELINE-SIM-FIRMWARE 9.9\n\0\0";
        let (p, f) = split_parts(body, "b").unwrap();
        assert_eq!(p, b"{\"Targets\":[]}");
        assert_eq!(image_version(f), Some("9.9".into()));
        assert!(split_parts(b"--b\r\n\r\n", "b").is_none());
    }
}
