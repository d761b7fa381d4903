//! `GET /api/v1/summary` and `GET /api/v1/fleet` over the example inventory and a store holding one device
//! in each state (fault records, runs at a step, an escalation, Lifeline's drain, sweep observations):
//! each device lands in the state its records say, the counts add up to the total, filters leave only
//! matching devices with counts that follow them, and bad filters are refused naming what is wrong.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use lifeline_engine::ops::runs::RunRow;
use lifeline_types::AuditAction;
use serde_json::{Value, json};
use tower::ServiceExt;

/// A runbook with one acting step and a post-condition (what a run's `step` and `verifying` read).
const RUNBOOK: &str = include_str!("fixtures/approved-power-on.toml");

fn run(id: &str, target: &str, state: &str, next_step: i64, reason: Option<&str>, at: i64) -> RunRow {
    RunRow {
        id: id.into(),
        runbook: "approved-power-on".into(),
        target: target.into(),
        rack: None,
        role: Some("gpu-node".into()),
        actor: "test".into(),
        vars: json!({ "fault": "", "fault-kind": "" }),
        definition: RUNBOOK.into(),
        digest: "sha256:test".into(),
        state: state.parse().expect("a run state"),
        next_step,
        reason: reason.map(Into::into),
        created_at_ms: at,
        updated_at_ms: at,
        ended_at_ms: None,
    }
}

async fn get(app: &axum::Router, token: &str, path: &str) -> (StatusCode, Value) {
    let req = Request::get(path)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let r = app.clone().oneshot(req).await.unwrap();
    let status = r.status();
    let b = axum::body::to_bytes(r.into_body(), 1 << 24).await.unwrap();
    (status, serde_json::from_slice(&b).unwrap_or(Value::Null))
}

