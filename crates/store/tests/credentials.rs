//! Sealed BMC credential generations and deduplicated events, on both backends.

use lifeline_store::{NewEvent, Store};
use lifeline_test_utils::{TestDatabase, postgres_url};
use serde_json::json;

async fn suite(store: &Store) {
    assert!(store.active_bmc_credential("bmc", "n1").await.unwrap().is_none());
    let first = store.insert_bmc_credential("bmc", "n1", "admin", "active", "aa", None).await.unwrap();
    let pending =
        store.insert_bmc_credential("bmc", "n1", "admin", "pending", "bb", Some("r1")).await.unwrap();
    // Another device's generations are separate.
    store.insert_bmc_credential("bmc", "n2", "admin", "active", "cc", None).await.unwrap();
    let rows = store.bmc_credentials("bmc", "n1").await.unwrap();
    assert_eq!(rows.iter().map(|r| r.state.as_str()).collect::<Vec<_>>(), ["pending", "active"]);
    assert_eq!(rows[0].request_id.as_deref(), Some("r1"));
    assert_eq!(store.active_bmc_credential("bmc", "n1").await.unwrap().unwrap().id, first);

    store.activate_bmc_credential(pending, "login proven").await.unwrap();
    let rows = store.bmc_credentials("bmc", "n1").await.unwrap();
    assert_eq!((rows[0].state.as_str(), rows[0].sealed.as_str()), ("active", "bb"));
    assert_eq!(rows[1].state, "retired");
    assert_eq!(store.active_bmc_credential("bmc", "n2").await.unwrap().unwrap().sealed, "cc");

    let failed = store.insert_bmc_credential("bmc", "n1", "admin", "pending", "dd", None).await.unwrap();
    store.set_bmc_credential_state(failed, "failed", "never set").await.unwrap();
    assert_eq!(store.active_bmc_credential("bmc", "n1").await.unwrap().unwrap().id, pending);
    assert_eq!(store.all_bmc_credentials().await.unwrap().len(), 4);

    let e = NewEvent {
        device: Some("n1".into()),
        source: "redfish-event".into(),
        severity: "warning".into(),
        message: "GPU6 XID 79".into(),
        data: json!({}),
    };
    let id = store.record_event_once(&e, "sel:7").await.unwrap();
    assert!(id.is_some());
    assert_eq!(store.record_event_once(&e, "sel:7").await.unwrap(), None, "a duplicate is dropped");
    let other = NewEvent { device: Some("n2".into()), ..e.clone() };
    assert!(store.record_event_once(&other, "sel:7").await.unwrap().is_some(), "per device");
    // Events without a key are never deduplicated.
    store.record_event(&e).await.unwrap();
    store.record_event(&e).await.unwrap();
    assert_eq!(store.events_after(0, 100).await.unwrap().len(), 4);
}

#[tokio::test]
async fn sqlite_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    suite(&store).await;
}

#[tokio::test]
async fn postgres_credentials() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    suite(&store).await;
    store.close().await;
}
