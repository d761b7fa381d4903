//! `bmc-unreachable` end to end against `lifeline sim` on the standard ports (Redfish 443 and IPMI 623 on
//! one BMC address; needs root): a healthy BMC is left alone; a BMC whose Redfish certificate changed is
//! reached over IPMI and cold-reset once, and then the run escalates because the certificate still needs
//! `lifeline bmc trust` (nothing is re-pinned silently); after the operator's trust the run passes without
//! another reset. A BMC that answers nothing escalates without any action.

#[path = "runbook_support/mod.rs"]
mod support;

use lifeline_test_utils::{output_json as json, output_text as text};
use support::*;

fn steps(v: &serde_json::Value) -> Vec<(String, String)> {
    v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap().into(), s["state"].as_str().unwrap().into()))
        .collect()
}

fn st(v: &[(String, String)]) -> Vec<(&str, &str)> {
    v.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect()
}

#[test]
fn bmc_unreachable_resets_over_ipmi_once_and_never_repins() {
    if !nix_is_root() {
        eprintln!("SKIP: bmc-unreachable needs the simulator on ports 443 and 623 (root)");
        return;
    }
    let fleet = nodes(&[("b1", "r1", "auto"), ("b2", "r2", "auto"), ("b3", "r3", "auto")]);
    let sim = start(&fleet, 0);
    // Shorter waits than the library's (a hung BMC is given minutes there).
    let dir = tempfile::tempdir().unwrap();
    let text_rb =
        std::fs::read_to_string(lifeline_test_utils::workspace_root().join("runbooks/bmc-unreachable.toml"))
            .unwrap()
            .replace("timeout = \"10m\"", "timeout = \"15s\"")
            .replace("interval = \"5s\"", "interval = \"500ms\"")
            .replace("timeout = \"20s\"", "timeout = \"5s\"")
            .replace("timeout = \"30s\"", "timeout = \"10s\"");
    std::fs::write(dir.path().join("bmc-unreachable.toml"), text_rb).unwrap();
    let rb = dir.path().to_str().unwrap();
    let run = |node: &str| {
        let o =
            sim.lifeline(&["runbook", "run", "bmc-unreachable", node, "--yes", "--json", "--runbooks", rb]);
        (o.status.code(), json(&o), text(&o))
    };
    // Pin every certificate first (trust on first use).
    let o = sim.lifeline(&["health", "b1", "b2", "b3"]);
    assert!(o.status.code().is_some(), "{}", text(&o));

    // Healthy: nothing to do.
    let (code, v, t) = run("b1");
    assert_eq!((code, v["state"].as_str()), (Some(0), Some("succeeded")), "{t}");
    assert_eq!(
        st(&steps(&v)),
        [
            ("redfish", "ok"),
            ("ipmi", "skipped"),
            ("bmc-reset", "skipped"),
            ("answers-on-both", "ok"),
            ("events", "ok"),
            ("bmc-answers", "ok")
        ]
    );
    assert_eq!(executed(&sim, "b1", "bmc-reset"), 0);

    // Redfish presents a new certificate: reached over IPMI, reset once, escalated for `bmc trust`.
    sim.fault("b2", "tls-cert-change");
    let (code, v, t) = run("b2");
    assert_eq!((code, v["state"].as_str()), (Some(1), Some("escalated")), "{t}");
    assert_eq!(
        st(&steps(&v))[..4],
        [("redfish", "failed"), ("ipmi", "ok"), ("bmc-reset", "ok"), ("answers-on-both", "failed")]
    );
    assert_eq!(executed(&sim, "b2", "bmc-reset"), 1, "{:?}", sim.actions("b2"));
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.to_lowercase().contains("certificate") || reason.contains("pin"), "{reason}");
    // Still refused: nothing was re-pinned by the run.
    let o = sim.lifeline(&["health", "b2"]);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    // The operator trusts the new certificate; the next run passes without another reset.
    let look = sim.lifeline(&["bmc", "trust", "b2", "--json"]);
    assert_eq!(look.status.code(), Some(1), "a look re-pins nothing: {}", text(&look));
    let fp = lifeline_test_utils::presented_fingerprint(&look);
    let o = sim.lifeline(&["bmc", "trust", "b2", "--fingerprint", &fp]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (code, v, t) = run("b2");
    assert_eq!((code, v["state"].as_str()), (Some(0), Some("succeeded")), "{t}");
    assert_eq!(executed(&sim, "b2", "bmc-reset"), 1);

    // A BMC that answers nothing: escalated after trying IPMI, no action at all.
    sim.fault("b3", "bmc-unresponsive");
    let (code, v, t) = run("b3");
    assert_eq!((code, v["state"].as_str()), (Some(1), Some("escalated")), "{t}");
    assert_eq!(st(&steps(&v))[..3], [("redfish", "failed"), ("ipmi", "failed"), ("bmc-reset", "pending")]);
    assert!(sim.actions("b3").is_empty(), "{:?}", sim.actions("b3"));
}

fn nix_is_root() -> bool {
    std::process::Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0\n")).unwrap_or(false)
}
