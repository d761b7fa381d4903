//! The README's "recovery loop, by hand", run as written: its lines are read from README.md (the fenced
//! blocks between the `by-hand-setup` and `by-hand-loop` markers), so editing the README changes what is
//! tested. The loop's lines run through `bash` with `lifeline` on PATH, unchanged; the only substitutions
//! are the values of the variables the README's setup exports (the inventory, a data directory, the
//! simulator's node state, the real Slurm peer's config) and the simulator's control URL. The end state is
//! the README's claim: the fault gone in the simulator's own view, the node back in Slurm, every step in
//! the audit log.

#[path = "runbook_support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use lifeline_test_utils::{SimProcess, lifeline_bin, output_text as text, workspace_root};
use support::{lock_slurm_node, scontrol, sinfo, slurm_conf};

const OFFSET: u16 = 27300;
const EXPORTS: [&str; 5] =
    ["LIFELINE_INVENTORY", "LIFELINE_DATA_DIR", "LIFELINE_NODE_STATE", "LIFELINE_BMC_PASSWORD", "SLURM_CONF"];

/// The lines of the fenced block after `<!-- MARKER: begin`, `\` continuations joined.
fn block(readme: &str, marker: &str) -> Vec<String> {
    let start = readme.find(&format!("<!-- {marker}: begin")).unwrap_or_else(|| panic!("no {marker} marker"));
    let end = readme.find(&format!("<!-- {marker}: end -->")).unwrap_or_else(|| panic!("no {marker} end"));
    let inner = &readme[start..end];
    let body = inner.split("```sh\n").nth(1).and_then(|b| b.split("```").next()).expect("a ```sh block");
    let mut lines = Vec::new();
    let mut cont = String::new();
    for l in body.lines() {
        match l.strip_suffix('\\') {
            Some(head) => cont.push_str(head),
            None => {
                cont.push_str(l);
                lines.push(std::mem::take(&mut cont).trim().to_owned());
            }
        }
    }
    lines.into_iter().filter(|l| !l.is_empty()).collect()
}

/// `export A=x B=y`: the variables and their values.
fn exports(line: &str) -> BTreeMap<String, String> {
    let rest = line.strip_prefix("export ").unwrap_or_else(|| panic!("not an export: {line}"));
    rest.split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("`{kv}` in `{line}`"));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// The README's inventory with every BMC and management port moved by `offset` (the simulator of one
