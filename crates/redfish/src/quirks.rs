//! Quirks as data.
//!
//! Why: every BMC family bends Redfish somewhere (no SessionService, advertised reset types that answer 501,
//! numbers served as strings, tiny session limits). Encoding those in `if vendor == ...` branches spreads them
//! through the client and needs a rebuild for each new firmware. Instead:
//! 1. the service root is *classified* into a platform id by `[[platform]]` rules (first match wins),
//! 2. `[[rule]]`s add quirks (additive: every matching rule contributes),
//! 3. `[[repair]]`s rewrite fields of documents of one `@odata.type` before they are read.
//!
//! The built-in table (`builtin_rules.toml`) uses the very format operators use for their own rules, which are
//! loaded at run time (`RuleSet::with_operator_toml`) and take precedence for classification.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::doc::FieldWarning;
use crate::model::ServiceRoot;

const BUILTIN: &str = include_str!("builtin_rules.toml");

/// One behavioural quirk of a platform.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub enum Quirk {
    /// No usable SessionService: use HTTP Basic on every request.
    NoSessionService,
    /// At most this many sessions at once (the BMC refuses more, or evicts others' sessions).
    SessionLimit(usize),
    /// This reset type is advertised in AllowableValues but does not work: never choose it.
    ResetTypeUnsupported(String),
    /// The BMC is slow: add this much to every request timeout.
    Slow(Duration),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuirkParseError {
    #[error(
        "unknown quirk `{0}` (known: no-session-service, session-limit=N, reset-type-unsupported=TYPE, slow=MS)"
    )]
    Unknown(String),
    #[error("quirk `{text}` needs a value: {expected}")]
    BadValue { text: String, expected: &'static str },
}

impl FromStr for Quirk {
    type Err = QuirkParseError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, value) = match text.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (text.trim(), None),
        };
        let bad = |expected| QuirkParseError::BadValue { text: text.to_owned(), expected };
        match (name, value) {
            ("no-session-service", None) => Ok(Quirk::NoSessionService),
            ("session-limit", Some(v)) => match v.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Quirk::SessionLimit(n)),
                _ => Err(bad("a positive integer")),
            },
            ("reset-type-unsupported", Some(v))
                if !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric()) =>
            {
                Ok(Quirk::ResetTypeUnsupported(v.to_owned()))
            }
            ("reset-type-unsupported", _) => Err(bad("a Redfish ResetType such as PowerCycle")),
            ("slow", Some(v)) => v
                .parse::<u64>()
                .map(|ms| Quirk::Slow(Duration::from_millis(ms)))
                .map_err(|_| bad("milliseconds")),
            ("session-limit" | "slow", None) => Err(bad("`=VALUE`")),
            _ => Err(QuirkParseError::Unknown(text.to_owned())),
        }
    }
}

impl fmt::Display for Quirk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Quirk::NoSessionService => f.write_str("no-session-service"),
            Quirk::SessionLimit(n) => write!(f, "session-limit={n}"),
            Quirk::ResetTypeUnsupported(t) => write!(f, "reset-type-unsupported={t}"),
            Quirk::Slow(d) => write!(f, "slow={}", d.as_millis()),
        }
    }
}

/// Conditions on the service root; every condition given must hold. Text matches are case-insensitive
/// substring matches, `redfish_version` is a prefix, `oem_key` an exact (case-insensitive) key of root `Oem`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    #[serde(default)]
    pub vendor: Option<String>,
    #[serde(default)]
    pub product: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub redfish_version: Option<String>,
    #[serde(default)]
    pub oem_key: Option<String>,
}

impl Match {
    fn is_empty(&self) -> bool {
        self == &Match::default()
    }

    fn matches(&self, root: &ServiceRoot) -> bool {
        fn contains(have: &Option<String>, want: &Option<String>) -> bool {
            match want {
                None => true,
                Some(w) => have.as_deref().is_some_and(|h| h.to_lowercase().contains(&w.to_lowercase())),
            }
        }
        contains(&root.vendor, &self.vendor)
            && contains(&root.product, &self.product)
            && contains(&root.name, &self.name)
            && self
                .redfish_version
                .as_ref()
                .is_none_or(|v| root.redfish_version.as_deref().is_some_and(|h| h.starts_with(v.as_str())))
            && self.oem_key.as_ref().is_none_or(|k| root.oem_keys.iter().any(|h| h.eq_ignore_ascii_case(k)))
    }
}

