//! The incident page in a real headless Chromium against `lifeline serve` over `lifeline sim`: a failing
//! agent report opens a fault, the `[[fault-policy]]` starts a runbook that power-cycles the node and then
//! escalates; the overview's open incident links to the incident page, which shows the fault, the run,
//! its steps, the power action from the audit log and the escalation in time order; the node page links
//! to the same incident. The page's entries are checked against `GET /api/v1/incidents/{fault_id}`.

mod web_support;

use serde_json::{Value, json};
use web_support::{Browser, PASSWORD, Stack, browser_available, http};

/// Power-cycles the node, then waits for it to be off — which it never is after a cycle — and escalates.
const CYCLE_THEN_ESCALATE: &str = r#"# cycle-then-escalate
#
# Fault:       an agent report that a node fails its checks.
# Touches:     the node's power (one cycle).
# Never:       any other node.
# Worst case:  the node is power-cycled and a human is asked to look.

name = "cycle-then-escalate"
description = "Power-cycle a node, then escalate when it is not off"
targets = ["gpu-node"]
fault = "a node whose agent reports failing checks"
touches = "the node's power"
never-touches = "other nodes"
worst-case = "the node is power-cycled and a human is asked to look"

[[step]]
name = "cycle"
kind = "power"
action = "cycle"
timeout = "2m"
on-failure = "escalate"

[[step]]
name = "is-off"
kind = "wait-for"
power = "off"
timeout = "3s"
on-failure = "escalate"

[[verify]]
name = "still-on"
kind = "wait-for"
power = "on"
timeout = "1m"
"#;

const NODE: &str = "gpu-node-04";

