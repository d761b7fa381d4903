//! The Redfish resource tree of one BMC, rendered from the host's live state on every GET.
//!
//! Schema versions are ones present in the DMTF 2025.4 bundle, and every link points at a resource that
//! exists, so the DMTF Service Validator can walk the whole tree.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use lifeline_types::{Health, PowerState};
use serde_json::{Map, Value, json};

use super::flavor::PowerLayout;
use super::logs::{Owner, collection_path, has_logs};
use super::{RedfishBmc, error, events, json_response, lock};
use crate::actions::Origin;
use crate::host::{BOOT_TARGETS, BootOverride, HostError, PowerCommand, PowerOutcome};
use crate::sensors::Sensor;

pub(super) fn link(path: &str) -> Value {
    json!({ "@odata.id": path })
}

pub(super) fn health(h: Health) -> &'static str {
    match h {
        Health::Ok | Health::Unknown => "OK",
        Health::Warning => "Warning",
        Health::Critical => "Critical",
    }
}

pub(super) fn collection(path: &str, ty: &str, name: &str, members: Vec<String>) -> Value {
    json!({
        "@odata.id": path,
        "@odata.type": format!("#{ty}.{ty}"),
        "Name": name,
        "Members": members.iter().map(|m| link(m)).collect::<Vec<_>>(),
        "Members@odata.count": members.len(),
    })
}

pub(super) fn ok(v: Value) -> Response {
    json_response(StatusCode::OK, v)
}

pub(super) fn not_found(path: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "ResourceNotFound",
        &format!("The requested resource of type Resource named '{path}' was not found."),
        &["Resource", path],
    )
}

pub(super) fn method_not_allowed(allow: &'static str) -> Response {
    let mut r = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "OperationNotAllowed",
        "The HTTP method is not allowed on this resource.",
        &[],
    );
    r.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
    r
}

pub(super) fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

pub(super) fn parse_json(body: &Bytes) -> Result<Map<String, Value>, Response> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(error(
            StatusCode::BAD_REQUEST,
            "MalformedJSON",
            "The request body submitted was malformed JSON and could not be parsed by the receiving service.",
            &[],
        )),
    }
}

