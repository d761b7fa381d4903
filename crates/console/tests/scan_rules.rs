//! The console rules against real kernel and driver lines (tests/data/console_scan, sources in SOURCES.md):
//! one test per rule of the embedded rule file, a test that every rule has one, and negative tests over
//! real boot chatter and near-miss lines.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use lifeline_console::scan::{ConsoleScanner, Finding, FindingKind, RuleSet, Severity};
use serde::Deserialize;

const CASES: &str = include_str!("data/console_scan/cases.toml");
const CHATTER: &str = include_str!("data/console_scan/chatter.log");
const BOOT: &str = include_str!("data/console_scan/boot_gpud_pstore.log");
const KMSG: &str = include_str!("data/console_scan/kmsg_gpud.log");

#[derive(Debug, Deserialize)]
struct Cases {
    case: Vec<Case>,
}

#[derive(Debug, Deserialize)]
struct Case {
    rule: String,
    source: String,
    lines: Vec<String>,
    expect: BTreeMap<String, String>,
    #[serde(default)]
    severity: Option<Severity>,
    /// The rule must raise nothing (context rules).
    #[serde(default)]
    absent: bool,
}

fn cases() -> Vec<Case> {
    toml::from_str::<Cases>(CASES).expect("cases.toml").case
}

fn ts() -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).expect("ts")
}

/// Feeds the lines as a console would deliver them (CRLF, in one chunk) and returns the findings.
fn scan(lines: &[String]) -> Vec<Finding> {
    let mut s = ConsoleScanner::new(RuleSet::builtin());
    let mut out = Vec::new();
    let text: String = lines.iter().map(|l| format!("{l}\r\n")).collect();
    s.feed(ts(), text.as_bytes(), &mut out);
    out
}

fn check_rule(id: &str) {
    let rules = RuleSet::builtin();
    assert!(rules.rules().iter().any(|r| &*r.id == id), "no rule {id} in the embedded file");
    let mine: Vec<Case> = cases().into_iter().filter(|c| c.rule == id).collect();
    assert!(!mine.is_empty(), "rule {id} has no case in cases.toml");
    for c in mine {
        let found = scan(&c.lines);
        let last = c.lines.last().expect("a case has lines");
        let hits: Vec<&Finding> = found.iter().filter(|f| &*f.rule == id).collect();
        if c.absent {
            assert!(hits.is_empty(), "{id} ({}) must raise nothing: {hits:?}", c.source);
            continue;
        }
        assert_eq!(hits.len(), 1, "{id} ({}) on {last:?}: {found:?}", c.source);
        let f = hits[0];
        assert!(last.contains(f.line.trim()), "{id}: the finding names its line: {:?}", f.line);
        let rule = rules.rules().iter().find(|r| &*r.id == id).expect("rule");
        assert!(
            rule.literals.iter().any(|l| last.contains(l.as_str())),
            "{id}: no literal of {:?} in {last:?}",
            rule.literals
        );
        for (k, v) in &c.expect {
            assert_eq!(
                f.field(k),
                Some(v.as_str()),
                "{id} ({}) field {k} on {last:?}: {:?}",
                c.source,
                f.fields
            );
        }
        if let Some(sev) = c.severity {
            assert_eq!(f.severity, sev, "{id} ({}) severity on {last:?}", c.source);
        }
        // Earlier lines of a case are context only: they raise nothing of this rule.
        if c.lines.len() > 1 {
            let earlier = scan(&c.lines[..c.lines.len() - 1]);
            assert!(earlier.iter().all(|f| &*f.rule != id), "{id}: raised before its line: {earlier:?}");
        }
    }
}