/// `[[platform]]`: names the platform when the service root matches.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformRule {
    pub id: String,
    #[serde(rename = "match")]
    pub when: Match,
}

/// `[[rule]]`: adds quirks to every BMC of `platform` (if given) whose root also satisfies `match` (if given).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QuirkRule {
    #[serde(default)]
    pub platform: Option<String>,
    #[serde(default, rename = "match")]
    pub when: Option<Match>,
    pub quirks: Vec<String>,
    /// Why the rule exists (shown by `lifeline` when explaining a BMC's quirks).
    #[serde(default)]
    pub note: Option<String>,
}

/// What a repair does to the field it targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fix {
    /// `"41"` or `" 41.5 "` becomes the number 41 / 41.5; non-numeric strings are left alone (then warned).
    NumberFromString,
    /// Trim surrounding whitespace of a string (`"On "`).
    Trim,
    /// Delete the field (a vendor value that is worse than no value).
    Remove,
}

/// `[[repair]]`: fix `path` in documents whose `@odata.type` is `odata_type` (e.g. `Thermal` matches
/// `#Thermal.v1_3_0.Thermal`; `Thermal.v1_3_0` matches that version only). `path` is `/`-separated with `*`
/// for every array element: `Temperatures/*/ReadingCelsius`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RepairRule {
    #[serde(default)]
    pub platform: Option<String>,
    pub odata_type: String,
    pub path: String,
    pub fix: Fix,
    #[serde(default)]
    pub note: Option<String>,
}

/// A rule file (built-in or an operator's).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    #[serde(default)]
    pub platform: Vec<PlatformRule>,
    #[serde(default)]
    pub rule: Vec<QuirkRule>,
    #[serde(default)]
    pub repair: Vec<RepairRule>,
}

#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("quirk rules {origin}: not a valid rule file")]
    Toml {
        origin: String,
        #[source]
        source: toml::de::Error,
    },
    #[error("quirk rules {origin}: [[rule]] #{index}")]
    Quirk {
        origin: String,
        index: usize,
        #[source]
        source: QuirkParseError,
    },
    #[error("quirk rules {origin}: {what} #{index} matches every BMC; give it a `match` or `platform`")]
    MatchesEverything { origin: String, what: &'static str, index: usize },
    #[error("quirk rules {origin}: [[repair]] #{index} has an empty segment in path `{path}`")]
    BadPath { origin: String, index: usize, path: String },
    #[error("reading quirk rules {path}")]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl RuleFile {
    /// Parse and validate (quirk words, non-empty matchers, paths) so that mistakes surface at load time.
    pub fn parse(text: &str, origin: &str) -> Result<RuleFile, RulesError> {
        let file: RuleFile =
            toml::from_str(text).map_err(|source| RulesError::Toml { origin: origin.into(), source })?;
        for (index, p) in file.platform.iter().enumerate() {
            if p.when.is_empty() {
                return Err(RulesError::MatchesEverything {
                    origin: origin.into(),
                    what: "[[platform]]",
                    index,
                });
            }
        }
        for (index, r) in file.rule.iter().enumerate() {
            for q in &r.quirks {
                q.parse::<Quirk>().map_err(|source| RulesError::Quirk {
                    origin: origin.into(),
                    index,
                    source,
                })?;
            }
            if r.platform.is_none() && r.when.as_ref().is_none_or(Match::is_empty) {
                return Err(RulesError::MatchesEverything { origin: origin.into(), what: "[[rule]]", index });
            }
        }
        for (index, r) in file.repair.iter().enumerate() {
            if r.path.split('/').any(str::is_empty) {
                return Err(RulesError::BadPath { origin: origin.into(), index, path: r.path.clone() });
            }
        }
        Ok(file)
    }
}

/// Built-in rules plus any operator rules.
#[derive(Debug, Clone)]
pub struct RuleSet {
    /// Operator files first: their `[[platform]]` rules win classification.
    files: Vec<RuleFile>,
}