/// test beside others), `auto` BMCs pinned to Redfish (auto probes the standard ports).
fn offset_inventory(text: &str, offset: u16) -> String {
    text.lines()
        .map(|l| {
            let l = l.replace("protocol = \"auto\"", "protocol = \"redfish\"");
            if l.starts_with("bmc = { address = ") {
                let port = if l.contains("\"ipmi\"") { 623 } else { 443 } + offset;
                l.replacen("\", protocol", &format!("\", port = {port}, protocol"), 1)
            } else if l.starts_with("management = { address = ") {
                l.replacen("\" }", &format!("\", port = {} }}", 22 + offset), 1)
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn bash(line: &str, env: &BTreeMap<String, String>) -> Output {
    let bin_dir = lifeline_bin().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    Command::new("bash")
        .args(["-c", line])
        .current_dir(workspace_root())
        .envs(env)
        .env("PATH", path)
        .env_remove("LIFELINE_DATABASE_URL")
        .env_remove("LIFELINE_CONFIG")
        .env_remove("LIFELINE_SERVER")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("bash")
}

#[test]
fn the_readmes_by_hand_loop_runs_as_written_against_lifeline_sim() {
    let Some(conf) = slurm_conf() else { return };
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let setup = block(&readme, "by-hand-setup");
    let lines = block(&readme, "by-hand-loop");
    assert_eq!(setup.len(), 3, "export, sim, fault: {setup:?}");

    // The setup: which variables the README exports, and the simulator and the fault it starts.
    let mut env = exports(&setup[0]);
    assert_eq!(env.keys().map(String::as_str).collect::<Vec<_>>(), {
        let mut e = EXPORTS.to_vec();
        e.sort();
        e
    });
    assert!(setup[1].starts_with("lifeline sim --export-node-state $LIFELINE_NODE_STATE"), "{}", setup[1]);
    let fault = &setup[2];
    let (_, after) = fault.split_once("--control ").expect("the fault line names the control URL");
    let readme_url = after.split_whitespace().next().unwrap().to_owned();
    let node = fault.split_whitespace().nth(5).expect("DEVICE").to_owned();
    let _lock = lock_slurm_node(&node);

    let inventory = std::fs::read_to_string(workspace_root().join(&env["LIFELINE_INVENTORY"])).unwrap();
    let password = env["LIFELINE_BMC_PASSWORD"].clone();
    let sim = SimProcess::start(
        &offset_inventory(&inventory, OFFSET),
        OFFSET,
        &[("LIFELINE_BMC_PASSWORD", &password)],
    );
    env.insert("LIFELINE_INVENTORY".into(), sim.inventory.display().to_string());
    env.insert("LIFELINE_DATA_DIR".into(), sim.data.display().to_string());
    env.insert("LIFELINE_NODE_STATE".into(), sim.node_state.display().to_string());
    env.insert("SLURM_CONF".into(), conf.display().to_string());
    scontrol(&conf, &["update", &format!("nodename={node}"), "state=resume"]);
    let o = bash(&fault.replace(&readme_url, &sim.control_url()), &env);
    assert!(o.status.success(), "{fault}: {}", text(&o));

    // The loop, line by line. A line whose comment says `exit 1` may find a problem (exit 1); one that
    // says `run it again` is run again until it passes (the README tells the reader to).
    let mut outputs = Vec::new();
    for line in &lines {
        let comment = line.split_once(" # ").map(|(_, c)| c).unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(90);
        let o = loop {
            let o = bash(line, &env);
            let code = o.status.code();
            if code == Some(0)
                || (code == Some(1) && comment.contains("exit 1") && !comment.contains("run it again"))
            {
                break o;
            }
            assert!(
                code == Some(1) && comment.contains("run it again") && Instant::now() < deadline,
                "`{line}` exited {code:?}: {}",
                text(&o)
            );
            std::thread::sleep(Duration::from_millis(500));
        };
        outputs.push((line.clone(), text(&o)));
    }
    let out = |verb: &str| -> &str {
        &outputs
            .iter()
            .find(|(l, _)| l.starts_with(&format!("lifeline {verb}")))
            .unwrap_or_else(|| panic!("no `{verb}` line"))
            .1
    };

    // What the README's comments claim, checked on the outputs and on the peers' own views.
    let sweep_row = out("sweep").lines().find(|l| l.contains(&node)).unwrap_or_default().to_owned();
    assert!(sweep_row.contains("critical") && sweep_row.contains("GPU6"), "{}", out("sweep"));
    let sel = out("sel");
    assert!(sel.contains("GPU6") && sel.contains("Host power off") && sel.contains("Host power on"), "{sel}");
    assert!(
        sim.actions(&node).iter().any(|a| a["action"].as_str().is_some_and(|s| s.starts_with("power-"))),
        "the BMC was cycled: {:?}",
        sim.actions(&node)
    );
    let verify = out("verify");
    assert!(verify.contains("PASS") && !verify.contains("not re-admitted"), "{verify}");
    let (state, reason) = sinfo(&conf, &node);
    assert_eq!(state, "idle", "back in Slurm, not drained ({reason})");
    assert!(!reason.starts_with("lifeline:"), "Lifeline's drain lifted: {reason}");
    let devices: serde_json::Value =
        serde_json::from_str(&lifeline_test_utils::http_get(&format!("{}/devices", sim.control_url())))
            .unwrap();
    let dev = devices.as_array().unwrap().iter().find(|d| d["name"] == node.as_str()).unwrap();
    assert_eq!(
        (dev["phase"].as_str(), dev["faults"].as_array().map(Vec::len)),
        (Some("os-up"), Some(0)),
        "{dev}"
    );
    let audit = out("audit");
    for action in ["readmit.drain", "power.cycle", "verify", "readmit.resume"] {
        assert!(audit.contains(action), "`{action}` audited: {audit}");
    }
}
