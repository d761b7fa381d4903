//! `lifeline backup …` against switches served by `lifeline sim`, through the SQL store end to end.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use lifeline_test_utils::{lifeline_bin, unique_loopback, wait_until};
use serde_json::Value;

struct Sim {
    child: Child,
    endpoints: PathBuf,
    inventory: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const SWITCHES: &[(&str, &str)] =
    &[("leaf-a", "sonic"), ("leaf-spare", "sonic"), ("stor-1", "eos"), ("fe-1", "cumulus"), ("oob-1", "ios")];

fn write_inventory(dir: &Path, ips: &[Ipv4Addr], port: u16) -> PathBuf {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_SWITCH_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    for ((name, platform), ip) in SWITCHES.iter().zip(ips) {
        t.push_str(&format!(
            "\n[[device]]\nname = \"{name}\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"backend\"\ntier = \"leaf\"\n\
             platform = \"{platform}\"\nmanagement = {{ address = \"{ip}\", port = {port} }}\n"
        ));
    }
    let p = dir.join("inv.toml");
    std::fs::write(&p, t).unwrap();
    p
}

fn start() -> Sim {
    let dir = tempfile::tempdir().unwrap();
    let ips: Vec<Ipv4Addr> = SWITCHES.iter().map(|_| unique_loopback()).collect();
    let offset = 21000;
    let inventory = write_inventory(dir.path(), &ips, 22 + offset);
    let endpoints = dir.path().join("endpoints.json");
    let mut child = Command::new(lifeline_bin())
        .args(["sim", "--inventory"])
        .arg(&inventory)
        .args(["--port-offset", &offset.to_string(), "--time-scale", "0.02", "--endpoints-json"])
        .arg(&endpoints)
        .env("LIFELINE_SWITCH_PASSWORD", "sw-pass")
        .stdout(Stdio::null())
        .spawn()
        .expect("start lifeline sim");
    wait_until("sim endpoints", Duration::from_secs(30), || {
        if let Ok(Some(s)) = child.try_wait() {
            panic!("lifeline sim exited early: {s}");
        }
        endpoints.exists().then_some(())
    });
    let data = dir.path().join("data");
    Sim { child, endpoints, inventory, data, _dir: dir }
}

fn run(sim: &Sim, args: &[&str]) -> Output {
    Command::new(lifeline_bin())
        .args(args)
        .arg("--inventory")
        .arg(&sim.inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .env("LIFELINE_SWITCH_PASSWORD", "sw-pass")
        .env_remove("LIFELINE_DATABASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

fn outcomes(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| (r["switch"].as_str().unwrap().to_owned(), r["outcome"].as_str().unwrap().to_owned()))
        .collect()
}

fn latest_blob(sim: &Sim, switch: &str) -> String {
    let v = json(&run(sim, &["backup", "history", switch, "--json"]));
    v.as_array().unwrap().last().unwrap()["blob"].as_str().unwrap().to_owned()
}

#[test]
fn backup_diff_restore_and_host_key_pinning() {
    let sim = start();
    let ep = sim.endpoints.to_str().unwrap().to_owned();

    // First run: a version per platform, raw configs sealed for restore.
    let o = run(&sim, &["backup", "run", "--keep-raw", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(outcomes(&json(&o)).iter().all(|(_, r)| r == "ok"), "{}", text(&o));
    let sealed = sim.data.join("sealed");
    assert!(sealed.join("oob-1").is_dir(), "raw copies are sealed on disk");
    let o = run(&sim, &["backup", "run", "--json"]);
    assert!(outcomes(&json(&o)).iter().all(|(_, r)| r == "unchanged"), "{}", text(&o));

    // A change made through the simulator appears as exactly that diff.
    assert_eq!(
        run(&sim, &["sim", "fault", "--endpoints", &ep, "stor-1", "config-change"]).status.code(),
        Some(0)
    );
    let o = run(&sim, &["backup", "run", "stor-1", "--keep-raw", "--json"]);
    assert_eq!(outcomes(&json(&o)), [("stor-1".to_owned(), "ok".to_owned())]);
    let d = json(&run(&sim, &["backup", "diff", "stor-1", "--json"]));
    assert_eq!((d["from"].as_u64(), d["to"].as_u64()), (Some(1), Some(2)));
    let diff = d["diff"].as_str().unwrap();
    let minus: Vec<&str> = diff.lines().filter(|l| l.starts_with('-') && !l.starts_with("---")).collect();
    let plus: Vec<&str> = diff.lines().filter(|l| l.starts_with('+') && !l.starts_with("+++")).collect();
    assert_eq!((minus.len(), plus.len()), (1, 1), "{diff}");

    // Restore to a spare: its running config becomes the version.
    let o = run(&sim, &["backup", "restore", "leaf-a", "--to", "leaf-spare", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("changes to apply"), "{}", text(&o));
    let o = run(&sim, &["backup", "restore", "leaf-a", "--to", "leaf-spare"]);
    assert_eq!(o.status.code(), Some(2), "no --yes and no terminal: refused");
    let o = run(&sim, &["backup", "restore", "leaf-a", "--to", "leaf-spare", "--yes", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json(&o)["detail"]["verified"], true);
    let o = run(&sim, &["backup", "run", "leaf-spare", "--json"]);
    assert_eq!(outcomes(&json(&o)), [("leaf-spare".to_owned(), "ok".to_owned())]);
    assert_eq!(
        latest_blob(&sim, "leaf-spare"),
        latest_blob(&sim, "leaf-a"),
        "spare now runs leaf-a's config"
    );

    // A changed host key is refused, naming both fingerprints, until re-pinned.
    assert_eq!(
        run(&sim, &["sim", "fault", "--endpoints", &ep, "oob-1", "ssh-key-change"]).status.code(),
        Some(0)
    );
    let o = run(&sim, &["backup", "run", "oob-1"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(text(&o).matches("sha256:").count(), 2, "{}", text(&o));
    let o = run(&sim, &["backup", "trust", "oob-1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("re-pinned"), "{}", text(&o));
    assert_eq!(run(&sim, &["backup", "run", "oob-1"]).status.code(), Some(0));

    // Git export: one file per switch, one commit per version.
    let git = sim.data.join("git");
    let o = run(&sim, &["backup", "export", "--git", git.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(json(&o)["commits"], 7, "5 first versions + stor-1 v2 + leaf-spare v2");
    for (name, _) in SWITCHES {
        assert!(git.join(name).exists(), "{name} exported");
    }

    // Audited.
    let v = json(&run(&sim, &["audit", "log", "--json", "--limit", "100"]));
    let actions: Vec<(&str, &str)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["action"].as_str().unwrap(), r["outcome"].as_str().unwrap()))
        .collect();
    assert!(actions.contains(&("backup.restore", "ok")), "{actions:?}");
    assert!(actions.contains(&("backup.trust", "ok")), "{actions:?}");
    assert!(actions.contains(&("backup.run", "failed")), "{actions:?}");
}