/// Routes one request. `path` has no trailing slash and no query.
pub(super) async fn dispatch(
    bmc: &Arc<RedfishBmc>,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: &Bytes,
    origin: &Origin,
) -> Response {
    let f = bmc.flavor;
    if path == "/redfish" {
        return get_only(method, || ok(json!({ "v1": "/redfish/v1/" })));
    }
    let Some(rest) = path.strip_prefix("/redfish/v1") else { return not_found(path) };
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        [] => get_only(method, || ok(service_root(bmc))),
        ["odata"] => get_only(method, || ok(odata_document())),
        ["$metadata"] => get_only(method, metadata),
        ["SessionService"] => get_only(method, || ok(super::sessions::session_service(bmc))),
        ["SessionService", "Sessions"] => match *method {
            Method::GET => ok(super::sessions::session_collection(bmc)),
            Method::POST => super::sessions::create_session(bmc, body),
            _ => method_not_allowed("GET, POST"),
        },
        // DSP0266 allows login on the collection's Members too (bmcweb and iLO accept it).
        ["SessionService", "Sessions", "Members"] if *method == Method::POST => {
            super::sessions::create_session(bmc, body)
        }
        ["SessionService", "Sessions", id] => match *method {
            Method::GET => super::sessions::session_member(bmc, id).unwrap_or_else(|| not_found(path)),
            Method::DELETE => {
                let mut s = bmc.sessions();
                let before = s.list.len();
                s.list.retain(|x| x.id != *id);
                if s.list.len() < before { no_content() } else { not_found(path) }
            }
            _ => method_not_allowed("GET, DELETE"),
        },
        ["AccountService"] => get_only(method, || ok(super::accounts::service())),
        ["AccountService", "Accounts"] => get_only(method, || ok(super::accounts::accounts(bmc))),
        ["AccountService", "Accounts", id] => super::accounts::member(bmc, method, id, headers, body, origin),
        ["AccountService", "Roles"] => get_only(method, || ok(super::accounts::roles())),
        ["AccountService", "Roles", id] => {
            get_only(method, || super::accounts::role(id).map_or_else(|| not_found(path), ok))
        }
        ["Systems"] => get_only(method, || {
            ok(collection(
                "/redfish/v1/Systems",
                "ComputerSystemCollection",
                "Computer System Collection",
                vec![bmc.system_path()],
            ))
        }),
        ["Systems", id] if *id == f.system_id => {
            let etag = super::bmcops::system_etag(&bmc.host.boot_override());
            match *method {
                Method::GET => super::bmcops::with_etag(ok(system(bmc)), &etag),
                Method::PATCH => {
                    super::bmcops::precondition(headers, &etag).unwrap_or_else(|| patch_system(bmc, body))
                }
                _ => method_not_allowed("GET, PATCH"),
            }
        }
        ["UpdateService"] => get_only(method, || ok(super::update::service(bmc))),
        ["UpdateService", "FirmwareInventory"] => {
            get_only(method, || ok(super::update::firmware_inventory(bmc)))
        }
        ["UpdateService", "FirmwareInventory", id] => {
            get_only(method, || super::update::firmware_item(bmc, id).map_or_else(|| not_found(path), ok))
        }
        ["UpdateService", "Actions", "UpdateService.SimpleUpdate"] => {
            super::update::simple_update(bmc, method, body, origin)
        }
        ["TaskService", tail @ ..] => super::update::tasks(bmc, method, path, tail),
        ["Managers", id, "EthernetInterfaces"] if *id == f.manager_id => {
            get_only(method, || ok(super::bmcops::interfaces(bmc)))
        }
        ["Managers", id, "EthernetInterfaces", nic] if *id == f.manager_id => {
            get_only(method, || super::bmcops::interface(bmc, nic).map_or_else(|| not_found(path), ok))
        }
        ["Systems", id, "Bios", tail @ ..] if *id == f.system_id => {
            super::bios::route(bmc, method, path, tail, body)
        }
        ["Systems", id, "VirtualMedia", tail @ ..]
            if *id == f.system_id && super::vmedia::under_system(bmc) =>
        {
            super::vmedia::route(bmc, method, path, tail, body)
        }
        ["Managers", id, "VirtualMedia", tail @ ..]
            if *id == f.manager_id && !super::vmedia::under_system(bmc) =>
        {
            super::vmedia::route(bmc, method, path, tail, body)
        }
        ["Systems", id, "Actions", "ComputerSystem.Reset"] if *id == f.system_id => {
            if *method != Method::POST {
                return method_not_allowed("POST");
            }
            reset_system(bmc, body, origin)
        }
        ["Systems", id, "LogServices", tail @ ..] if *id == f.system_id && has_logs(bmc, Owner::System) => {
            super::logs::route(bmc, Owner::System, method, path, tail, origin)
        }
        ["Managers", id, "LogServices", tail @ ..]
            if *id == f.manager_id && has_logs(bmc, Owner::Manager) =>
        {
            super::logs::route(bmc, Owner::Manager, method, path, tail, origin)
        }
        ["Chassis"] => get_only(method, || {
            ok(collection(
                "/redfish/v1/Chassis",
                "ChassisCollection",
                "Chassis Collection",
                vec![bmc.chassis_path()],
            ))
        }),
        ["Chassis", id] if *id == f.chassis_id => get_only(method, || ok(super::chassis::chassis(bmc))),
        ["Chassis", id, "Thermal"] if *id == f.chassis_id => {
            get_only(method, || ok(super::chassis::thermal(bmc)))
        }
        ["Chassis", id, "Power"] if *id == f.chassis_id && f.power == PowerLayout::Legacy => {
            get_only(method, || ok(super::chassis::power(bmc)))
        }
        ["Chassis", id, "PowerSubsystem", rest @ ..]
            if *id == f.chassis_id && f.power == PowerLayout::SubsystemOnly =>
        {
            get_only(method, || match rest {
                [] => ok(super::chassis::power_subsystem(bmc)),
                ["PowerSupplies"] => ok(super::chassis::power_supplies(bmc)),
                ["PowerSupplies", n] => {
                    super::chassis::power_supply(bmc, n).map_or_else(|| not_found(path), ok)
                }
                _ => not_found(path),
            })
        }
        ["Chassis", id, "Sensors"] if *id == f.chassis_id => get_only(method, || {
            let base = format!("{}/Sensors", bmc.chassis_path());
            let members = bmc.host.sensors().iter().map(|s| format!("{base}/{}", s.id)).collect();
            ok(collection(&base, "SensorCollection", "Sensors", members))
        }),
        ["Chassis", id, "Sensors", sid] if *id == f.chassis_id => {
            get_only(method, || match bmc.host.sensors().iter().find(|s| s.id == *sid) {
                Some(s) => ok(super::chassis::sensor(bmc, s)),
                None => not_found(path),
            })
        }
        ["Managers"] => get_only(method, || {
            ok(collection(
                "/redfish/v1/Managers",
                "ManagerCollection",
                "Manager Collection",
                vec![bmc.manager_path()],
            ))
        }),
        ["Managers", id] if *id == f.manager_id => get_only(method, || ok(manager(bmc))),
        ["Managers", id, "Actions", "Manager.Reset"] if *id == f.manager_id => {
            if *method != Method::POST {
                return method_not_allowed("POST");
            }
            let m = match parse_json(body) {
                Ok(m) => m,
                Err(r) => return r,
            };
            match m.get("ResetType").and_then(Value::as_str) {
                Some("GracefulRestart" | "ForceRestart") | None => {
                    bmc.host.reset_bmc_by(origin);
                    no_content()
                }
                Some(other) => param_not_in_list(other, "ResetType"),
            }
        }
        ["EventService", tail @ ..] => events::route(bmc, method, path, tail, headers, body).await,
        _ => not_found(path),
    }
}

