//! Lenient field access on Redfish documents.
//!
//! Why: BMC firmwares serve numbers as strings, `null` where an object belongs, enum values outside the
//! schema. A strict `Deserialize` fails the whole document (and with it a fleet sweep) on one such field.
//! Here every field is read on its own: a missing field is simply `None`, a malformed one is `None` *plus* a
//! [`FieldWarning`] naming the document and the JSON path, so the operator can see what was degraded.

use serde::Serialize;
use serde_json::Value;

use lifeline_types::{Health, PowerState};

/// One field that could not be read as the schema says; the rest of the document was still used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldWarning {
    /// Document URL path (`@odata.id` or the URL fetched) and JSON path, e.g. `/redfish/v1/Systems/1#/PowerState`.
    pub at: String,
    pub problem: String,
}

impl std::fmt::Display for FieldWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.problem)
    }
}

/// Short description of a JSON value's type for warnings (never the whole value: it may be huge).
pub(crate) fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s.chars().count() > 40 => {
            format!("string \"{}…\"", s.chars().take(40).collect::<String>())
        }
        Value::String(s) => format!("string {s:?}"),
        Value::Array(a) => format!("array of {}", a.len()),
        Value::Object(_) => "object".into(),
    }
}

/// A cursor over one JSON object that collects warnings into a shared list.
pub(crate) struct Fields<'a, 'w> {
    obj: Option<&'a serde_json::Map<String, Value>>,
    at: String,
    warnings: &'w mut Vec<FieldWarning>,
}

impl<'a, 'w> Fields<'a, 'w> {
    /// `at` names the document (its URL path); a non-object document yields one warning and all-`None` fields.
    pub(crate) fn new(v: &'a Value, at: impl Into<String>, warnings: &'w mut Vec<FieldWarning>) -> Self {
        let at = at.into();
        let obj = match v {
            Value::Object(m) => Some(m),
            other => {
                warnings.push(FieldWarning {
                    at: at.clone(),
                    problem: format!("expected an object, found {}", kind(other)),
                });
                None
            }
        };
        Fields { obj, at, warnings }
    }

    pub(crate) fn warn(&mut self, key: &str, problem: impl Into<String>) {
        self.warnings.push(FieldWarning { at: format!("{}/{key}", self.at), problem: problem.into() });
    }

    /// Raw access; `null` counts as absent (Redfish uses it for "not available").
    pub(crate) fn raw(&self, key: &str) -> Option<&'a Value> {
        self.obj.and_then(|m| m.get(key)).filter(|v| !v.is_null())
    }

    pub(crate) fn str(&mut self, key: &str) -> Option<String> {
        match self.raw(key)? {
            Value::String(s) => Some(s.clone()),
            other => {
                let k = kind(other);
                self.warn(key, format!("expected a string, found {k}"));
                None
            }
        }
    }

    pub(crate) fn num(&mut self, key: &str) -> Option<f64> {
        match self.raw(key)? {
            Value::Number(n) => n.as_f64(),
            other => {
                let k = kind(other);
                self.warn(key, format!("expected a number, found {k}"));
                None
            }
        }
    }

    pub(crate) fn int(&mut self, key: &str) -> Option<i64> {
        match self.raw(key)? {
            Value::Number(n) if n.as_i64().is_some() => n.as_i64(),
            other => {
                let k = kind(other);
                self.warn(key, format!("expected an integer, found {k}"));
                None
            }
        }
    }

    pub(crate) fn bool(&mut self, key: &str) -> Option<bool> {
        match self.raw(key)? {
            Value::Bool(b) => Some(*b),
            other => {
                let k = kind(other);
                self.warn(key, format!("expected a boolean, found {k}"));
                None
            }
        }
    }

    /// An array of strings; odd elements are skipped with a warning, the rest kept.
    pub(crate) fn strs(&mut self, key: &str) -> Option<Vec<String>> {
        match self.raw(key)? {
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        other => {
                            let k = kind(other);
                            self.warn(&format!("{key}/{i}"), format!("expected a string, found {k}"));
                        }
                    }
                }
                Some(out)
            }
            other => {
                let k = kind(other);
                self.warn(key, format!("expected an array of strings, found {k}"));
                None
            }
        }
    }

    /// A navigation property `{"@odata.id": "..."}`.
    pub(crate) fn link(&mut self, key: &str) -> Option<String> {
        let v = self.raw(key)?;
        match v.get("@odata.id") {
            Some(Value::String(s)) => Some(s.clone()),
            _ => {
                let k = kind(v);
                self.warn(key, format!("expected a link {{\"@odata.id\": ...}}, found {k}"));
                None
            }
        }
    }

    /// An array of links; odd members skipped with a warning.
    pub(crate) fn links(&mut self, key: &str) -> Vec<String> {
        match self.raw(key) {
            None => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item.get("@odata.id") {
                        Some(Value::String(s)) => out.push(s.clone()),
                        _ => {
                            let k = kind(item);
                            self.warn(&format!("{key}/{i}"), format!("expected a link, found {k}"));
                        }
                    }
                }
                out
            }
            Some(other) => {
                let k = kind(other);
                self.warn(key, format!("expected an array of links, found {k}"));
                Vec::new()
            }
        }
    }

    /// A nested object, with warnings going to the same list under an extended path.
    pub(crate) fn sub(&mut self, key: &str) -> Option<Fields<'a, '_>> {
        let v = self.raw(key)?;
        if !v.is_object() {
            let k = kind(v);
            self.warn(key, format!("expected an object, found {k}"));
            return None;
        }
        Some(Fields::new(v, format!("{}/{key}", self.at), self.warnings))
    }

    /// Keys of the object (for `Oem`, whose keys name the vendor).
    pub(crate) fn keys(&self) -> Vec<String> {
        self.obj.map(|m| m.keys().cloned().collect()).unwrap_or_default()
    }

    pub(crate) fn health(&mut self, key: &str) -> Option<Health> {
        let s = self.str(key)?;
        match parse_health(&s) {
            Some(h) => Some(h),
            None => {
                self.warn(key, format!("unknown health {s:?}"));
                Some(Health::Unknown)
            }
        }
    }

    pub(crate) fn power_state(&mut self, key: &str) -> Option<PowerState> {
        let s = self.str(key)?;
        match parse_power_state(&s) {
            Some(p) => Some(p),
            None => {
                self.warn(key, format!("unknown power state {s:?}"));
                Some(PowerState::Unknown)
            }
        }
    }
}

