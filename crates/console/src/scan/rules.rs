//! Console rules as data: a TOML file of regexes, compiled once into one `RegexSet` (the prefilter every
//! line goes through) plus one `Regex` per rule (run only for the rules the set says matched, to take the
//! captures). The built-in file is embedded; an operator's file of the same shape loads the same way, and
//! every problem in it is reported with the rule's id and what is wrong.

use std::collections::HashSet;
use std::sync::Arc;

use regex::{Regex, RegexSet};
use serde::Deserialize;

/// The built-in rules (`src/scan/rules.toml`).
pub const BUILTIN_RULES: &str = include_str!("rules.toml");

/// What a finding means. A closed list: the engine maps kinds to faults, so a rule file cannot invent one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    KernelPanic,
    Oops,
    Mce,
    GpuXid,
    GpuFallenOffBus,
    SoftLockup,
    HardLockup,
    HungTask,
    OomKill,
    FsError,
    StorageError,
    LinkDown,
    /// A link came (back) up. Info: the evidence that clears a rail's earlier link down (the engine's
    /// `correlate::clearing`).
    LinkUp,
    /// A kernel started (counted for boot loops; info on its own).
    Boot,
    /// The host finished booting: its init reached the multi-user (or graphical) target. Info on its own;
    /// after a kernel start with no fault between, it is a clean boot, the evidence that clears the console
    /// faults of the boot before (the engine's `fault_rules::console`).
    Ready,
    /// Raised by the scanner, not by a rule: `boot_loop.boots` kernel starts within the window.
    BootLoop,
    /// A rule that raises nothing and remembers its captures for the following lines.
    Context,
}

impl FindingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::KernelPanic => "kernel-panic",
            FindingKind::Oops => "oops",
            FindingKind::Mce => "mce",
            FindingKind::GpuXid => "gpu-xid",
            FindingKind::GpuFallenOffBus => "gpu-fallen-off-bus",
            FindingKind::SoftLockup => "soft-lockup",
            FindingKind::HardLockup => "hard-lockup",
            FindingKind::HungTask => "hung-task",
            FindingKind::OomKill => "oom-kill",
            FindingKind::FsError => "fs-error",
            FindingKind::StorageError => "storage-error",
            FindingKind::LinkDown => "link-down",
            FindingKind::LinkUp => "link-up",
            FindingKind::Boot => "boot",
            FindingKind::Ready => "ready",
            FindingKind::BootLoop => "boot-loop",
            FindingKind::Context => "context",
        }
    }
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

