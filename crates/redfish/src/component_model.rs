//! Parts below the system, read leniently: drives, storage controllers, processors (GPUs among them),
//! memory, the Manager itself, firmware items, and the conditions any of them carry (`Status.Conditions`,
//! `/redfish/v1/ServiceConditions`).
//!
//! Why: a system or chassis rollup of `Warning` says something is wrong, not what. The part that is wrong
//! (a drive `UnavailableOffline`, a Smart Array rollup `Critical`, a GPU whose driver reported XID 62) is in
//! the tree, and an operator deciding whether to power-cycle a node must see it by name. Pure functions over
//! documents, so the simulator and the tests share them; the client walks the links (`client::components`).

use serde::Serialize;
use serde_json::Value;

use lifeline_types::Health;

use crate::doc::{FieldWarning, Fields};
use crate::model::Status;

/// What kind of part a [`Component`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ComponentKind {
    Storage,
    StorageController,
    Drive,
    Processor,
    Gpu,
    Memory,
    Manager,
    Firmware,
}

impl std::fmt::Display for ComponentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            ComponentKind::Storage => "storage",
            ComponentKind::StorageController => "storage controller",
            ComponentKind::Drive => "drive",
            ComponentKind::Processor => "processor",
            ComponentKind::Gpu => "GPU",
            ComponentKind::Memory => "memory",
            ComponentKind::Manager => "manager",
            ComponentKind::Firmware => "firmware",
        };
        f.write_str(s)
    }
}

/// A GPU driver condition as NVIDIA reports it out of band: an XID (GPU) or SXID (NVSwitch) number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct GpuDriverEvent {
    /// `XID` or `SXID`.
    pub kind: String,
    pub number: u32,
}

/// One `Status.Conditions` member (or a `ServiceConditions` one): a fault the service knows of now.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Condition {
    /// `OriginOfCondition`, else the resource whose status carried it.
    pub origin: String,
    pub severity: Option<Health>,
    pub message_id: Option<String>,
    pub message: Option<String>,
    pub timestamp: Option<String>,
    /// The condition is a GPU driver event (XID / SXID).
    pub gpu_event: Option<GpuDriverEvent>,
}

/// GPU details a Processor of `ProcessorType: GPU` carries (and its metrics, when read).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct GpuDetail {
    pub manufacturer: Option<String>,
    pub model: Option<String>,
    pub serial_number: Option<String>,
    pub firmware_version: Option<String>,
    /// `ProcessorMetrics` link, when the BMC publishes one.
    pub metrics: Option<String>,
    /// ECC error counts from `ProcessorMetrics` (`CacheMetricsTotal.LifeTime`) or the GPU's memory metrics.
    pub ecc_correctable: Option<i64>,
    pub ecc_uncorrectable: Option<i64>,
    /// Temperature from the metrics (`TemperatureCelsius`), when given.
    pub temperature_celsius: Option<f64>,
    /// The GPU's own chassis (`Links.Chassis`): NVIDIA's HGX firmware names it as the origin of the
    /// driver events it logs (`Chassis/HGX_GPU_0` for the processor `GPU_0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chassis: Option<String>,
}

/// A part below the system, with its own status.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Component {
    pub kind: ComponentKind,
    pub odata_id: String,
    pub id: Option<String>,
    pub name: Option<String>,
    pub model: Option<String>,
    pub status: Status,
    pub conditions: Vec<Condition>,
    /// Set for GPUs.
    pub gpu: Option<GpuDetail>,
}

impl Component {
    /// Whether the part is there and in service: `Absent` slots, `Disabled` parts and parts on standby are
    /// not failures whatever their health field says (Supermicro and iLO report empty slots with a health).
    pub fn in_service(&self) -> bool {
        in_service(self.status.state.as_deref())
    }

    /// The part's health as its status reports it (`HealthRollup` for containers, else `Health`).
    pub fn health(&self) -> Option<Health> {
        self.status.overall()
    }

    /// What an operator reads: the name, else the id, else the path. A name that is only the resource's
    /// type (NVIDIA's HGX/GB firmware names every GPU and CPU `Processor`) tells no part from the next, so
    /// the id (`GPU_0`) is used instead.
    pub fn label(&self) -> String {
        let given = |s: &Option<String>| s.clone().filter(|s| !s.trim().is_empty());
        let name = given(&self.name).filter(|n| !generic_name(n) || given(&self.id).is_none());
        name.or_else(|| given(&self.id)).unwrap_or_else(|| self.odata_id.clone())
    }
}

/// A `Name` that is the Redfish schema's name and nothing more.
fn generic_name(name: &str) -> bool {
    const SCHEMAS: [&str; 8] = [
        "processor",
        "memory",
        "drive",
        "storage",
        "storage controller",
        "manager",
        "pcie device",
        "network adapter",
    ];
    SCHEMAS.contains(&name.trim().to_ascii_lowercase().as_str())
}

