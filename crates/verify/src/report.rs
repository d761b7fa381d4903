//! The report model: what the agent hands to people (a table) and machines (versioned JSON).
//!
//! Every verdict must be explainable at 3 a.m., so each check carries the raw values it read and where it
//! read them. The report carries a SHA-256 digest over its own canonical JSON so that a re-admission
//! decision (Slurm reason, Kubernetes annotation, audit log) can name the exact report that justified it,
//! and anyone holding the JSON can recompute and compare it.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// The JSON schema identifier; bump the suffix on any incompatible change.
pub const SCHEMA: &str = "lifeline.verify/v1";

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    /// Not applicable (e.g. a RoCE GID on an InfiniBand rail) or not evaluated because a prerequisite failed.
    Skip,
    /// The node is known to be unhealthy.
    Fail,
    /// The check could not be carried out (tool missing, unreadable file): the node is NOT proven healthy.
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Skip => "skip",
            Status::Fail => "fail",
            Status::Error => "error",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One value read, with where it was read from (a logical path such as `/sys/class/net/ens1/mtu`, an NVML
/// call, or a command line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub key: String,
    pub value: String,
    pub source: String,
}

impl Evidence {
    pub fn new(key: impl Into<String>, value: impl Into<String>, source: impl Into<String>) -> Self {
        Evidence { key: key.into(), value: value.into(), source: source.into() }
    }
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// Stable identifier, e.g. `rail.link`, `gpu.ecc`, `host.rp_filter`.
    pub id: String,
    /// What was checked, e.g. `rail mlx5_3`, `gpu 2`, `host`.
    pub subject: String,
    pub status: Status,
    pub message: String,
    pub evidence: Vec<Evidence>,
    pub duration_us: u64,
}

impl Check {
    pub fn new(id: &str, subject: impl Into<String>, status: Status, message: impl Into<String>) -> Self {
        Check {
            id: id.to_owned(),
            subject: subject.into(),
            status,
            message: message.into(),
            evidence: Vec::new(),
            duration_us: 0,
        }
    }

    pub fn with_evidence(mut self, evidence: Vec<Evidence>) -> Self {
        self.evidence = evidence;
        self
    }
}

/// Where the values came from, so a report from a simulator tree is never mistaken for a live node's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sources {
    pub sysfs_root: String,
    pub proc_root: String,
    /// `nvml`, `snapshot:<file>` or `none`.
    pub gpu: String,
}

/// Count of checks per status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub pass: u32,
    pub fail: u32,
    pub skip: u32,
    pub error: u32,
}

/// The whole node's verdict. `Fail` wins over `Error` (we KNOW it is broken); both keep the node out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Error,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
        }
    }

    /// The agent's exit code: 0 pass, 1 fail, 2 error.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            Verdict::Error => 2,
        }
    }

    /// Verdict over a list of checks: any fail -> fail, else any error -> error, else pass (skips are neutral).
    pub fn of(checks: &[Check]) -> Verdict {
        if checks.iter().any(|c| c.status == Status::Fail) {
            Verdict::Fail
        } else if checks.iter().any(|c| c.status == Status::Error) {
            Verdict::Error
        } else {
            Verdict::Pass
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The agent's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub node: String,
    pub agent_version: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub sources: Sources,
    pub checks: Vec<Check>,
    pub summary: Summary,
    pub verdict: Verdict,
    pub duration_us: u64,
    /// `sha256:<hex>` over this report's canonical JSON with `digest` set to the empty string.
    pub digest: String,
}

/// Problems with a report handed to us (e.g. read back from a node).
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("report is not valid JSON for schema {SCHEMA}")]
    Parse(#[source] serde_json::Error),
    #[error("report schema `{found}` is not supported (expected {SCHEMA})")]
    Schema { found: String },
    #[error("report digest mismatch: it says {claimed}, its content hashes to {computed}")]
    Digest { claimed: String, computed: String },
}

impl Report {
    /// Builds a report and seals it with its digest.
    pub fn new(
        node: String,
        started_at: String,
        sources: Sources,
        checks: Vec<Check>,
        duration_us: u64,
    ) -> Report {
        let mut summary = Summary::default();
        for c in &checks {
            match c.status {
                Status::Pass => summary.pass += 1,
                Status::Fail => summary.fail += 1,
                Status::Skip => summary.skip += 1,
                Status::Error => summary.error += 1,
            }
        }
        let mut report = Report {
            schema: SCHEMA.to_owned(),
            node,
            agent_version: env!("CARGO_PKG_VERSION").to_owned(),
            started_at,
            sources,
            verdict: Verdict::of(&checks),
            checks,
            summary,
            duration_us,
            digest: String::new(),
        };
        report.digest = report.compute_digest();
        report
    }

    /// The digest of the report's content (the `digest` field itself excluded).
    pub fn compute_digest(&self) -> String {
        let mut unsealed = self.clone();
        unsealed.digest.clear();
        // Serialising a struct of strings, integers and Vecs is deterministic (field order is declaration
        // order, no maps, no floats), so a parse -> serialise round trip hashes to the same value.
        let bytes = serde_json::to_vec(&unsealed).expect("a report always serialises");
        format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
    }

    /// Parses a report (e.g. one a node posted) and checks its schema and digest.
    pub fn from_json(text: &str) -> Result<Report, ReportError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(ReportError::Parse)?;
        let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("").to_owned();
        if schema != SCHEMA {
            return Err(ReportError::Schema { found: schema });
        }
        let report: Report = serde_json::from_value(value).map_err(ReportError::Parse)?;
        let computed = report.compute_digest();
        if computed != report.digest {
            return Err(ReportError::Digest { claimed: report.digest, computed });
        }
        Ok(report)
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serialises")
    }

    /// Checks that did not pass or skip, for "why is this node out" messages.
    pub fn problems(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| matches!(c.status, Status::Fail | Status::Error))
    }

    /// The human view: one row per check, then the evidence of every failing or erroring check.
    /// Durations and the digest are left out so the table of the same node state is always the same text.
    pub fn render_table(&self) -> String {
        let mut table = comfy_table::Table::new();
        table.load_preset(comfy_table::presets::ASCII_BORDERS_ONLY_CONDENSED);
        table.set_header(vec!["STATUS", "CHECK", "SUBJECT", "MESSAGE"]);
        for c in &self.checks {
            table.add_row(vec![
                c.status.as_str().to_uppercase(),
                c.id.clone(),
                c.subject.clone(),
                c.message.clone(),
            ]);
        }
        let s = &self.summary;
        let mut out = format!(
            "node {}: {} ({} pass, {} fail, {} error, {} skip)\n",
            self.node,
            self.verdict.as_str().to_uppercase(),
            s.pass,
            s.fail,
            s.error,
            s.skip
        );
        let _ = writeln!(out, "{table}");
        let mut first = true;
        for c in self.problems() {
            if first {
                out.push_str("\nevidence:\n");
                first = false;
            }
            let _ = writeln!(out, "  {} {} [{}]", c.id, c.subject, c.status);
            for e in &c.evidence {
                let _ = writeln!(out, "    {} = {}   ({})", e.key, e.value, e.source);
            }
        }
        out
    }
}
