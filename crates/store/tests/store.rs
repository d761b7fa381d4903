//! The same store suite on SQLite and on PostgreSQL: one API, two backends, identical behaviour.

use lifeline_store::{AuditEntry, Backend, DeviceRecord, NewEvent, PinKind, Store};
use lifeline_test_utils::{TestDatabase, postgres_url};
use serde_json::json;

fn device(name: &str, rack: &str) -> DeviceRecord {
    DeviceRecord {
        name: name.into(),
        role: "gpu-node".into(),
        site: "dc1".into(),
        rack: rack.into(),
        fabric: None,
        platform: None,
        bmc_address: Some("127.10.1.1".into()),
        bmc_protocol: Some("redfish".into()),
        mgmt_address: None,
        spec_json: json!({ "name": name, "rack": rack }),
    }
}

async fn suite(store: &Store) {
    // Devices: add, re-sync unchanged, change one, remove one.
    let s = store.sync_devices(&[device("a", "r1"), device("b", "r1")]).await.unwrap();
    assert_eq!((s.added, s.updated, s.unchanged, s.removed), (2, 0, 0, 0));
    let s = store.sync_devices(&[device("a", "r1"), device("b", "r1")]).await.unwrap();
    assert_eq!((s.added, s.unchanged), (0, 2));
    let s = store.sync_devices(&[device("a", "r2")]).await.unwrap();
    assert_eq!((s.updated, s.removed), (1, 1));
    let devs = store.devices().await.unwrap();
    assert_eq!(devs.len(), 1);
    assert_eq!(devs[0].rack, "r2");
    assert_eq!(devs[0].spec_json, json!({ "name": "a", "rack": "r2" }));
    // A removed device that comes back is un-removed.
    let s = store.sync_devices(&[device("a", "r2"), device("b", "r1")]).await.unwrap();
    assert_eq!((s.added, s.updated, s.unchanged), (0, 1, 1));

    // Audit rows are kept in order, newest first when read, filterable by target.
    for (i, target) in ["a", "b", "a"].iter().enumerate() {
        let id = store
            .audit(&AuditEntry {
                actor: "cli:test".into(),
                action: "power.cycle".into(),
                target: (*target).into(),
                outcome: if i == 2 { "failed".into() } else { "ok".into() },
                detail: json!({ "i": i, "quote": "it's \"quoted\"?" }),
                request_id: Some(format!("req-{i}")),
            })
            .await
            .unwrap();
        assert!(id > 0);
    }
    let rows = store.audit_log(Some("a"), 10).await.unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].entry.outcome, "failed");
    assert_eq!(rows[0].entry.detail["quote"], "it's \"quoted\"?");
    assert!(rows[0].id > rows[1].id);
    assert_eq!(store.audit_log(None, 2).await.unwrap().len(), 2);

    // Observations: the newest wins.
    store.observe("a", "power", &json!("off")).await.unwrap();
    store.observe("a", "power", &json!("on")).await.unwrap();
    assert_eq!(store.latest_observation("a", "power").await.unwrap().unwrap().value, json!("on"));
    assert!(store.latest_observation("a", "health").await.unwrap().is_none());

    // Events: a live view polls with the last id it saw.
    let e1 = store
        .record_event(&NewEvent {
            device: Some("a".into()),
            source: "sel".into(),
            severity: "critical".into(),
            message: "GPU3 uncorrectable ECC".into(),
            data: json!({}),
        })
        .await
        .unwrap();
    let e2 = store
        .record_event(&NewEvent {
            device: None,
            source: "lifeline".into(),
            severity: "info".into(),
            message: "sweep done".into(),
            data: json!({ "n": 17 }),
        })
        .await
        .unwrap();
    let after = store.events_after(e1, 10).await.unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].id, e2);
    assert_eq!(after[0].event.data["n"], 17);

    // Pins: set, read, replace.
    let fp1: lifeline_types::Fingerprint = "11".repeat(32).parse().unwrap();
    let fp2: lifeline_types::Fingerprint = "22".repeat(32).parse().unwrap();
    assert_eq!(store.pin(PinKind::Tls, "a").await.unwrap(), None);
    store.set_pin(PinKind::Tls, "a", fp1).await.unwrap();
    store.set_pin(PinKind::SshHostKey, "a", fp2).await.unwrap();
    assert_eq!(store.pin(PinKind::Tls, "a").await.unwrap(), Some(fp1));
    store.set_pin(PinKind::Tls, "a", fp2).await.unwrap();
    assert_eq!(store.pin(PinKind::Tls, "a").await.unwrap(), Some(fp2));
}

