//! `lifeline inventory …` and `lifeline audit log` as an operator runs them.

use std::path::PathBuf;
use std::process::{Command, Output};

use lifeline_test_utils::{TestDatabase, lifeline_bin, postgres_url, workspace_root};
use serde_json::Value;

fn example() -> PathBuf {
    workspace_root().join("inventory/example-cluster.toml")
}

fn lifeline(args: &[&str]) -> Output {
    Command::new(lifeline_bin())
        .args(args)
        .env_remove("LIFELINE_INVENTORY")
        .env_remove("LIFELINE_DATABASE_URL")
        .env_remove("LIFELINE_CONFIG")
        .env("LIFELINE_BMC_PASSWORD", "x")
        .env("LIFELINE_SWITCH_PASSWORD", "x")
        .output()
        .expect("run lifeline")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn example_inventory_checks_clean() {
    let o = lifeline(&["inventory", "check", example().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
    assert!(stdout(&o).contains("ok (17 devices"), "{}", stdout(&o));
}

#[test]
fn broken_inventory_names_every_problem_and_exits_1() {
    let text = std::fs::read_to_string(example()).unwrap();
    let broken = text
        .replacen("name = \"gpu-node-02\"", "name = \"gpu-node-01\"", 1)
        .replacen("name = \"head-node-01\"", "name = \"head-node-01\"\nlocation = \"row 3\"", 1)
        .replacen(
            "bmc = { address = \"127.10.1.5\",",
            "bmc = { address = \"127.10.1.5\", password = \"calvin\",",
            1,
        );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.toml");
    std::fs::write(&file, &broken).unwrap();
    let o = lifeline(&["inventory", "check", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    let f = file.display().to_string();
    let line = |needle: &str| broken[..broken.find(needle).unwrap()].matches('\n').count() + 1;
    let dup = line(
        "name = \"gpu-node-01\"\nrole = \"gpu-node\"\nrack = \"r01\"\nmodel = \"HGX H100 8-GPU\"\ngroups = [\"training\", \"pod-1\"]\nbmc = { address = \"127.10.1.2\"",
    );
    assert!(out.contains(&format!("{f}:{dup}:8: duplicate device name `gpu-node-01`")), "{out}");
    assert!(
        out.contains(&format!(
            "{f}:{}:1: unknown key `location` in device `head-node-01`",
            line("location = \"row 3\"")
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("{f}:{}:", line("password = \"calvin\"")))
            && out.contains("plaintext password"),
        "{out}"
    );

    // JSON mode carries the same diagnostics.
    let o = lifeline(&["inventory", "check", "--json", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["valid"], false);
    assert_eq!(v[0]["errors"], 3);
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(lifeline(&["inventory", "check", "/nonexistent/inv.toml"]).status.code(), Some(2));
    assert_eq!(lifeline(&["inventory", "check", "--no-such-flag"]).status.code(), Some(2));
    let o = lifeline(&["inventory", "show"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--inventory"));
}

#[test]
fn show_json_lists_eight_gpu_nodes_with_eight_rails() {
    let o = lifeline(&["inventory", "show", "--json", "--inventory", example().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let devices: Vec<&Value> = v["sites"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["racks"].as_array().unwrap())
        .flat_map(|r| r["devices"].as_array().unwrap())
        .collect();
    let gpu: Vec<&&Value> = devices.iter().filter(|d| d["role"] == "gpu-node").collect();
    assert_eq!(gpu.len(), 8);
    for d in gpu {
        let backend = d["rails"].as_array().unwrap().iter().filter(|r| r["fabric"] == "backend").count();
        assert_eq!(backend, 8, "{}", d["name"]);
        assert_eq!(d["gpus"]["count"], 8);
        assert_eq!(d["fabrics"], serde_json::json!(["backend", "storage", "frontend", "oob"]));
    }
    assert_eq!(v["summary"]["by_role"]["gpu-node"], 8);
    assert_eq!(v["summary"]["by_role"]["switch"], 6);
}

#[test]
fn show_tree_snapshot() {
    let o = lifeline(&["inventory", "show", "--inventory", example().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    insta::assert_snapshot!(stdout(&o));
}

fn sync_and_audit(extra: &[&str]) {
    let inv = example();
    let mut args = vec!["inventory", "sync", "--json", "--inventory", inv.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = lifeline(&args);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["summary"]["added"], 17);
    let o = lifeline(&args);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["summary"]["unchanged"], 17);
    let mut args = vec!["audit", "log", "--json"];
    args.extend_from_slice(extra);
    let o = lifeline(&args);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["action"], "inventory.sync");
    assert_eq!(rows[0]["outcome"], "ok");
}

#[test]
fn sync_into_sqlite_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    sync_and_audit(&["--data-dir", data.to_str().unwrap()]);
    assert!(data.join("lifeline.db").exists());
}

#[tokio::test]
async fn sync_into_postgres() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let url = db.url.clone();
    tokio::task::spawn_blocking(move || sync_and_audit(&["--database-url", &url])).await.unwrap();
}
