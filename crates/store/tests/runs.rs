//! Runbook runs, journal and approvals on both backends: a run's state only moves out of an active
//! state once (an abort that came first wins), the journal reads back in order from any point, a step's
//! outcome and the run's next step are written together, and an approval of one step attempt is recorded
//! once.

use lifeline_store::{ApprovalRow, NewJournal, RunRow, Store, now_ms};
use lifeline_test_utils::{TestDatabase, postgres_url};
use lifeline_types::RunState;
use serde_json::json;

fn run(id: &str, target: &str) -> RunRow {
    RunRow {
        id: id.into(),
        runbook: "gpu-node-recover".into(),
        target: target.into(),
        rack: Some("r01".into()),
        role: Some("gpu-node".into()),
        actor: "cli:ops".into(),
        vars: json!({ "reset": "cycle" }),
        definition: "name = \"gpu-node-recover\"".into(),
        digest: "sha256:00".into(),
        state: RunState::Running,
        next_step: 0,
        reason: None,
        created_at_ms: now_ms(),
        updated_at_ms: now_ms(),
        ended_at_ms: None,
    }
}

fn row(run_id: &str, i: i64, phase: &str, state: &str) -> NewJournal {
    NewJournal {
        run_id: run_id.into(),
        step_index: i,
        step: format!("s{i}"),
        attempt: 1,
        phase: phase.into(),
        state: state.into(),
        request_id: Some(format!("runbook:{run_id}/s{i}#1")),
        detail: json!({ "i": i }),
        evidence: json!({ "digest": "sha256:ab" }),
    }
}

async fn suite(store: &Store) {
    store.create_run(&run("r1", "gpu-node-01")).await.unwrap();
    store.create_run(&run("r2", "gpu-node-02")).await.unwrap();
    assert_eq!(store.runs_in(&[RunState::Running]).await.unwrap().len(), 2);
    let got = store.run("r1").await.unwrap().unwrap();
    assert_eq!((got.vars["reset"].as_str(), got.rack.as_deref()), (Some("cycle"), Some("r01")));

    let a = store.journal(&row("r1", 0, "intent", "running")).await.unwrap();
    let b = store.journal(&row("r1", 0, "outcome", "ok")).await.unwrap();
    store.journal(&row("r2", 0, "intent", "running")).await.unwrap();
    assert!(b > a);
    let j = store.journal_since("r1", 0).await.unwrap();
    assert_eq!(j.iter().map(|r| r.phase.as_str()).collect::<Vec<_>>(), ["intent", "outcome"]);
    assert_eq!(j[1].evidence["digest"], "sha256:ab");
    assert_eq!(store.journal_since("r1", a).await.unwrap().len(), 1);

    assert!(store.set_run_state("r1", RunState::WaitingApproval, 1, Some("approve s1")).await.unwrap());
    assert!(store.set_run_state("r1", RunState::Aborted, 1, Some("by ops")).await.unwrap());
    assert!(!store.set_run_state("r1", RunState::Succeeded, 2, None).await.unwrap(), "a terminal run moved");
    let got = store.run("r1").await.unwrap().unwrap();
    assert_eq!(got.state, RunState::Aborted);
    assert!(got.ended_at_ms.is_some());
    assert_eq!(store.runs_in(RunState::ACTIVE).await.unwrap().len(), 1);

    // A step's outcome and the run's next step land together (one transaction).
    let moved = store
        .journal_and_set_state(&row("r2", 0, "outcome", "ok"), RunState::Running, 1, None)
        .await
        .unwrap();
    assert!(moved);
    let got = store.run("r2").await.unwrap().unwrap();
    assert_eq!((got.state, got.next_step), (RunState::Running, 1));
    let j = store.journal_since("r2", 0).await.unwrap();
    assert_eq!(j.iter().map(|r| r.phase.as_str()).collect::<Vec<_>>(), ["intent", "outcome"]);
    // On a run that ended first (aborted) the row is kept and the state is not moved.
    let moved = store
        .journal_and_set_state(&row("r1", 1, "outcome", "failed"), RunState::Failed, 1, None)
        .await
        .unwrap();
    assert!(!moved, "an aborted run moved");
    assert_eq!(store.run("r1").await.unwrap().unwrap().state, RunState::Aborted);
    assert_eq!(store.journal_since("r1", b).await.unwrap()[0].state, "failed");

    let ap = ApprovalRow {
        run_id: "r2".into(),
        step_index: 1,
        attempt: 1,
        approver: "cli:ops".into(),
        decision: "run".into(),
        at_ms: now_ms(),
    };
    assert!(store.approve_step(&ap).await.unwrap());
    assert!(!store.approve_step(&ApprovalRow { approver: "cli:other".into(), ..ap }).await.unwrap());
    let aps = store.approvals("r2").await.unwrap();
    assert_eq!((aps.len(), aps[0].approver.as_str()), (1, "cli:ops"));
    assert_eq!(store.runs(10).await.unwrap().len(), 2);
}

#[tokio::test]
async fn sqlite_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    suite(&store).await;
}

#[tokio::test]
async fn postgres_runs() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    suite(&store).await;
    store.close().await;
}