/// Whether a `Status.State` is a part in service (`None`: not said, taken as in service).
pub fn in_service(state: Option<&str>) -> bool {
    !matches!(
        state.map(str::to_ascii_lowercase).as_deref(),
        Some("absent" | "disabled" | "standbyoffline" | "standbyspare")
    )
}

/// A part from its document. `kind` is what the collection holds; a Processor of `ProcessorType: GPU`
/// becomes [`ComponentKind::Gpu`].
pub fn component_from_value(
    kind: ComponentKind,
    v: &Value,
    at: &str,
    warnings: &mut Vec<FieldWarning>,
) -> Component {
    let mut f = Fields::new(v, at, warnings);
    let status = Status::read(&mut f);
    let odata_id = crate::model::odata_id(&mut f, at);
    let is_gpu = kind == ComponentKind::Processor
        && f.str("ProcessorType").is_some_and(|t| t.eq_ignore_ascii_case("GPU"));
    let model = f.str("Model");
    let gpu = is_gpu.then(|| GpuDetail {
        manufacturer: f.str("Manufacturer"),
        model: model.clone(),
        serial_number: f.str("SerialNumber"),
        firmware_version: f.str("FirmwareVersion"),
        metrics: f.link("Metrics"),
        chassis: f.sub("Links").and_then(|mut l| l.link("Chassis")),
        ..GpuDetail::default()
    });
    let conditions = conditions_of(v, &odata_id);
    Component {
        kind: if is_gpu { ComponentKind::Gpu } else { kind },
        id: f.str("Id"),
        name: f.str("Name"),
        model,
        status,
        conditions,
        gpu,
        odata_id,
    }
}

/// An iLO `HpeServerDevice` (`Chassis/{id}/Devices/{n}`) of `DeviceType: GPU` as a GPU component: iLO 5
/// lists an HGX board's GPUs, NVSwitches and the baseboard there, not as Processors. `None` for other
/// devices (their health is the storage's, the adapters' own).
pub fn hpe_gpu_device(v: &Value, at: &str, warnings: &mut Vec<FieldWarning>) -> Option<Component> {
    if v.get("DeviceType").and_then(Value::as_str) != Some("GPU") {
        return None;
    }
    let mut c = component_from_value(ComponentKind::Gpu, v, at, warnings);
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
    c.gpu = Some(GpuDetail {
        manufacturer: s("/Manufacturer"),
        model: s("/Name"),
        serial_number: s("/SerialNumber"),
        firmware_version: s("/FirmwareVersion/Current/VersionString"),
        ..GpuDetail::default()
    });
    if let Some(loc) = s("/Location") {
        c.name = Some(format!("{} ({loc})", c.label()));
    }
    Some(c)
}

/// What a GPU-class part is: an NVSwitch, a GPU baseboard, or a GPU (by its name or model).
pub fn gpu_role(name: &str) -> &'static str {
    let n = name.to_ascii_lowercase().replace([' ', '_', '-'], "");
    if n.contains("nvswitch") {
        "nvswitch"
    } else if n.contains("baseboard") || n.contains("hgx") {
        "baseboard"
    } else {
        "gpu"
    }
}

/// `ProcessorMetrics` into a GPU's detail: ECC counts (`CacheMetricsTotal.LifeTime`, or the HGX
/// `Oem.Nvidia` / `MemoryMetrics`-style names) and temperature, where the BMC gives them.
pub fn apply_gpu_metrics(gpu: &mut GpuDetail, v: &Value) {
    let num = |p: &str| v.pointer(p).and_then(Value::as_i64);
    gpu.ecc_correctable = num("/CacheMetricsTotal/LifeTime/CorrectableECCErrorCount")
        .or_else(|| num("/LifeTime/CorrectableECCErrorCount"))
        .or(gpu.ecc_correctable);
    gpu.ecc_uncorrectable = num("/CacheMetricsTotal/LifeTime/UncorrectableECCErrorCount")
        .or_else(|| num("/LifeTime/UncorrectableECCErrorCount"))
        .or(gpu.ecc_uncorrectable);
    gpu.temperature_celsius = v.get("TemperatureCelsius").and_then(Value::as_f64).or(gpu.temperature_celsius);
}

/// A firmware item (`SoftwareInventory`) whose status is not OK, as a component (`None` when it is OK or
/// says nothing).
pub fn firmware_problem(v: &Value, at: &str, warnings: &mut Vec<FieldWarning>) -> Option<Component> {
    let c = component_from_value(ComponentKind::Firmware, v, at, warnings);
    // An empty or unknown health (HPE Cray firmware items serve `"Health": ""`) says nothing.
    let bad = c.health().is_some_and(|h| matches!(h, Health::Warning | Health::Critical))
        || !c.conditions.is_empty();
    bad.then_some(c)
}

