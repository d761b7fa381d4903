//! `lifeline firmware plan|apply` as an operator types them, against a `lifeline sim` process: a rollout
//! over 40 simulated BMCs in waves (a canary, then at most two per rack) with one injected flash failure
//! that stops the rollout after its wave, a rollout killed with SIGKILL mid-way and resumed, downgrades
//! refused, and the plan document's shape (snapshot).

use std::time::{Duration, Instant};

use lifeline_test_utils::{SimProcess, output_json as json, output_text, unique_loopback};
use serde_json::Value;

const PW: (&str, &str) = ("LIFELINE_BMC_PASSWORD", "s3cret-pw");

/// `n` Redfish BMCs over `racks` racks; flavours whose BIOS versions all compare below 3.0.0 (generic
/// and OpenBMC apply at once, iDRAC and Supermicro stage for the next host reset).
fn fleet(n: usize, racks: usize, offset: u16) -> SimProcess {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n",
    );
    for r in 0..racks {
        t.push_str(&format!("\n[[rack]]\nname = \"r{r}\"\nsite = \"s\"\n"));
    }
    for i in 1..=n {
        let flavor = ["generic", "idrac-like", "supermicro-like", "openbmc-like"][i % 4];
        t.push_str(&format!(
            "\n[[device]]\nname = \"g{i:02}\"\nrole = \"gpu-node\"\nrack = \"r{}\"\n\
             bmc = {{ address = \"{}\", port = 20443, protocol = \"redfish\", flavor = \"{flavor}\" }}\n",
            i % racks,
            unique_loopback()
        ));
    }
    SimProcess::start(&t, offset, &[PW])
}

/// A simulated image carrying `version` (its first line), padded to `size` bytes.
fn image(sim: &SimProcess, version: &str, size: usize) -> String {
    let p = sim.dir.path().join(format!("bios-{version}.bin"));
    let mut b = format!("LIFELINE-SIM-FIRMWARE {version}\n").into_bytes();
    b.resize(size.max(b.len()), 0xA5);
    std::fs::write(&p, b).unwrap();
    p.to_str().unwrap().to_owned()
}

fn pushes(sim: &SimProcess, device: &str) -> usize {
    sim.actions(device).iter().filter(|a| a["action"] == "firmware-update").count()
}

fn plan(sim: &SimProcess, args: &[&str]) -> (Value, String) {
    let out = sim.dir.path().join("plan.json");
    let mut a = vec!["firmware", "plan"];
    a.extend_from_slice(args);
    a.extend(["--out", out.to_str().unwrap(), "--json"]);
    let o = sim.lifeline(&a);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", output_text(&o));
    (json(&o), out.to_str().unwrap().to_owned())
}

