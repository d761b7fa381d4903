//! The session ledger on both backends: Redfish sessions one per owner and BMC (a newer one strikes the
//! older off), IPMI sessions each on their own beside them (a process holds several on one BMC), reclaimed
//! by one process only, forgotten one by one.

use lifeline_store::{BmcSessionRow, Store, ipmi_session_id, ipmi_session_uri};
use lifeline_test_utils::{TestDatabase, postgres_url};

fn row(bmc: &str, uri: &str, owner: &str) -> BmcSessionRow {
    BmcSessionRow {
        bmc: bmc.into(),
        session_uri: uri.into(),
        token: String::new(),
        owner: owner.into(),
        opened_at_ms: 1,
    }
}

fn uris(rows: &[BmcSessionRow]) -> Vec<&str> {
    let mut v: Vec<&str> = rows.iter().map(|r| r.session_uri.as_str()).collect();
    v.sort();
    v
}

async fn suite(store: &Store) {
    let (a, b) = (ipmi_session_uri(0x0200_0a04), ipmi_session_uri(0x0300_0b06));
    store.record_bmc_session(&row("n1", "/redfish/v1/SessionService/Sessions/1", "p1")).await.unwrap();
    store.record_bmc_session(&row("n1", &a, "p1")).await.unwrap();
    store.record_bmc_session(&row("n1", &b, "p1")).await.unwrap();
    store.record_bmc_session(&row("n2", &a, "p1")).await.unwrap();
    let all = store.bmc_sessions().await.unwrap();
    assert_eq!(all.len(), 4, "{all:#?}");
    // A newer Redfish session strikes off the owner's older Redfish one on that BMC, never its IPMI ones.
    store.record_bmc_session(&row("n1", "/redfish/v1/SessionService/Sessions/2", "p1")).await.unwrap();
    let n1: Vec<BmcSessionRow> =
        store.bmc_sessions().await.unwrap().into_iter().filter(|r| r.bmc == "n1").collect();
    assert_eq!(uris(&n1), vec!["/redfish/v1/SessionService/Sessions/2", a.as_str(), b.as_str()]);
    // Reclaimed by one process only.
    assert!(store.reclaim_bmc_session("n1", &a, "p1", "p2").await.unwrap());
    assert!(!store.reclaim_bmc_session("n1", &a, "p1", "p3").await.unwrap());
    store.forget_bmc_session("n1", &a).await.unwrap();
    let left = store.bmc_sessions().await.unwrap();
    assert_eq!(left.len(), 3, "{left:#?}");
    assert!(left.iter().all(|r| r.session_uri != a || r.bmc == "n2"));
    let ids: Vec<Option<u32>> = left.iter().map(|r| ipmi_session_id(&r.session_uri)).collect();
    assert!(ids.contains(&Some(0x0300_0b06)) && ids.contains(&Some(0x0200_0a04)) && ids.contains(&None));
}

#[test]
fn ipmi_session_uris_read_back_and_redfish_paths_are_not_ipmi() {
    for id in [0, 1, 0x0200_0a04, 0xdead_beef, u32::MAX] {
        assert_eq!(ipmi_session_id(&ipmi_session_uri(id)), Some(id), "{id:#x}");
    }
    assert_eq!(ipmi_session_uri(0x0200_0a04), "ipmi:0x02000a04");
    for not in ["/redfish/v1/SessionService/Sessions/1", "ipmi:0x123", "ipmi:0x0200_a04", "ipmi:02000a04", ""]
    {
        assert_eq!(ipmi_session_id(not), None, "{not}");
    }
}

#[tokio::test]
async fn sqlite_bmc_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    suite(&store).await;
}

#[tokio::test]
async fn postgres_bmc_sessions() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    suite(&store).await;
    store.close().await;
}
