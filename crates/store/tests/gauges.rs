//! The fleet gauges `/metrics` reads, on both backends: runs counted by state, each switch's newest backup
//! (not its first), console bytes without the files retention removed, and zeros on an empty store (SUM over
//! no rows is NULL, and PostgreSQL's SUM of a BIGINT is NUMERIC: both must still read as a number).

use lifeline_store::{ConsoleLogRow, FleetGauges, RunRow, Store, now_ms};
use lifeline_test_utils::{TestDatabase, postgres_url};
use serde_json::json;

fn run(id: &str, state: &str) -> RunRow {
    RunRow {
        id: id.into(),
        runbook: "gpu-node-recover".into(),
        target: format!("gpu-node-{id}"),
        rack: None,
        role: None,
        actor: "cli:ops".into(),
        vars: json!({}),
        definition: String::new(),
        digest: "sha256:00".into(),
        state: state.parse().expect("a run state"),
        next_step: 0,
        reason: None,
        created_at_ms: now_ms(),
        updated_at_ms: now_ms(),
        ended_at_ms: None,
    }
}

fn log(console: &str, seq: i64, bytes: i64) -> ConsoleLogRow {
    ConsoleLogRow {
        console: console.into(),
        seq,
        path: format!("{console}.{seq}.log"),
        first_ms: 0,
        last_ms: None,
        bytes,
        closed: false,
    }
}

async fn suite(store: &Store) {
    assert_eq!(store.fleet_gauges().await.unwrap(), FleetGauges::default());

    for (id, state) in [("a", "running"), ("b", "escalated"), ("c", "running"), ("d", "succeeded")] {
        store.create_run(&run(id, state)).await.unwrap();
    }
    store.record_config_version("leaf-01", "sonic", "aa", 10, 1_000, false).await.unwrap();
    store.record_config_version("leaf-01", "sonic", "bb", 10, 5_000, false).await.unwrap();
    store.record_config_version("spine-01", "eos", "cc", 10, 3_000, false).await.unwrap();
    store.console_log_upsert(&log("gpu-node-01", 1, 700)).await.unwrap();
    store.console_log_upsert(&log("gpu-node-01", 2, 300)).await.unwrap();
    store.console_log_upsert(&log("gpu-node-02", 1, 50)).await.unwrap();
    store.console_log_removed("gpu-node-01", 1).await.unwrap();

    let g = store.fleet_gauges().await.unwrap();
    assert_eq!(
        g.runs_by_state,
        [("escalated".to_owned(), 1), ("running".to_owned(), 2), ("succeeded".to_owned(), 1)]
    );
    assert_eq!(g.newest_backup_ms, [("leaf-01".to_owned(), 5_000), ("spine-01".to_owned(), 3_000)]);
    assert_eq!(g.console_log_bytes, 350);

    assert!(store.swept_since(0).await.unwrap().is_empty());
    store.observe("gpu-node-01", "sweep", &json!({})).await.unwrap();
    store.observe("gpu-node-01", "sweep", &json!({})).await.unwrap();
    store.observe("gpu-node-02", "health", &json!({})).await.unwrap();
    assert_eq!(store.swept_since(0).await.unwrap(), ["gpu-node-01"]);
    assert!(store.swept_since(now_ms() + 60_000).await.unwrap().is_empty());
}

#[tokio::test]
async fn sqlite_gauges() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    suite(&store).await;
}

#[tokio::test]
async fn postgres_gauges() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    suite(&store).await;
    store.close().await;
}
