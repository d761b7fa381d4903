//! The console rules' findings as fault observations: what a host printed on its serial console, read by
//! `lifeline_console::scan`, becomes the fault its device would raise — even when the agent and SSH are
//! dead. A rail's link-down names the rail (the console says `rdma3`, the inventory says that is `mlx5_3`)
//! so that correlation can blame the leaf it is cabled to; everything else is about the node.
//!
//! What clears a console fault ([`BootWatch`], [`clears`]): its own evidence gone, seen on the same
//! console — a clean boot after it: a kernel start, then init reaching the multi-user (or graphical)
//! target, with no fault-raising line between. A panic, an Oops, a lockup, a hung task, an OOM kill, an
//! MCE, an XID or a filesystem error belong to the boot that printed them; a later boot that comes all
//! the way up without one is the proof they are gone (a recovery run's power cycle is seen this way too).
//! Not cleared by a boot: a link down (`rail-down`, `console-link-down`), which is the cable's or the
//! switch's state and stays until the link is seen up, and a fault whose evidence is newer than the kernel
//! start (printed during this boot).

use std::collections::HashMap;

use chrono::{DateTime, Utc};

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
    if x.kind == FindingKind::LinkDown
        && let Some((name, hca)) = rail_named(f, topology)
    {
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
    Some(Observation {
        kind: format!("{CONSOLE_PREFIX}{}", x.kind.as_str()),
        unit: Unit { device, rail: None },
        severity: severity.into(),
        message: format!("console: {}", x.line),
        at_ms,
        detail,
    })
}

/// The inventory's rail a link line names (`rdma3` or `mlx5_3` -> `mlx5_3`), with the name it used.
fn rail_named<'a>(f: &'a ConsoleFinding, topology: &'a Topology) -> Option<(&'a str, &'a str)> {
    let x = &f.finding;
    let name = x.field("netdev").or_else(|| x.field("device"))?;
    Some((name, topology.rail(&f.console, name)?))
}

/// A rail's link seen up on its node's console: the evidence that its earlier link down is gone.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LinkUp {
    pub device: String,
    /// The inventory's name of the rail (its HCA).
    pub rail: String,
    pub line: String,
    pub at: DateTime<Utc>,
}

/// The link-up a finding reports on a rail the inventory lists, if it does.
pub fn link_up(f: &ConsoleFinding, topology: &Topology) -> Option<LinkUp> {
    if f.finding.kind != FindingKind::LinkUp {
        return None;
    }
    let (_, hca) = rail_named(f, topology)?;
    Some(LinkUp {
        device: f.console.clone(),
        rail: hca.to_owned(),
        line: f.finding.line.clone(),
        at: f.finding.ts,
    })
}

/// A clean boot seen on one console.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CleanBoot {
    pub device: String,
    /// The kernel start's line and when it was seen.
    pub kernel: String,
    pub kernel_at: DateTime<Utc>,
    /// The line that says the boot finished, and when.
    pub ready: String,
    pub ready_at: DateTime<Utc>,
}

/// Follows each console's boots: a kernel start opens one, any fault-raising finding spoils it, the
/// multi-user target closes it as clean. Pure: the intake feeds it every finding, in order per console.
#[derive(Debug, Default)]
pub struct BootWatch {
    /// Console -> the boot in progress (its kernel line and time) and whether a fault was printed since.
    booting: HashMap<String, (String, DateTime<Utc>, bool)>,
    /// Console -> its newest clean boot, for a fault decided after it (correlation holds findings a while).
    clean: HashMap<String, CleanBoot>,
}

impl BootWatch {
    /// Takes one finding; returns the clean boot it completes, if it does.
    pub fn feed(&mut self, f: &ConsoleFinding) -> Option<CleanBoot> {
        let x = &f.finding;
        match x.kind {
            FindingKind::Boot => {
                self.booting.insert(f.console.clone(), (x.line.clone(), x.ts, false));
                None
            }
            FindingKind::Ready => {
                // Without its kernel start seen (the console connected mid-boot, a systemd restart) a
                // ready line proves nothing about the boot before.
                let (kernel, kernel_at, spoiled) = self.booting.remove(&f.console)?;
                if spoiled {
                    return None;
                }
                let clean = CleanBoot {
                    device: f.console.clone(),
                    kernel,
                    kernel_at,
                    ready: x.line.clone(),
                    ready_at: x.ts,
                };
                self.clean.insert(f.console.clone(), clean.clone());
                Some(clean)
            }
            // The scanner's count of kernel starts, raised on a kernel start line (this boot's own, often):
            // it says the boots before failed, not that this one does. A boot that comes up ends the loop.
            FindingKind::Context | FindingKind::BootLoop => None,
            _ if x.severity == Severity::Info => None,
            _ => {
                if let Some(b) = self.booting.get_mut(&f.console) {
                    b.2 = true;
                }
                None
            }
        }
    }
}

