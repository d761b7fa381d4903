//! Probation and lemons end to end with the real binary, `lifeline sim` and a real Slurm: a node Lifeline
//! re-admits is on probation; a failing check within the window is a recurrence that drains it again
//! (Lifeline's mark, in Slurm) and raises its recurrence score; at the threshold it is a lemon, listed
//! with its history, and its re-admission is refused (audited, saying why) until a person releases it.

#[path = "runbook_support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use lifeline_test_utils::{
    SimProcess, output_json as json, output_text as text, peer_endpoints, wait_until, workspace_root,
};
use support::lock_slurm_node;

const NODE: &str = "gpu-node-04";

fn slurm_conf() -> Option<PathBuf> {
    let rows = peer_endpoints("slurm")?;
    let ctld = rows.iter().find(|r| r.first().map(String::as_str) == Some("slurmctld"))?;
    Some(PathBuf::from(&ctld[4]))
}

fn sinfo(conf: &PathBuf) -> (String, String) {
    let o = Command::new("sinfo")
        .args(["-N", "-h", "-n", NODE, "-o", "%T|%E"])
        .env("SLURM_CONF", conf)
        .env_remove("SLURM_JWT")
        .output()
        .expect("sinfo");
    let text = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let (state, reason) = text.split_once('|').unwrap_or((&text, ""));
    (state.to_owned(), reason.to_owned())
}

#[test]
fn a_recurrence_redrains_and_counts_and_a_lemon_waits_for_a_person() {
    let Some(conf) = slurm_conf() else { return };
    let _lock = lock_slurm_node(NODE);
    let inventory = workspace_root().join("inventory/example-cluster.toml");
    let sim = SimProcess::start_file(&inventory, 32500, &[("SLURM_CONF", conf.to_str().unwrap())]);
    let cfg = sim.dir.path().join("lifeline.toml");
    std::fs::write(&cfg, "[probation]\nwindow = \"1h\"\ncheck-interval = \"1h\"\nlemon-threshold = 2\n")
        .unwrap();
    let state = sim.node_state.to_str().unwrap().to_owned();
    let run = |args: &[&str]| -> Output {
        let mut a: Vec<&str> = args.to_vec();
        a.extend(["--config", cfg.to_str().unwrap()]);
        sim.lifeline(&a)
    };
    let verify = ["verify", NODE, "--node-state", &state, "--interval-ms", "20", "--readmit"];
    let check = ["fault", "probation-check", "--node-state", &state, "--interval-ms", "20"];
    let _ = Command::new("scontrol")
        .args(["update", &format!("nodename={NODE}"), "state=resume"])
        .env("SLURM_CONF", &conf)
        .env_remove("SLURM_JWT")
        .status();

    for round in 1..=2u64 {
        let o = run(&["drain", NODE, "--reason", "rail mlx5_3 down"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let o = wait_until("a passing re-admission", Duration::from_secs(30), || {
            let o = run(&verify);
            (o.status.code() == Some(0)).then_some(o)
        });
        assert!(text(&o).contains("PASS"), "{}", text(&o));
        assert!(!sinfo(&conf).0.starts_with("drain"), "re-admitted: {:?}", sinfo(&conf));
        let o = run(&["fault", "lemons", "--all", "--json"]);
        let v = json(&o);
        assert_eq!(v[0]["node"], NODE, "{v}");
        assert_eq!(v[0]["probation"]["state"], "on", "{v}");
        // Nothing due yet (check-interval 1h), and a healthy node's forced check passes.
        let o = run(&check);
        assert!(text(&o).contains("no probation check due"), "{}", text(&o));

        // The rail fails again within the window: the check re-drains the node and counts it.
        sim.fault(NODE, "rail-down=mlx5_3");
        let o = run(&[&check[..], &["--all"]].concat());
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            text(&o).contains(&format!("{NODE}: recurred: probation: probation-check recurred")),
            "{}",
            text(&o)
        );
        assert!(text(&o).contains(&format!("recurrence score {round} of 2")), "{}", text(&o));
        let (st, reason) = sinfo(&conf);
        assert!(st.starts_with("drain"), "re-drained: {st}");
        assert!(reason.starts_with("lifeline: probation:"), "{reason}");
        sim.fault(NODE, "clear");
    }

    // Two recurrences: a lemon, listed with its history.
    let v = json(&run(&["fault", "lemons", "--json"]));
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    assert_eq!((v[0]["score"].as_u64(), v[0]["lemon"].as_bool()), (Some(2), Some(true)), "{v}");
    assert_eq!(v[0]["readmit_refused"], true, "{v}");
    assert_eq!(v[0]["history"].as_array().unwrap().len(), 2, "{v}");
    assert!(v[0]["history"][0]["detail"]["message"].as_str().unwrap().contains("mlx5_3"), "{v}");

    // A passing report does not bring a lemon back without a person.
    let o = wait_until("a passing report", Duration::from_secs(30), || {
        let o = run(&verify);
        text(&o).contains("PASS").then_some(o)
    });
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("not re-admitted: `{NODE}` is a lemon: 2 recurrence(s)")),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("lifeline fault release-lemon"), "{}", text(&o));
    assert!(sinfo(&conf).0.starts_with("drain"));
    let audit = json(&run(&["audit", "log", "--target", NODE, "--json"]));
    let refused = audit
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == "readmit.lemon" && a["outcome"] == "refused")
        .unwrap_or_else(|| panic!("no refused readmit.lemon in {audit:#}"));
    assert!(refused["detail"]["why"].as_str().unwrap().contains("is a lemon"), "{refused}");

    // A person's release lets the next re-admission through, once.
    let o = run(&["fault", "release-lemon", NODE, "--reason", "HCA and cable replaced"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = run(&verify);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!sinfo(&conf).0.starts_with("drain"), "{:?}", sinfo(&conf));
    let v = json(&run(&["fault", "lemons", "--json"]));
    assert!(v[0]["releases"][0]["used_at_ms"].is_number(), "{v}");
    assert_eq!(v[0]["probation"]["state"], "on", "a fresh probation: {v}");
}
