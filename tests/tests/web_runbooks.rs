//! The Runbooks page in a real headless Chromium against `lifeline serve` over `lifeline sim` (the example
//! cluster): an operator opens a runbook, sees the dry-run plan (the step that needs approval, the guard's
//! verdict), starts the run, approves it from the live run view and sees it complete; a viewer sees the
//! waiting run without Approve or Abort buttons, and the approve request forged from their session is
//! refused with 403.

mod web_support;

use serde_json::json;
use web_support::{Browser, PASSWORD, Stack, browser_available, http};

/// A runbook whose one acting step waits for approval; it only confirms power on (no scheduler needed).
const RUNBOOK: &str = include_str!("../../crates/server/tests/fixtures/approved-power-on.toml");

fn state_of(b: &Browser) -> String {
    b.js("const e = document.querySelector('#run-state'); return e ? e.dataset.state : ''", json!([]))
        .as_str()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn runbook_run_is_planned_started_and_approved_from_the_page_and_a_viewer_cannot_approve() {
    let Some(()) = browser_available() else { return };
    let stack = Stack::start_with(37000, |sim| {
        let dir = sim.dir.path().join("runbooks");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("approved-power-on.toml"), RUNBOOK).unwrap();
        format!("[server]\nsweep-interval = \"0s\"\n\n[runbooks]\ndir = \"{}\"\n", dir.display())
    });
    let b = Browser::start("runbooks");
    b.login(&stack, "ann", PASSWORD);
    b.wait("the overview (the landing page)", 30, |b| (b.path() == "/ui/overview").then_some(()));

    // The catalogue, then the runbook: the plan comes first and says which step needs approval.
    b.goto(&stack.url("/ui/runbooks"));
    b.wait_text("#runbook-catalogue", "approved-power-on", 30);
    b.click("#runbook-catalogue a");
    b.wait_text("h1", "Runbook approved-power-on", 30);
    assert!(!b.exists("#start-button"), "no Start before the plan is shown");
    b.type_into("#targets", "gpu-node-02");
    b.click("#plan-button");
    let plan = b.wait_text("#plan", "required", 30);
    assert!(plan.contains("gpu-node-02") && plan.contains("guard allows it"), "{plan}");
    b.click("#start-button");
    b.confirm("gpu-node-02");

    // The live run view: waiting for approval before the power step; Approve, then it completes.
    b.wait("the run view", 30, |b| (state_of(b) == "waiting-approval").then_some(()));
    let run = b.js("return new URLSearchParams(location.search).get('run')", json!([]));
    let run = run.as_str().unwrap().to_owned();
    b.wait_text("#run-steps", "waiting-approval", 10);
    b.click("#approve");
    b.confirm("gpu-node-02");
    b.wait("the run to succeed (pushed over SSE)", 90, |b| (state_of(b) == "succeeded").then_some(()));
    let steps = b.js(
        "return [...document.querySelectorAll('#run-steps tr[data-step]')].map(r => r.dataset.state)",
        json!([]),
    );
    assert_eq!(steps, json!(["ok", "ok"]), "every step done");
    let journal = b.text("#journal");
    assert!(
        journal.contains("intent") && journal.contains("sha256:"),
        "journal with evidence digests: {journal}"
    );
    assert!(!b.exists("#approve") && !b.exists("#abort"), "no buttons on an ended run");

    // A second run waits for approval; the viewer sees it without buttons and cannot approve it.
    let token = {
        let o = stack.sim.lifeline(&["token", "create", "--user", "ann"]);
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    };
    let auth = format!("Bearer {token}");
    let (st, body) = http(
        &stack.addr,
        "POST",
        "/api/v1/runbooks/approved-power-on/runs",
        &[("Authorization", &auth)],
        Some(&json!({"targets": ["gpu-node-03"]}).to_string()),
    );
    assert_eq!(st, 200, "{body}");
    let second: serde_json::Value = serde_json::from_str(&body).unwrap();
    let second = second[0]["run"].as_str().unwrap().to_owned();
    assert_ne!(second, run);

    let v = Browser::start("runbooks-viewer");
    v.login(&stack, "vic", PASSWORD);
    v.wait("the overview (the landing page)", 30, |b| (b.path() == "/ui/overview").then_some(()));
    v.goto(&stack.url(&format!("/ui/runbooks?run={second}")));
    v.wait("the waiting run", 30, |b| (state_of(b) == "waiting-approval").then_some(()));
    assert!(!v.exists("#approve") && !v.exists("#abort"), "no Approve/Abort for a viewer");
    let forged = format!(
        "return (async () => {{ const csrf = document.cookie.split('; ').find(c => c.startsWith('lifeline_csrf=')).split('=')[1];
           const r = await fetch('/api/v1/runs/{second}/approve', {{method: 'POST', headers: {{'X-CSRF-Token': csrf}}}});
           return r.status; }})()"
    );
    assert_eq!(v.js(&forged, json!([])), 403, "forged approve from a viewer's session");
    let (_, body) =
        http(&stack.addr, "GET", &format!("/api/v1/runs/{second}"), &[("Authorization", &auth)], None);
    assert!(body.contains("\"state\":\"waiting-approval\""), "still waiting: {body}");
}
