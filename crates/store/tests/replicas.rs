//! Replica membership and work ownership on both backends: one claimer of a unit of work wins, a done unit
//! is never claimed again (each backup slot runs once), an expired claim is taken over with a higher fence
//! and its old holder can neither renew nor finish it, concurrent orphan scans split the orphans, and a
//! config version recorded under a lost lease is refused.

use std::collections::BTreeSet;

use lifeline_store::{LeaseAttempt, Store, StoreError, WorkClaim};
use lifeline_test_utils::{TestDatabase, postgres_url};
use serde_json::json;

async fn work_suite(store: &Store) {
    // 16 replicas claim one slot at once: exactly one wins.
    let mut tasks = Vec::new();
    for i in 0..16 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                match s.claim_work("slot:j@1000", &format!("r{i}"), 60_000).await {
                    Ok(c) => return c,
                    Err(_) => tokio::task::yield_now().await,
                }
            }
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        if let WorkClaim::Claimed { work, previous } = t.await.unwrap() {
            assert!(previous.is_none());
            winners.push(work);
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let w = winners.remove(0);
    assert_eq!(w.fence, 1);
    assert!(matches!(store.claim_work("slot:j@1000", "other", 60_000).await.unwrap(), WorkClaim::Held(_)));
    assert!(store.renew_work("slot:j@1000", &w.holder, 1, 60_000).await.unwrap());
    assert!(!store.renew_work("slot:j@1000", "other", 1, 60_000).await.unwrap());
    assert!(!store.finish_work("slot:j@1000", "other", 1, "ok").await.unwrap(), "a non-holder finished");
    assert!(store.finish_work("slot:j@1000", &w.holder, 1, "ok").await.unwrap());
    assert!(!store.finish_work("slot:j@1000", &w.holder, 1, "ok").await.unwrap(), "finished twice");
    // Done: never claimable again, even long after its claim expired.
    assert!(matches!(store.claim_work("slot:j@1000", "late", -1).await.unwrap(), WorkClaim::Done(_)));
    assert!(!store.renew_work("slot:j@1000", &w.holder, 1, 60_000).await.unwrap());

    // Expiry: a claim with a negative ttl is taken over; the paused holder is fenced out.
    let WorkClaim::Claimed { work: a, .. } = store.claim_work("console:n1", "paused", -1).await.unwrap()
    else {
        panic!("free work not claimed")
    };
    let WorkClaim::Claimed { work: b, previous } =
        store.claim_work("console:n1", "alive", 60_000).await.unwrap()
    else {
        panic!("expired work not taken over")
    };
    assert_eq!(b.fence, a.fence + 1);
    assert_eq!(previous.map(|p| p.holder), Some("paused".into()));
    assert!(!store.renew_work("console:n1", "paused", a.fence, 60_000).await.unwrap());
    assert!(!store.finish_work("console:n1", "paused", a.fence, "ok").await.unwrap());
    assert!(!store.release_work("console:n1", "paused", a.fence).await.unwrap());
    assert!(store.release_work("console:n1", "alive", b.fence).await.unwrap());
    assert!(store.work("console:n1").await.unwrap().is_none());

    // A dead holder's claim taken over by fence: only once.
    let WorkClaim::Claimed { work: d, .. } = store.claim_work("run:7", "dead", 60_000).await.unwrap() else {
        panic!()
    };
    let t = store.take_over_work("run:7", d.fence, "heir", 60_000).await.unwrap().expect("taken over");
    assert_eq!((t.holder.as_str(), t.fence), ("heir", d.fence + 1));
    assert!(store.take_over_work("run:7", d.fence, "second", 60_000).await.unwrap().is_none());

    // 40 orphans, two scanners at once: each orphan goes to exactly one of them.
    for i in 0..40 {
        assert!(matches!(
            store.claim_work(&format!("slot:o@{i:03}"), "gone", -1).await.unwrap(),
            WorkClaim::Claimed { .. }
        ));
    }
    let (s1, s2) = (store.clone(), store.clone());
    let (x, y) = tokio::join!(
        async move { s1.take_orphaned_work("slot:o@", "x", 60_000, 100).await.unwrap() },
        async move { s2.take_orphaned_work("slot:o@", "y", 60_000, 100).await.unwrap() },
    );
    let keys: BTreeSet<String> = x.iter().chain(&y).map(|(n, _)| n.key.clone()).collect();
    assert_eq!(keys.len(), x.len() + y.len(), "an orphan went to both scanners");
    assert_eq!(keys.len(), 40);
    assert!(x.iter().chain(&y).all(|(n, o)| o.holder == "gone" && n.fence == o.fence + 1));
    assert_eq!(store.work_with_prefix("slot:o@").await.unwrap().len(), 40);
    assert_eq!(store.work_with_prefix("slot:").await.unwrap().len(), 41);
    assert_eq!(store.prune_done_work("slot:", lifeline_store::now_ms() + 1).await.unwrap(), 1);

    // Renewing all of a holder's claims under a prefix at once: its own, unfinished ones only; a claim
    // taken over after expiring is missing from the answer (lost).
    for (key, holder, ttl) in [
        ("events:a", "r1", -1),
        ("events:b", "r1", 60_000),
        ("events:c", "r2", 60_000),
        ("other:a", "r1", 60_000),
    ] {
        assert!(matches!(store.claim_work(key, holder, ttl).await.unwrap(), WorkClaim::Claimed { .. }));
    }
    let held = store.renew_held_work("r1", "events:", 60_000).await.unwrap();
    let mut keys: Vec<&str> = held.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort();
    assert_eq!(keys, ["events:a", "events:b"], "{held:?}");
    assert!(
        matches!(store.claim_work("events:a", "r2", 60_000).await.unwrap(), WorkClaim::Held(_)),
        "renewed"
    );
    let a = store.work("events:a").await.unwrap().unwrap();
    assert!(store.release_work("events:a", "r1", a.fence).await.unwrap());
    assert!(matches!(store.claim_work("events:a", "r2", 60_000).await.unwrap(), WorkClaim::Claimed { .. }));
    let held = store.renew_held_work("r1", "events:", 60_000).await.unwrap();
    assert_eq!(held.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["events:b"]);

    // A config version recorded under a lease: only while that lease is still the holder's.
    let LeaseAttempt::Acquired { lease: l1, .. } =
        store.try_lease("leaf", "paused", "r1", "backup.run", -1).await.unwrap()
    else {
        panic!("free lease not taken")
    };
    let blob = "a".repeat(64);
    let err = store
        .record_config_version_fenced("leaf", "sonic", &blob, 1, 1, false, Some(("leaf", "paused", l1.fence)))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Fenced { .. }), "an expired lease wrote: {err}");
    let LeaseAttempt::Acquired { lease: l2, .. } =
        store.try_lease("leaf", "alive", "r2", "backup.run", 60_000).await.unwrap()
    else {
        panic!("expired lease not taken over")
    };
    let v = store
        .record_config_version_fenced("leaf", "sonic", &blob, 1, 1, false, Some(("leaf", "alive", l2.fence)))
        .await
        .unwrap();
    assert_eq!(v.version, 1);
    let blob2 = "b".repeat(64);
    assert!(
        store
            .record_config_version_fenced(
                "leaf",
                "sonic",
                &blob2,
                1,
                2,
                false,
                Some(("leaf", "paused", l1.fence))
            )
            .await
            .is_err(),
        "the old holder wrote after losing the lease"
    );
    assert_eq!(store.config_versions("leaf").await.unwrap().len(), 1);

    // Membership: heartbeats, expiry, leave.
    store.replica_heartbeat("a", &json!({"listen": "x"}), 60_000).await.unwrap();
    store.replica_heartbeat("b", &json!({}), -1).await.unwrap();
    store.replica_heartbeat("a", &json!({"listen": "y"}), 60_000).await.unwrap();
    let all = store.replicas().await.unwrap();
    assert_eq!(all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(all[0].info["listen"], "y");
    assert_eq!(store.replicas_prune(lifeline_store::now_ms()).await.unwrap(), 1);
    store.replica_leave("a").await.unwrap();
    assert!(store.replicas().await.unwrap().is_empty());

    // Schedule marks: the first mark stays, advance never goes back.
    store.schedule_init("job", 100).await.unwrap();
    store.schedule_init("job", 200).await.unwrap();
    assert_eq!(store.schedule_last("job").await.unwrap(), Some(100));
    store.schedule_advance("job", 300).await.unwrap();
    store.schedule_advance("job", 250).await.unwrap();
    assert_eq!(store.schedule_last("job").await.unwrap(), Some(300));
}

#[tokio::test]
async fn sqlite_replica_work() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    work_suite(&store).await;
}

#[tokio::test]
async fn postgres_replica_work() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    work_suite(&store).await;
    store.close().await;
}
