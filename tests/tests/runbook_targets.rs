//! `runbook run` takes the TARGET forms every other verb takes (racks, roles, globs) with the same
//! confirmation rule, and refuses a value its runbook does not declare before anything is touched: the
//! `--var reset=explode` that once drained a healthy node and then failed on `unknown power action`.

use std::process::{Command, Output, Stdio};

use lifeline_test_utils::{lifeline_bin, output_json as json, output_text as text, workspace_root};

fn lifeline(data: &std::path::Path, args: &[&str]) -> Output {
    Command::new(lifeline_bin())
        .arg("--inventory")
        .arg(workspace_root().join("inventory/example-cluster.toml"))
        .arg("--data-dir")
        .arg(data)
        .arg("runbook")
        .arg("run")
        .args(args)
        .arg("--runbooks")
        .arg(workspace_root().join("runbooks"))
        .env_remove("LIFELINE_DATABASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_value_the_runbook_does_not_declare_is_refused_before_anything_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    for extra in [&["--dry-run"][..], &["--yes"][..]] {
        let mut args = vec!["gpu-node-recover", "gpu-node-01", "--var", "reset=explode"];
        args.extend(extra);
        let o = lifeline(dir.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("`explode` is not allowed (allowed: cycle, reset)"), "{}", text(&o));
    }
    let o = lifeline(dir.path(), &["rail-down", "gpu-node-01", "--var", "leaf=gpu-node-02", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("`gpu-node-02` is a gpu-node; expected a switch"), "{}", text(&o));
    // Nothing was started: no run in the store.
    let o = Command::new(lifeline_bin())
        .arg("--data-dir")
        .arg(dir.path())
        .args(["runbook", "status", "--json"])
        .output()
        .unwrap();
    assert_eq!(json(&o), serde_json::json!([]), "{}", text(&o));
}

#[test]
fn racks_and_globs_expand_like_every_other_verb_and_more_than_one_target_needs_confirmation() {
    let dir = tempfile::tempdir().unwrap();
    let o = lifeline(dir.path(), &["gpu-node-recover", "r02", "--dry-run", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let plans = json(&o);
    let targets: Vec<&str> =
        plans.as_array().unwrap().iter().map(|p| p["target"].as_str().unwrap()).collect();
    assert_eq!(targets, ["gpu-node-05", "gpu-node-06", "gpu-node-07", "gpu-node-08"], "{plans}");
    let post: Vec<bool> =
        plans[0]["steps"].as_array().unwrap().iter().map(|s| s["post_condition"] == true).collect();
    assert_eq!(post.last(), Some(&true), "the plan lists the post-condition: {plans}");
    let o = lifeline(dir.path(), &["gpu-node-recover", "gpu-node-0[1-2]"]);
    assert_eq!(o.status.code(), Some(2), "two targets and no terminal: {}", text(&o));
    assert!(text(&o).contains("refusing without --yes"), "{}", text(&o));
    let o = lifeline(dir.path(), &["gpu-node-recover", "backend-leaf-01", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "a named device of another role: {}", text(&o));
    let o = lifeline(dir.path(), &["switch-boot-loop", "gpu-node-0*", "--dry-run"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("nothing to run on"), "{}", text(&o));
}

/// `runbook abort` from a second process interrupts a step that only waits, within seconds, instead of
/// leaving it to run out its 10 minutes; the run ends `aborted`.
#[test]
fn abort_interrupts_a_waiting_step() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    std::fs::create_dir(&lib).unwrap();
    std::fs::write(
        lib.join("long-wait.toml"),
        "name = \"long-wait\"\ndescription = \"d\"\ntargets = [\"gpu-node\"]\nfault = \"f\"\ntouches = \"t\"\n\
         never-touches = \"n\"\nworst-case = \"w\"\n\n[[step]]\nname = \"wait\"\nkind = \"wait-for\"\n\
         tcp = \"127.0.0.1:9\"\ntimeout = \"10m\"\ninterval = \"200ms\"\n\n[[verify]]\nname = \"gone\"\n\
         kind = \"fault-cleared\"\n",
    )
    .unwrap();
    let cmd = |args: &[&str]| {
        let mut c = Command::new(lifeline_bin());
        c.arg("--inventory")
            .arg(workspace_root().join("inventory/example-cluster.toml"))
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .env_remove("LIFELINE_DATABASE_URL")
            .stdin(Stdio::null());
        c
    };
    let lib_s = lib.to_str().unwrap();
    let mut run =
        cmd(&["runbook", "run", "long-wait", "gpu-node-01", "--yes", "--json", "--runbooks", lib_s])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    let id = (0..100)
        .find_map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let o = cmd(&["runbook", "status", "--json"]).output().unwrap();
            json(&o).as_array().and_then(|a| a.first().map(|r| r["run"].as_str().unwrap().to_owned()))
        })
        .expect("the run starts");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let started = std::time::Instant::now();
    let o = cmd(&["runbook", "abort", &id]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = loop {
        if run.try_wait().unwrap().is_some() {
            break run.wait_with_output().unwrap();
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the waiting step was not interrupted"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let v = json(&out);
    assert_eq!(v["state"], "aborted", "{v:#}");
    let wait = v["steps"].as_array().unwrap().iter().find(|s| s["name"] == "wait").unwrap();
    assert_ne!(wait["state"], "ok", "{wait}");
}
