//! The server config: `--config` supplies the inventory, and `[[backup-schedule]]` entries are checked
//! (every problem, with its line) and turned into per-switch next runs.

use std::process::{Command, Output};

use lifeline_test_utils::{lifeline_bin, workspace_root};
use serde_json::Value;

fn run(args: &[&str]) -> Output {
    Command::new(lifeline_bin())
        .args(args)
        .env_remove("LIFELINE_INVENTORY")
        .env_remove("LIFELINE_CONFIG")
        .output()
        .unwrap()
}

#[test]
fn shipped_config_schedules_every_switch() {
    let cfg = workspace_root().join("deploy/lifeline.toml");
    let args = [
        "backup",
        "schedule",
        "--json",
        "--after",
        "2026-11-21T03:00:00Z",
        "--config",
        cfg.to_str().unwrap(),
    ];
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 6, "the example cluster's six switches");
    // Jitter is per switch and stable: two runs agree, and not every switch starts at the same second.
    let again: Value = serde_json::from_slice(&run(&args).stdout).unwrap();
    assert_eq!(v, again);
    let nexts: std::collections::BTreeSet<&str> = rows.iter().map(|r| r["next"].as_str().unwrap()).collect();
    assert!(nexts.len() > 2, "{nexts:?}");
    // The nightly backend/storage entry runs at 02:00 plus at most 15 minutes of jitter.
    for r in rows.iter().filter(|r| r["cron"] == "0 2 * * *") {
        let t = r["next"].as_str().unwrap();
        assert!(t.starts_with("2026-11-22T02:0") || t.starts_with("2026-11-22T02:1"), "{t}");
    }
}

#[test]
fn bad_schedules_are_all_reported_with_lines() {
    let dir = tempfile::tempdir().unwrap();
    let inv = workspace_root().join("inventory/example-cluster.toml");
    let cfg = dir.path().join("lifeline.toml");
    std::fs::write(
        &cfg,
        format!(
            "inventory = \"{}\"\n\n[[backup-schedule]]\ntargets = [\"switch\"]\ncron = \"61 * * * *\"\njitter = \"5 parsecs\"\n\n\
             [[backup-schedule]]\ntargets = [\"no-such-group\"]\ncron = \"0 2 * * *\"\n",
            inv.display()
        ),
    )
    .unwrap();
    let o = run(&["backup", "schedule", "--config", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    let f = cfg.display().to_string();
    assert!(err.contains(&format!("{f}:3:1: jitter `5 parsecs`")), "{err}");
    assert!(err.contains(&format!("{f}:3:1: `61 * * * *` is not a valid cron expression")), "{err}");
    assert!(err.contains(&format!("{f}:8:1:")) && err.contains("no-such-group"), "{err}");
    // Unknown keys in the config are refused with their line.
    std::fs::write(&cfg, "inventory = \"x\"\ncolour = \"red\"\n").unwrap();
    let o = run(&["backup", "schedule", "--config", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!("{f}:2")),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
