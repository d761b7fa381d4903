//! Per-log high-water marks on both backends: set, moved, listed per device and for all.

use lifeline_store::Store;
use lifeline_test_utils::{TestDatabase, postgres_url};

async fn suite(store: &Store) {
    assert!(store.log_marks(None).await.unwrap().is_empty());
    let iml = "/redfish/v1/Systems/1/LogServices/IML".to_owned();
    let iel = "/redfish/v1/Managers/1/LogServices/IEL".to_owned();
    store
        .set_log_marks(
            "n1",
            &[(iml.clone(), "143".into(), Some(1_600_000_000_000)), (iel.clone(), "218".into(), None)],
        )
        .await
        .unwrap();
    store.set_log_marks("n2", &[("SEL".into(), "7".into(), Some(5))]).await.unwrap();
    // The IML moves on; the IEL keeps its mark.
    store.set_log_marks("n1", &[(iml.clone(), "145".into(), Some(1_700_000_000_000))]).await.unwrap();
    let n1 = store.log_marks(Some("n1")).await.unwrap();
    let got: Vec<(&str, &str, Option<i64>)> =
        n1.iter().map(|m| (m.log.as_str(), m.entry_id.as_str(), m.created_ms)).collect();
    assert_eq!(got, [(iel.as_str(), "218", None), (iml.as_str(), "145", Some(1_700_000_000_000))]);
    assert!(n1.iter().all(|m| m.device == "n1" && m.read_at_ms > 0));
    assert_eq!(store.log_marks(None).await.unwrap().len(), 3);
}

#[tokio::test]
async fn sqlite_log_marks() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    suite(&store).await;
}

#[tokio::test]
async fn postgres_log_marks() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    suite(&store).await;
    store.close().await;
}