pub(super) fn get_only(method: &Method, f: impl FnOnce() -> Response) -> Response {
    if *method == Method::GET || *method == Method::HEAD { f() } else { method_not_allowed("GET") }
}

pub(super) fn param_not_in_list(value: &str, prop: &str) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "ActionParameterValueNotInList",
        &format!(
            "The value '{value}' for the parameter {prop} in the action is not in the list of acceptable values."
        ),
        &[value, prop],
    )
}

pub(super) fn service_root(bmc: &RedfishBmc) -> Value {
    let f = bmc.flavor;
    json!({
        "@odata.id": "/redfish/v1",
        "@odata.type": "#ServiceRoot.v1_17_0.ServiceRoot",
        "Id": "RootService",
        "Name": "Root Service",
        "RedfishVersion": f.redfish_version,
        "UUID": bmc.host.bmc_config().identity.uuid,
        "Vendor": f.vendor,
        "Product": f.product,
        "Systems": link("/redfish/v1/Systems"),
        "Chassis": link("/redfish/v1/Chassis"),
        "Managers": link("/redfish/v1/Managers"),
        "SessionService": link("/redfish/v1/SessionService"),
        "AccountService": link("/redfish/v1/AccountService"),
        "EventService": link("/redfish/v1/EventService"),
        "UpdateService": link("/redfish/v1/UpdateService"),
        "Links": { "Sessions": link("/redfish/v1/SessionService/Sessions") },
        "ProtocolFeaturesSupported": {
            "ExpandQuery": expand_query(f.expand),
            "FilterQuery": false,
            "SelectQuery": true,
            "OnlyMemberQuery": true,
            "ExcerptQuery": false,
            "TopSkipQuery": true
        }
    })
}

/// `MaxLevels` has a schema minimum of 1: a BMC without `$expand` leaves it out (the DMTF validator fails 0).
fn expand_query(supported: bool) -> Value {
    let mut q = json!({ "ExpandAll": supported, "Levels": supported, "Links": false, "NoLinks": supported });
    if supported {
        q["MaxLevels"] = json!(1);
    }
    q
}

pub(super) fn odata_document() -> Value {
    let names = [
        ("Systems", "/redfish/v1/Systems"),
        ("Chassis", "/redfish/v1/Chassis"),
        ("Managers", "/redfish/v1/Managers"),
        ("SessionService", "/redfish/v1/SessionService"),
        ("AccountService", "/redfish/v1/AccountService"),
        ("EventService", "/redfish/v1/EventService"),
    ];
    let mut value = vec![json!({"name": "Service", "kind": "Singleton", "url": "/redfish/v1/"})];
    value.extend(names.iter().map(|(n, u)| json!({"name": n, "kind": "Singleton", "url": u})));
    json!({ "@odata.context": "/redfish/v1/$metadata", "value": value })
}

