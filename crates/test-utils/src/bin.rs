//! Locating (and if needed building) the `lifeline` binary for end-to-end tests.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// Path to `target/<profile>/lifeline-agent`, built once per test process if it is missing.
pub fn agent_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| built("lifeline-agent", "lifeline-agent", &[])).clone()
}

/// Path to `target/<profile>/lifeline`, built once per test process if it is missing (for example when
/// only the e2e package was selected with `-p`).
pub fn lifeline_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    // With the engine's test hooks, as a workspace build of the tests makes it (lifeline-e2e enables them).
    BIN.get_or_init(|| built("lifeline-cli", "lifeline", &["--features", "lifeline-engine/test-hooks"]))
        .clone()
}

fn built(package: &str, bin_name: &str, features: &[&str]) -> PathBuf {
    // The test executable lives in target/<profile>/deps/.
    let exe = std::env::current_exe().expect("current exe");
    let profile_dir = exe.parent().and_then(|p| p.parent()).expect("target/<profile>").to_path_buf();
    let bin = profile_dir.join(bin_name);
    if !bin.exists() {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "-q", "-p", package, "--bin", bin_name])
            .args(features)
            .current_dir(workspace_root())
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building {bin_name} failed");
    }
    assert!(bin.exists(), "{} missing after build", bin.display());
    bin
}
