//! Redfish `VirtualMedia` of a simulated BMC, over the host's media tray (`crate::media`).
//!
//! Where the collection is and what its slots are called differ per vendor, as data below: the current
//! schema puts it under the System (the generic flavors), bmcweb, iDRAC and iLO under the Manager. An insert
//! into an occupied slot is refused (409), an eject of an empty one too (400), a `TransferProtocolType` the
//! slot does not list, or one at all on iLO (whose schema lacks it), is refused (400): a client must read
//! the slot first and send only what the BMC offers.

use axum::response::Response;
use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::resources::{
    collection, method_not_allowed, no_content, not_found, ok, param_not_in_list, parse_json,
};
use super::{RedfishBmc, error};
use crate::media::{SlotKind, TrayError};
use crate::spec::RedfishFlavor;

/// A flavor's virtual media: under the Manager?, slot ids (CD, USB), the insert's protocol list.
struct Layout {
    under_manager: bool,
    cd: &'static str,
    usb: &'static str,
    /// `TransferProtocolType@Redfish.AllowableValues`; `None`: the property is not in its schema.
    protocols: Option<&'static [&'static str]>,
}

fn layout(kind: RedfishFlavor) -> Layout {
    let all: &[&str] = &["HTTP", "HTTPS", "NFS", "CIFS"];
    match kind {
        RedfishFlavor::Generic | RedfishFlavor::PowerSubsystem => {
            Layout { under_manager: false, cd: "Cd", usb: "Usb", protocols: Some(all) }
        }
        RedfishFlavor::OpenbmcLike => {
            Layout { under_manager: true, cd: "Slot_0", usb: "Slot_1", protocols: Some(&["CIFS", "HTTPS"]) }
        }
        RedfishFlavor::IdracLike => {
            Layout { under_manager: true, cd: "CD", usb: "RemovableDisk", protocols: Some(all) }
        }
        RedfishFlavor::IloLike => Layout { under_manager: true, cd: "2", usb: "1", protocols: None },
        RedfishFlavor::SupermicroLike => Layout {
            under_manager: true,
            cd: "CD1",
            usb: "USBStick1",
            protocols: Some(&["HTTP", "HTTPS", "CIFS"]),
        },
    }
}

/// The collection's path for this BMC.
pub(super) fn collection_path(bmc: &RedfishBmc) -> String {
    let owner = if layout(bmc.flavor.kind).under_manager { bmc.manager_path() } else { bmc.system_path() };
    format!("{owner}/VirtualMedia")
}

/// Whether the System (`false`: the Manager) carries the collection link.
pub(super) fn under_system(bmc: &RedfishBmc) -> bool {
    !layout(bmc.flavor.kind).under_manager
}

fn slot_of(bmc: &RedfishBmc, id: &str) -> Option<SlotKind> {
    let l = layout(bmc.flavor.kind);
    if id == l.cd {
        Some(SlotKind::Cd)
    } else if id == l.usb {
        Some(SlotKind::Usb)
    } else {
        None
    }
}

fn member(bmc: &RedfishBmc, kind: SlotKind) -> Value {
    let l = layout(bmc.flavor.kind);
    let (id, name, types) = match kind {
        SlotKind::Cd => (l.cd, "Virtual CD", json!(["CD", "DVD"])),
        SlotKind::Usb => (l.usb, "Virtual Removable Media", json!(["USBStick"])),
    };
    let path = format!("{}/{id}", collection_path(bmc));
    let s = bmc.host.media().slot(kind);
    let image_name = s.image.as_deref().map(|i| i.rsplit('/').next().unwrap_or(i).to_owned());
    let mut insert = json!({ "target": format!("{path}/Actions/VirtualMedia.InsertMedia") });
    let mut v = json!({
        "@odata.id": path,
        "@odata.type": "#VirtualMedia.v1_6_0.VirtualMedia",
        "Id": id,
        "Name": name,
        "MediaTypes": types,
        "Image": s.image,
        "ImageName": image_name,
        "Inserted": s.image.is_some(),
        "WriteProtected": s.write_protected,
        "ConnectedVia": if s.image.is_some() { "URI" } else { "NotConnected" },
        "Actions": {
            "#VirtualMedia.EjectMedia": { "target": format!("{path}/Actions/VirtualMedia.EjectMedia") },
        },
    });
    if let Some(m) = &s.mount {
        v["Oem"] = json!({ "Lifeline": { "Mount": match m {
            Ok(m) => json!({ "Size": m.size, "RangeRequests": m.ranges, "BytesRead": m.bytes, "VolumeId": m.volume_id }),
            Err(e) => json!({ "Error": e }),
        } } });
    }
    if let Some(p) = l.protocols {
        insert["TransferProtocolType@Redfish.AllowableValues"] = json!(p);
        v["TransferProtocolType"] = json!(s.protocol);
        v["UserName"] = json!(s.user);
    }
    v["Actions"]["#VirtualMedia.InsertMedia"] = insert;
    v
}