impl Default for RuleSet {
    fn default() -> Self {
        Self::builtin()
    }
}

impl RuleSet {
    /// The rules shipped with Lifeline.
    pub fn builtin() -> Self {
        // Parsed once per process: every client's default options start from it.
        static PARSED: std::sync::OnceLock<RuleFile> = std::sync::OnceLock::new();
        // The built-in file is validated by a unit test; a failure here is a build defect.
        #[allow(clippy::expect_used)]
        let file = PARSED
            .get_or_init(|| RuleFile::parse(BUILTIN, "builtin").expect("built-in quirk rules are valid"));
        RuleSet { files: vec![file.clone()] }
    }

    /// No rules at all (tests, or an operator who wants only their own).
    pub fn empty() -> Self {
        RuleSet { files: Vec::new() }
    }

    /// Add an operator rule file (TOML text); its platform rules take precedence over earlier ones.
    pub fn with_operator_toml(mut self, text: &str, origin: &str) -> Result<Self, RulesError> {
        self.files.insert(0, RuleFile::parse(text, origin)?);
        Ok(self)
    }

    /// Read an operator rule file from disk (call from `spawn_blocking` or at start-up).
    pub fn with_operator_file(self, path: &std::path::Path) -> Result<Self, RulesError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| RulesError::Read { path: path.into(), source })?;
        self.with_operator_toml(&text, &path.display().to_string())
    }

    /// Classify a service root and collect its quirks and repairs.
    pub fn profile(&self, root: &ServiceRoot) -> PlatformProfile {
        let platform = self
            .files
            .iter()
            .flat_map(|f| &f.platform)
            .find(|p| p.when.matches(root))
            .map(|p| p.id.clone())
            .unwrap_or_else(|| "generic".to_owned());
        let mut quirks: Vec<Quirk> = Vec::new();
        for r in self.files.iter().flat_map(|f| &f.rule) {
            let platform_ok = r.platform.as_ref().is_none_or(|p| p == &platform || p == "*");
            let match_ok = r.when.as_ref().is_none_or(|m| m.matches(root));
            if platform_ok && match_ok {
                for q in &r.quirks {
                    if let Ok(q) = q.parse::<Quirk>()
                        && !quirks.contains(&q)
                    {
                        quirks.push(q);
                    }
                }
            }
        }
        let repairs = self
            .files
            .iter()
            .flat_map(|f| &f.repair)
            .filter(|r| r.platform.as_ref().is_none_or(|p| p == &platform || p == "*"))
            .cloned()
            .collect();
        PlatformProfile { platform, quirks, repairs }
    }
}

/// What Lifeline knows about one BMC's platform.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlatformProfile {
    pub platform: String,
    pub quirks: Vec<Quirk>,
    pub repairs: Vec<RepairRule>,
}

impl Default for PlatformProfile {
    fn default() -> Self {
        PlatformProfile { platform: "generic".into(), quirks: Vec::new(), repairs: Vec::new() }
    }
}

impl PlatformProfile {
    pub fn no_session_service(&self) -> bool {
        self.quirks.contains(&Quirk::NoSessionService)
    }

    /// Smallest session limit any rule gave.
    pub fn session_limit(&self) -> Option<usize> {
        self.quirks.iter().filter_map(|q| if let Quirk::SessionLimit(n) = q { Some(*n) } else { None }).min()
    }

    pub fn unsupported_reset_types(&self) -> Vec<String> {
        self.quirks
            .iter()
            .filter_map(|q| if let Quirk::ResetTypeUnsupported(t) = q { Some(t.clone()) } else { None })
            .collect()
    }

    /// Extra time per request (largest `slow=` given).
    pub fn extra_timeout(&self) -> Duration {
        self.quirks
            .iter()
            .filter_map(|q| if let Quirk::Slow(d) = q { Some(*d) } else { None })
            .max()
            .unwrap_or_default()
    }