/// The `Status.Conditions` of a document (`origin`: the resource they are on, unless a condition names its
/// own `OriginOfCondition`).
pub fn conditions_of(v: &Value, origin: &str) -> Vec<Condition> {
    match v.pointer("/Status/Conditions") {
        Some(Value::Array(a)) => a.iter().map(|c| condition(c, origin)).collect(),
        _ => Vec::new(),
    }
}

/// `/redfish/v1/ServiceConditions`: its `HealthRollup` and every condition.
pub fn service_conditions(v: &Value) -> (Option<Health>, Vec<Condition>) {
    let rollup = v.get("HealthRollup").and_then(Value::as_str).and_then(crate::doc::parse_health);
    let list = match v.get("Conditions") {
        Some(Value::Array(a)) => a.iter().map(|c| condition(c, "/redfish/v1/ServiceConditions")).collect(),
        _ => Vec::new(),
    };
    (rollup, list)
}

fn condition(c: &Value, origin: &str) -> Condition {
    let s = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_owned);
    let message_id = s("MessageId");
    let message = s("Message");
    Condition {
        origin: c
            .pointer("/OriginOfCondition/@odata.id")
            .and_then(Value::as_str)
            .unwrap_or(origin)
            .to_owned(),
        severity: s("Severity").as_deref().and_then(crate::doc::parse_health),
        gpu_event: gpu_driver_event(message_id.as_deref(), message.as_deref(), c.get("MessageArgs")),
        message_id,
        message,
        timestamp: s("Timestamp"),
    }
}

/// Recognises an NVIDIA GPU driver event in a message: `XID 62`, `Xid (PCI:0000:1b:00): 79`, `SXID 20034`,
/// or a `MessageId` naming one (`...XID`) with the number among its arguments.
pub fn gpu_driver_event(
    message_id: Option<&str>,
    message: Option<&str>,
    args: Option<&Value>,
) -> Option<GpuDriverEvent> {
    let text = message.unwrap_or("");
    if let Some(e) = find_xid(text) {
        return Some(e);
    }
    let id = message_id.unwrap_or("").to_ascii_uppercase();
    let kind = if id.contains("SXID") {
        "SXID"
    } else if id.contains("XID") {
        "XID"
    } else {
        return None;
    };
    let number = args?.as_array()?.iter().find_map(|a| match a {
        Value::String(s) => s.trim().parse::<u32>().ok(),
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        _ => None,
    })?;
    Some(GpuDriverEvent { kind: kind.into(), number })
}