/// Redfish `Health` / `Severity` words; case-insensitive because some firmwares shout.
pub fn parse_health(s: &str) -> Option<Health> {
    match s.trim().to_ascii_lowercase().as_str() {
        "ok" => Some(Health::Ok),
        "warning" => Some(Health::Warning),
        "critical" => Some(Health::Critical),
        _ => None,
    }
}

/// Redfish `PowerState` (`On`, `Off`, `PoweringOn`, `PoweringOff`, `Paused`).
pub fn parse_power_state(s: &str) -> Option<PowerState> {
    match s.trim().to_ascii_lowercase().as_str() {
        "on" => Some(PowerState::On),
        "off" => Some(PowerState::Off),
        "poweringon" => Some(PowerState::PoweringOn),
        "poweringoff" => Some(PowerState::PoweringOff),
        // Paused is a VM state (sushy's libvirt driver); it is neither on nor off for a fence agent.
        "paused" => Some(PowerState::Unknown),
        _ => None,
    }
}

/// JSON documents for property tests of the readers: scalars, arrays and objects up to three levels deep
/// whose keys are mostly `keys` (the fields the reader under test looks for), so the generated documents
/// reach its branches.
#[cfg(test)]
pub(crate) fn arb_json(keys: &'static [&'static str]) -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        "[A-Za-z0-9#@. :()]{0,16}".prop_map(Value::String),
    ];
    let key = prop_oneof![proptest::sample::select(keys).prop_map(str::to_owned), "[a-z]{1,4}"];
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::hash_map(key.clone(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wrong_types_warn_and_degrade_only_that_field() {
        let v = json!({"A": "x", "B": "12", "C": [1, "y"], "D": {"@odata.id": "/d"}, "E": null, "F": 3});
        let mut w = Vec::new();
        let mut f = Fields::new(&v, "/doc", &mut w);
        assert_eq!(f.str("A").as_deref(), Some("x"));
        assert_eq!(f.num("B"), None);
        assert_eq!(f.strs("C"), Some(vec!["y".to_string()]));
        assert_eq!(f.link("D").as_deref(), Some("/d"));
        assert_eq!(f.str("E"), None);
        assert_eq!(f.str("missing"), None);
        assert_eq!(f.str("F"), None);
        assert_eq!(w.len(), 3, "{w:?}");
        assert_eq!(w[0].at, "/doc/B");
        assert_eq!(w[1].at, "/doc/C/0");
        assert_eq!(w[2].at, "/doc/F");
    }

    #[test]
    fn non_object_document() {
        let v = json!([1, 2]);
        let mut w = Vec::new();
        let mut f = Fields::new(&v, "/x", &mut w);
        assert_eq!(f.str("Id"), None);
        assert_eq!(w.len(), 1);
    }
}