/// The schemas (and a version namespace of each) this service uses.
const SCHEMAS: &[(&str, &str)] = &[
    ("ServiceRoot", "v1_17_0"),
    ("SessionService", "v1_1_8"),
    ("Session", "v1_6_0"),
    ("SessionCollection", ""),
    ("AccountService", "v1_15_0"),
    ("ManagerAccount", "v1_12_0"),
    ("ManagerAccountCollection", ""),
    ("Role", "v1_3_2"),
    ("RoleCollection", ""),
    ("ComputerSystem", "v1_20_0"),
    ("ComputerSystemCollection", ""),
    ("Chassis", "v1_22_0"),
    ("ChassisCollection", ""),
    ("Manager", "v1_17_0"),
    ("ManagerCollection", ""),
    ("LogService", "v1_4_0"),
    ("LogServiceCollection", ""),
    ("LogEntry", "v1_15_0"),
    ("LogEntryCollection", ""),
    ("Thermal", "v1_7_1"),
    ("Power", "v1_7_1"),
    ("PowerSubsystem", "v1_1_0"),
    ("PowerSupply", "v1_5_0"),
    ("PowerSupplyCollection", ""),
    ("Redundancy", ""),
    ("Sensor", "v1_7_0"),
    ("SensorCollection", ""),
    ("EventService", "v1_10_0"),
    ("EventDestination", "v1_13_0"),
    ("EventDestinationCollection", ""),
    ("Event", "v1_7_0"),
    ("Message", "v1_1_1"),
    ("VirtualMedia", "v1_6_0"),
    ("Bios", "v1_2_0"),
    ("Settings", "v1_3_5"),
    ("VirtualMediaCollection", ""),
    ("Resource", "v1_14_0"),
];

pub(super) fn metadata() -> Response {
    let mut x = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <edmx:Edmx xmlns:edmx=\"http://docs.oasis-open.org/odata/ns/edmx\" Version=\"4.0\">\n",
    );
    for (schema, ver) in SCHEMAS {
        x.push_str(&format!(
            "  <edmx:Reference Uri=\"http://redfish.dmtf.org/schemas/v1/{schema}_v1.xml\">\n    \
             <edmx:Include Namespace=\"{schema}\"/>\n"
        ));
        if !ver.is_empty() {
            x.push_str(&format!("    <edmx:Include Namespace=\"{schema}.{ver}\"/>\n"));
        }
        x.push_str("  </edmx:Reference>\n");
    }
    x.push_str(
        "  <edmx:DataServices>\n    <Schema xmlns=\"http://docs.oasis-open.org/odata/ns/edm\" Namespace=\"Service\">\n      \
         <EntityContainer Name=\"Service\" Extends=\"ServiceRoot.v1_17_0.ServiceContainer\"/>\n    </Schema>\n  \
         </edmx:DataServices>\n</edmx:Edmx>\n",
    );
    let mut r = (StatusCode::OK, x).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/xml"));
    r
}

pub(super) fn power_state_str(p: PowerState) -> &'static str {
    match p {
        PowerState::On => "On",
        PowerState::Off => "Off",
        PowerState::PoweringOn => "PoweringOn",
        PowerState::PoweringOff => "PoweringOff",
        PowerState::Unknown => "Off",
    }
}

pub(super) fn rollup(sensors: &[Sensor]) -> Health {
    sensors.iter().fold(Health::Ok, |h, s| h.worst(s.health))
}