impl BootWatch {
    /// The newest clean boot seen on `device`'s console.
    pub fn last_clean(&self, device: &str) -> Option<&CleanBoot> {
        self.clean.get(device)
    }
}

/// Whether `clean` clears a fault of `kind` on its console's device whose newest evidence was seen at
/// `seen_ms` (the finding's time in the fault's detail, else the fault's last update): a console fault
/// other than a link down, printed before the clean boot's kernel started — or, for a boot loop, at its
/// kernel start at the latest (the count of starts that raised it may end with this boot's own).
pub fn clears(kind: &str, seen_ms: i64, clean: &CleanBoot) -> bool {
    let link = format!("{CONSOLE_PREFIX}{}", FindingKind::LinkDown.as_str());
    let boot_loop = format!("{CONSOLE_PREFIX}{}", FindingKind::BootLoop.as_str());
    let kernel_ms = clean.kernel_at.timestamp_millis();
    kind.starts_with(CONSOLE_PREFIX)
        && kind != link
        && (seen_ms < kernel_ms || (kind == boot_loop && seen_ms == kernel_ms))
}

/// When a console fault's evidence was last seen: its detail's `seen` (the finding's time) when it has
/// one, else `updated_ms`.
pub fn evidence_seen_ms(detail: &serde_json::Value, updated_ms: i64) -> i64 {
    detail
        .get("seen")
        .and_then(|v| serde_json::from_value::<DateTime<Utc>>(v.clone()).ok())
        .map_or(updated_ms, |t| t.timestamp_millis())
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

    /// The console crate's corpus of real console text (SOURCES.md there): a real server boot, 2.6 s to
    /// 13.7 s of an AMD machine's kernel and systemd (no fault in it).
    const REAL_BOOT: &str = include_str!("../../../console/tests/data/console_scan/boot_gpud_pstore.log");
    /// S28's serial-console kernel banner, S3's panic line, S49's systemd ends of a Debian 12 boot.
    const KERNEL: &str = "[    0.000000] Linux version 4.1.6-coreos-r1 (buildbot@ip-10-204-3-57) (gcc version 4.8.4 (Gentoo Hardened 4.8.4 p1.5, pie-0.6.1) ) #2 SMP Wed Sep 2 04:16:15 UTC 2015";
    const PANIC: &str = "[   36.560762] Kernel panic - not syncing: Fatal exception";
    const READY: &str = "[  OK  ] Reached target multi-user.target - Multi-User System.";

    /// Feeds `text` to one scanner at `at` and every finding to `w`; the clean boots it completes.
    fn watch(
        w: &mut BootWatch,
        s: &mut ConsoleScanner,
        at: chrono::DateTime<chrono::Utc>,
        text: &str,
    ) -> Vec<CleanBoot> {
        let mut found = Vec::new();
        s.feed(at, text.replace('\n', "\r\n").as_bytes(), &mut found);
        found
            .into_iter()
            .filter_map(|finding| w.feed(&ConsoleFinding { console: "gpu-node-05".into(), finding }))
            .collect()
    }

    fn t(secs: i64) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    #[test]
    fn a_panic_is_cleared_by_the_next_boot_that_reaches_multi_user_and_not_before() {
        let (mut w, mut s) = (BootWatch::default(), ConsoleScanner::new(RuleSet::builtin()));
        // The boot that panics: a kernel start, the real boot's lines, the panic. Nothing clean.
        let crashed = format!("{KERNEL}\n{REAL_BOOT}{PANIC}\n");
        assert!(watch(&mut w, &mut s, t(0), &crashed).is_empty());
        let panic = observations("gpu-node-05", &format!("{PANIC}\n")).remove(0);
        assert_eq!(panic.kind, "console-kernel-panic");
        // A ready line without its kernel start proves nothing (systemd restarted, console joined late).
        assert!(watch(&mut w, &mut s, t(5), &format!("{READY}\n")).is_empty());
        // The next boot comes all the way up: clean, and it clears the panic seen before its kernel.
        let clean = watch(&mut w, &mut s, t(20), &format!("{KERNEL}\n{REAL_BOOT}{READY}\n"));
        assert_eq!(clean.len(), 1, "{clean:#?}");
        let c = &clean[0];
        assert_eq!((c.device.as_str(), c.kernel_at, c.ready_at), ("gpu-node-05", t(20), t(20)));
        assert!(c.kernel.contains("Linux version 4.1.6-coreos-r1") && c.ready.contains("Multi-User System"));
        assert!(clears("console-kernel-panic", t(0).timestamp_millis(), c));
        assert_eq!(w.last_clean("gpu-node-05"), Some(c));
        // Not what this boot printed itself, not a link down (the cable's state), not a sweep fault.
        assert!(!clears("console-kernel-panic", t(21).timestamp_millis(), c));
        assert!(!clears("console-link-down", t(0).timestamp_millis(), c));
        assert!(!clears("rail-down", t(0).timestamp_millis(), c));
        assert!(!clears("sel-critical", t(0).timestamp_millis(), c));
    }

    #[test]
    fn a_boot_that_prints_a_fault_before_multi_user_is_not_clean() {
        let (mut w, mut s) = (BootWatch::default(), ConsoleScanner::new(RuleSet::builtin()));
        let hung = "[26825.855448] INFO: task kworker/2:1:5747 blocked for more than 120 seconds.";
        let text = format!("{KERNEL}\n{REAL_BOOT}{hung}\n{READY}\n");
        let clean = watch(&mut w, &mut s, t(0), &text);
        assert!(clean.is_empty(), "{clean:#?}");
        assert!(w.last_clean("gpu-node-05").is_none());
    }

    #[test]
    fn the_simulators_boot_loop_never_boots_clean_and_its_normal_boot_does() {
        // The simulator's text (crates/sim/src/console.rs): kernel_lines then the boot loop's panic; after
        // the fault is cleared, kernel_lines through "Reached target Multi-User System.".
        let looping = "[    0.000000] Linux version 5.15.0-105-generic (buildd@lcy02-amd64-054) (gcc 11.4.0) #115-Ubuntu SMP\n\
            [    6.870114] nvidia: loading out-of-tree module taints kernel.\n\
            [    7.403511] Kernel panic - not syncing: Fatal exception\n";
        let normal = "[    0.000000] Linux version 5.15.0-105-generic (buildd@lcy02-amd64-054) (gcc 11.4.0) #115-Ubuntu SMP\n\
            [   12.418220] systemd[1]: Set hostname to <gpu-node-05>.\n\
            [   13.001544] systemd[1]: Reached target Multi-User System.\n";
        let (mut w, mut s) = (BootWatch::default(), ConsoleScanner::new(RuleSet::builtin()));
        for i in 0..5 {
            assert!(watch(&mut w, &mut s, t(i * 10), looping).is_empty());
        }
        // The sixth kernel start within the window is the scanner's second boot loop (3 starts each),
        // raised on the clean boot's own kernel line: it does not spoil the boot, and the boot clears it.
        let mut found = Vec::new();
        s.feed(t(60), normal.replace('\n', "\r\n").as_bytes(), &mut found);
        let kinds: Vec<FindingKind> = found.iter().map(|f| f.kind).collect();
        assert_eq!(kinds[..2], [FindingKind::Boot, FindingKind::BootLoop], "{found:#?}");
        let clean: Vec<CleanBoot> = found
            .into_iter()
            .filter_map(|finding| w.feed(&ConsoleFinding { console: "gpu-node-05".into(), finding }))
            .collect();
        assert_eq!(clean.len(), 1);
        assert!(clears("console-kernel-panic", t(40).timestamp_millis(), &clean[0]));
        assert!(clears("console-boot-loop", t(60).timestamp_millis(), &clean[0]));
        assert!(!clears("console-kernel-panic", t(60).timestamp_millis(), &clean[0]));
    }

    #[test]
    fn the_evidence_time_is_the_findings_and_else_the_faults_update() {
        let at = t(7);
        assert_eq!(evidence_seen_ms(&serde_json::json!({ "seen": at }), 1), at.timestamp_millis());
        assert_eq!(evidence_seen_ms(&serde_json::json!({}), 42), 42);
        assert_eq!(evidence_seen_ms(&serde_json::json!({ "seen": "not a time" }), 42), 42);
    }
}
