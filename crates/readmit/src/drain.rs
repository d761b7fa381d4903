//! The one definition of "a Slurm drain Lifeline set", shared by every caller that may lift a drain: the
//! re-admission adapter here and `lifeline-agent health-check` on the node (which builds this module
//! without the adapters' async dependencies).
//!
//! Slurm records every drain as the SlurmUser, so ownership is by reason text only: a node is ours when it
//! carries the DRAIN flag and its reason starts with [`REASON_PREFIX`]. Everything else, an admin's drain
//! above all, is never resumed. The state and reason come from `scontrol show node` in either of its
//! layouts (one field group per line, or `-o`: everything on one line), parsed by one function.

/// Every Slurm drain reason Lifeline sets starts with this; nothing else is ever resumed.
pub const REASON_PREFIX: &str = "lifeline:";

/// Whether a drain reason is one Lifeline wrote.
pub fn is_lifeline_reason(reason: &str) -> bool {
    reason.starts_with(REASON_PREFIX)
}

/// A node as Slurm reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmNode {
    pub name: String,
    /// Base state, lowercase: `idle`, `allocated`, `mixed`, `down`, ...
    pub state: String,
    /// Upper-case flags: `DRAIN`, `NOT_RESPONDING`, ...
    pub flags: Vec<String>,
    /// The reason without scontrol's ` [user@time]` suffix.
    pub reason: Option<String>,
}

impl SlurmNode {
    /// The DRAIN flag (`IDLE+DRAIN`), or a base state that names it (`DRAIN`, and sinfo's and REST's
    /// `drained` / `draining`).
    pub fn drained(&self) -> bool {
        self.flags.iter().any(|f| f == "DRAIN")
            || matches!(self.state.as_str(), "drain" | "drained" | "draining")
    }

    /// Lifeline's drain: drained, with a reason Lifeline wrote.
    pub fn drained_by_lifeline(&self) -> bool {
        self.drained() && self.reason.as_deref().is_some_and(is_lifeline_reason)
    }

    /// Schedulable and answering: `idle` (or running jobs) without DRAIN / NOT_RESPONDING / DOWN flags.
    pub fn in_service(&self) -> bool {
        matches!(self.state.as_str(), "idle" | "mixed" | "allocated")
            && !self.flags.iter().any(|f| matches!(f.as_str(), "DRAIN" | "NOT_RESPONDING" | "DOWN" | "FAIL"))
    }

    pub fn describe(&self) -> String {
        let mut s = self.state.clone();
        for f in &self.flags {
            s.push('+');
            s.push_str(&f.to_lowercase());
        }
        if let Some(r) = &self.reason {
            s.push_str(&format!(" reason={r:?}"));
        }
        s
    }
}

/// `scontrol show node` printed no `State=` field for the node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse Slurm's answer about node {node}: no State= field")]
pub struct NoState {
    pub node: String,
}

/// Parses `scontrol show node NAME` output, with or without `-o`.
pub fn parse_show_node(name: &str, text: &str) -> Result<SlurmNode, NoState> {
    let mut state = None;
    let mut reason = None;
    for line in text.lines() {
        let line = line.trim();
        let (fields, line_reason) = split_reason(line);
        if let Some(r) = line_reason {
            reason = Some(r);
        }
        for token in fields.split_whitespace() {
            if let Some(s) = token.strip_prefix("State=") {
                state = Some(s.to_owned());
            }
        }
    }
    let state = state.ok_or_else(|| NoState { node: name.to_owned() })?;
    let mut parts = state.split('+');
    let base = parts.next().unwrap_or("").trim_end_matches(['*', '~', '#', '!', '%', '$', '@', '^', '-']);
    let mut flags: Vec<String> = parts.map(|f| f.to_uppercase()).collect();
    if state.split('+').next().is_some_and(|b| b.ends_with('*'))
        && !flags.iter().any(|f| f == "NOT_RESPONDING")
    {
        flags.push("NOT_RESPONDING".into());
    }
    Ok(SlurmNode {
        name: name.to_owned(),
        state: base.to_lowercase(),
        flags,
        reason: reason.filter(|r| !r.is_empty() && r != "(null)"),
    })
}

/// Splits one line into its other fields and the `Reason=` value, without scontrol's ` [user@time]`.
/// Multi-line output gives the reason a line of its own (it runs to the end of the line, `=` and all);
/// with `-o` it ends where the next ` Key=` field starts.
fn split_reason(line: &str) -> (String, Option<String>) {
    let start = if line.starts_with("Reason=") {
        0
    } else if let Some(i) = line.find(" Reason=") {
        i + 1
    } else {
        return (line.to_owned(), None);
    };
    let rest = &line[start + "Reason=".len()..];
    let end = if start == 0 {
        rest.len()
    } else {
        rest.match_indices(' ')
            .map(|(j, _)| j)
            .find(|&j| {
                let next = rest[j + 1..].split_whitespace().next().unwrap_or("");
                next.split_once('=')
                    .is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric()))
            })
            .unwrap_or(rest.len())
    };
    let r = rest[..end].trim();
    let r = match r.rfind(" [") {
        Some(i) if r.ends_with(']') => &r[..i],
        _ => r,
    };
    (format!("{} {}", &line[..start], &rest[end..]), Some(r.to_owned()))
}

