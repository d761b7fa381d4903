//! Redfish resources for BMC operations (the UpdateService is `update`'s): the Manager's `EthernetInterfaces` (its MAC), and the ComputerSystem's ETag (header and `@odata.etag`,
//! derived from the boot override so that a PATCH based on a stale read gets 412, as on OpenBMC and iDRAC).

use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::RedfishBmc;
use super::resources::collection;
use crate::host::BootOverride;

pub(super) fn interfaces(bmc: &RedfishBmc) -> Value {
    let base = format!("{}/EthernetInterfaces", bmc.manager_path());
    collection(
        &base,
        "EthernetInterfaceCollection",
        "Manager Ethernet Interfaces",
        vec![format!("{base}/eth0")],
    )
}

pub(super) fn interface(bmc: &RedfishBmc, id: &str) -> Option<Value> {
    (id == "eth0").then(|| {
        json!({
            "@odata.id": format!("{}/EthernetInterfaces/eth0", bmc.manager_path()),
            "@odata.type": "#EthernetInterface.v1_12_0.EthernetInterface",
            "Id": "eth0",
            "Name": "Manager Ethernet Interface",
            "MACAddress": bmc.host.bmc_config().identity.bmc_mac,
            "PermanentMACAddress": bmc.host.bmc_config().identity.bmc_mac,
            "InterfaceEnabled": true,
            "Status": { "State": "Enabled", "Health": "OK" },
        })
    })
}

/// The system's ETag: a hash of what a PATCH can change (the boot override).
pub(super) fn system_etag(o: &BootOverride) -> String {
    let h = [o.target, o.enabled, o.mode]
        .iter()
        .flat_map(|s| s.bytes().chain([0]))
        .fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    format!("W/\"{h:08x}\"")
}

/// Adds the ETag header to a GET reply.
pub(super) fn with_etag(mut r: Response, etag: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(etag) {
        r.headers_mut().insert(header::ETAG, v);
    }
    r
}

/// `If-Match` on a PATCH: absent or `*` passes; anything else must be the current ETag (else 412).
pub(super) fn precondition(headers: &HeaderMap, current: &str) -> Option<Response> {
    let m = headers.get(header::IF_MATCH)?.to_str().unwrap_or_default();
    if m.trim() == "*" || m.split(',').any(|e| e.trim() == current) {
        return None;
    }
    Some(super::error(
        StatusCode::PRECONDITION_FAILED,
        "PreconditionFailed",
        "The ETag supplied did not match the ETag required to change this resource.",
        &[],
    ))
}