macro_rules! rule_tests {
    ($($name:ident => $id:literal),* $(,)?) => {
        $( #[test] fn $name() { check_rule($id); } )*
        const TESTED: &[&str] = &[$($id),*];
    };
}

rule_tests! {
    kernel_panic => "kernel-panic",
    kernel_oops => "kernel-oops",
    kernel_null_deref => "kernel-null-deref",
    mce_logged => "mce-logged",
    mce_bank => "mce-bank",
    nvidia_xid => "nvidia-xid",
    nvrm_gpu_context => "nvrm-gpu-context",
    nvidia_fallen_off_bus => "nvidia-fallen-off-bus",
    soft_lockup => "soft-lockup",
    hard_lockup => "hard-lockup",
    hung_task => "hung-task",
    oom_kill => "oom-kill",
    ext4_error => "ext4-error",
    fs_read_only => "fs-read-only",
    xfs_error => "xfs-error",
    nvme_timeout => "nvme-timeout",
    nvme_controller_down => "nvme-controller-down",
    block_io_error => "block-io-error",
    ib_port_down => "ib-port-down",
    mlx5e_link_down => "mlx5e-link-down",
    ib_port_active => "ib-port-active",
    mlx5e_link_up => "mlx5e-link-up",
    kernel_start => "kernel-start",
    systemd_multi_user => "systemd-multi-user",
}

#[test]
fn every_rule_has_a_test_and_a_real_case() {
    let rules = RuleSet::builtin();
    let all = cases();
    for r in rules.rules() {
        assert!(TESTED.contains(&&*r.id), "rule {} has no #[test] in scan_rules.rs", r.id);
        assert!(all.iter().any(|c| c.rule == *r.id), "rule {} has no case in cases.toml", r.id);
    }
    for c in &all {
        assert!(c.source.starts_with('S'), "case of {} names no source", c.rule);
    }
}

fn above_info(text: &str) -> Vec<Finding> {
    let mut s = ConsoleScanner::new(RuleSet::builtin());
    let mut out = Vec::new();
    s.feed(ts(), text.as_bytes(), &mut out);
    out.into_iter()
        .filter(|f| {
            f.severity > Severity::Info
                || !matches!(f.kind, FindingKind::Boot | FindingKind::Ready | FindingKind::LinkUp)
        })
        .collect()
}

#[test]
fn real_boot_chatter_raises_nothing() {
    for (name, text) in [("boot_gpud_pstore.log", BOOT), ("kmsg_gpud.log", KMSG), ("chatter.log", CHATTER)] {
        assert!(text.lines().count() > 20, "{name} is a real corpus");
        let found = above_info(text);
        assert!(found.is_empty(), "{name}: {found:#?}");
    }
}

#[test]
fn other_targets_are_not_the_end_of_a_boot() {
    // S2's boot (systemd reaching its early targets) and S49's `getty.target - Login Prompts`.
    let mut lines: Vec<String> =
        BOOT.lines().filter(|l| l.contains("Reached target")).map(String::from).collect();
    assert!(lines.len() >= 5, "the corpus boot reaches its early targets");
    lines.push("[  OK  ] Reached target getty.target - Login Prompts.".into());
    let found = scan(&lines);
    assert!(found.iter().all(|f| f.kind != FindingKind::Ready), "{found:?}");
}

#[test]
fn the_end_of_panic_trailer_is_not_a_second_panic() {
    // kernel/panic.c prints this after the panic line (format: "---[ end Kernel panic - not syncing: %s ]---").
    let lines = vec![
        "[    5.390622] Kernel panic - not syncing: Fatal exception".to_owned(),
        "[    5.391616] ---[ end Kernel panic - not syncing: Fatal exception ]---".to_owned(),
    ];
    let found = scan(&lines);
    assert_eq!(found.iter().filter(|f| f.kind == FindingKind::KernelPanic).count(), 1, "{found:?}");
}

#[test]
fn ansi_and_chunking_noise_does_not_hide_a_panic() {
    let mut s = ConsoleScanner::new(RuleSet::builtin());
    let mut out = Vec::new();
    let stream = b"\x1b[0;1;31m[   36.560762] Kernel pa\x1b[0m".to_vec();
    s.feed(ts(), &stream, &mut out);
    s.feed(ts(), b"nic - not syncing: softlockup: hung tasks\r", &mut out);
    assert!(out.is_empty(), "no line end yet: {out:?}");
    s.feed(ts(), b"\r\n", &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].kind, FindingKind::KernelPanic);
    assert_eq!(out[0].field("reason"), Some("softlockup: hung tasks"));
}

proptest::proptest! {
    /// The findings do not depend on how the link chunked the bytes (real fault and chatter lines,
    /// ANSI noise, cut anywhere).
    #[test]
    fn chunking_never_changes_the_findings(
        picks in proptest::collection::vec(0usize..1000, 1..40),
        cuts in proptest::collection::vec(1usize..64, 1..20),
    ) {
        let faults: Vec<String> = cases().into_iter().flat_map(|c| c.lines).collect();
        let chatter: Vec<&str> = CHATTER.lines().collect();
        let mut stream = Vec::new();
        for p in picks {
            let line = if p % 3 == 0 { chatter[p % chatter.len()] } else { faults[p % faults.len()].as_str() };
            if p % 5 == 0 {
                stream.extend_from_slice(b"\x1b[0;31m");
            }
            stream.extend_from_slice(line.as_bytes());
            stream.extend_from_slice(if p % 2 == 0 { b"\r\n" } else { b"\n" });
        }
        let whole = {
            let mut s = ConsoleScanner::new(RuleSet::builtin());
            let mut out = Vec::new();
            s.feed(ts(), &stream, &mut out);
            out
        };
        let mut s = ConsoleScanner::new(RuleSet::builtin());
        let mut out = Vec::new();
        let mut at = 0;
        for (i, c) in cuts.iter().cycle().enumerate() {
            if at >= stream.len() || i > stream.len() {
                break;
            }
            let end = (at + c).min(stream.len());
            s.feed(ts(), &stream[at..end], &mut out);
            at = end;
        }
        if at < stream.len() {
            s.feed(ts(), &stream[at..], &mut out);
        }
        proptest::prop_assert_eq!(out, whole);
    }
}

#[test]
fn an_operators_rule_file_adds_a_rule_without_a_rebuild() {
    let text = format!(
        "{}\n[[rule]]\nid = \"nvswitch-sxid\"\nkind = \"gpu-xid\"\nseverity = \"warning\"\nregex = 'SXid \\(PCI:(?P<pci>[0-9a-f:.]+)\\): (?P<sxid>\\d+)'\n",
        lifeline_console::scan::BUILTIN_RULES
    );
    let rules = std::sync::Arc::new(RuleSet::from_toml(&text, "ops.toml").expect("valid"));
    let mut s = ConsoleScanner::new(rules);
    let mut out = Vec::new();
    s.feed(
        ts(),
        b"[   38.175561] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002b}\n",
        &mut out,
    );
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].field("sxid"), Some("22013"));
}
