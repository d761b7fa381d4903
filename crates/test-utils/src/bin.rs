//! Locating (and if needed building) the `lifeline` binary for end-to-end tests. A binary older than the
//! sources it is built from is built again first: `cargo nextest run -p SOME-CRATE` does not rebuild another
//! package's binary, and an end-to-end test run against a stale one passes or fails for code that is no
//! longer there.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::SystemTime;

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// Path to `target/<profile>/lifeline-agent`, built once per test process if it is missing or stale.
pub fn agent_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| built("lifeline-agent", "lifeline-agent", &[])).clone()
}

/// Path to `target/<profile>/lifeline`, built once per test process if it is missing (for example when
/// only the e2e package was selected with `-p`) or older than a source file.
/// `LIFELINE_TEST_BIN` names a binary to test instead (a release build, or a copy kept while the tree is
/// being edited); it is used as it is, never rebuilt.
pub fn lifeline_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    if let Some(p) = std::env::var_os("LIFELINE_TEST_BIN") {
        return PathBuf::from(p);
    }
    // With the engine's test hooks, as a workspace build of the tests makes it (lifeline-e2e enables them).
    BIN.get_or_init(|| built("lifeline-cli", "lifeline", &["--features", "lifeline-engine/test-hooks"]))
        .clone()
}

fn built(package: &str, bin_name: &str, features: &[&str]) -> PathBuf {
    // The test executable lives in target/<profile>/deps/.
    let exe = std::env::current_exe().expect("current exe");
    let profile_dir = exe.parent().and_then(|p| p.parent()).expect("target/<profile>").to_path_buf();
    let bin = profile_dir.join(bin_name);
    let stale = match std::fs::metadata(&bin).and_then(|m| m.modified()) {
        Err(_) => true,
        Ok(built_at) => newest_source(&workspace_root()).is_some_and(|(t, p)| {
            let stale = t > built_at;
            if stale {
                eprintln!("{bin_name} is older than {}: building it again", p.display());
            }
            stale
        }),
    };
    if stale {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "-q", "-p", package, "--bin", bin_name])
            .args(features)
            .current_dir(workspace_root())
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building {bin_name} failed");
        // Cargo found it up to date when the newer file is not one it is built from (another crate's
        // source): mark it checked, so the next test process does not ask cargo again (read-only: the
        // binary may be running, and futimens needs ownership, not a writable descriptor).
        if let Ok(f) = std::fs::File::open(&bin) {
            let _ = f.set_modified(SystemTime::now());
        }
    }
    assert!(bin.exists(), "{} missing after build", bin.display());
    bin
}

/// The newest file the binaries may be built from (Rust sources and manifests under `crates/`, tests,
/// benchmarks and examples left out; `Cargo.lock`; the embedded `web/` assets), with its modification time.
fn newest_source(root: &Path) -> Option<(SystemTime, PathBuf)> {
    fn walk(dir: &Path, newest: &mut Option<(SystemTime, PathBuf)>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(ty) = e.file_type() else { continue };
            let name = e.file_name();
            let name = name.to_string_lossy();
            if ty.is_dir() {
                // Build outputs, node modules and the out-of-workspace fuzz project build nothing we run.
                if !matches!(
                    name.as_ref(),
                    "target" | "node_modules" | "fuzz" | "tests" | "benches" | "examples"
                ) && !name.starts_with('.')
                {
                    walk(&path, newest);
                }
            } else if ty.is_file() {
                let source = name.ends_with(".rs")
                    || name == "Cargo.toml"
                    || path.components().any(|c| c.as_os_str() == "web");
                if !source || name.ends_with(".snap.new") {
                    continue;
                }
                if let Ok(t) = e.metadata().and_then(|m| m.modified())
                    && newest.as_ref().is_none_or(|(n, _)| t > *n)
                {
                    *newest = Some((t, path));
                }
            }
        }
    }
    let mut newest = None;
    walk(&root.join("crates"), &mut newest);
    walk(&root.join("web"), &mut newest);
    for f in ["Cargo.lock", "Cargo.toml"] {
        if let Ok(t) = std::fs::metadata(root.join(f)).and_then(|m| m.modified())
            && newest.as_ref().is_none_or(|(n, _)| t > *n)
        {
            newest = Some((t, root.join(f)));
        }
    }
    newest
}