#[test]
fn rollout_over_40_bmcs_stops_after_the_wave_with_the_failure() {
    let sim = fleet(40, 4, 21000);
    let img = image(&sim, "3.0.0", 256 * 1024);
    let (p, path) = plan(&sim, &["all", "--component", "bios", "--image", &img, "--version", "3.0.0"]);
    let waves: Vec<Vec<String>> = serde_json::from_value(p["waves"].clone()).unwrap();
    assert_eq!(waves[0].len(), 1, "a canary of one first: {waves:?}");
    assert_eq!(waves.iter().map(Vec::len).sum::<usize>(), 40, "{waves:?}");
    for w in &waves {
        assert!(w.len() <= 8, "at most max-concurrent per wave: {w:?}");
        for r in 0..4 {
            let in_rack = w.iter().filter(|n| n[1..].parse::<usize>().unwrap() % 4 == r).count();
            assert!(in_rack <= 2, "at most 2 per rack in one wave: {w:?}");
        }
    }
    assert!(waves.len() >= 4, "{waves:?}");
    let bad = waves[2][1].clone();
    sim.fault(&bad, "firmware-fail");

    // Without --yes and no terminal: refused, nothing sent.
    let o = sim.lifeline(&["firmware", "apply", &path]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert_eq!(pushes(&sim, &waves[0][0]), 0);

    let o =
        sim.lifeline(&["firmware", "apply", &path, "--yes", "--poll", "0.1", "--timeout", "60", "--json"]);
    assert_eq!(o.status.code(), Some(1), "the rollout failed: {}", output_text(&o));
    let r = json(&o);
    assert_eq!(r["state"], "failed", "{r:#}");
    let states: Vec<&str> = r["waves"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert_eq!(&states[..3], ["done", "done", "failed"], "{r:#}");
    assert!(states[3..].iter().all(|s| *s == "skipped"), "{r:#}");
    let failed = r["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{r:#}");
    assert!(failed[0].as_str().unwrap().starts_with(&format!("{bad}: task ")), "the failure named: {r:#}");
    assert!(failed[0].as_str().unwrap().contains("image verification error"), "{r:#}");
    for t in r["targets"].as_array().unwrap() {
        let (name, wave) = (t["bmc"].as_str().unwrap(), t["wave"].as_i64().unwrap());
        match wave {
            0..=2 if name == bad => assert_eq!(t["state"], "failed", "{t}"),
            0..=2 => {
                assert_eq!((t["state"].as_str(), t["after"].as_str()), (Some("done"), Some("3.0.0")), "{t}");
                assert_eq!(pushes(&sim, name), 1, "{name} pushed once");
            }
            _ => {
                assert_eq!(t["state"], "pending", "later waves untouched: {t}");
                assert_eq!(pushes(&sim, name), 0, "{name} was not pushed");
            }
        }
    }
    // The version is the BMC's own read-back, also outside the rollout: iDRAC/Supermicro needed a reset.
    let v = json(&sim.lifeline(&["bmc", "info", &waves[1][0], &bad, "--json"]));
    let bios = |name: &str| {
        let row = v.as_array().unwrap().iter().find(|r| r["bmc"] == name).unwrap_or_else(|| panic!("{v:#}"));
        row["firmware"].as_array().unwrap().iter().find(|f| f["id"] == "BIOS").unwrap()["version"].clone()
    };
    assert_eq!(bios(&waves[1][0]), "3.0.0", "{v:#}");
    assert_ne!(bios(&bad), "3.0.0", "{v:#}");
    let log = json(&sim.lifeline(&["audit", "log", "--json"]));
    let n = |a: &str| log.as_array().unwrap().iter().filter(|x| x["action"] == a).count();
    assert!(n("firmware.update") >= waves[0].len() + waves[1].len() + waves[2].len(), "{log:#}");
    assert!(n("firmware.rollout") >= 1, "the rollout audited: {log:#}");

    // Applying the same plan again: the rollout stays failed, nothing more is sent.
    let o = sim.lifeline(&["firmware", "apply", &path, "--yes", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json(&o)["resumed"], true);
    assert_eq!(pushes(&sim, &waves[3][0]), 0);
}

#[test]
fn a_rollout_killed_mid_way_resumes_without_pushing_again() {
    let sim = fleet(12, 2, 21100);
    let img = image(&sim, "3.0.0", 64 * 1024);
    let (p, path) = plan(&sim, &["all", "--component", "bios", "--image", &img, "--version", "3.0.0"]);
    let names: Vec<String> = p["waves"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w.as_array().unwrap().clone())
        .map(|n| n.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names.len(), 12);
    let mut child =
        sim.spawn_lifeline(&["firmware", "apply", &path, "--yes", "--poll", "0.2", "--timeout", "60"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pushed = names.iter().filter(|n| pushes(&sim, n) > 0).count();
        if pushed >= 4 {
            break;
        }
        assert!(Instant::now() < deadline, "the rollout never got going");
        assert!(child.try_wait().unwrap().is_none(), "apply ended before the kill");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before: Vec<usize> = names.iter().map(|n| pushes(&sim, n)).collect();
    assert!(before.iter().filter(|c| **c == 0).count() >= 1, "killed mid-way: {before:?}");

    let o =
        sim.lifeline(&["firmware", "apply", &path, "--yes", "--poll", "0.1", "--timeout", "60", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let r = json(&o);
    assert_eq!((r["state"].as_str(), r["resumed"].as_bool()), (Some("done"), Some(true)), "{r:#}");
    for t in r["targets"].as_array().unwrap() {
        assert_eq!((t["state"].as_str(), t["after"].as_str()), (Some("done"), Some("3.0.0")), "{t}");
    }
    let after: Vec<usize> = names.iter().map(|n| pushes(&sim, n)).collect();
    for (i, n) in names.iter().enumerate() {
        // A BMC pushed before the kill is not pushed again (its task is polled, its version read back)...
        if before[i] > 0 {
            assert_eq!(after[i], before[i], "{n} pushed again after the resume: {before:?} -> {after:?}");
        } else {
            assert_eq!(after[i], 1, "{n}: {after:?}");
        }
    }
}

#[test]
fn downgrades_are_refused_unless_allowed_and_the_plan_has_a_stable_shape() {
    let sim = lifeline_test_utils::three_flavour_sim();
    // n1 generic BIOS 1.0.0, n2 iDRAC-like BIOS 2.2.7, n3 IPMI only.
    let (p, path) = plan(
        &sim,
        &[
            "n1",
            "n2",
            "n3",
            "--component",
            "bios",
            "--image",
            "https://10.9.0.1/fw/bios-2.0.0.bin",
            "--version",
            "2.0.0",
        ],
    );
    let mut shown = p.clone();
    shown["id"] = Value::from("[id]");
    insta::assert_json_snapshot!("firmware_plan", shown);
    let change = |n: usize| p["targets"][n]["change"].as_str().unwrap().to_owned();
    assert_eq!(
        (change(0), change(1), change(2)),
        ("update".into(), "refused".into(), "skipped".into()),
        "{p:#}"
    );
    assert!(p["targets"][1]["note"].as_str().unwrap().contains("would be a downgrade from 2.2.7"), "{p:#}");
    assert!(
        p["targets"][2]["note"].as_str().unwrap().contains("firmware update is not supported over IPMI"),
        "{p:#}"
    );
    assert_eq!(p["waves"], serde_json::json!([["n1"]]), "{p:#}");
    // The plan as written is what is applied; an edited plan is refused.
    let text = std::fs::read_to_string(&path).unwrap().replace("2.0.0\"", "2.0.1\"");
    let edited = sim.dir.path().join("edited.json");
    std::fs::write(&edited, text).unwrap();
    let o = sim.lifeline(&["firmware", "apply", edited.to_str().unwrap(), "--yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(output_text(&o).contains("the plan was changed after it was made"), "{}", output_text(&o));

    // SimpleUpdate from a URL: n1 pulls bios-2.0.0.bin (the simulator reads the version from its name).
    let o =
        sim.lifeline(&["firmware", "apply", &path, "--yes", "--poll", "0.1", "--timeout", "60", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(json(&o)["targets"][0]["after"], "2.0.0");

    // --allow-downgrade plans n2's downgrade in a wave.
    let (p, _) = plan(&sim, &["n2", "--component", "bios", "--version", "2.0.0", "--allow-downgrade"]);
    assert_eq!(
        (p["targets"][0]["change"].as_str(), p["targets"][0]["wave"].as_u64()),
        (Some("downgrade"), Some(0))
    );
    // A plan without an image says what differs and cannot be applied.
    let o =
        sim.lifeline(&["firmware", "apply", &sim.dir.path().join("plan.json").to_string_lossy(), "--yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(output_text(&o).contains("names no image"), "{}", output_text(&o));
}