#[tokio::test]
async fn sqlite_suite() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("nested/data");
    let store = Store::open(&data, None).await.unwrap();
    assert_eq!(store.backend(), Backend::Sqlite);
    assert!(data.join("lifeline.db").exists(), "created on first use");
    suite(&store).await;
    store.close().await;
    // Reopening runs migrations again (a no-op) and keeps the data; the file is in WAL mode.
    let store = Store::open(&data, None).await.unwrap();
    assert_eq!(store.devices().await.unwrap().len(), 2);
    store.close().await;
    let header = std::fs::read(data.join("lifeline.db")).unwrap();
    assert_eq!(header[18], 2, "WAL mode is recorded in the database header (byte 18 = 2)");
}

#[tokio::test]
async fn postgres_suite() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    assert_eq!(store.backend(), Backend::Postgres);
    assert!(!store.location().contains("secret"));
    suite(&store).await;
    store.close().await;
    let store = Store::open_url(&db.url).await.unwrap();
    assert_eq!(store.devices().await.unwrap().len(), 2);
    store.close().await;
}

#[tokio::test]
async fn bad_urls_are_named() {
    let err = Store::open_url("mysql://x").await.unwrap_err();
    assert!(err.to_string().contains("mysql://x"), "{err}");
    let err = Store::open_url("postgres://nobody:secret@127.0.0.1:1/none").await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("127.0.0.1:1") && !text.contains("secret"), "{text}");
}

async fn records_suite(store: &Store) {
    assert_eq!(store.remembered_protocol("n1").await.unwrap(), None);
    store.remember_protocol("n1", "ipmi").await.unwrap();
    store.remember_protocol("n1", "redfish").await.unwrap();
    assert_eq!(store.remembered_protocol("n1").await.unwrap().as_deref(), Some("redfish"));
    store.forget_protocol("n1").await.unwrap();
    assert_eq!(store.remembered_protocol("n1").await.unwrap(), None);

    // Concurrent writers get distinct, consecutive version numbers.
    let mut tasks = Vec::new();
    for i in 0..8 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            s.record_config_version("leaf1", "sonic", &format!("{i:064x}"), 100 + i, 1_000 + i, i % 2 == 0)
                .await
                .unwrap()
        }));
    }
    let mut versions: Vec<i64> = Vec::new();
    for t in tasks {
        versions.push(t.await.unwrap().version);
    }
    versions.sort();
    assert_eq!(versions, (1..=8).collect::<Vec<_>>());
    let rows = store.config_versions("leaf1").await.unwrap();
    assert_eq!(rows.len(), 8);
    assert_eq!(rows[0].version, 1);
    assert_eq!(store.config_devices().await.unwrap(), ["leaf1"]);

    let mut row = lifeline_store::ConsoleLogRow {
        console: "gpu-node-01".into(),
        seq: 1,
        path: "/data/console/gpu-node-01/1.log".into(),
        first_ms: 5,
        last_ms: None,
        bytes: 0,
        closed: false,
    };
    store.console_log_upsert(&row).await.unwrap();
    row.last_ms = Some(9);
    row.bytes = 4096;
    row.closed = true;
    store.console_log_upsert(&row).await.unwrap();
    let mut row2 = row.clone();
    row2.seq = 2;
    store.console_log_upsert(&row2).await.unwrap();
    assert_eq!(store.console_logs("gpu-node-01").await.unwrap(), vec![row.clone(), row2.clone()]);
    store.console_log_removed("gpu-node-01", 1).await.unwrap();
    assert_eq!(store.console_logs("gpu-node-01").await.unwrap(), vec![row2]);
}

#[tokio::test]
async fn sqlite_records() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), None).await.unwrap();
    records_suite(&store).await;
    store.close().await;
}

#[tokio::test]
async fn postgres_records() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    records_suite(&store).await;
    store.close().await;
}

/// Inventory syncs that read then write, from two handles on one SQLite file at once (the demo's server and
/// its sweeps; two CLI processes): none may fail with "database is locked" (`SQLITE_BUSY_SNAPSHOT`, which a
/// deferred transaction gets at its first write when another connection wrote after its read).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_read_then_write_syncs_on_sqlite_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let a = Store::open(dir.path(), None).await.unwrap();
    let b = Store::open(dir.path(), None).await.unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..8 {
        let store = if t % 2 == 0 { a.clone() } else { b.clone() };
        tasks.spawn(async move {
            for i in 0..15 {
                let rack = format!("r{t}-{i}");
                store.sync_devices(&[device("a", &rack), device(&format!("d{t}"), &rack)]).await?;
            }
            Ok::<_, lifeline_store::StoreError>(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap().expect("a concurrent sync failed");
    }
}