fn system(bmc: &RedfishBmc) -> Value {
    let h = &bmc.host;
    let id = &h.bmc_config().identity;
    let boot = h.boot_override();
    let node = h.node_state();
    let sensors = h.sensors();
    let path = bmc.system_path();
    let mut v = json!({
        "@odata.id": path,
        "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
        "Id": bmc.flavor.system_id,
        "Name": h.name(),
        "HostName": h.name(),
        "SystemType": "Physical",
        "Manufacturer": id.manufacturer,
        "Model": id.model,
        "SerialNumber": id.serial,
        "UUID": id.uuid,
        "BiosVersion": bmc.host.firmware_version("BIOS").unwrap_or_else(|| id.bios_version.clone()),
        "PowerState": power_state_str(h.power_state()),
        "LastResetTime": h.last_reset().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "Status": { "State": "Enabled", "Health": health(rollup(&sensors)) },
        "@odata.etag": super::bmcops::system_etag(&boot),
        "ProcessorSummary": { "Count": 2, "Model": "Intel(R) Xeon(R) Platinum 8480+" },
        "MemorySummary": { "TotalSystemMemoryGiB": 2048 },
        "Boot": {
            "BootSourceOverrideEnabled": boot.enabled,
            "BootSourceOverrideTarget": boot.target,
            "BootSourceOverrideMode": boot.mode,
            "BootSourceOverrideTarget@Redfish.AllowableValues": BOOT_TARGETS,
        },
        "Actions": {
            "#ComputerSystem.Reset": {
                "target": format!("{path}/Actions/ComputerSystem.Reset"),
                "ResetType@Redfish.AllowableValues": bmc.flavor.resets,
            }
        },
        "Links": {
            "Chassis": [link(&bmc.chassis_path())],
            "ManagedBy": [link(&bmc.manager_path())],
        },
        "Description": format!("{} GPUs, {} rails", node.gpus.len(), node.rails.len()),
        "BootProgress": boot_progress(h.phase()),
    });
    if has_logs(bmc, Owner::System) {
        v["LogServices"] = link(&collection_path(bmc, Owner::System));
    }
    v["Bios"] = link(&super::bios::path(bmc));
    if super::vmedia::under_system(bmc) {
        v["VirtualMedia"] = link(&super::vmedia::collection_path(bmc));
    }
    if bmc.flavor.health_rollup {
        // The chassis' sensors (fans, PSUs, GPUs) are the system's dependents, and its own Health already
        // rolls them up: the same value.
        v["Status"]["HealthRollup"] = v["Status"]["Health"].clone();
    }
    v
}

/// `BootProgress` (ComputerSystem v1_13+) from the boot phase, as a BMC sees it: it tracks firmware and
/// the hand-over to the OS, and keeps saying `OSRunning` after the OS hangs or crashes (it cannot tell),
/// which is why a boot wait never trusts it alone.
fn boot_progress(phase: crate::host::Phase) -> Value {
    use crate::host::Phase;
    let last = match phase {
        Phase::Off => "None",
        Phase::Post => "PCIResourceConfigStarted",
        Phase::Bootloader => "SystemHardwareInitializationComplete",
        Phase::Kernel => "OSBootStarted",
        Phase::OsUp | Phase::ShuttingDown | Phase::Halted => "OSRunning",
    };
    json!({ "LastState": last })
}

fn patch_system(bmc: &RedfishBmc, body: &Bytes) -> Response {
    let m = match parse_json(body) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let Some(Value::Object(boot)) = m.get("Boot") else {
        return error(
            StatusCode::BAD_REQUEST,
            "PropertyNotWritable",
            "Only the Boot property of this resource can be changed.",
            &[],
        );
    };
    let mut o: BootOverride = bmc.host.boot_override();
    if bmc.flavor.boot_patch_needs_enabled
        && boot.contains_key("BootSourceOverrideTarget")
        && !boot.contains_key("BootSourceOverrideEnabled")
    {
        return error(
            StatusCode::BAD_REQUEST,
            "PropertyMissing",
            "The property BootSourceOverrideEnabled is a required property and must be included in the request.",
            &["BootSourceOverrideEnabled"],
        );
    }
    if let Some(t) = boot.get("BootSourceOverrideTarget") {
        let t = t.as_str().unwrap_or_default();
        match BOOT_TARGETS.iter().find(|x| **x == t) {
            Some(x) => o.target = x,
            None => return prop_not_in_list(t, "BootSourceOverrideTarget"),
        }
        // Setting a target without saying for how long means "once" on most BMCs.
        if !boot.contains_key("BootSourceOverrideEnabled") && o.enabled == "Disabled" && t != "None" {
            o.enabled = "Once";
        }
    }
    if let Some(e) = boot.get("BootSourceOverrideEnabled") {
        let e = e.as_str().unwrap_or_default();
        match ["Disabled", "Once", "Continuous"].iter().find(|x| **x == e) {
            Some(x) => o.enabled = x,
            None => return prop_not_in_list(e, "BootSourceOverrideEnabled"),
        }
    }
    if let Some(mo) = boot.get("BootSourceOverrideMode") {
        let mo = mo.as_str().unwrap_or_default();
        match ["UEFI", "Legacy"].iter().find(|x| **x == mo) {
            Some(x) => o.mode = x,
            None => return prop_not_in_list(mo, "BootSourceOverrideMode"),
        }
    }
    bmc.host.set_boot_override(o);
    no_content()
}

fn prop_not_in_list(value: &str, prop: &str) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "PropertyValueNotInList",
        &format!("The value '{value}' for the property {prop} is not in the list of acceptable values."),
        &[value, prop],
    )
}

