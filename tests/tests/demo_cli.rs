//! The README's main command: `lifeline demo` serves the example cluster in-process and sweeps it.

use std::process::{Command, Stdio};

use lifeline_test_utils::{lifeline_bin, output_text};
use serde_json::Value;

#[test]
fn demo_sweeps_the_example_cluster_and_shows_scripted_faults() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(lifeline_bin())
        .args([
            "demo",
            "--sweeps",
            "3",
            "--interval",
            "0.2",
            "--json",
            "--port-offset",
            "35000",
            "--data-dir",
        ])
        .arg(dir.path())
        .current_dir(lifeline_test_utils::workspace_root())
        .env_remove("LIFELINE_INVENTORY")
        .env_remove("LIFELINE_DATABASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let sweeps: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(sweeps.len(), 3);
    for s in &sweeps {
        let rows = s["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 14, "every BMC of the example cluster (11 servers + 3 switch BMCs)");
    }
    // Sweep 1 is clean; the script injects a GPU ECC fault on gpu-node-03 before sweep 2.
    let first = &sweeps[0]["rows"];
    assert!(first.as_array().unwrap().iter().all(|r| r["power"] == "on"), "{first}");
    let n03 = sweeps[2]["rows"].as_array().unwrap().iter().find(|r| r["name"] == "gpu-node-03").unwrap();
    assert_eq!(n03["health"], "critical", "{n03}");
    let events = sweeps[2]["events"].as_array().unwrap();
    assert!(events.iter().any(|e| e.as_str().unwrap().contains("gpu-node-03")), "{events:?}");
    // The demo's state went to SQLite in the data dir.
    assert!(dir.path().join("lifeline.db").exists());
}