/// A problem in a rule file.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("{origin}: not a valid rule file: {source}")]
    Toml {
        origin: String,
        #[source]
        source: toml::de::Error,
    },
    #[error("{origin}: rule {id:?}: {problem}")]
    Rule { origin: String, id: String, problem: String },
    #[error("{origin}: {problem}")]
    File { origin: String, problem: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    #[serde(default)]
    boot_loop: Option<BootLoopDoc>,
    #[serde(default)]
    rule: Vec<RuleDoc>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BootLoopDoc {
    boots: u32,
    window_secs: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleDoc {
    id: String,
    kind: FindingKind,
    severity: Severity,
    regex: String,
    #[serde(default)]
    literals: Vec<String>,
    #[serde(default)]
    escalate: Option<EscalateDoc>,
    #[serde(default)]
    remember_lines: Option<u32>,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct EscalateDoc {
    field: String,
    values: Vec<String>,
    severity: Severity,
}

/// One compiled rule.
#[derive(Debug)]
pub struct Rule {
    pub id: Arc<str>,
    pub kind: FindingKind,
    pub severity: Severity,
    pub note: Option<String>,
    /// At least one of these is in every line the regex matches (the literal prefilter).
    pub literals: Vec<String>,
    pub(crate) regex: Regex,
    pub(crate) escalate: Option<(String, Vec<String>, Severity)>,
    pub(crate) remember_lines: u32,
}

impl Rule {
    /// The severity of a match with these fields (the escalation applied).
    pub(crate) fn severity_for(&self, field: impl Fn(&str) -> Option<String>) -> Severity {
        match &self.escalate {
            Some((f, values, sev)) if field(f).is_some_and(|v| values.contains(&v)) => {
                (*sev).max(self.severity)
            }
            _ => self.severity,
        }
    }

    pub fn pattern(&self) -> &str {
        self.regex.as_str()
    }
}

/// Boot-loop detection settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootLoop {
    pub boots: u32,
    pub window: std::time::Duration,
}

/// A compiled rule file. Shared (`Arc`) by every console's scanner.
#[derive(Debug)]
pub struct RuleSet {
    pub(crate) rules: Vec<Rule>,
    /// Every rule's literals in one literal-only regex; `None` when a rule has none (all lines then go
    /// to the set).
    pub(crate) prefilter: Option<Regex>,
    pub(crate) set: RegexSet,
    pub(crate) boot_loop: Option<BootLoop>,
}

impl RuleSet {
    /// The embedded rules. They are tested, so failing to compile them is a build defect.
    pub fn builtin() -> Arc<RuleSet> {
        static BUILTIN: std::sync::OnceLock<Arc<RuleSet>> = std::sync::OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                Arc::new(
                    RuleSet::from_toml(BUILTIN_RULES, "builtin console rules")
                        .unwrap_or_else(|e| panic!("the embedded console rules do not compile: {e}")),
                )
            })
            .clone()
    }

    /// Compiles a rule file; `origin` names it in errors (a path, or "builtin").
    pub fn from_toml(text: &str, origin: &str) -> Result<RuleSet, RuleError> {
        let doc: FileDoc =
            toml::from_str(text).map_err(|source| RuleError::Toml { origin: origin.to_owned(), source })?;
        let err = |id: &str, problem: String| RuleError::Rule {
            origin: origin.to_owned(),
            id: id.to_owned(),
            problem,
        };
        if doc.rule.is_empty() {
            return Err(RuleError::File { origin: origin.to_owned(), problem: "no [[rule]]".into() });
        }
        let mut seen = HashSet::new();
        let mut rules = Vec::with_capacity(doc.rule.len());
        for r in doc.rule {
            let id_ok = !r.id.is_empty()
                && r.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !id_ok {
                return Err(err(&r.id, "id must be non-empty kebab-case (a-z, 0-9, -)".into()));
            }
            if !seen.insert(r.id.clone()) {
                return Err(err(&r.id, "id used twice".into()));
            }
            if r.kind == FindingKind::BootLoop {
                return Err(err(&r.id, "kind boot-loop is raised by the scanner, not by a rule".into()));
            }
            let regex = Regex::new(&r.regex).map_err(|e| err(&r.id, format!("regex: {e}")))?;
            if r.literals.iter().any(String::is_empty) {
                return Err(err(&r.id, "an empty literal would let every line through".into()));
            }
            if r.kind == FindingKind::Context && regex.capture_names().flatten().next().is_none() {
                return Err(err(&r.id, "a context rule needs at least one named group to remember".into()));
            }
            if r.remember_lines.is_some() && r.kind != FindingKind::Context {
                return Err(err(&r.id, "remember_lines is only for kind = \"context\"".into()));
            }
            let escalate = match r.escalate {
                Some(e) => {
                    if !regex.capture_names().flatten().any(|n| n == e.field) {
                        return Err(err(&r.id, format!("escalate.field {:?} is not a named group", e.field)));
                    }
                    Some((e.field, e.values, e.severity))
                }
                None => None,
            };
            rules.push(Rule {
                id: Arc::from(r.id.as_str()),
                kind: r.kind,
                severity: r.severity,
                note: r.note,
                literals: r.literals,
                regex,
                escalate,
                remember_lines: r.remember_lines.unwrap_or(if r.kind == FindingKind::Context {
                    3
                } else {
                    0
                }),
            });
        }
        let prefilter = if rules.iter().all(|r| !r.literals.is_empty()) {
            let mut lits: Vec<String> =
                rules.iter().flat_map(|r| r.literals.iter().map(|l| regex::escape(l))).collect();
            lits.sort();
            lits.dedup();
            Some(Regex::new(&lits.join("|")).map_err(|e| RuleError::File {
                origin: origin.to_owned(),
                problem: format!("literal prefilter: {e}"),
            })?)
        } else {
            None
        };
        let set = RegexSet::new(rules.iter().map(|r| r.regex.as_str()))
            .map_err(|e| RuleError::File { origin: origin.to_owned(), problem: format!("regex set: {e}") })?;
        let boot_loop = match doc.boot_loop {
            Some(b) if b.boots < 2 || b.window_secs == 0 => {
                return Err(RuleError::File {
                    origin: origin.to_owned(),
                    problem: "[boot_loop] needs boots >= 2 and window_secs > 0".into(),
                });
            }
            Some(b) => {
                Some(BootLoop { boots: b.boots, window: std::time::Duration::from_secs(b.window_secs) })
            }
            None => None,
        };
        Ok(RuleSet { rules, prefilter, set, boot_loop })
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn boot_loop(&self) -> Option<BootLoop> {
        self.boot_loop
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_rules_compile_with_a_literal_prefilter() {
        let r = RuleSet::builtin();
        assert!(r.rules().len() >= 15);
        assert!(r.boot_loop().is_some());
        assert!(r.prefilter.is_some(), "every builtin rule names its literals");
    }

    #[test]
    fn a_rule_without_literals_sends_every_line_to_the_set() {
        let r =
            RuleSet::from_toml("[[rule]]\nid='a'\nkind='oops'\nseverity='info'\nregex='x'\n", "t").unwrap();
        assert!(r.prefilter.is_none());
    }

    #[test]
    fn bad_files_say_which_rule_and_what() {
        let cases = [
            ("[[rule]]\nid='a'\nkind='oops'\nseverity='info'\nregex='('\n", "rule \"a\": regex"),
            ("[[rule]]\nid='A b'\nkind='oops'\nseverity='info'\nregex='x'\n", "kebab-case"),
            ("[[rule]]\nid='a'\nkind='nope'\nseverity='info'\nregex='x'\n", "not a valid rule file"),
            (
                "[[rule]]\nid='a'\nkind='oops'\nseverity='info'\nregex='x'\n[[rule]]\nid='a'\nkind='oops'\nseverity='info'\nregex='y'\n",
                "used twice",
            ),
            (
                "[[rule]]\nid='a'\nkind='gpu-xid'\nseverity='info'\nregex='(?P<x>1)'\nescalate={field='y',values=['1'],severity='critical'}\n",
                "not a named group",
            ),
            ("[[rule]]\nid='a'\nkind='context'\nseverity='info'\nregex='x'\n", "named group"),
            ("[[rule]]\nid='a'\nkind='oops'\nseverity='info'\nregex='x'\nliterals=['']\n", "empty literal"),
            ("[[rule]]\nid='a'\nkind='boot-loop'\nseverity='info'\nregex='x'\n", "raised by the scanner"),
            (
                "[boot_loop]\nboots=1\nwindow_secs=5\n[[rule]]\nid='a'\nkind='boot'\nseverity='info'\nregex='x'\n",
                "boots >= 2",
            ),
            ("", "no [[rule]]"),
        ];
        for (text, want) in cases {
            let e = RuleSet::from_toml(text, "ops.toml").expect_err(text).to_string();
            assert!(e.starts_with("ops.toml"), "{e}");
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
    }
}
