//! The fleet list's queries on both backends: the newest observation of every device in one query, and
//! pruning old ones without losing any device's newest.

use lifeline_store::Store;
use lifeline_test_utils::{TestDatabase, postgres_url};
use serde_json::json;

async fn suite(store: &Store) {
    for i in 0..3 {
        for d in ["a", "b"] {
            store.observe(d, "sweep", &json!({ "n": i, "d": d })).await.unwrap();
        }
    }
    store.observe("c", "sweep", &json!({ "n": 0 })).await.unwrap();
    store.observe("a", "health", &json!({ "health": "ok" })).await.unwrap();
    let mut latest = store.latest_observations("sweep").await.unwrap();
    latest.sort_by(|x, y| x.device.cmp(&y.device));
    let got: Vec<(&str, i64)> =
        latest.iter().map(|o| (o.device.as_str(), o.value["n"].as_i64().unwrap())).collect();
    assert_eq!(got, [("a", 2), ("b", 2), ("c", 0)]);
    for o in &latest {
        let one = store.latest_observation(&o.device, "sweep").await.unwrap().unwrap();
        assert_eq!(one.value, o.value, "the same answer as the per-device query");
    }

    // One series since a time, oldest first; other devices and kinds are not in it.
    let all = store.observations_since("a", "sweep", 0).await.unwrap();
    assert_eq!(all.iter().map(|o| o.value["n"].as_i64().unwrap()).collect::<Vec<_>>(), [0, 1, 2]);
    let after = all[2].observed_at_ms + 1;
    assert!(store.observations_since("a", "sweep", after).await.unwrap().is_empty());
    assert_eq!(store.observations_since("a", "health", 0).await.unwrap().len(), 1);
    assert!(store.observations_since("z", "sweep", 0).await.unwrap().is_empty());

    // Everything is "old": only each device's newest survives, and other kinds are untouched.
    let gone = store.prune_observations("sweep", i64::MAX).await.unwrap();
    assert_eq!(gone, 4);
    assert_eq!(store.latest_observations("sweep").await.unwrap().len(), 3);
    assert_eq!(store.prune_observations("sweep", i64::MAX).await.unwrap(), 0);
    assert!(store.latest_observation("a", "health").await.unwrap().is_some());
}

#[tokio::test]
async fn sqlite_observations() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    suite(&store).await;
}

#[tokio::test]
async fn postgres_observations() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    suite(&store).await;
    store.close().await;
}