fn api(stack: &Stack, auth: &str, method: &str, path: &str, body: Option<Value>) -> Value {
    let body = body.map(|b| b.to_string());
    let (st, text) = http(&stack.addr, method, path, &[("Authorization", auth)], body.as_deref());
    assert_eq!(st, 200, "{method} {path}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// The position of the first title containing `needle`, or a failure naming what was there.
fn position(titles: &[String], needle: &str) -> usize {
    titles.iter().position(|t| t.contains(needle)).unwrap_or_else(|| panic!("no {needle:?} in {titles:#?}"))
}

#[test]
fn escalated_run_on_the_incident_page_with_its_steps_and_power_action_in_time_order() {
    let Some(()) = browser_available() else { return };
    let stack = Stack::start_with(46000, |sim| {
        let dir = sim.dir.path().join("runbooks");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cycle-then-escalate.toml"), CYCLE_THEN_ESCALATE).unwrap();
        format!(
            "[server]\nsweep-interval = \"2s\"\n\n[runbooks]\ndir = \"{}\"\n\n[[fault-policy]]\nkind = \"agent-report\"\ntargets = [\"{NODE}\"]\nrunbook = \"cycle-then-escalate\"\nmode = \"auto\"\n",
            dir.display()
        )
    });
    let o = stack.sim.lifeline(&["token", "create", "--user", "ann"]);
    let auth = format!("Bearer {}", String::from_utf8_lossy(&o.stdout).trim());

    // The agent reports a failing rail: a fault, and the policy's run on it.
    let report = json!({"node": NODE, "passed": false, "report": {"summary": "rail.link mlx5_3: down"}});
    let taken = api(&stack, &auth, "POST", "/api/v1/agent/reports", Some(report));
    let fault = taken["fault"]["id"].as_i64().unwrap_or_else(|| panic!("no fault opened: {taken}"));
    let path = format!("/api/v1/incidents/{fault}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let inc = loop {
        let inc = api(&stack, &auth, "GET", &path, None);
        if inc["runs"].as_array().is_some_and(|r| r.iter().any(|r| r["state"] == "escalated")) {
            break inc;
        }
        assert!(std::time::Instant::now() < deadline, "the fault's run did not escalate: {inc}");
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    let run = inc["runs"][0]["run"].as_str().unwrap().to_owned();
    assert_eq!(inc["runs"][0]["runbook"], "cycle-then-escalate", "{inc}");
    assert_eq!(inc["runs"][0]["actor"], "fault-policy", "{inc}");
    // The API's entries are in time order.
    let times: Vec<&str> =
        inc["entries"].as_array().unwrap().iter().filter_map(|e| e["at"].as_str()).collect();
    let mut sorted = times.clone();
    sorted.sort_unstable();
    assert_eq!(times, sorted, "entries oldest first: {inc}");
    // An unknown fault is not found; a fault id that is not a number is a usage error.
    let (st, _) = http(&stack.addr, "GET", "/api/v1/incidents/999999", &[("Authorization", &auth)], None);
    assert_eq!(st, 404);
    let (st, body) = http(&stack.addr, "GET", "/api/v1/incidents/x", &[("Authorization", &auth)], None);
    assert_eq!(st, 400, "{body}");
    assert!(body.contains("fault_id"), "the error names the parameter: {body}");

    // The overview's open incident links to the incident page.
    let b = Browser::start("incident");
    b.login(&stack, "ann", PASSWORD);
    b.wait("the overview (the landing page)", 30, |b| (b.path() == "/ui/overview").then_some(()));
    let link = format!("#incidents tr[data-fault='{fault}'] a.incident-link");
    b.wait("the incident on the overview", 60, |b| b.exists(&link).then_some(()));
    b.click(&link);
    b.wait("the incident page", 30, |b| (b.path() == format!("/ui/incident/{fault}")).then_some(()));
    b.wait_text("#incident-timeline", "ended escalated", 30);
    let titles: Vec<String> = serde_json::from_value(b.js(
        "return [...document.querySelectorAll('#incident-timeline li')].map(li => li.textContent)",
        json!([]),
    ))
    .unwrap();
    let kinds = b.js(
        "return [...document.querySelectorAll('#incident-timeline li')].map(li => li.dataset.kind)",
        json!([]),
    );
    let at: Vec<String> = serde_json::from_value(b.js(
        "return [...document.querySelectorAll('#incident-timeline li')].map(li => li.dataset.at || '')",
        json!([]),
    ))
    .unwrap();
    let mut at_sorted = at.clone();
    at_sorted.sort_unstable();
    assert_eq!(at, at_sorted, "the page lists oldest first: {titles:#?}");
    assert_eq!(titles.len(), inc["entries"].as_array().unwrap().len(), "every entry of the API on the page");
    // The story, in order: the fault, the agent's report, the run, the cycle (its step and the audited
    // power action), the failed wait, the escalation.
    let opened = position(&titles, "fault opened: agent-report");
    let report = position(&titles, "the agent's report");
    let started = position(&titles, "run cycle-then-escalate started by fault-policy");
    let power = position(&titles, &format!("power.cycle ok by runbook:{run}"));
    let cycled = position(&titles, "step cycle ok");
    let waited = position(&titles, "step is-off failed");
    let ended = position(&titles, "run cycle-then-escalate ended escalated");
    assert!(opened <= report && report < started, "{titles:#?}");
    assert!(started < power && power < cycled, "the power action inside its step: {titles:#?}");
    assert!(cycled < waited && waited < ended, "{titles:#?}");
    assert!(kinds.as_array().unwrap().iter().any(|k| k == "step"), "{kinds}");
    assert!(b.text("#incident-runs").contains(&run), "the run listed");
    assert!(b.text("#incident-message").contains("rail.link mlx5_3: down"));
    // Text from the API is text: the report's summary is not markup.
    assert_eq!(b.js("return document.querySelectorAll('#main script, #main iframe').length", json!([])), 0);
    b.screenshot(&web_support::artifacts_dir().join("incident.png"));

    // The node page links to the same incident.
    b.goto(&stack.url(&format!("/ui/node/{NODE}")));
    let node_link = format!("a.incident-link[href='/ui/incident/{fault}']");
    b.wait("the incident link on the node page", 30, |b| b.exists(&node_link).then_some(()));
    b.click(&node_link);
    b.wait("the incident page again", 30, |b| (b.path() == format!("/ui/incident/{fault}")).then_some(()));
    b.wait_text("#incident-timeline", "ended escalated", 30);
}
