//! Runbook console steps end to end: `wait-for console` watches the SOL console read-only for a pattern,
//! and a `console` step with an expect `script` logs in on the serial console and runs a command, on two
//! simulated nodes at once (SOL is IPMI's; a Redfish BMC's SOL is on its port 623, which a test simulator
//! on a port offset does not have). A script whose pattern never appears fails its step with the console
//! transcript as evidence instead of hanging.

#[path = "runbook_support/mod.rs"]
mod support;

use lifeline_test_utils::{output_json as json, output_text as text};
use support::*;

const OFFSET: u16 = 24700;

const RUNBOOK: &str = r#"
name = "console-login"
description = "Power cycles a node, watches its console for the login prompt, logs in on the console and checks the host name"
targets = ["gpu-node"]
fault = "none: a test of console steps"
touches = "the node's power and console"
never-touches = "everything else"
worst-case = "the node is power cycled"

[[step]]
name = "cycle"
kind = "power"
action = "cycle"

[[step]]
name = "boot-seen"
kind = "wait-for"
console = "login: "
timeout = "90s"

[[step]]
name = "login"
kind = "console"
timeout = "60s"
script = [
  { send = "\r" },
  { expect = "login: ", timeout = "20s" },
  { send = "root\r" },
  { expect = "Password: " },
  { send = "not-a-real-secret\r" },
  { expect = "[#$] $", timeout = "10s" },
  { send = "hostname\r" },
  { expect = "\r\n{{target}}\r\n", timeout = "10s" },
  { key = "ctrl-d" },
]

[[step]]
name = "never-there"
kind = "console"
timeout = "30s"
script = [
  { send = "\r" },
  { expect = "this text never appears", timeout = "2s" },
]
on-failure = "continue"

[[verify]]
name = "power-is-on"
kind = "wait-for"
power = "on"
interval = "100ms"
timeout = "1m"
"#;

#[test]
fn wait_for_console_and_an_expect_script_log_in_over_sol() {
    let fleet = nodes(&[("gpu-node-21", "r1", "ipmi"), ("gpu-node-22", "r2", "ipmi")]);
    let sim = start(&fleet, OFFSET);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("console-login.toml"), RUNBOOK).unwrap();

    let o = sim.lifeline(&["runbook", "check", dir.path().join("console-login.toml").to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));

    let o = sim.lifeline(&[
        "runbook",
        "run",
        "console-login",
        "gpu-node-21",
        "gpu-node-22",
        "--yes",
        "--json",
        "--runbooks",
        dir.path().to_str().unwrap(),
        "--interval-ms",
        "20",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let runs = json(&o);
    for (run, node) in runs.as_array().unwrap().iter().zip(["gpu-node-21", "gpu-node-22"]) {
        assert_eq!(run["target"], node);
        assert_eq!(run["state"], "succeeded", "{run:#}");
        let steps = step_states(run);
        assert_eq!(
            steps,
            [
                ("cycle", "ok"),
                ("boot-seen", "ok"),
                ("login", "ok"),
                ("never-there", "failed"),
                ("power-is-on", "ok")
            ],
            "{run:#}"
        );
        // One cycle: the BMC's own action log has either a cycle or an off then an on (flavours differ).
        let acts: Vec<String> = sim
            .actions(node)
            .iter()
            .filter(|a| a["noop"] != true)
            .map(|a| a["action"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(acts == ["power-cycle"] || acts == ["power-off", "power-on"], "{acts:?}");

        // The journal keeps the console transcripts as evidence: the login, and the failed expectation.
        let id = run["run"].as_str().unwrap();
        let o = sim.lifeline(&["runbook", "log", id, "--json"]);
        assert!(o.status.success(), "{}", text(&o));
        let log = text(&o);
        assert!(log.contains("Last login"), "the script's transcript is evidence: {log}");
        assert!(log.contains("this text never appears"), "the failing pattern is named: {log}");
    }

    // The audit trail names each console script with its outcome.
    let o = sim.lifeline(&["audit", "log", "--json"]);
    let rows = json(&o);
    let scripts: Vec<&serde_json::Value> =
        rows.as_array().unwrap().iter().filter(|r| r["action"] == "console.script").collect();
    assert!(scripts.iter().any(|r| r["outcome"] == "ok"), "{scripts:#?}");
    assert!(scripts.iter().any(|r| r["outcome"] == "failed"), "{scripts:#?}");
}

#[test]
fn a_broken_console_script_is_reported_at_once_with_locations() {
    let dir = tempfile::tempdir().unwrap();
    let bad = RUNBOOK
        .replace(
            r#"{ key = "ctrl-d" },"#,
            r#"{ key = "ctrl-z" }, { expect = "(", send = "x" }, { sleep = "soon" },"#,
        )
        .replace(r#"console = "login: ""#, r#"console = "login: [""#);
    let path = dir.path().join("console-login.toml");
    std::fs::write(&path, bad).unwrap();
    let o = std::process::Command::new(lifeline_test_utils::lifeline_bin())
        .args(["runbook", "check", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    for want in [
        "console-login.toml:18:11: `console` is not a valid regular expression",
        "unknown key `ctrl-z`",
        "needs exactly one of expect, send, key, sleep, break (found 2)",
        "`sleep`: `soon` is not a duration",
    ] {
        assert!(out.contains(want), "missing `{want}` in:\n{out}");
    }
}

/// A wait that attaches after the prompt was printed (a busy BMC takes seconds to activate SOL, the
/// simulated host boots in about two) still sees it: the run keeps the console open from its start, and a
/// wait counts the output printed since the step before it began. Without that, this wait reads nothing.
#[test]
fn a_login_prompt_printed_while_the_wait_attaches_is_seen() {
    let fleet = nodes(&[("gpu-node-23", "r1", "ipmi")]);
    let sim = start(&fleet, OFFSET);
    let dir = tempfile::tempdir().unwrap();
    let rb = r#"
name = "late-watch"
description = "Power cycles a node and waits for its login prompt on the console"
targets = ["gpu-node"]
fault = "none: a test of console waits"
touches = "the node's power"
never-touches = "everything else"
worst-case = "the node is power cycled"

[[step]]
name = "cycle"
kind = "power"
action = "cycle"

[[step]]
name = "boot-seen"
kind = "wait-for"
console = "gpu-node-23 login: "
timeout = "30s"

[[verify]]
name = "power-is-on"
kind = "wait-for"
power = "on"
interval = "100ms"
timeout = "1m"
"#;
    std::fs::write(dir.path().join("late-watch.toml"), rb).unwrap();
    let o = std::process::Command::new(lifeline_test_utils::lifeline_bin())
        .args(["runbook", "run", "late-watch", "gpu-node-23", "--yes", "--json", "--interval-ms", "20"])
        .arg("--runbooks")
        .arg(dir.path())
        .arg("--inventory")
        .arg(&sim.inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .envs([("LIFELINE_BMC_PASSWORD", "s3cret-pw"), ("LIFELINE_SWITCH_PASSWORD", "sw-pass")])
        // Longer than the whole simulated boot: the prompt is printed before the wait attaches.
        .env("LIFELINE_TEST_CONSOLE_ATTACH_DELAY_MS", "8000")
        .env_remove("LIFELINE_DATABASE_URL")
        .env_remove("LIFELINE_CONFIG")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    let run = if v.is_array() { &v[0] } else { &v };
    assert_eq!(run["state"], "succeeded", "{run:#}");
    assert_eq!(step_states(run), [("cycle", "ok"), ("boot-seen", "ok"), ("power-is-on", "ok")], "{run:#}");
}
