//! Slurm `HealthCheckProgram` mode, NHC-style: slurmd runs `lifeline-agent health-check` every
//! `HealthCheckInterval`; a failing node is drained with a reason starting `lifeline:` (so people and
//! `lifeline readmit` can tell who drained it), and a node that passes again is resumed — but only when
//! the drain was ours, never one an admin or another tool set. "Ours" and the parsing of `scontrol show
//! node` are `lifeline_readmit::drain`'s, the same rule the server and the CLI re-admit by.

use std::path::Path;
use std::process::Command;

use lifeline_readmit::REASON_PREFIX;
pub use lifeline_readmit::drain::SlurmNode;

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
    #[error(transparent)]
    Parse(#[from] lifeline_readmit::drain::NoState),
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
    pub fn node(&self, node: &str) -> Result<SlurmNode, SlurmError> {
        let text = self.run(&["show", "node", "-o", node])?;
        Ok(lifeline_readmit::drain::parse_show_node(node, &text)?)
    }

    pub fn drain(&self, node: &str, reason: &str) -> Result<(), SlurmError> {
        let reason = format!("reason={reason}");
        self.run(&["update", &format!("nodename={node}"), "state=drain", &reason]).map(drop)
    }

    pub fn resume(&self, node: &str) -> Result<(), SlurmError> {
        self.run(&["update", &format!("nodename={node}"), "state=resume"]).map(drop)
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

    /// The reason this agent writes is one the re-admission side recognises as Lifeline's, read back
    /// through either layout of `scontrol show node`; an admin's reason never is.
    #[test]
    fn agent_drains_are_ours_to_readmit_and_admin_drains_are_not() {
        let ours = reason(&["gpu.ecc".into(), "rail".into()]);
        for (reason, expect) in [(ours.as_str(), true), ("admin: bad DIMM", false), ("lifeline-ish", false)] {
            let one =
                format!("NodeName=n State=IDLE+DRAIN Reason={reason} [root@2024-05-01T10:00:00] Comment=x");
            let multi =
                format!("NodeName=n\n   State=IDLE+DRAIN ThreadsPerCore=1\n   Reason={reason} [root@x]\n");
            for text in [one, multi] {
                let n = lifeline_readmit::drain::parse_show_node("n", &text).unwrap();
                assert_eq!(n.drained_by_lifeline(), expect, "{text}");
                assert_eq!(lifeline_readmit::drain::is_lifeline_reason(reason), expect);
            }
        }
    }

    #[test]
    fn reason_is_short_and_prefixed() {
        let r = reason(&["a".into(), "b".into(), "c".into(), "d".into()]);
        assert_eq!(r, "lifeline: 4 check(s) failing: a, b, c");
    }

    proptest! {
        #[test]
        fn every_agent_reason_is_ours(names in proptest::collection::vec("[a-z0-9._]{1,20}", 0..6)) {
            prop_assert!(lifeline_readmit::drain::is_lifeline_reason(&reason(&names)));
        }
    }
}
