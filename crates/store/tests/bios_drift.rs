//! Each node's last BIOS drift on both backends: set, replaced, a failed read beside the last drift,
//! listed per device and for all, rows of devices gone forgotten.

use lifeline_store::Store;
use lifeline_test_utils::{TestDatabase, postgres_url};
use serde_json::json;

async fn suite(store: &Store) {
    assert!(store.bios_drifts(None).await.unwrap().is_empty());
    let d = json!([{"attribute": "SriovGlobalEnable", "want": "Enabled", "current": "Disabled", "pending": null}]);
    store.set_bios_drift("g5", Some("gpu-node"), 5, &d).await.unwrap();
    store.set_bios_drift("g1", Some("gpu-node"), 5, &json!([])).await.unwrap();
    let all = store.bios_drifts(None).await.unwrap();
    assert_eq!(all.iter().map(|r| r.device.as_str()).collect::<Vec<_>>(), ["g1", "g5"]);
    assert_eq!(all[1].drift, d);
    assert_eq!((all[1].checked, all[1].role.as_deref()), (5, Some("gpu-node")));
    // A failed read keeps the drift last read beside the error; a good one clears the error.
    store.set_bios_drift_error("g5", Some("gpu-node"), "BMC did not answer").await.unwrap();
    let g5 = store.bios_drifts(Some("g5")).await.unwrap();
    assert_eq!((g5[0].drift.clone(), g5[0].error.as_deref()), (d.clone(), Some("BMC did not answer")));
    store.set_bios_drift("g5", Some("gpu-node"), 5, &json!([])).await.unwrap();
    let g5 = store.bios_drifts(Some("g5")).await.unwrap();
    assert_eq!((g5[0].drift.clone(), g5[0].error.as_deref()), (json!([]), None));
    // A first read that fails: no drift known, the error.
    store.set_bios_drift_error("g9", None, "timed out").await.unwrap();
    assert_eq!(store.bios_drifts(Some("g9")).await.unwrap()[0].drift, json!([]));
    assert_eq!(store.retain_bios_drift(&["g1".into(), "g5".into()]).await.unwrap(), 1);
    assert_eq!(store.bios_drifts(None).await.unwrap().len(), 2);
}

#[tokio::test]
async fn sqlite_bios_drift() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    suite(&store).await;
}

#[tokio::test]
async fn postgres_bios_drift() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    suite(&store).await;
    store.close().await;
}