/// The first `XID`/`SXID` word in `text` followed (after punctuation or a parenthesised PCI address) by a
/// number.
fn find_xid(text: &str) -> Option<GpuDriverEvent> {
    let upper = text.to_ascii_uppercase();
    let bytes = upper.as_bytes();
    let mut from = 0;
    while let Some(pos) = upper[from..].find("XID") {
        let at = from + pos;
        from = at + 3;
        let sxid = at > 0 && bytes[at - 1] == b'S';
        let start = if sxid { at - 1 } else { at };
        // A word of its own: not inside another word.
        if start > 0 && bytes[start - 1].is_ascii_alphanumeric() {
            continue;
        }
        let mut rest = &upper[at + 3..];
        rest = rest.trim_start_matches([' ', ':', '=', '#']);
        if rest.starts_with('(') {
            rest = rest.split_once(')').map_or("", |(_, r)| r).trim_start_matches([' ', ':', ',']);
        }
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(number) = digits.parse::<u32>() {
            return Some(GpuDriverEvent { kind: if sxid { "SXID" } else { "XID" }.into(), number });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn xid_and_sxid_are_recognised_in_words_only() {
        let x = |m: &str| find_xid(m).map(|e| (e.kind, e.number));
        assert_eq!(x("GPU 3 reported XID 62"), Some(("XID".into(), 62)));
        assert_eq!(x("NVRM: Xid (PCI:0000:1b:00): 79, pid=1234"), Some(("XID".into(), 79)));
        assert_eq!(x("SXID: 20034 on NVSwitch 2"), Some(("SXID".into(), 20034)));
        assert_eq!(x("a xidiom of 5"), None);
        assert_eq!(x("FLEXID 4"), None);
        let args = json!(["GPU_SXM_3", "62"]);
        let e =
            gpu_driver_event(Some("NvidiaPlatform.1.0.XIDError"), Some("driver error"), Some(&args)).unwrap();
        assert_eq!((e.kind.as_str(), e.number), ("XID", 62));
    }

    /// `ServiceConditions` as the schema shapes it (DGX-class BMCs put GPU driver events there).
    #[test]
    fn service_conditions_with_gpu_driver_events() {
        let v = json!({"@odata.id": "/redfish/v1/ServiceConditions", "HealthRollup": "Critical", "Conditions": [
            {"MessageId": "ResourceEvent.1.0.ResourceErrorsDetected", "Severity": "Critical",
             "Message": "The resource GPU_SXM_3 has errors: Xid 62", "Timestamp": "2024-05-01T10:00:00Z",
             "OriginOfCondition": {"@odata.id": "/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_SXM_3"}},
            {"MessageId": "Base.1.9.ConditionInRelatedResource", "Severity": "Warning"}]});
        let (rollup, c) = service_conditions(&v);
        assert_eq!(rollup, Some(Health::Critical));
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].origin, "/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_SXM_3");
        assert_eq!(c[0].gpu_event, Some(GpuDriverEvent { kind: "XID".into(), number: 62 }));
        assert_eq!(
            (c[1].origin.as_str(), c[1].severity, c[1].gpu_event.is_none()),
            ("/redfish/v1/ServiceConditions", Some(Health::Warning), true)
        );
    }

    #[test]
    fn absent_and_standby_parts_are_not_in_service() {
        for s in ["Absent", "Disabled", "StandbyOffline"] {
            assert!(!in_service(Some(s)), "{s}");
        }
        for s in [None, Some("Enabled"), Some("UnavailableOffline")] {
            assert!(in_service(s), "{s:?}");
        }
    }

    #[test]
    fn a_gpu_processor_and_its_conditions() {
        let v = json!({"@odata.id": "/redfish/v1/Systems/HGX/Processors/GPU_SXM_1", "Id": "GPU_SXM_1",
            "ProcessorType": "GPU", "Model": "H100", "Status": {"State": "Enabled", "Health": "OK",
            "Conditions": [{"MessageId": "ResourceEvent.1.0.ResourceErrorsDetected", "Severity": "Critical",
                "Message": "XID 62 occurred", "Timestamp": "2024-01-01T00:00:00Z"}]},
            "Metrics": {"@odata.id": "/m"}});
        let mut w = Vec::new();
        let c = component_from_value(ComponentKind::Processor, &v, "/p", &mut w);
        assert_eq!(c.kind, ComponentKind::Gpu);
        assert_eq!(c.conditions.len(), 1);
        assert_eq!(c.conditions[0].origin, "/redfish/v1/Systems/HGX/Processors/GPU_SXM_1");
        assert_eq!(c.conditions[0].gpu_event.as_ref().map(|e| e.number), Some(62));
        let mut g = c.gpu.unwrap();
        assert_eq!(g.metrics.as_deref(), Some("/m"));
        apply_gpu_metrics(
            &mut g,
            &json!({"CacheMetricsTotal": {"LifeTime": {"UncorrectableECCErrorCount": 2}}}),
        );
        assert_eq!(g.ecc_uncorrectable, Some(2));
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        crate::doc::arb_json(&[
            "Status",
            "Conditions",
            "State",
            "Health",
            "ProcessorType",
            "MessageArgs",
            "MessageId",
            "Message",
            "OriginOfCondition",
        ])
    }

    proptest! {
        #[test]
        fn never_panics(v in arb_json(), text in ".{0,40}") {
            let mut w = Vec::new();
            let c = component_from_value(ComponentKind::Processor, &v, "/p", &mut w);
            prop_assert_eq!(c.gpu.is_some(), c.kind == ComponentKind::Gpu);
            let _ = firmware_problem(&v, "/f", &mut w);
            let _ = service_conditions(&v);
            let _ = find_xid(&text);
            let mut g = GpuDetail::default();
            apply_gpu_metrics(&mut g, &v);
        }
    }

    #[test]
    fn a_part_named_only_by_its_type_is_labelled_by_its_id() {
        let mut w = Vec::new();
        let at = "/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_0";
        let v = json!({"@odata.id": at, "Id": "GPU_0", "Name": "Processor", "ProcessorType": "GPU"});
        let c = component_from_value(ComponentKind::Processor, &v, at, &mut w);
        assert_eq!(c.label(), "GPU_0");
        let v = json!({"@odata.id": at, "Id": "1", "Name": "GPU 1 (SXM5)", "ProcessorType": "GPU"});
        assert_eq!(component_from_value(ComponentKind::Processor, &v, at, &mut w).label(), "GPU 1 (SXM5)");
        let v = json!({"@odata.id": at, "Name": "Processor"});
        assert_eq!(component_from_value(ComponentKind::Processor, &v, at, &mut w).label(), "Processor");
    }
}