    /// Apply the repairs for this document's `@odata.type`; each change is noted (a repaired value is still a
    /// vendor deviation the operator may want to see).
    pub fn repair(&self, doc: &mut Value, at: &str) -> Vec<FieldWarning> {
        let mut notes = Vec::new();
        let Some(ty) =
            doc.get("@odata.type").and_then(Value::as_str).map(|t| t.trim_start_matches('#').to_owned())
        else {
            return notes;
        };
        for r in &self.repairs {
            let want = r.odata_type.trim_start_matches('#');
            if ty == want || ty.starts_with(&format!("{want}.")) {
                let segments: Vec<&str> = r.path.split('/').collect();
                apply(doc, &segments, r.fix, &mut format!("{at}#"), &mut notes);
            }
        }
        notes
    }
}

fn apply(v: &mut Value, path: &[&str], fix: Fix, at: &mut String, notes: &mut Vec<FieldWarning>) {
    let Some((&head, rest)) = path.split_first() else { return };
    let len = at.len();
    if head == "*" {
        if let Value::Array(items) = v {
            for (i, item) in items.iter_mut().enumerate() {
                at.push_str(&format!("/{i}"));
                apply(item, rest, fix, at, notes);
                at.truncate(len);
            }
        }
        return;
    }
    let Value::Object(map) = v else { return };
    at.push('/');
    at.push_str(head);
    if rest.is_empty() {
        let mut note = |problem: String| notes.push(FieldWarning { at: at.clone(), problem });
        match fix {
            Fix::Remove => {
                if map.remove(head).is_some() {
                    note("removed by repair rule".into());
                }
            }
            Fix::Trim => {
                if let Some(Value::String(s)) = map.get_mut(head) {
                    let t = s.trim();
                    if t.len() != s.len() {
                        note(format!("trimmed {s:?}"));
                        *s = t.to_owned();
                    }
                }
            }
            Fix::NumberFromString => {
                if let Some(slot) = map.get_mut(head)
                    && let Value::String(s) = slot
                {
                    let t = s.trim();
                    let n = t.parse::<i64>().map(Value::from).ok().or_else(|| {
                        t.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number)
                    });
                    if let Some(n) = n {
                        note(format!("number served as string {s:?}"));
                        *slot = n;
                    }
                }
            }
        }
    } else if let Some(child) = map.get_mut(head) {
        apply(child, rest, fix, at, notes);
    }
    at.truncate(len);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn root(v: Value) -> ServiceRoot {
        ServiceRoot::from_value(&v, "/redfish/v1/")
    }

    #[test]
    fn builtin_rules_parse_and_classify() {
        let rules = RuleSet::builtin();
        let sushy = rules.profile(&root(
            json!({"Id": "RedvirtService", "Name": "Redvirt Service", "RedfishVersion": "1.5.0"}),
        ));
        assert_eq!(sushy.platform, "sushy-emulator");
        assert!(sushy.no_session_service());
        assert!(sushy.unsupported_reset_types().contains(&"PowerCycle".to_string()));
        let dell = rules.profile(&root(json!({"Vendor": "Dell", "Oem": {"Dell": {}}})));
        assert_eq!(dell.platform, "dell-idrac");
        let hpe = rules.profile(&root(json!({"Oem": {"Hpe": {"Manager": []}}})));
        assert_eq!(hpe.platform, "hpe-ilo");
        let other = rules.profile(&root(json!({"Name": "x"})));
        assert_eq!(other.platform, "generic");
        assert!(other.quirks.is_empty());
    }

    #[test]
    fn operator_rules_override_classification_and_add_quirks() {
        let text = r#"
            [[platform]]
            id = "lab-bmc"
            match = { vendor = "Dell", redfish_version = "1.1" }

            [[rule]]
            platform = "lab-bmc"
            quirks = ["session-limit=1", "slow=250", "reset-type-unsupported=ForceRestart"]
            note = "old lab firmware"

            [[rule]]
            match = { oem_key = "Dell" }
            quirks = ["session-limit=3"]
        "#;
        let rules = RuleSet::builtin().with_operator_toml(text, "ops.toml").unwrap();
        let p =
            rules.profile(&root(json!({"Vendor": "Dell", "RedfishVersion": "1.11.0", "Oem": {"Dell": {}}})));
        assert_eq!(p.platform, "lab-bmc");
        assert_eq!(p.session_limit(), Some(1), "smallest limit wins: {:?}", p.quirks);
        assert_eq!(p.extra_timeout(), Duration::from_millis(250));
        assert_eq!(p.unsupported_reset_types(), ["ForceRestart"]);
        // Same vendor, newer version: built-in classification again, operator's oem rule still adds.
        let p2 =
            rules.profile(&root(json!({"Vendor": "Dell", "RedfishVersion": "1.20.0", "Oem": {"Dell": {}}})));
        assert_eq!(p2.platform, "dell-idrac");
        assert_eq!(p2.session_limit(), Some(3));
    }

    #[test]
    fn rule_files_are_checked_strictly() {
        let unknown_field = "[[rule]]\nplatform = \"x\"\nquirks = []\ncolour = \"red\"\n";
        assert!(matches!(RuleFile::parse(unknown_field, "t"), Err(RulesError::Toml { .. })));
        let unknown_quirk = "[[rule]]\nplatform = \"x\"\nquirks = [\"fly\"]\n";
        let e = RuleFile::parse(unknown_quirk, "t").unwrap_err();
        assert!(
            matches!(&e, RulesError::Quirk { index: 0, source: QuirkParseError::Unknown(q), .. } if q == "fly"),
            "{e:?}"
        );
        let bad_limit = "[[rule]]\nplatform = \"x\"\nquirks = [\"session-limit=0\"]\n";
        assert!(matches!(RuleFile::parse(bad_limit, "t"), Err(RulesError::Quirk { .. })));
        let everything = "[[rule]]\nquirks = [\"slow=1\"]\n";
        assert!(matches!(RuleFile::parse(everything, "t"), Err(RulesError::MatchesEverything { .. })));
        let bad_path = "[[repair]]\nodata_type = \"Thermal\"\npath = \"Temperatures//x\"\nfix = \"trim\"\n";
        assert!(matches!(RuleFile::parse(bad_path, "t"), Err(RulesError::BadPath { .. })));
    }

    #[test]
    fn quirk_words_round_trip() {
        for w in ["no-session-service", "session-limit=4", "reset-type-unsupported=PowerCycle", "slow=1500"] {
            assert_eq!(w.parse::<Quirk>().unwrap().to_string(), w);
        }
    }

    #[test]
    fn repairs_apply_by_odata_type_and_path() {
        let text = r#"
            [[repair]]
            odata_type = "Thermal"
            path = "Temperatures/*/ReadingCelsius"
            fix = "number-from-string"
            [[repair]]
            odata_type = "ComputerSystem.v1_5_0"
            path = "PowerState"
            fix = "trim"
        "#;
        let rules = RuleSet::empty().with_operator_toml(text, "t").unwrap();
        let p = rules.profile(&root(json!({})));
        let mut thermal = json!({"@odata.type": "#Thermal.v1_3_0.Thermal",
            "Temperatures": [{"ReadingCelsius": "41"}, {"ReadingCelsius": 42}, {"ReadingCelsius": "n/a"}, {"ReadingCelsius": " 38.5 "}]});
        let notes = p.repair(&mut thermal, "/t");
        assert_eq!(thermal["Temperatures"][0]["ReadingCelsius"], json!(41));
        assert_eq!(thermal["Temperatures"][1]["ReadingCelsius"], json!(42));
        assert_eq!(thermal["Temperatures"][2]["ReadingCelsius"], json!("n/a"));
        assert_eq!(thermal["Temperatures"][3]["ReadingCelsius"], json!(38.5));
        assert_eq!(notes.len(), 2);
        assert_eq!(notes[0].at, "/t#/Temperatures/0/ReadingCelsius");
        // The version-qualified repair hits only that version.
        let mut s15 = json!({"@odata.type": "#ComputerSystem.v1_5_0.ComputerSystem", "PowerState": "On "});
        let mut s20 = json!({"@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem", "PowerState": "On "});
        p.repair(&mut s15, "/s");
        p.repair(&mut s20, "/s");
        assert_eq!(s15["PowerState"], "On");
        assert_eq!(s20["PowerState"], "On ");
        // Different type: untouched.
        let mut power =
            json!({"@odata.type": "#Power.v1_0_0.Power", "Temperatures": [{"ReadingCelsius": "1"}]});
        assert!(p.repair(&mut power, "/p").is_empty());
    }
}
