//! The console rules' findings as fault observations: what a host printed on its serial console, read by
//! `lifeline_console::scan`, becomes the fault its device would raise — even when the agent and SSH are
//! dead. A rail's link-down names the rail (the console says `rdma3`, the inventory says that is `mlx5_3`)
//! so that correlation can blame the leaf it is cabled to; everything else is about the node.

use lifeline_console::ConsoleFinding;
use lifeline_console::scan::{FindingKind, Severity};

use crate::correlate::{Observation, Topology, Unit};

/// A rail whose link went down (from the console's link-down lines).
pub const RAIL_DOWN: &str = "rail-down";
/// Every other console fault is `console-<finding kind>` (`console-kernel-panic`, `console-gpu-xid`, …).
pub const CONSOLE_PREFIX: &str = "console-";

/// The observation a finding makes, or `None` for what is not a fault (info lines, kernel starts).
pub fn observation(f: &ConsoleFinding, topology: &Topology) -> Option<Observation> {
    let x = &f.finding;
    let severity = match x.severity {
        Severity::Info => return None,
        Severity::Warning => "warning",
        Severity::Critical => "critical",
    };
    if matches!(x.kind, FindingKind::Boot | FindingKind::Context) {
        return None;
    }
    let detail = serde_json::json!({
        "source": "console",
        "rule": &*x.rule,
        "line": x.line,
        "fields": x.fields,
        "seen": x.ts,
    });
    let at_ms = x.ts.timestamp_millis();
    let device = f.console.clone();
    if x.kind == FindingKind::LinkDown {
        let named = x.field("netdev").or_else(|| x.field("device"));
        if let Some((name, hca)) = named.and_then(|n| Some((n, topology.rail(&device, n)?))) {
            let what = if name == hca { hca.to_owned() } else { format!("{hca} ({name})") };
            return Some(Observation {
                kind: RAIL_DOWN.into(),
                unit: Unit { device, rail: Some(hca.to_owned()) },
                severity: severity.into(),
                message: format!("rail {what} link down, seen on the console: {}", x.line),
                at_ms,
                detail,
            });
        }
    }
    Some(Observation {
        kind: format!("{CONSOLE_PREFIX}{}", x.kind.as_str()),
        unit: Unit { device, rail: None },
        severity: severity.into(),
        message: format!("console: {}", x.line),
        at_ms,
        detail,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use lifeline_console::scan::{ConsoleScanner, RuleSet};

    use super::*;

    fn topology() -> Topology {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../inventory/example-cluster.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        Topology::from_inventory(&lifeline_inventory::check_str(&path, &text).inventory.unwrap())
    }

    /// What the console rules make of `lines` printed on `console`.
    fn observations(console: &str, lines: &str) -> Vec<Observation> {
        let t = topology();
        let mut s = ConsoleScanner::new(RuleSet::builtin());
        let mut found = Vec::new();
        s.feed(chrono::Utc::now(), lines.as_bytes(), &mut found);
        found
            .into_iter()
            .filter_map(|finding| observation(&ConsoleFinding { console: console.into(), finding }, &t))
            .collect()
    }

    #[test]
    fn a_rail_link_down_names_the_rail_the_inventory_knows() {
        let o = observations("gpu-node-02", "[ 9301.004988] mlx5_core 0000:4b:00.0 rdma3: Link down\n");
        assert_eq!(o.len(), 1, "{o:#?}");
        assert_eq!(o[0].kind, RAIL_DOWN);
        assert_eq!(o[0].unit, Unit { device: "gpu-node-02".into(), rail: Some("mlx5_3".into()) });
        assert!(
            o[0].message.starts_with("rail mlx5_3 (rdma3) link down, seen on the console: "),
            "{}",
            o[0].message
        );
        assert_eq!(o[0].detail["source"], "console");
        assert_eq!(o[0].detail["rule"], "mlx5e-link-down");
        // A netdev the inventory does not list is still a fault of the node, from the console.
        let o = observations("gpu-node-02", "[ 9301.004988] mlx5_core 0000:4b:00.0 ens9f0np0: Link down\n");
        assert_eq!((o[0].kind.as_str(), o[0].unit.rail.as_deref()), ("console-link-down", None));
    }

    #[test]
    fn a_kernel_panic_is_a_console_fault_and_a_kernel_start_is_none() {
        let o = observations(
            "gpu-node-05",
            "[    0.000000] Linux version 5.15.0-105-generic (buildd@lcy02-amd64-054) (gcc 11.4.0) #115-Ubuntu SMP\n\
             [    7.403511] Kernel panic - not syncing: Fatal exception\n",
        );
        assert_eq!(o.len(), 1, "{o:#?}");
        assert_eq!((o[0].kind.as_str(), o[0].severity.as_str()), ("console-kernel-panic", "critical"));
        assert_eq!(o[0].message, "console: [    7.403511] Kernel panic - not syncing: Fatal exception");
    }
}
