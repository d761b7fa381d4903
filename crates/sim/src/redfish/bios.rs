//! Redfish `Bios` of a simulated system over the host's BIOS state (`crate::bios`): the attributes in force
//! at `…/Bios`, pending ones at `…/Bios/Settings` (its `@Redfish.Settings` object, `OnReset`), PATCHed
//! there. An unknown attribute is refused (400) and nothing is staged.

use std::collections::BTreeMap;

use axum::response::Response;
use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::resources::{link, method_not_allowed, no_content, not_found, ok, parse_json};
use super::{RedfishBmc, error};

pub(super) fn path(bmc: &RedfishBmc) -> String {
    format!("{}/Bios", bmc.system_path())
}

/// Routes `…/Bios` and below (`tail` after it).
pub(super) fn route(bmc: &RedfishBmc, method: &Method, full: &str, tail: &[&str], body: &Bytes) -> Response {
    let base = path(bmc);
    let boots = bmc.host.boots();
    let (current, pending) = bmc.host.bios().read(boots);
    match (tail, method) {
        ([], &Method::GET) => ok(json!({
            "@odata.id": base,
            "@odata.type": "#Bios.v1_2_0.Bios",
            "Id": "Bios",
            "Name": "BIOS Configuration Current Settings",
            "AttributeRegistry": "BiosAttributeRegistry.v1_0_0",
            "Attributes": current,
            "@Redfish.Settings": {
                "@odata.type": "#Settings.v1_3_5.Settings",
                "SettingsObject": link(&format!("{base}/Settings")),
                "SupportedApplyTimes": ["OnReset"],
            },
        })),
        ([], _) => method_not_allowed("GET"),
        (["Settings"], &Method::GET) => ok(json!({
            "@odata.id": format!("{base}/Settings"),
            "@odata.type": "#Bios.v1_2_0.Bios",
            "Id": "Settings",
            "Name": "BIOS Configuration Pending Settings",
            "AttributeRegistry": "BiosAttributeRegistry.v1_0_0",
            "Attributes": pending,
        })),
        (["Settings"], &Method::PATCH) => {
            let m = match parse_json(body) {
                Ok(m) => m,
                Err(r) => return r,
            };
            let Some(Value::Object(attrs)) = m.get("Attributes") else {
                return error(
                    StatusCode::BAD_REQUEST,
                    "PropertyMissing",
                    "The property Attributes is a required property and must be included in the request.",
                    &["Attributes"],
                );
            };
            let changes: BTreeMap<String, Value> =
                attrs.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            match bmc.host.bios().stage(boots, changes) {
                Ok(()) => no_content(),
                Err(name) => error(
                    StatusCode::BAD_REQUEST,
                    "PropertyUnknown",
                    &format!(
                        "The property Attributes/{name} is not in the list of valid properties for the resource."
                    ),
                    &[&format!("Attributes/{name}")],
                ),
            }
        }
        (["Settings"], _) => method_not_allowed("GET, PATCH"),
        _ => not_found(full),
    }
}
