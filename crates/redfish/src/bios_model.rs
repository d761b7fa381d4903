//! BIOS documents, read leniently: `Bios.Attributes` (the settings in force), the `@Redfish.Settings`
//! object (pending settings, applied at the next reset), and how a golden profile's attributes compare.
//!
//! Why lenient comparison: BMCs spell one value differently (`true` vs `"true"`, `10` vs `"10"`), and a
//! profile written by hand should not report drift for a spelling. Pure (no client): the simulator's tests
//! share it.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::doc::{FieldWarning, Fields};

/// A `Bios` resource (current settings) or its settings object (pending settings).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BiosDoc {
    pub odata_id: String,
    /// Scalar attributes; an object or array value is left out with a warning.
    pub attributes: BTreeMap<String, Value>,
    /// `@Redfish.Settings.SettingsObject`: where pending settings are PATCHed.
    pub settings_object: Option<String>,
    /// `@Redfish.Settings.SupportedApplyTimes` (`OnReset`, `Immediate`, ...), when given.
    pub apply_times: Vec<String>,
    pub registry: Option<String>,
}

impl BiosDoc {
    pub fn from_value(v: &Value, at: &str, warnings: &mut Vec<FieldWarning>) -> Self {
        let mut f = Fields::new(v, at, warnings);
        let odata_id = crate::model::odata_id(&mut f, at);
        let registry = f.str("AttributeRegistry");
        let (mut settings_object, mut apply_times) = (None, Vec::new());
        if let Some(mut s) = f.sub("@Redfish.Settings") {
            settings_object = s.link("SettingsObject");
            apply_times = s.strs("SupportedApplyTimes").unwrap_or_default();
        }
        let mut attributes = BTreeMap::new();
        match v.get("Attributes") {
            Some(Value::Object(m)) => {
                for (k, val) in m {
                    if val.is_object() || val.is_array() {
                        f.warn(&format!("Attributes/{k}"), "not a scalar value; left out");
                    } else {
                        attributes.insert(k.clone(), val.clone());
                    }
                }
            }
            None | Some(Value::Null) => {}
            Some(_) => f.warn("Attributes", "not an object"),
        }
        BiosDoc { odata_id, attributes, settings_object, apply_times, registry }
    }
}

/// One value as text, for comparing spellings (`"true"` and `true`, `"10"` and `10`).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Whether two attribute values mean the same (equal, or the same text).
pub fn same_value(a: &Value, b: &Value) -> bool {
    a == b || (!a.is_object() && !a.is_array() && text(a) == text(b))
}

/// One attribute of a profile the BMC does not have as asked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    pub attribute: String,
    pub want: Value,
    /// In force now; `None`: the BMC does not list the attribute.
    pub current: Option<Value>,
    /// Pending (applied at the next reset), when the settings object holds a value different from `current`.
    pub pending: Option<Value>,
}

impl Drift {
    /// The pending value is what the profile wants: a reset will fix it.
    pub fn fixed_at_reset(&self) -> bool {
        self.pending.as_ref().is_some_and(|p| same_value(p, &self.want))
    }
}

/// The profile's attributes whose current value differs, in name order.
pub fn drift(
    want: &BTreeMap<String, Value>,
    current: &BTreeMap<String, Value>,
    pending: &BTreeMap<String, Value>,
) -> Vec<Drift> {
    want.iter()
        .filter(|(k, w)| !current.get(*k).is_some_and(|c| same_value(c, w)))
        .map(|(k, w)| Drift {
            attribute: k.clone(),
            want: w.clone(),
            current: current.get(k).cloned(),
            pending: pending.get(k).filter(|p| current.get(k).is_none_or(|c| !same_value(c, p))).cloned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn reads_sushy_bios_and_finds_drift() {
        // sushy-emulator 2.2.0's BIOS template (recorded from the peer).
        let v = json!({
            "@odata.type": "#Bios.v1_0_0.Bios", "Id": "BIOS", "AttributeRegistry": "BiosAttributeRegistryP89.v1_0_0",
            "Attributes": {"BootMode": "Uefi", "NumCores": "10", "QuietBoot": "true", "Odd": {"x": 1}},
            "@Redfish.Settings": {"@odata.type": "#Settings.v1_0_0.Settings",
                "SettingsObject": {"@odata.id": "/redfish/v1/Systems/node-1/BIOS/Settings"}},
            "@odata.id": "/redfish/v1/Systems/node-1/BIOS"
        });
        let mut w = Vec::new();
        let b = BiosDoc::from_value(&v, "/b", &mut w);
        assert_eq!(b.settings_object.as_deref(), Some("/redfish/v1/Systems/node-1/BIOS/Settings"));
        assert_eq!(b.attributes.len(), 3);
        assert_eq!(w.len(), 1, "{w:?}");
        let want: BTreeMap<String, Value> = [
            ("BootMode".to_owned(), json!("Uefi")),
            ("NumCores".to_owned(), json!(10)),
            ("QuietBoot".to_owned(), json!(false)),
            ("SriovGlobalEnable".to_owned(), json!("Enabled")),
        ]
        .into_iter()
        .collect();
        let pending = [("QuietBoot".to_owned(), json!("false"))].into_iter().collect();
        let d = drift(&want, &b.attributes, &pending);
        let names: Vec<&str> = d.iter().map(|d| d.attribute.as_str()).collect();
        assert_eq!(names, ["QuietBoot", "SriovGlobalEnable"]);
        assert!(d[0].fixed_at_reset() && !d[1].fixed_at_reset());
        assert_eq!(d[1].current, None);
    }

    proptest! {
        #[test]
        fn never_panics(v in crate::doc::arb_json(&["Attributes", "@Redfish.Settings", "SettingsObject",
            "SupportedApplyTimes", "BootMode"])) {
            let mut w = Vec::new();
            let b = BiosDoc::from_value(&v, "/b", &mut w);
            // No drift against itself; every attribute drifts against an empty BMC.
            prop_assert!(drift(&b.attributes, &b.attributes, &BTreeMap::new()).is_empty());
            prop_assert_eq!(drift(&b.attributes, &BTreeMap::new(), &BTreeMap::new()).len(), b.attributes.len());
        }
    }
}