/// The reason Lifeline writes: prefix, the operator-facing text, and the report digest.
pub fn lifeline_reason(text: &str, digest: &str) -> String {
    let text = text.trim().trim_start_matches(REASON_PREFIX).trim();
    // Slurm stores the reason verbatim; keep it on one line.
    let text: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    format!("{REASON_PREFIX} {text} [report {digest}]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_scontrol_show_node() {
        let t = "NodeName=gpu-node-02 Arch=x86_64 CoresPerSocket=1\n   State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0\n   \
                 Reason=admin: bad DIMM [root@2026-11-21T02:50:02]\n";
        let n = parse_show_node("gpu-node-02", t).unwrap();
        assert_eq!(n.state, "idle");
        assert_eq!(n.flags, vec!["DRAIN"]);
        assert_eq!(n.reason.as_deref(), Some("admin: bad DIMM"));
        assert!(n.drained() && !n.drained_by_lifeline());
        let n = parse_show_node("x", "   State=IDLE* ThreadsPerCore=1").unwrap();
        assert_eq!(n.flags, vec!["NOT_RESPONDING"]);
        assert!(!n.in_service());
    }

    #[test]
    fn parses_one_line_output() {
        let n = parse_show_node(
            "gpu-node-04",
            "NodeName=gpu-node-04 Arch=x86_64 State=IDLE+DRAIN ThreadsPerCore=1 \
             Reason=lifeline: 2 check(s) failing: gpu.ecc, rail [root@2024-05-01T10:00:00] Comment=(null)",
        )
        .unwrap();
        assert_eq!((n.state.as_str(), n.flags.as_slice()), ("idle", ["DRAIN".to_owned()].as_slice()));
        assert_eq!(n.reason.as_deref(), Some("lifeline: 2 check(s) failing: gpu.ecc, rail"));
        assert!(n.drained_by_lifeline());
        let n = parse_show_node("n", "NodeName=n State=IDLE Reason=(null)").unwrap();
        assert_eq!((n.drained(), n.reason), (false, None));
        let n = parse_show_node("n", "NodeName=n State=DRAIN Reason=admin maintenance [ops@x]").unwrap();
        assert!(n.drained() && !n.drained_by_lifeline());
    }

    #[test]
    fn a_reason_line_keeps_its_equals_signs() {
        let n = parse_show_node("n", "   State=IDLE+DRAIN\n   Reason=admin: fan=0 rpm [root@x]\n").unwrap();
        assert_eq!(n.reason.as_deref(), Some("admin: fan=0 rpm"));
    }

    #[test]
    fn reason_is_prefixed_once_and_single_line() {
        assert_eq!(
            lifeline_reason("lifeline: rail\ndown", "sha256:ab"),
            "lifeline: rail down [report sha256:ab]"
        );
    }

    /// The two layouts of `scontrol show node` for the same node, as Slurm 22.05 prints them.
    fn layouts(state: &str, reason: &str) -> [String; 2] {
        [
            format!(
                "NodeName=n Arch=x86_64 CoresPerSocket=1\n   State={state} ThreadsPerCore=1 TmpDisk=0\n   \
                 Partitions=gpu\n   Reason={reason} [slurm@2026-11-28T10:00:00]\n"
            ),
            format!(
                "NodeName=n Arch=x86_64 CoresPerSocket=1 State={state} ThreadsPerCore=1 TmpDisk=0 \
                 Partitions=gpu Reason={reason} [slurm@2026-11-28T10:00:00] Comment=(null)\n"
            ),
        ]
    }

    proptest! {
        #[test]
        fn parser_never_panics(s in "(?s).{0,300}") {
            let _ = parse_show_node("n", &s);
        }

        #[test]
        fn our_reason_is_always_recognised(text in "[ -~]{1,60}", hex in "[0-9a-f]{64}") {
            let reason = lifeline_reason(&text, &format!("sha256:{hex}"));
            let n = SlurmNode { name: "n".into(), state: "idle".into(), flags: vec!["DRAIN".into()], reason: Some(reason) };
            prop_assert!(n.drained_by_lifeline());
        }

        /// Both layouts give one verdict, and it is "ours" exactly when the reason carries the prefix.
        #[test]
        fn both_layouts_agree(
            base in "(IDLE|MIXED|ALLOCATED|DOWN)",
            flag in "(|\\+DRAIN|\\+DRAIN\\+NOT_RESPONDING)",
            ours in any::<bool>(),
            words in "[a-z0-9.,:]{1,12}( [a-z0-9.,:]{1,12}){0,4}",
        ) {
            let reason = if ours { format!("{REASON_PREFIX} {words}") } else { words.clone() };
            let [multi, one] = layouts(&format!("{base}{flag}"), &reason);
            let (a, b) = (parse_show_node("n", &multi).unwrap(), parse_show_node("n", &one).unwrap());
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(a.reason.as_deref(), Some(reason.as_str()));
            prop_assert_eq!(a.drained_by_lifeline(), ours && !flag.is_empty());
        }
    }
}