/// Routes `…/VirtualMedia` and below (`tail` after it).
pub(super) fn route(bmc: &RedfishBmc, method: &Method, path: &str, tail: &[&str], body: &Bytes) -> Response {
    let l = layout(bmc.flavor.kind);
    match tail {
        [] if *method == Method::GET => ok(collection(
            &collection_path(bmc),
            "VirtualMediaCollection",
            "Virtual Media Services",
            vec![format!("{}/{}", collection_path(bmc), l.cd), format!("{}/{}", collection_path(bmc), l.usb)],
        )),
        [] => method_not_allowed("GET"),
        [id] => match (slot_of(bmc, id), method) {
            (Some(k), &Method::GET) => ok(member(bmc, k)),
            (Some(_), _) => method_not_allowed("GET"),
            (None, _) => not_found(path),
        },
        [id, "Actions", action] => {
            let Some(k) = slot_of(bmc, id) else { return not_found(path) };
            if *method != Method::POST {
                return method_not_allowed("POST");
            }
            match *action {
                "VirtualMedia.InsertMedia" => insert(bmc, &l, k, body),
                "VirtualMedia.EjectMedia" => match bmc.host.media().eject(k) {
                    Ok(()) => no_content(),
                    Err(_) => error(
                        StatusCode::BAD_REQUEST,
                        "ActionNotSupported",
                        "The action EjectMedia is not supported: no media is inserted.",
                        &["EjectMedia"],
                    ),
                },
                _ => not_found(path),
            }
        }
        _ => not_found(path),
    }
}

fn insert(bmc: &RedfishBmc, l: &Layout, k: SlotKind, body: &Bytes) -> Response {
    let m = match parse_json(body) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let Some(image) = m.get("Image").and_then(Value::as_str).filter(|i| !i.is_empty()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "ActionParameterMissing",
            "The action InsertMedia requires the parameter Image to be present in the request body.",
            &["InsertMedia", "Image"],
        );
    };
    let protocol = m.get("TransferProtocolType").and_then(Value::as_str).map(str::to_owned);
    if let Some(p) = &protocol {
        match l.protocols {
            None => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "ActionParameterUnknown",
                    "The action InsertMedia was submitted with the invalid parameter TransferProtocolType.",
                    &["InsertMedia", "TransferProtocolType"],
                );
            }
            Some(list) if !list.contains(&p.as_str()) => return param_not_in_list(p, "TransferProtocolType"),
            Some(_) => {}
        }
    }
    let scheme = image.split_once("://").map(|(s, _)| s.to_ascii_uppercase()).unwrap_or_default();
    let scheme = if scheme == "SMB" { "CIFS".to_owned() } else { scheme };
    if let Some(list) = l.protocols
        && !list.contains(&scheme.as_str())
    {
        return param_not_in_list(image, "Image");
    }
    let wp = m.get("WriteProtected").and_then(Value::as_bool).unwrap_or(true);
    let user = m.get("UserName").and_then(Value::as_str).filter(|u| !u.is_empty()).map(str::to_owned);
    match bmc.host.media().insert(k, image, wp, protocol, user) {
        Ok(()) => {
            // The BMC mounts the image after answering (as bmcweb and iDRAC do): ranges over HTTP(S).
            if image.starts_with("http://") || image.starts_with("https://") {
                let (host, image, n) = (bmc.host.clone(), image.to_owned(), bmc.host.media().slot(k).inserts);
                let from = bmc.addr;
                tokio::spawn(async move {
                    let m = crate::media_mount::mount(&image, from).await;
                    tracing::info!(image = %image, mount = ?m, "virtual media mounted");
                    host.media().mounted(k, n, m);
                });
            }
            no_content()
        }
        Err(TrayError::Occupied(i)) => error(
            StatusCode::CONFLICT,
            "ResourceInUse",
            &format!("The change to the requested resource failed because the resource is in use: {i}."),
            &[],
        ),
        Err(TrayError::Empty) => no_content(),
    }
}
