//! Probation, recurrences and lemon releases on both backends: a recurrence is recorded only while the
//! node's probation is on (once, even when two callers see the same fault), a restarted probation counts
//! afresh, and a human's release is used once.

use lifeline_store::{Store, now_ms};
use lifeline_test_utils::{TestDatabase, postgres_url};
use serde_json::json;

async fn suite(store: &Store) {
    assert!(store.probation("gpu-node-01").await.unwrap().is_none());
    // No probation: nothing to recur.
    assert!(
        store.recurrence_record("gpu-node-01", "rail-down", Some(1), &json!({})).await.unwrap().is_none()
    );

    let t0 = now_ms();
    let p = store.probation_start("gpu-node-01", t0, t0 + 3_600_000, Some("sha256:aa")).await.unwrap();
    assert_eq!((p.state.as_str(), p.checks, p.until_ms), ("on", 0, t0 + 3_600_000));
    assert!(store.probation_checked("gpu-node-01", t0 + 10).await.unwrap());
    assert_eq!(store.probation("gpu-node-01").await.unwrap().unwrap().last_check_ms, Some(t0 + 10));

    let r = store
        .recurrence_record("gpu-node-01", "rail-down", Some(7), &json!({ "message": "mlx5_3 down" }))
        .await
        .unwrap()
        .expect("on probation: a recurrence");
    assert_eq!((r.cause.as_str(), r.fault, r.readmitted_at_ms), ("rail-down", Some(7), t0));
    assert_eq!(r.detail["message"], "mlx5_3 down");
    // The same fault seen again (another replica): probation already ended, not counted twice.
    assert!(
        store.recurrence_record("gpu-node-01", "rail-down", Some(7), &json!({})).await.unwrap().is_none()
    );
    assert_eq!(store.probation("gpu-node-01").await.unwrap().unwrap().state, "recurred");
    assert!(!store.probation_checked("gpu-node-01", t0 + 20).await.unwrap(), "no checks after it ended");

    // Re-admitted again: a fresh probation, which can recur again.
    store.probation_start("gpu-node-01", t0 + 5, t0 + 100, None).await.unwrap();
    store.probation_start("gpu-node-02", t0, t0 + 100, None).await.unwrap();
    assert_eq!(store.probations(Some("on")).await.unwrap().len(), 2);
    store.recurrence_record("gpu-node-01", "probation-check", None, &json!({})).await.unwrap().unwrap();
    assert!(store.probation_end("gpu-node-02", "passed").await.unwrap());
    assert!(!store.probation_end("gpu-node-02", "passed").await.unwrap());
    let all = store.recurrences(None, 0).await.unwrap();
    assert_eq!(all.iter().map(|r| r.cause.as_str()).collect::<Vec<_>>(), ["rail-down", "probation-check"]);
    assert_eq!(all[1].readmitted_at_ms, t0 + 5);
    assert_eq!(store.recurrences(Some("gpu-node-02"), 0).await.unwrap(), []);
    assert!(store.recurrences(Some("gpu-node-01"), now_ms() + 60_000).await.unwrap().is_empty());

    assert!(store.lemon_release_pending("gpu-node-01").await.unwrap().is_none());
    let rel = store.lemon_release("gpu-node-01", "cli:ops", "DIMM replaced").await.unwrap();
    let pending = store.lemon_release_pending("gpu-node-01").await.unwrap().unwrap();
    assert_eq!(pending, rel);
    assert!(store.lemon_release_use(rel.id).await.unwrap());
    assert!(!store.lemon_release_use(rel.id).await.unwrap(), "used once");
    assert!(store.lemon_release_pending("gpu-node-01").await.unwrap().is_none());
    let hist = store.lemon_releases("gpu-node-01").await.unwrap();
    assert_eq!((hist.len(), hist[0].by.as_str()), (1, "cli:ops"));
    assert!(hist[0].used_at_ms.is_some());
}

#[tokio::test]
async fn sqlite_probation() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    suite(&store).await;
}

#[tokio::test]
async fn postgres_probation() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    suite(&store).await;
    store.close().await;
}
