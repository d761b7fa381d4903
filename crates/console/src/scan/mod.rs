//! The console as a sensor: every always-on console's output is read as it is written, line by line, for
//! what a dying host prints and no in-band agent can report once the host is dead — kernel panics,
//! `Oops`, machine checks, NVIDIA Xid and "fallen off the bus", soft and hard lockups, hung tasks, OOM
//! kills, filesystem and NVMe errors, RDMA/Ethernet link-down on the rails, and boot loops.
//!
//! - [`rules`]: the rules are data (`rules.toml`, embedded; docs/console-rules.md says how to add one),
//!   compiled into one `RegexSet` prefilter plus a `Regex` per rule for the captures.
//! - [`lines`]: complete, cleaned lines out of arbitrarily chunked console bytes (ANSI and CR removed,
//!   bounded per console).
//! - [`scanner`]: one [`ConsoleScanner`] per console turns bytes into typed [`Finding`]s.
//!
//! The console manager runs a scanner in each session task when `ManagerConfig::scan` is set and publishes
//! every finding on [`crate::ConsoleManager::findings`] as a [`ConsoleFinding`].

pub mod lines;
pub mod rules;
pub mod scanner;

pub use lines::{Line, LineSplitter};
pub use rules::{BUILTIN_RULES, BootLoop, FindingKind, Rule, RuleError, RuleSet, Severity};
pub use scanner::{ConsoleScanner, Finding};

/// A finding and the console it came from, as the manager publishes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConsoleFinding {
    pub console: String,
    #[serde(flatten)]
    pub finding: Finding,
}
