//! The `bmc_discovery` and `bmc_redfish_paths` tables on SQLite and PostgreSQL: written, replaced, read
//! whole, deleted when empty.

use lifeline_store::{DiscoveryRow, Store};
use lifeline_test_utils::{TestDatabase, postgres_url};

fn row(device: &str, suite: Option<i64>, system: Option<&str>) -> DiscoveryRow {
    DiscoveryRow {
        device: device.into(),
        ipmi_suite: suite,
        redfish_url: system.map(|_| "https://127.10.0.1:443".into()),
        redfish_root: system.map(|_| r#"{"Systems":{"@odata.id":"/redfish/v1/Systems"}}"#.into()),
        redfish_system: system.map(Into::into),
    }
}

async fn suite(store: &Store) {
    assert!(store.bmc_discoveries().await.unwrap().is_empty());
    store.set_bmc_discovery(&row("n1", Some(17), None)).await.unwrap();
    store.set_bmc_discovery(&row("n2", None, Some("/redfish/v1/Systems/1"))).await.unwrap();
    store.set_bmc_discovery(&row("n1", Some(3), None)).await.unwrap();
    let mut all = store.bmc_discoveries().await.unwrap();
    all.sort_by(|a, b| a.device.cmp(&b.device));
    assert_eq!(all, vec![row("n1", Some(3), None), row("n2", None, Some("/redfish/v1/Systems/1"))]);
    store.set_bmc_discovery(&row("n1", None, None)).await.unwrap();
    let all = store.bmc_discoveries().await.unwrap();
    assert_eq!(all.iter().map(|r| r.device.as_str()).collect::<Vec<_>>(), ["n2"]);

    assert!(store.bmc_redfish_paths().await.unwrap().is_empty());
    let logs =
        r#"{"url":"https://127.10.0.1:443","logs":[{"@odata.id":"/redfish/v1/Managers/1/LogServices/SEL"}]}"#;
    store.set_bmc_redfish_paths("n2", Some(r#"{"chassis":["/redfish/v1/Chassis/1"]}"#)).await.unwrap();
    store.set_bmc_redfish_paths("n2", Some(logs)).await.unwrap();
    store.set_bmc_redfish_paths("n3", Some("{}")).await.unwrap();
    let mut all = store.bmc_redfish_paths().await.unwrap();
    all.sort();
    assert_eq!(all, [("n2".to_owned(), logs.to_owned()), ("n3".to_owned(), "{}".to_owned())]);
    store.set_bmc_redfish_paths("n3", None).await.unwrap();
    assert_eq!(store.bmc_redfish_paths().await.unwrap().len(), 1);
}

#[tokio::test]
async fn sqlite_discovery() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    suite(&store).await;
}

#[tokio::test]
async fn postgres_discovery() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    suite(&store).await;
}
