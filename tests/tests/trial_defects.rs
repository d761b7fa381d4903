//! The defects a new user's trial found, each pinned: default backups restorable and a dry run that fails
//! exactly when the restore would, a store that is not a database or cannot be written, closed pipes,
//! one health rule for sweep and health, private files, the seal key outside the data directory.

use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use lifeline_test_utils::{SimProcess, lifeline_bin, output_json as json, output_text, unique_loopback};

const OFFSET: u16 = 24000;

fn inventory(ips: &[Ipv4Addr]) -> String {
    format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_SWITCH_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\
         \n[[device]]\nname = \"n1\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{}\", port = {}, protocol = \"redfish\" }}\ngpus = {{ count = 8 }}\n\
         \n[[device]]\nname = \"leaf\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"backend\"\ntier = \"leaf\"\n\
         platform = \"sonic\"\nmanagement = {{ address = \"{}\", port = {} }}\n\
         \n[[device]]\nname = \"spare\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"backend\"\ntier = \"leaf\"\n\
         platform = \"sonic\"\nmanagement = {{ address = \"{}\", port = {} }}\n",
        ips[0],
        443 + OFFSET,
        ips[1],
        22 + OFFSET,
        ips[2],
        22 + OFFSET
    )
}

fn start(key_dir: &std::path::Path) -> SimProcess {
    let ips = [unique_loopback(), unique_loopback(), unique_loopback()];
    let key = key_dir.join("seal.key");
    SimProcess::start(
        &inventory(&ips),
        OFFSET,
        &[
            ("LIFELINE_BMC_PASSWORD", "pw"),
            ("LIFELINE_SWITCH_PASSWORD", "sw-pass"),
            ("LIFELINE_SEAL_KEY", key.to_str().unwrap()),
        ],
    )
}

