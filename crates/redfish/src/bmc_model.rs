//! Documents of the BMC itself, read leniently: the Manager's own `#Manager.Reset` action (never the
//! system's), `SoftwareInventory` members of `UpdateService/FirmwareInventory`, the Manager's Ethernet
//! interfaces (its MAC), and the choice of a Manager reset type from what the BMC allows.
//!
//! Pure (no client): the simulator and tests share it. Kept apart from `model` so that file stays a size
//! one can read.

use serde::Serialize;
use serde_json::Value;

use crate::doc::{FieldWarning, Fields};

/// `Actions/#Manager.Reset` of a Manager: the same shape as a system's reset action.
pub type ManagerReset = crate::model::ResetAction;

/// What a Lifeline BMC-reset needs from a Manager document.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ManagerDoc {
    pub odata_id: String,
    pub manager_type: Option<String>,
    pub firmware_version: Option<String>,
    pub model: Option<String>,
    pub reset: Option<ManagerReset>,
    pub ethernet_interfaces: Option<String>,
    pub servers: Vec<String>,
    pub warnings: Vec<FieldWarning>,
}

impl ManagerDoc {
    pub fn from_value(v: &Value, at: &str) -> Self {
        let mut warnings = Vec::new();
        let mut f = Fields::new(v, at, &mut warnings);
        let reset = f.sub("Actions").and_then(|mut a| {
            let mut r = a.sub("#Manager.Reset")?;
            let target = r.str("target");
            if target.is_none() {
                r.warn("target", "Manager.Reset action has no target");
            }
            Some(ManagerReset {
                target: target?,
                allowable: r.strs("ResetType@Redfish.AllowableValues"),
                action_info: r.str("@Redfish.ActionInfo"),
            })
        });
        let servers = f.sub("Links").map(|mut l| l.links("ManagerForServers")).unwrap_or_default();
        let mut m = ManagerDoc {
            odata_id: crate::model::odata_id(&mut f, at),
            manager_type: f.str("ManagerType"),
            firmware_version: f.str("FirmwareVersion"),
            model: f.str("Model"),
            reset,
            ethernet_interfaces: f.link("EthernetInterfaces"),
            servers,
            warnings: Vec::new(),
        };
        m.warnings = warnings;
        m
    }
}

/// One `SoftwareInventory` (a firmware component and its version).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FirmwareItem {
    pub id: String,
    pub name: Option<String>,
    pub version: Option<String>,
    pub updateable: Option<bool>,
}

impl FirmwareItem {
    pub fn from_value(v: &Value, at: &str, warnings: &mut Vec<FieldWarning>) -> Self {
        let mut f = Fields::new(v, at, warnings);
        let id =
            f.str("Id").unwrap_or_else(|| at.trim_end_matches('/').rsplit('/').next().unwrap_or(at).into());
        FirmwareItem { id, name: f.str("Name"), version: f.str("Version"), updateable: f.bool("Updateable") }
    }

    /// Whether this component is the BMC's own firmware (by id or name: vendors differ).
    pub fn is_bmc(&self) -> bool {
        let words = |s: &str| s.to_ascii_lowercase();
        let id = words(&self.id);
        let name = self.name.as_deref().map(words).unwrap_or_default();
        ["bmc", "idrac", "ilo", "xcc", "manager"].iter().any(|k| id.contains(k) || name.contains(k))
    }

    /// Whether this component is the host firmware (BIOS / UEFI).
    pub fn is_bios(&self) -> bool {
        let words = |s: &str| s.to_ascii_lowercase();
        let id = words(&self.id);
        let name = self.name.as_deref().map(words).unwrap_or_default();
        ["bios", "uefi", "system rom"].iter().any(|k| id.contains(k) || name.contains(k))
    }
}

/// The MAC address of an `EthernetInterface` document (`MACAddress`, else `PermanentMACAddress`).
pub fn interface_mac(v: &Value, at: &str, warnings: &mut Vec<FieldWarning>) -> Option<String> {
    let mut f = Fields::new(v, at, warnings);
    f.str("MACAddress").or_else(|| f.str("PermanentMACAddress")).map(|m| m.to_ascii_lowercase())
}

/// The Manager reset type for a cold (`ForceRestart`, else `GracefulRestart`) or warm (`GracefulRestart`
/// only) reset, from what the Manager allows; `allowed = None` (the BMC did not say) assumes the DMTF
/// types. `None`: the BMC offers nothing that fits.
pub fn plan_manager_reset(warm: bool, allowed: Option<&[String]>) -> Option<String> {
    let prefs: &[&str] = if warm { &["GracefulRestart"] } else { &["ForceRestart", "GracefulRestart"] };
    match allowed {
        None => Some(prefs[0].to_owned()),
        Some(a) => prefs.iter().find(|p| a.iter().any(|x| x == *p)).map(|p| (*p).to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn reads_a_manager_with_its_own_reset() {
        let v = json!({
            "@odata.id": "/redfish/v1/Managers/bmc", "ManagerType": "BMC", "FirmwareVersion": "2.14.0",
            "EthernetInterfaces": {"@odata.id": "/redfish/v1/Managers/bmc/EthernetInterfaces"},
            "Links": {"ManagerForServers": [{"@odata.id": "/redfish/v1/Systems/node1"}]},
            "Actions": {"#Manager.Reset": {"target": "/redfish/v1/Managers/bmc/Actions/Manager.Reset",
                "ResetType@Redfish.AllowableValues": ["GracefulRestart", "ForceRestart"]}}
        });
        let m = ManagerDoc::from_value(&v, "/redfish/v1/Managers/bmc");
        let r = m.reset.unwrap();
        assert_eq!(r.allowable.as_deref().map(<[String]>::len), Some(2));
        assert_eq!(m.servers, vec!["/redfish/v1/Systems/node1".to_owned()]);
        assert_eq!(plan_manager_reset(false, r.allowable.as_deref()).as_deref(), Some("ForceRestart"));
        assert_eq!(plan_manager_reset(true, r.allowable.as_deref()).as_deref(), Some("GracefulRestart"));
        // sushy-emulator's Manager has no Actions at all.
        assert!(ManagerDoc::from_value(&json!({"Id": "x"}), "/m").reset.is_none());
        let only_force = vec!["ForceRestart".to_owned()];
        assert_eq!(plan_manager_reset(true, Some(&only_force)), None);
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        crate::doc::arb_json(&[
            "Actions",
            "#Manager.Reset",
            "target",
            "ResetType@Redfish.AllowableValues",
            "Version",
            "Links",
            "MACAddress",
        ])
    }

    proptest! {
        #[test]
        fn never_panics(v in arb_json(), warm: bool) {
            let m = ManagerDoc::from_value(&v, "/m");
            let allowed = m.reset.and_then(|r| r.allowable);
            if let Some(t) = plan_manager_reset(warm, allowed.as_deref()) {
                prop_assert!(t == "ForceRestart" || t == "GracefulRestart");
            }
            let mut w = Vec::new();
            let _ = FirmwareItem::from_value(&v, "/f", &mut w);
            let _ = interface_mac(&v, "/e", &mut w);
        }
    }
}
