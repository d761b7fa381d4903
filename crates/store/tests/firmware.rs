//! The firmware rollout journal on both backends: begin once (a second begin is a resume and changes
//! nothing), wave and target states rewritten, read back in wave order.

use lifeline_store::{RolloutRow, Store};
use lifeline_test_utils::{TestDatabase, postgres_url};

async fn suite(store: &Store) {
    let r = RolloutRow {
        id: "fw-abc".into(),
        component: "bios".into(),
        version: "2.0.0".into(),
        plan: "{}".into(),
        state: "running".into(),
        actor: "tester".into(),
        detail: None,
        created_at: 0,
        updated_at: 0,
    };
    let targets = vec![("n2".to_owned(), 1), ("n1".to_owned(), 0), ("n3".to_owned(), 1)];
    assert!(store.firmware_rollout_begin(&r, &targets, 2).await.unwrap());
    assert!(!store.firmware_rollout_begin(&r, &[("n9".to_owned(), 0)], 5).await.unwrap(), "a resume");
    let got = store.firmware_rollout("fw-abc").await.unwrap().unwrap();
    assert_eq!((got.state.as_str(), got.version.as_str()), ("running", "2.0.0"));
    assert!(store.firmware_rollout("nope").await.unwrap().is_none());
    let t = store.firmware_targets("fw-abc").await.unwrap();
    let names: Vec<(&str, i64, &str)> =
        t.iter().map(|t| (t.target.as_str(), t.wave, t.state.as_str())).collect();
    assert_eq!(names, [("n1", 0, "pending"), ("n2", 1, "pending"), ("n3", 1, "pending")]);
    let mut n2 = t[1].clone();
    n2.state = "pushed".into();
    n2.task = Some("/redfish/v1/TaskService/Tasks/7".into());
    n2.before_version = Some("1.0.0".into());
    store.firmware_target_set(&n2).await.unwrap();
    store.firmware_wave_state("fw-abc", 1, "failed").await.unwrap();
    store.firmware_rollout_state("fw-abc", "failed", Some("n2: task Exception")).await.unwrap();
    let t = store.firmware_targets("fw-abc").await.unwrap();
    assert_eq!(t[1].task.as_deref(), Some("/redfish/v1/TaskService/Tasks/7"));
    assert_eq!(t[1].before_version.as_deref(), Some("1.0.0"));
    assert_eq!(
        store.firmware_waves("fw-abc").await.unwrap(),
        [(0, "pending".to_owned()), (1, "failed".to_owned())]
    );
    let got = store.firmware_rollout("fw-abc").await.unwrap().unwrap();
    assert_eq!((got.state.as_str(), got.detail.as_deref()), ("failed", Some("n2: task Exception")));
}

#[tokio::test]
async fn sqlite_firmware_rollouts() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    suite(&store).await;
}

#[tokio::test]
async fn postgres_firmware_rollouts() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    suite(&store).await;
}