#[test]
fn default_backups_restore_and_dry_run_agrees_with_restore() {
    let keys = tempfile::tempdir().unwrap();
    let sim = start(keys.path());
    // A default run keeps the sealed raw copy: the restore the dry run promised works.
    let o = sim.lifeline(&["backup", "run", "leaf", "--json"]);
    assert!(o.status.success(), "{}", output_text(&o));
    let dry = sim.lifeline(&["backup", "restore", "leaf", "--to", "spare", "--dry-run"]);
    assert!(dry.status.success(), "{}", output_text(&dry));
    let o = sim.lifeline(&["backup", "restore", "leaf", "--to", "spare", "--yes", "--json"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(json(&o)["detail"]["verified"], true, "{}", output_text(&o));

    // One version printed: the scrubbed copy by default, the sealed raw copy on request (audited).
    let shown = json(&sim.lifeline(&["backup", "show", "leaf", "--json"]));
    let raw = json(&sim.lifeline(&["backup", "show", "leaf", "--raw", "--json"]));
    assert_eq!((shown["version"].as_u64(), shown["raw"].as_bool()), (Some(1), Some(false)), "{shown}");
    assert_eq!(raw["raw"], true);
    assert!(!shown["text"].as_str().unwrap().is_empty() && !raw["text"].as_str().unwrap().is_empty());
    let h = json(&sim.lifeline(&["backup", "history", "leaf", "--json"]));
    assert_eq!(h[0]["sha256"], shown["sha256"], "{h}");
    assert!(h[0]["size"].as_u64().unwrap() > 0 && h[0]["taken_at"].is_string(), "{h}");
    let audit = json(&sim.lifeline(&["audit", "log", "--json", "--target", "leaf"]));
    assert!(audit.as_array().unwrap().iter().any(|r| r["action"] == "backup.show-raw"), "{audit}");
    let o = sim.lifeline(&["backup", "run", "leaf", "--timeout", "30s", "--json"]);
    assert!(o.status.success(), "{}", output_text(&o));

    // The seal key lives where it was put, not in the data directory; files are private.
    assert!(keys.path().join("seal.key").exists());
    assert!(!sim.data.join("seal.key").exists());
    assert_eq!(std::fs::metadata(&sim.data).unwrap().permissions().mode() & 0o777, 0o700);
    for f in walk(&sim.data) {
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "{} is {mode:o}", f.display());
    }

    // A version stored without its raw copy: the dry run refuses exactly as the restore does.
    let o = sim.lifeline(&["backup", "run", "spare", "--no-raw", "--json"]);
    assert!(o.status.success(), "{}", output_text(&o));
    let h = json(&sim.lifeline(&["backup", "history", "spare", "--json"]));
    let v = h.as_array().unwrap().last().unwrap().clone();
    if v["raw_sealed"] == false {
        let dry = sim.lifeline(&["backup", "restore", "spare", "--dry-run"]);
        let real = sim.lifeline(&["backup", "restore", "spare", "--yes"]);
        assert_eq!(dry.status.code(), Some(1), "{}", output_text(&dry));
        assert_eq!(real.status.code(), dry.status.code(), "{}", output_text(&real));
        assert!(output_text(&dry).contains("cannot be restored faithfully"), "{}", output_text(&dry));
    }
    // A default run of unchanged content adds the sealed copy to that version.
    let o = sim.lifeline(&["backup", "run", "spare", "--json"]);
    assert_eq!(json(&o)[0]["outcome"], "unchanged", "{}", output_text(&o));
    assert_eq!(json(&o)[0]["detail"]["raw_sealed"], true, "{}", output_text(&o));
    let dry = sim.lifeline(&["backup", "restore", "spare", "--dry-run"]);
    assert!(dry.status.success(), "{}", output_text(&dry));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn sweep_and_health_share_one_rule() {
    let keys = tempfile::tempdir().unwrap();
    let sim = start(keys.path());
    sim.fault("n1", "gpu-ecc=2");
    let h = sim.lifeline(&["health", "n1", "--json"]);
    let s = sim.lifeline(&["sweep", "n1", "--json"]);
    assert_eq!(json(&h)[0]["health"], "critical", "{}", output_text(&h));
    assert_eq!(h.status.code(), Some(1));
    assert_eq!(s.status.code(), h.status.code(), "sweep and health disagree: {}", output_text(&s));
}

fn lifeline(data: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(lifeline_bin())
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .env_remove("LIFELINE_CONFIG")
        .env_remove("LIFELINE_DATABASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_file_that_is_not_a_database_is_named_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lifeline.db"), "not a database, just text ".repeat(100)).unwrap();
    let start = std::time::Instant::now();
    let o = lifeline(dir.path(), &["audit", "log"]);
    assert!(start.elapsed() < std::time::Duration::from_secs(5), "took {:?}", start.elapsed());
    assert_eq!(o.status.code(), Some(3), "{}", output_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("lifeline.db is not a SQLite database"), "{err}");
    assert!(!err.contains('\x1b'), "colour codes in a non-terminal stream: {err:?}");
}

#[test]
fn a_read_only_store_still_serves_reads() {
    if !nix_is_root() {
        eprintln!("SKIP: needs root to drop to another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let o = lifeline(&data, &["audit", "log"]);
    assert!(o.status.success(), "{}", output_text(&o));
    // Hand the directory to nobody as a read-only copy: readable, not writable.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    for f in walk(&data) {
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let as_nobody = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(lifeline_bin())
            .args(args)
            .arg("--data-dir")
            .arg(&data)
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let o = as_nobody(&["audit", "log", "--json"]);
    assert!(o.status.success(), "reads work on a read-only store: {}", output_text(&o));
    let o = as_nobody(&["backup", "history", "nothing"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    // An action that must be audited is refused, saying why in one line.
    let inv = lifeline_test_utils::workspace_root().join("inventory/example-cluster.toml");
    let o = as_nobody(&["inventory", "sync", "--inventory", inv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", output_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("read-only"), "{err}");
}

fn nix_is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0")).unwrap_or(false)
}

#[test]
fn a_closed_pipe_ends_quietly_with_success() {
    let dir = tempfile::tempdir().unwrap();
    // Output well beyond a pipe's 64 KiB buffer, so the writer meets the closed pipe.
    let mut inv = String::from(
        "[cluster]\nname = \"big\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    for i in 0..400 {
        inv.push_str(&format!(
            "\n[[device]]\nname = \"node-{i:03}\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"127.77.{}.{}\", protocol = \"redfish\" }}\n",
            i / 200,
            i % 200 + 1
        ));
    }
    let path = dir.path().join("big.toml");
    std::fs::write(&path, inv).unwrap();
    let script = format!(
        "set -o pipefail; {} inventory show --json --inventory {} | head -c 10 >/dev/null",
        lifeline_bin().display(),
        path.display()
    );
    let o = Command::new("bash").args(["-c", &script]).env("LIFELINE_BMC_PASSWORD", "x").output().unwrap();
    assert!(o.status.success(), "exit {:?}: {}", o.status.code(), output_text(&o));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"), "{}", output_text(&o));
}
