//! Onboarding verbs as an operator runs them: `inventory import` (CSV, slurm.conf, `--diff`), the typo
//! case of `inventory check` and `config check`: the binary on files, its output and its exit status.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(p)
}

fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lifeline-onboarding-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lifeline"))
        .args(args)
        .env_remove("LIFELINE_CONFIG")
        .env_remove("LIFELINE_INVENTORY")
        .env(
            "LIFELINE_DATA_DIR",
            std::env::temp_dir().join(format!("lifeline-onboarding-data-{}", std::process::id())),
        )
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn import_csv_prints_the_expected_inventory_and_a_reimport_changes_nothing() {
    let csv = repo("crates/inventory/tests/data/import/fleet.csv");
    let (code, out, err) =
        run(&["inventory", "import", "--fresh", "--cluster", "fleet", "--csv", csv.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let expected =
        std::fs::read_to_string(repo("crates/inventory/tests/data/import/fleet.expected.toml")).unwrap();
    assert_eq!(out, expected);
    assert!(err.contains("6 added, 0 updated, 0 unchanged"), "{err}");
    let written = file("fleet.toml", &out);
    let (code, out, err) = run(&["inventory", "check", written.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(&[
        "--inventory",
        written.to_str().unwrap(),
        "inventory",
        "import",
        "--diff",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "", "a re-import shows no diff");
    assert!(err.contains("0 added, 0 updated, 6 unchanged"), "{err}");
    // Never written: the file is as it was.
    assert_eq!(std::fs::read_to_string(&written).unwrap(), expected);
}

#[test]
fn import_slurm_conf_diff_against_the_example() {
    let conf = repo("crates/inventory/tests/data/import/slurm.conf");
    let inv = repo("inventory/example-cluster.toml");
    let (code, out, err) = run(&[
        "--inventory",
        inv.to_str().unwrap(),
        "inventory",
        "import",
        "--diff",
        "--rack",
        "r02",
        "--bmc-host",
        "{name}-bmc.oob.example",
        "--slurm-conf",
        conf.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 node(s) without GPU Gres not imported"), "{err}");
    assert!(err.contains("2 added, 8 updated, 0 unchanged"), "{err}");
    assert!(out.contains("+groups = [\"training\", \"pod-1\", \"h100\", \"ib\"]"), "{out}");
    assert!(out.contains("+bmc = { address = \"gpu-node-10-bmc.oob.example\" }"), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("-credential")), "{out}");
}

#[test]
fn import_reports_source_problems_with_their_lines() {
    let csv = file("bad.csv", "name,bmc,protocl,role,rack\n");
    let (code, _, err) = run(&["inventory", "import", "--fresh", "--csv", csv.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("bad.csv:1: unknown column `protocl` (did you mean `protocol`?)"), "{err}");
    let (code, _, err) = run(&["inventory", "import", "--fresh"]);
    assert_eq!(code, 2, "clap: one source is required: {err}");
}

#[test]
fn one_typo_in_the_inventory_is_one_error() {
    let text = std::fs::read_to_string(repo("inventory/example-cluster.toml")).unwrap();
    let typo = text.replacen(
        "credential = \"env:LIFELINE_BMC_PASSWORD\"",
        "credentails = \"env:LIFELINE_BMC_PASSWORD\"",
        1,
    );
    let f = file("typo.toml", &typo);
    let (code, out, _) = run(&["inventory", "check", f.to_str().unwrap()]);
    assert_eq!(code, 1);
    let line = typo[..typo.find("credentails").unwrap()].matches('\n').count() + 1;
    let summary = format!("{}: 1 error(s)", f.display());
    let errors: Vec<&str> =
        out.lines().filter(|l| !l.contains(": warning: ") && !l.starts_with(&summary)).collect();
    assert_eq!(
        errors,
        [format!(
            "{}:{line}:1: unknown key `defaults.bmc.credentails` (did you mean `credential`?)",
            f.display()
        )],
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with(&summary)), "{out}");
}

#[test]
fn config_check_lists_every_problem() {
    let f = file(
        "lifeline.toml",
        "inventroy = \"x.toml\"\n[server]\nsweep-intervall = \"60s\"\nlisten = \"nowhere\"\n[[fault-policy]]\nkind = \"*\"\nmode = \"auto\"\n",
    );
    let p = f.display().to_string();
    let (code, out, err) = run(&["config", "check", &p]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        out,
        format!(
            "{p}:1:1: unknown key `inventroy` (did you mean `inventory`?)\n\
             {p}:3:1: unknown key `server.sweep-intervall` (did you mean `sweep-interval`?)\n\
             {p}:4:10: `server.listen`: `nowhere` is not ADDR:PORT (e.g. `127.0.0.1:7443`, `[::1]:7443`)\n\
             {p}:7:8: `fault-policy[0]`: mode `auto` without a `runbook` has nothing to run\n\
             {p}: 4 problem(s)\n"
        )
    );
    let (code, out, _) = run(&["config", "check", repo("deploy/lifeline.toml").to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let (code, _, err) = run(&["config", "check"]);
    assert_eq!(code, 2, "{err}");
}
