//! Slurm `HealthCheckProgram` mode, NHC-style: slurmd runs `lifeline-agent health-check` every
//! `HealthCheckInterval`; a failing node is drained with a reason starting `lifeline:` (so people and
//! `lifeline readmit` can tell who drained it), and a node that passes again is resumed — but only when
//! the drain was ours, never one an admin or another tool set.

use std::path::Path;
use std::process::Command;

/// The prefix of every drain reason the agent sets.
pub const REASON_PREFIX: &str = "lifeline:";

#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    #[error("cannot run {program}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{program} {args} failed ({status}): {stderr}")]
    Failed { program: String, args: String, status: String, stderr: String },
}

/// `scontrol`, found on PATH unless named.
#[derive(Debug, Clone)]
pub struct Scontrol<'a> {
    pub program: &'a Path,
}

impl Scontrol<'_> {
    fn run(&self, args: &[&str]) -> Result<String, SlurmError> {
        let program = self.program.display().to_string();
        let o = Command::new(self.program)
            .args(args)
            .output()
            .map_err(|source| SlurmError::Spawn { program: program.clone(), source })?;
        if !o.status.success() {
            return Err(SlurmError::Failed {
                program,
                args: args.join(" "),
                status: o.status.to_string(),
                stderr: String::from_utf8_lossy(&o.stderr).trim().to_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }

    /// The node's state and reason (`scontrol show node -o NAME`).
    pub fn node(&self, node: &str) -> Result<NodeState, SlurmError> {
        Ok(NodeState::parse(&self.run(&["show", "node", "-o", node])?))
    }

    pub fn drain(&self, node: &str, reason: &str) -> Result<(), SlurmError> {
        let reason = format!("reason={reason}");
        self.run(&["update", &format!("nodename={node}"), "state=drain", &reason]).map(drop)
    }

    pub fn resume(&self, node: &str) -> Result<(), SlurmError> {
        self.run(&["update", &format!("nodename={node}"), "state=resume"]).map(drop)
    }
}

/// What `scontrol show node -o` says about a node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeState {
    /// e.g. `IDLE+DRAIN`.
    pub state: String,
    pub reason: Option<String>,
}

impl NodeState {
    /// Lenient: `Key=Value` pairs separated by spaces, except `Reason=` which runs to the next
    /// ` Key=` that Slurm prints after it (`Reason=lifeline: gpu ECC [root@2024-…]`).
    pub fn parse(text: &str) -> NodeState {
        let mut out = NodeState::default();
        for tok in text.split_whitespace() {
            if let Some(v) = tok.strip_prefix("State=") {
                out.state = v.to_owned();
            }
        }
        if let Some(i) = text.find("Reason=") {
            let rest = &text[i + "Reason=".len()..];
            // The reason ends where the next `Word=` field starts.
            let end = rest
                .match_indices(' ')
                .map(|(j, _)| j)
                .find(|&j| {
                    let next = rest[j + 1..].split_whitespace().next().unwrap_or("");
                    next.split_once('=')
                        .is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric()))
                })
                .unwrap_or(rest.len());
            let r = rest[..end].trim();
            if !r.is_empty() && r != "(null)" {
                out.reason = Some(r.to_owned());
            }
        }
        out
    }

    pub fn drained(&self) -> bool {
        self.state.contains("DRAIN")
    }

    /// Drained by this agent (its reason starts `lifeline:`).
    pub fn drained_by_us(&self) -> bool {
        self.drained() && self.reason.as_deref().is_some_and(|r| r.starts_with(REASON_PREFIX))
    }
}

/// The drain reason for a failing report: the prefix and the first failing checks (Slurm keeps reasons
/// short in `sinfo -R`, so the count and the first names only).
pub fn reason(failing: &[String]) -> String {
    let mut r = format!("{REASON_PREFIX} {} check(s) failing", failing.len());
    if !failing.is_empty() {
        r.push_str(": ");
        r.push_str(&failing.iter().take(3).cloned().collect::<Vec<_>>().join(", "));
    }
    r.chars().filter(|c| !c.is_control()).take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_state_and_reason() {
        let s = NodeState::parse(
            "NodeName=gpu-node-04 Arch=x86_64 State=IDLE+DRAIN ThreadsPerCore=1 \
             Reason=lifeline: 2 check(s) failing: gpu.ecc, rail [root@2024-05-01T10:00:00] Comment=(null)",
        );
        assert_eq!(s.state, "IDLE+DRAIN");
        assert_eq!(
            s.reason.as_deref(),
            Some("lifeline: 2 check(s) failing: gpu.ecc, rail [root@2024-05-01T10:00:00]")
        );
        assert!(s.drained_by_us());
        let s = NodeState::parse("NodeName=n State=IDLE Reason=(null)");
        assert_eq!((s.drained(), s.reason), (false, None));
        let s = NodeState::parse("NodeName=n State=DRAIN Reason=admin maintenance [ops@x]");
        assert!(s.drained() && !s.drained_by_us());
    }

    #[test]
    fn reason_is_short_and_prefixed() {
        let r = reason(&["a".into(), "b".into(), "c".into(), "d".into()]);
        assert_eq!(r, "lifeline: 4 check(s) failing: a, b, c");
    }

    proptest! {
        #[test]
        fn any_scontrol_output_parses(text in ".{0,400}") {
            let _ = NodeState::parse(&text);
        }
    }
}
