//! Quirk rules and the repairs they make to BMC documents. An operator's rule file (TOML) either loads or
//! is refused with an error; a loaded file survives a serialize/parse round trip; a platform profile built
//! from any service root repairs any document without panicking, every repair note names the document,
//! and repairing is idempotent (a second pass changes nothing and notes nothing) — unless a rule rewrites
//! `@odata.type` itself, which selects the rules.
//!
//! Input: `RULES \0 ROOT-JSON \0 DOC-JSON` (any part may be empty: the built-in rules are always loaded).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lifeline_redfish::model::{self, ServiceRoot};
use lifeline_redfish::quirks::{RuleFile, RuleSet};
use serde_json::Value;

const AT: &str = "/redfish/v1/Chassis/1/Thermal";

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |b| *b == 0);
    let rules = std::str::from_utf8(parts.next().unwrap_or_default()).unwrap_or_default();
    let root = parts.next().and_then(|b| serde_json::from_slice::<Value>(b).ok()).unwrap_or(Value::Null);
    let doc = parts.next().and_then(|b| serde_json::from_slice::<Value>(b).ok());

    let mut set = RuleSet::builtin();
    let mut touches_type = false;
    if let Ok(file) = RuleFile::parse(rules, "fuzz.toml") {
        let text = toml::to_string(&file).expect("a loaded rule file serializes");
        let again = RuleFile::parse(&text, "fuzz.toml").expect("a serialized rule file loads");
        assert_eq!(again, file, "rule file round trip");
        touches_type = file.repair.iter().any(|r| r.path.split('/').next() == Some("@odata.type"));
        set = set.with_operator_toml(rules, "fuzz.toml").expect("parsed once, parses again");
    }
    let root = ServiceRoot::from_value(&root, "/redfish/v1/");
    let profile = set.profile(&root);
    let _ = (profile.no_session_service(), profile.session_limit(), profile.extra_timeout());
    let _ = profile.unsupported_reset_types();
    let Some(mut doc) = doc else { return };
    let notes = profile.repair(&mut doc, AT);
    for n in &notes {
        assert!(n.at.starts_with(AT), "repair note not naming its document: {n:?}");
    }
    let once = doc.clone();
    let second = profile.repair(&mut doc, AT);
    if !touches_type {
        assert_eq!(doc, once, "repair is not idempotent");
        assert!(second.is_empty(), "second repair pass noted {second:?}");
    }
    // The repaired document still reads.
    let mut ws = Vec::new();
    let _ = model::thermal_from_value(&doc, AT, &mut ws);
    let _ = model::power_from_value(&doc, AT, &mut ws);
});
