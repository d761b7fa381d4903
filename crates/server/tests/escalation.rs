//! The attempt budget through the server's fault policy: a `[[fault-policy]]` ladder answers the same
//! device's faults with a warm reset, then a power cycle, then a BMC reset, then a human, each choice
//! recorded in the decision and audited (`policy.escalate`) with why. The earlier attempts are runs the
//! policy started on the device, read from the store; one outside the window does not count.

mod common;

use std::sync::Arc;

use lifeline_engine::budget::Rung;
use lifeline_engine::ops::fault_records::FaultRow;
use lifeline_engine::ops::runs::{RunRow, now_ms};
use lifeline_engine::{Identity, Lifeline, Settings};
use lifeline_server::policy::{Action, apply};

const CONFIG: &str = "[[fault-policy]]\nkind = \"console-kernel-panic\"\nmode = \"auto\"\nattempt-window = \"1h\"\n\
    ladder = [\n  { runbook = \"gpu-node-recover\", vars = { reset = \"reset\" } },\n\
    { runbook = \"gpu-node-recover\", vars = { reset = \"cycle\" } },\n  { runbook = \"bmc-unreachable\" },\n]\n";

fn run(id: &str, runbook: &str, at_ms: i64) -> RunRow {
    RunRow {
        id: id.into(),
        runbook: runbook.into(),
        target: "gpu-node-01".into(),
        rack: Some("r01".into()),
        role: Some("gpu-node".into()),
        actor: lifeline_server::runbooks::POLICY_ACTOR.into(),
        vars: serde_json::json!({}),
        definition: String::new(),
        digest: String::new(),
        state: lifeline_types::RunState::Escalated,
        next_step: 0,
        reason: None,
        created_at_ms: at_ms,
        updated_at_ms: at_ms,
        ended_at_ms: Some(at_ms),
    }
}

#[tokio::test]
async fn the_ladder_climbs_reset_cycle_bmc_reset_then_calls_a_human() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("lifeline.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let settings = Settings {
        config: Some(cfg),
        inventory: Some(common::example_inventory()),
        data_dir: Some(dir.path().join("data")),
        ..Settings::default()
    };
    let base = Lifeline::new(&settings, Identity::new("server")).unwrap();
    let s = lifeline_server::serve::state(base, Arc::new(lifeline_server::SystemClock), false).await.unwrap();
    let now = now_ms();
    // An attempt two hours ago is outside the one-hour window, and a run the guard refused is no attempt.
    s.base.run_create(&run("old", "gpu-node-recover", now - 2 * 3_600_000)).await.unwrap();
    let mut refused = run("refused", "gpu-node-recover", now - 60_000);
    refused.state = lifeline_types::RunState::Refused;
    s.base.run_create(&refused).await.unwrap();

    let mut chosen = Vec::new();
    for i in 0..4 {
        let (fault, _): (FaultRow, bool) = s
            .base
            .fault_raise(
                "console-kernel-panic",
                "gpu-node-01",
                "critical",
                "console: Kernel panic",
                &serde_json::json!({}),
            )
            .await
            .unwrap();
        let d = apply(&s, &fault).await;
        match d.rung.clone().expect("a ladder decision") {
            Rung::Run { index, runbook, vars, why } => {
                assert_eq!(index, i, "{why}");
                assert_eq!(d.action, Action::Run);
                assert_eq!(d.runbook.as_deref(), Some(runbook.as_str()));
                assert_eq!(d.vars, vars);
                chosen.push(format!("{runbook}:{}", vars.get("reset").map_or("-", String::as_str)));
                // The responder of this state records only; the run the policy would have started:
                s.base.run_create(&run(&format!("r{i}"), &runbook, now + i as i64)).await.unwrap();
            }
            Rung::Human { why } => {
                assert_eq!((d.action, d.runbook.as_deref()), (Action::Notify, None));
                assert!(why.contains("attempt budget spent: 3 attempt(s) within 1h"), "{why}");
                assert!(
                    why.contains("gpu-node-recover (r0), gpu-node-recover (r1), bmc-unreachable (r2)"),
                    "{why}"
                );
                chosen.push("human".into());
            }
        }
        s.base.fault_resolve("console-kernel-panic", "gpu-node-01").await.unwrap();
    }
    assert_eq!(chosen, ["gpu-node-recover:reset", "gpu-node-recover:cycle", "bmc-unreachable:-", "human"]);
    let audit = s.base.audit_log(Some("gpu-node-01"), 100).await.unwrap();
    let escalations: Vec<_> = audit.iter().filter(|a| a.entry.action == "policy.escalate").collect();
    assert_eq!(escalations.len(), 4, "{audit:#?}");
    assert!(
        escalations.iter().all(|a| a.entry.actor == lifeline_server::runbooks::POLICY_ACTOR),
        "{escalations:#?}"
    );
}
