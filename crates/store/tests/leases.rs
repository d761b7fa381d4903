//! Leases and request ids on both backends: exactly one taker wins, expiry hands over with a higher fence,
//! a stale holder can neither renew nor release, replayed request ids return the first outcome.

use lifeline_store::{LeaseAttempt, Store};
use lifeline_test_utils::{TestDatabase, postgres_url};
use serde_json::json;

async fn lease_suite(store: &Store) {
    // 16 concurrent takers of one target: exactly one wins.
    let mut tasks = Vec::new();
    for i in 0..16 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                match s.try_lease("bmc-1", &format!("h{i}"), &format!("r{i}"), "power.cycle", 60_000).await {
                    Ok(a) => return a,
                    Err(_) => tokio::task::yield_now().await,
                }
            }
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        if let LeaseAttempt::Acquired { lease, .. } = t.await.unwrap() {
            winners.push(lease);
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let won = &winners[0];
    assert_eq!(won.fence, 1);
    match store.try_lease("bmc-1", "other", "rX", "power.off", 60_000).await.unwrap() {
        LeaseAttempt::Held(h) => {
            assert_eq!((h.holder.as_str(), h.action.as_str()), (won.holder.as_str(), "power.cycle"))
        }
        a => panic!("a held lease was taken: {a:?}"),
    }
    assert!(store.renew_lease("bmc-1", &won.holder, 1, 60_000).await.unwrap());
    assert!(!store.renew_lease("bmc-1", "other", 1, 60_000).await.unwrap(), "a non-holder renewed");
    assert!(store.release_lease("bmc-1", &won.holder, 1).await.unwrap());
    assert!(store.lease("bmc-1").await.unwrap().is_none());

    // Expiry: a lease with a 0 ms ttl is taken over, the fence grows, the old holder is locked out.
    let LeaseAttempt::Acquired { lease: a, .. } =
        store.try_lease("sw-1", "dead", "r1", "backup.run", -1).await.unwrap()
    else {
        panic!("free lease not taken")
    };
    let LeaseAttempt::Acquired { lease: b, previous } =
        store.try_lease("sw-1", "alive", "r2", "backup.run", 60_000).await.unwrap()
    else {
        panic!("expired lease not taken over")
    };
    assert_eq!(b.fence, a.fence + 1);
    assert_eq!(previous.map(|p| p.holder), Some("dead".into()));
    assert!(!store.renew_lease("sw-1", "dead", a.fence, 60_000).await.unwrap());
    assert!(!store.release_lease("sw-1", "dead", a.fence).await.unwrap());
    assert_eq!(store.lease("sw-1").await.unwrap().unwrap().holder, "alive");
    assert_eq!(store.live_leases().await.unwrap().len(), 1);

    // The row that authorizes a BMC command: written only under the current, unexpired lease with time
    // left. The holder that lost `sw-1` (paused past its expiry) writes nothing and is told so.
    let entry = lifeline_store::AuditEntry {
        actor: "runbook:rb-1".into(),
        action: "power.cycle".into(),
        target: "sw-1".into(),
        outcome: "started".into(),
        detail: json!({}),
        request_id: None,
    };
    let before = store.audit_log(Some("sw-1"), 100).await.unwrap().len();
    let lost = store.audit_fenced(&entry, ("sw-1", "dead", a.fence), 0).await;
    assert!(matches!(lost, Err(lifeline_store::StoreError::Fenced { .. })), "{lost:?}");
    assert!(store.audit_fenced(&entry, ("sw-1", "alive", b.fence), 0).await.is_ok());
    let late = store.audit_fenced(&entry, ("sw-1", "alive", b.fence), 120_000).await;
    assert!(late.is_err(), "a lease with less time left than the margin authorizes nothing: {late:?}");
    assert_eq!(store.audit_log(Some("sw-1"), 100).await.unwrap().len(), before + 1, "one row: the holder's");

    // Requests: the first registration wins; a replay sees the first outcome.
    assert!(store.begin_request("req-1", "bmc-1", "power.cycle", "cli:a").await.unwrap().is_none());
    let again = store.begin_request("req-1", "bmc-1", "power.cycle", "cli:b").await.unwrap().unwrap();
    assert_eq!((again.state.as_str(), again.actor.as_str()), ("running", "cli:a"));
    store.finish_request("req-1", &json!({ "confirmed": true })).await.unwrap();
    let again = store.begin_request("req-1", "bmc-1", "power.cycle", "cli:b").await.unwrap().unwrap();
    assert_eq!(again.state, "done");
    assert_eq!(again.outcome, Some(json!({ "confirmed": true })));
    let since = store.finished_since("bmc-1", "power.cycle", 0).await.unwrap().unwrap();
    assert_eq!(since.request_id, "req-1");
    assert!(store.finished_since("bmc-1", "power.off", 0).await.unwrap().is_none());
    // A request refused before acting is forgotten.
    assert!(store.begin_request("req-2", "bmc-1", "power.on", "cli:a").await.unwrap().is_none());
    store.drop_request("req-2").await.unwrap();
    assert!(store.request("req-2").await.unwrap().is_none());
}

#[tokio::test]
async fn sqlite_leases() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    lease_suite(&store).await;
}

#[tokio::test]
async fn postgres_leases() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    lease_suite(&store).await;
    store.close().await;
}

/// Eight processes' worth of first opens of one fresh data dir: one migration, no "table already exists".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_use_migrates_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("fresh");
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let d = data.clone();
        tasks.push(tokio::spawn(async move { Store::open(&d, None).await.map(|_| ()) }));
    }
    for t in tasks {
        t.await.unwrap().unwrap_or_else(|e| panic!("concurrent open failed: {}", chain(&e)));
    }
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&data).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(data.join("lifeline.db")).unwrap().permissions().mode() & 0o777, 0o600);
}

/// Identical content recorded twice (two racing writers) is one version.
#[tokio::test]
async fn identical_content_is_one_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    let blob = format!("{:064x}", 7);
    let a = store.record_config_version("leaf", "sonic", &blob, 10, 1, false).await.unwrap();
    let b = store.record_config_version("leaf", "sonic", &blob, 10, 2, true).await.unwrap();
    assert_eq!((a.version, b.version), (1, 1));
    assert!(b.raw_sealed, "the sealed copy is added to the existing version");
    assert!(store.config_version("leaf", 1).await.unwrap().unwrap().raw_sealed);
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