/// The host power command a Redfish `ResetType` names.
pub(super) fn power_command(rt: &str) -> Option<PowerCommand> {
    Some(match rt {
        "On" => PowerCommand::On,
        "ForceOn" => PowerCommand::ForceOn,
        "ForceOff" => PowerCommand::ForceOff,
        "GracefulShutdown" => PowerCommand::GracefulShutdown,
        "GracefulRestart" => PowerCommand::GracefulRestart,
        "ForceRestart" => PowerCommand::ForceRestart,
        "PowerCycle" => PowerCommand::PowerCycle,
        "Nmi" => PowerCommand::Nmi,
        "PushPowerButton" => PowerCommand::PushPowerButton,
        _ => return None,
    })
}

/// A reset's outcome as a BMC answers it.
pub(super) fn reset_outcome(rt: &str, r: Result<PowerOutcome, HostError>) -> Response {
    match r {
        Ok(PowerOutcome::Started | PowerOutcome::NoChange) => no_content(),
        Err(HostError::NotPoweredOn { .. }) => error(
            StatusCode::CONFLICT,
            "ActionNotSupported",
            &format!("The action {rt} is not supported while the system is powered off."),
            &[rt],
        ),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, "GeneralError", &e.to_string(), &[]),
    }
}

/// `ComputerSystem.Reset` without its `ResetType`.
pub(super) fn reset_type_missing() -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "ActionParameterMissing",
        "The action ComputerSystem.Reset requires the parameter ResetType to be present in the request body.",
        &["ComputerSystem.Reset", "ResetType"],
    )
}

fn reset_system(bmc: &RedfishBmc, body: &Bytes, origin: &Origin) -> Response {
    let m = match parse_json(body) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let Some(rt) = m.get("ResetType").and_then(Value::as_str) else { return reset_type_missing() };
    if !bmc.flavor.resets.contains(&rt) {
        return param_not_in_list(rt, "ResetType");
    }
    let Some(cmd) = power_command(rt) else { return param_not_in_list(rt, "ResetType") };
    if bmc.flavor.on_while_on_conflict && cmd == PowerCommand::On && bmc.host.power_state() == PowerState::On
    {
        return error(
            StatusCode::CONFLICT,
            "ResourceInStandby",
            "Unable to perform the reset operation because the server is already powered on.",
            &[],
        );
    }
    reset_outcome(rt, bmc.host.power_by(cmd, origin))
}

fn manager(bmc: &RedfishBmc) -> Value {
    let h = &bmc.host;
    let id = &h.bmc_config().identity;
    let path = bmc.manager_path();
    let mut v = json!({
        "@odata.id": path,
        "@odata.type": "#Manager.v1_17_0.Manager",
        "Id": bmc.flavor.manager_id,
        "Name": "Manager",
        "ManagerType": "BMC",
        "Manufacturer": id.manufacturer,
        "Model": id.model,
        "FirmwareVersion": bmc.host.firmware_version("BMC").unwrap_or_else(|| id.bmc_firmware.clone()),
        "UUID": id.uuid,
        "PowerState": "On",
        "Status": { "State": "Enabled", "Health": "OK" },
        "SerialConsole": {
            "ServiceEnabled": true,
            "MaxConcurrentSessions": 1,
            "ConnectTypesSupported": ["IPMI"],
        },
        "EthernetInterfaces": link(&format!("{path}/EthernetInterfaces")),
        "Actions": {
            "#Manager.Reset": {
                "target": format!("{path}/Actions/Manager.Reset"),
                "ResetType@Redfish.AllowableValues": ["GracefulRestart", "ForceRestart"],
            }
        },
        "Links": {
            "ManagerForServers": [link(&bmc.system_path())],
            "ManagerForChassis": [link(&bmc.chassis_path())],
        },
    });
    if has_logs(bmc, Owner::Manager) {
        v["LogServices"] = link(&collection_path(bmc, Owner::Manager));
    }
    if !super::vmedia::under_system(bmc) {
        v["VirtualMedia"] = link(&super::vmedia::collection_path(bmc));
    }
    v
}

/// Subscriptions live in [`events`]; exposed for it.
pub(super) fn subscriptions_lock(bmc: &RedfishBmc) -> std::sync::MutexGuard<'_, events::Subscriptions> {
    let mut s = lock(&bmc.events.subs);
    s.after_reset(bmc.host.bmc().reset_generation());
    s
}