fn names(page: &Value) -> Vec<String> {
    page["devices"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn each_device_in_the_state_its_records_say_and_filters_follow() {
    let f = common::fixture().await;
    let st = &f.state;
    let viewer = &f.tokens[0].1;
    let engine = &st.base;
    let now = chrono::Utc::now().timestamp_millis();
    // Every gpu node swept and reachable, but gpu-node-02 whose BMC did not answer.
    for i in 1..=8 {
        let name = format!("gpu-node-0{i}");
        let errors = if i == 2 { json!(["connect: timed out"]) } else { json!([]) };
        engine
            .record_observation(&name, "sweep", &json!({ "power": "on", "health": "ok", "errors": errors }))
            .await
            .unwrap();
    }
    // 03 faulted (critical), 04 faulted (warning, acknowledged), 05 running, 06 waiting, 07 escalated,
    // 08 drained by Lifeline; 01 healthy.
    let (crit, _) = engine
        .fault_raise("bmc-critical", "gpu-node-03", "critical", "PSU 1 failed", &json!({}))
        .await
        .unwrap();
    let (warn, _) =
        engine.fault_raise("sel-warning", "gpu-node-04", "warning", "fan slow", &json!({})).await.unwrap();
    engine.with_identity(lifeline_engine::Identity::new("web:ann")).fault_ack(warn.id).await.unwrap();
    engine.run_create(&run("run-05", "gpu-node-05", "running", 0, None, now - 40_000)).await.unwrap();
    engine.run_create(&run("run-05b", "gpu-node-01", "succeeded", 2, None, now - 900_000)).await.unwrap();
    engine
        .run_create(&run("run-06", "gpu-node-06", "waiting-approval", 0, None, now - 20_000))
        .await
        .unwrap();
    let why = "step `is-on`: rail.link mlx5_0/1 (rail 0): state DOWN; rail.link mlx5_1/1 (rail 1): state DOWN; rail.link mlx5_2/1 (rail 2): state DOWN";
    engine.run_create(&run("run-07", "gpu-node-07", "escalated", 1, Some(why), now - 60_000)).await.unwrap();
    let audit = st.audit_as("runbook:r8").await.unwrap();
    audit
        .record(AuditAction::ReadmitDrain, "gpu-node-08", lifeline_engine::Outcome::Ok, None, json!({}))
        .await
        .unwrap();
    // A resumed node is not drained: its newest readmit decision is the resume.
    audit
        .record(AuditAction::ReadmitDrain, "gpu-node-01", lifeline_engine::Outcome::Ok, None, json!({}))
        .await
        .unwrap();
    audit
        .record(AuditAction::ReadmitResume, "gpu-node-01", lifeline_engine::Outcome::Ok, None, json!({}))
        .await
        .unwrap();

    let app = lifeline_server::serve::app(st.clone());
    let (status, sum) = get(&app, viewer, "/api/v1/summary").await;
    assert_eq!(status, StatusCode::OK, "{sum}");
    let total = sum["total"].as_u64().unwrap();
    assert_eq!(total, 17, "every device of the example inventory");
    let counts = sum["counts"].as_object().unwrap();
    assert_eq!(counts.values().map(|v| v.as_u64().unwrap()).sum::<u64>(), total, "{counts:?}");
    let (_, page) = get(&app, viewer, "/api/v1/fleet?limit=100").await;
    let state_of = |page: &Value, n: &str| {
        page["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == n)
            .map(|d| d["state"].clone())
            .unwrap()
    };
    for (n, s) in [
        ("gpu-node-01", "healthy"),
        ("gpu-node-02", "unreachable"),
        ("gpu-node-03", "faulted"),
        ("gpu-node-04", "faulted"),
        ("gpu-node-05", "recovering"),
        ("gpu-node-06", "waiting-approval"),
        ("gpu-node-07", "escalated"),
        ("gpu-node-08", "drained-by-lifeline"),
        ("backend-leaf-01", "unknown"),
    ] {
        assert_eq!(state_of(&page, n), s, "{n}");
    }
    assert_eq!(sum["counts"]["recovering"], 1);
    assert_eq!(sum["counts"]["unknown"], 9, "switches and head nodes were never swept");

    // Incidents: the critical first, and the run that answers a device is named with its step.
    let inc = sum["incidents"].as_array().unwrap();
    assert_eq!(inc.len(), 2);
    assert_eq!((inc[0]["fault"].as_i64(), inc[0]["severity"].as_str()), (Some(crit.id), Some("critical")));
    assert_eq!(inc[1]["state"], "acked");
    assert_eq!(sum["in_flight"][0]["run"], "run-05");
    assert_eq!(sum["in_flight"][0]["step"], "power-on");
    assert_eq!(
        (sum["in_flight"][0]["step_number"].as_u64(), sum["in_flight"][0]["steps"].as_u64()),
        (Some(1), Some(2))
    );
    let needs: Vec<&str> =
        sum["needs_human"].as_array().unwrap().iter().map(|r| r["run"].as_str().unwrap()).collect();
    assert_eq!(needs.len(), 2);
    assert!(needs.contains(&"run-06") && needs.contains(&"run-07"), "{needs:?}");
    let esc = sum["needs_human"].as_array().unwrap().iter().find(|r| r["run"] == "run-07").unwrap();
    assert_eq!(esc["reason_summary"], "step `is-on`: 3 rails down", "{esc}");

    // Filters: by state, rack, role, a glob and a name part; counts follow all but `state`.
    let (_, p) = get(&app, viewer, "/api/v1/fleet?state=faulted").await;
    assert_eq!(names(&p), ["gpu-node-03", "gpu-node-04"]);
    assert_eq!((p["matched"].as_u64(), p["total"].as_u64()), (Some(2), Some(17)));
    let (_, p) = get(&app, viewer, "/api/v1/fleet?rack=r02&role=gpu-node").await;
    assert_eq!(names(&p), ["gpu-node-05", "gpu-node-06", "gpu-node-07", "gpu-node-08"]);
    assert_eq!(p["counts"]["escalated"], 1);
    assert_eq!(p["counts"]["faulted"], 0, "counts of the filtered devices only");
    let (_, p) = get(&app, viewer, "/api/v1/fleet?q=r02").await;
    assert!(
        names(&p).contains(&"gpu-node-05".to_owned()) && !names(&p).contains(&"gpu-node-01".to_owned()),
        "a rack as the CLI names it"
    );
    let (_, p) = get(&app, viewer, "/api/v1/fleet?q=gpu-node-0%5B1-3%5D").await;
    assert_eq!(names(&p), ["gpu-node-01", "gpu-node-02", "gpu-node-03"]);
    let (_, p) = get(&app, viewer, "/api/v1/fleet?q=leaf&state=unknown,healthy").await;
    assert!(names(&p).iter().all(|n| n.contains("leaf")) && !names(&p).is_empty(), "{p}");
    let (_, p) = get(&app, viewer, "/api/v1/fleet?q=critical").await;
    assert_eq!((p["matched"].as_u64(), names(&p).len()), (Some(0), 0), "no device is named critical");
    let (_, p) = get(&app, viewer, "/api/v1/fleet?limit=5&offset=5").await;
    assert_eq!((names(&p).len(), p["matched"].as_u64()), (5, Some(17)));
    for (bad, says) in [("state=broken", "`broken`"), ("q=gpu-%5B", "glob"), ("limit=0", "limit")] {
        let (status, e) = get(&app, viewer, &format!("/api/v1/fleet?{bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {e}");
        assert!(e["message"].as_str().unwrap().contains(says), "{bad}: {e}");
    }

    // A node's timeline: its state in words, and the escalation's reason summarized with the whole beside.
    let (status, tl) = get(&app, viewer, "/api/v1/devices/gpu-node-07/timeline").await;
    assert_eq!(status, StatusCode::OK, "{tl}");
    assert_eq!(tl["device"]["state"], "escalated");
    assert!(tl["device"]["why"].as_str().unwrap().contains("3 rails down — needs a human"), "{tl}");
    let started = tl["entries"].as_array().unwrap().iter().find(|e| e["kind"] == "run").unwrap();
    assert_eq!(started["run"], "run-07");
    let (_, tl) = get(&app, viewer, "/api/v1/devices/gpu-node-04/timeline").await;
    let kinds: Vec<&str> =
        tl["entries"].as_array().unwrap().iter().map(|e| e["title"].as_str().unwrap()).collect();
    assert!(kinds.iter().any(|t| t.starts_with("fault acknowledged by web:ann")), "{kinds:?}");
    assert!(kinds.iter().any(|t| t.starts_with("fault opened: sel-warning")), "{kinds:?}");
    let (status, _) = get(&app, viewer, "/api/v1/devices/no-such-node/timeline").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The run moves to its post-condition: the device is verifying (after the shared snapshot's second).
    engine.run_set_state("run-05", lifeline_types::RunState::Running, 1, None).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (_, p) = get(&app, viewer, "/api/v1/fleet?state=verifying").await;
    assert_eq!(names(&p), ["gpu-node-05"]);
    let (_, sum) = get(&app, viewer, "/api/v1/summary").await;
    let mut snap = sum.clone();
    snap["generated_at"] = json!("[time]");
    insta::assert_json_snapshot!("summary", snap, {
        ".**.opened" => "[time]", ".**.updated" => "[time]", ".**.started" => "[time]", ".**.step_started" => "[time]",
        ".incidents[].fault" => "[id]", ".incidents[].run" => "[run]",
    });
}

/// The summary and the fleet list are shared for a second, but a fault this server writes makes them
/// stale at once: the next read shows it (the live stream, woken by the same write, reads them next).
#[tokio::test]
async fn a_state_change_written_here_is_in_the_next_read_not_a_second_later() {
    let f = common::fixture().await;
    let st = &f.state;
    let viewer = &f.tokens[0].1;
    let app = lifeline_server::serve::app(st.clone());
    let mut woken = st.base.state_changes().await.unwrap();
    let (_, before) = get(&app, viewer, "/api/v1/summary").await;
    let (_, list) = get(&app, viewer, "/api/v1/devices").await;
    let faults_of = |list: &Value| {
        list.as_array().unwrap().iter().find(|d| d["name"] == "gpu-node-03").unwrap()["open_faults"].clone()
    };
    assert_eq!(faults_of(&list), 0);
    assert!(!woken.has_changed().unwrap(), "reads change nothing");

    st.base.fault_raise("agent-report", "gpu-node-03", "critical", "node failed", &json!({})).await.unwrap();
    assert!(woken.has_changed().unwrap(), "a new fault wakes the live streams");
    let (_, after) = get(&app, viewer, "/api/v1/summary").await;
    assert_eq!(
        after["counts"]["faulted"].as_u64().unwrap(),
        before["counts"]["faulted"].as_u64().unwrap() + 1,
        "the cached summary was served after the fault: {after}"
    );
    let (_, list) = get(&app, viewer, "/api/v1/devices").await;
    assert_eq!(faults_of(&list), 1, "the cached fleet list was served after the fault");

    woken.borrow_and_update();
    st.base.fault_resolve("agent-report", "gpu-node-03").await.unwrap();
    assert!(woken.has_changed().unwrap(), "a resolved fault wakes the live streams");
    let (_, resolved) = get(&app, viewer, "/api/v1/summary").await;
    assert_eq!(resolved["counts"]["faulted"], before["counts"]["faulted"]);
}
