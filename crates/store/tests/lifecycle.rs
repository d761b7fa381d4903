//! The store's own lifecycle on both backends: upgrading a database written by the previous release's
//! schema without losing its rows, refusing a database a newer release migrated, and (SQLite) an online
//! backup taken while writers write, restored and read back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lifeline_store::{AuditEntry, Backend, MigrationState, Store, StoreError};
use lifeline_test_utils::{TestDatabase, postgres_url};
use serde_json::json;
use sqlx::Connection;

/// The last migration of the previous release: its schema is what an upgrade starts from. Later
/// migrations (whatever their number) are this binary's, and must carry the rows over.
const PREVIOUS_RELEASE: i64 = 5;

/// Runs `sql` on its own connection: the previous release's writes, in its own schema, not through today's
/// store API (which may write columns that schema does not have).
async fn exec(url: &str, sql: &str) {
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(url).await.expect("connect");
    sqlx::raw_sql(sql).execute(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    let _ = conn.close().await;
}

const OLD_ROWS: &str = "
INSERT INTO devices (name, role, site, rack, spec_json, synced_at)
    VALUES ('gpu-node-01', 'gpu-node', 'dc1', 'r01', '{\"name\":\"gpu-node-01\"}', 1700000000000);
INSERT INTO audit_log (at, actor, action, target, outcome, detail_json, request_id)
    VALUES (1700000000001, 'cli:ann', 'power.cycle', 'gpu-node-01', 'ok', '{\"confirmed\":\"off-then-on\"}', 'r-1');
INSERT INTO audit_log (at, actor, action, target, outcome, detail_json, request_id)
    VALUES (1700000000002, 'cli:ann', 'backup.run', 'leaf-01', 'failed', '{\"why\":\"it''s down\"}', NULL);
INSERT INTO pins (kind, subject, fingerprint, pinned_at)
    VALUES ('tls', 'gpu-node-01', 'sha256:ab', 1700000000003);
INSERT INTO runbook_runs (id, runbook, target, actor, vars_json, definition, digest, state, next_step,
                          created_at, updated_at)
    VALUES ('run-1', 'gpu-node-recover', 'gpu-node-01', 'cli:ann', '{}', 'name = \"x\"', 'd', 'succeeded', 3,
            1700000000004, 1700000000005);
";

async fn upgrade_keeps_rows(url: &str, backend: Backend) {
    // The previous release's schema, and rows it wrote.
    let old = Store::open_url_unmigrated(url).await.unwrap();
    assert_eq!(old.backend(), backend);
    let empty = old.schema_status().await.unwrap();
    assert_eq!(empty.database_version, 0);
    assert!(empty.migrations.iter().all(|m| m.state == MigrationState::Pending), "{empty:?}");
    assert!(
        empty.binary_version > PREVIOUS_RELEASE,
        "this binary carries migrations past the previous release"
    );
    let applied = old.migrate_to(PREVIOUS_RELEASE).await.unwrap();
    assert_eq!(applied, (1..=PREVIOUS_RELEASE).collect::<Vec<_>>());
    old.close().await;
    exec(url, OLD_ROWS).await;

    // The new binary looks first: pending are exactly the migrations after the previous release.
    let store = Store::open_url_unmigrated(url).await.unwrap();
    let before = store.schema_status().await.unwrap();
    assert_eq!(before.database_version, PREVIOUS_RELEASE);
    let pending: Vec<i64> = before.pending().map(|m| m.version).collect();
    let expected: Vec<i64> = ((PREVIOUS_RELEASE + 1)..=before.binary_version)
        .filter(|v| before.migrations.iter().any(|m| m.version == *v))
        .collect();
    assert_eq!(pending, expected);
    assert!(!before.is_current());

    // Then migrates; a second run has nothing to do.
    assert_eq!(store.migrate().await.unwrap(), expected);
    assert!(store.migrate().await.unwrap().is_empty());
    let after = store.schema_status().await.unwrap();
    assert!(after.is_current(), "{after:?}");
    assert_eq!(after.database_version, after.binary_version);
    store.close().await;

    // The rows survived and today's API reads them.
    let store = Store::open_url(url).await.unwrap();
    let devices = store.devices().await.unwrap();
    assert_eq!(devices.len(), 1);
    assert_eq!((devices[0].name.as_str(), devices[0].rack.as_str()), ("gpu-node-01", "r01"));
    let audit = store.audit_log(None, 100).await.unwrap();
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[0].entry.action, "backup.run");
    assert_eq!(audit[0].entry.detail["why"], "it's down");
    assert_eq!(audit[1].entry.detail["confirmed"], "off-then-on");
    assert_eq!(audit[1].entry.request_id.as_deref(), Some("r-1"));
    let run = store.run("run-1").await.unwrap().expect("the run survived");
    assert_eq!((run.state.as_str(), run.next_step), ("succeeded", 3));
    // And the upgraded database takes new writes.
    store
        .audit(&AuditEntry {
            actor: "cli:bob".into(),
            action: "db.migrate".into(),
            target: "store".into(),
            outcome: "ok".into(),
            detail: json!({}),
            request_id: None,
        })
        .await
        .unwrap();
    assert_eq!(store.audit_log(None, 100).await.unwrap().len(), 3);
    store.close().await;
}

/// A migration this binary does not carry, as a newer release would have recorded it.
async fn newer_release_is_refused(url: &str, backend: Backend) {
    let store = Store::open_url(url).await.unwrap();
    store.close().await;
    let checksum = match backend {
        Backend::Sqlite => "X'00'",
        Backend::Postgres => "'\\x00'::bytea",
    };
    exec(
        url,
        &format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (99999, 'from a newer release', TRUE, {checksum}, 0)"
        ),
    )
    .await;
    let e = Store::open_url(url).await.unwrap_err();
    assert!(matches!(&e, StoreError::SchemaNewer { unknown, .. } if unknown == &[99999]), "{e:?}");
    assert!(e.to_string().contains("newer Lifeline"), "{e}");
    let store = Store::open_url_unmigrated(url).await.unwrap();
    let status = store.schema_status().await.unwrap();
    assert_eq!(status.unknown().map(|m| m.version).collect::<Vec<_>>(), [99999]);
    assert_eq!(status.database_version, 99999);
    assert!(matches!(store.migrate().await, Err(StoreError::SchemaNewer { .. })));
    store.close().await;
}

fn sqlite_url(dir: &std::path::Path) -> String {
    format!("sqlite://{}", dir.join("lifeline.db").display())
}

#[tokio::test]
async fn sqlite_upgrade_from_previous_release_keeps_rows() {
    let dir = tempfile::tempdir().unwrap();
    upgrade_keeps_rows(&sqlite_url(dir.path()), Backend::Sqlite).await;
}

#[tokio::test]
async fn postgres_upgrade_from_previous_release_keeps_rows() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    upgrade_keeps_rows(&db.url, Backend::Postgres).await;
}

#[tokio::test]
async fn sqlite_database_from_a_newer_release_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    newer_release_is_refused(&sqlite_url(dir.path()), Backend::Sqlite).await;
}

#[tokio::test]
async fn postgres_database_from_a_newer_release_is_refused() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    newer_release_is_refused(&db.url, Backend::Postgres).await;
}

#[tokio::test]
async fn postgres_backup_points_to_pg_dump() {
    let Some(admin) = postgres_url() else { return };
    let db = TestDatabase::create(&admin).await;
    let store = Store::open_url(&db.url).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let e = store.backup_to(&dir.path().join("x.db")).await.unwrap_err();
    assert!(e.to_string().contains("pg_dump"), "{e}");
    store.close().await;
}

fn entry(writer: usize, i: usize) -> AuditEntry {
    AuditEntry {
        actor: format!("writer:{writer}"),
        action: "test.write".into(),
        target: format!("gpu-node-{i:05}"),
        outcome: "ok".into(),
        detail: json!({ "i": i, "pad": "x".repeat(200) }),
        request_id: Some(format!("w{writer}-{i}")),
    }
}

/// Backups taken while four writers append audit rows: each copy is a consistent snapshot (its rows are
/// exactly ids 1..=n, no hole, no torn row), passes SQLite's check, and restores into a working store.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_backup_while_writing_restores() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live");
    let store = Store::open(&live, None).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (store, stop) = (store.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                store.audit(&entry(w, i)).await.unwrap();
                i += 1;
            }
            i
        }));
    }
    let mut copies = Vec::new();
    for n in 0..3 {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let file = dir.path().join(format!("backup-{n}.db"));
        let summary = store.backup_to(&file).await.unwrap();
        assert_eq!(summary.file, file);
        assert!(summary.bytes > 0 && summary.schema_version > 0, "{summary:?}");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        copies.push(summary);
    }
    stop.store(true, Ordering::Relaxed);
    let mut written = 0;
    for w in writers {
        written += w.await.unwrap();
    }
    // An existing file is never overwritten.
    let e = store.backup_to(&copies[0].file).await.unwrap_err();
    assert!(matches!(e, StoreError::BackupExists { .. }), "{e:?}");
    let last = store.backup_to(&dir.path().join("after.db")).await.unwrap();
    assert_eq!(last.audit_rows as usize, written, "a backup after the writers stopped has every row");
    store.close().await;
    eprintln!(
        "backups while writing: {:?} audit rows of {written} written",
        copies.iter().map(|c| c.audit_rows).collect::<Vec<_>>()
    );
    assert!(copies.windows(2).all(|w| w[0].audit_rows <= w[1].audit_rows));
    assert!(copies[0].audit_rows > 0, "the writers wrote before the first backup");

    // Restore: the copy becomes `lifeline.db` of a fresh data directory (no -wal, no -shm beside it).
    for (n, c) in copies.iter().chain([&last]).enumerate() {
        let restored = dir.path().join(format!("restored-{n}"));
        std::fs::create_dir(&restored).unwrap();
        std::fs::copy(&c.file, restored.join("lifeline.db")).unwrap();
        let store = Store::open(&restored, None).await.unwrap();
        assert!(store.schema_status().await.unwrap().is_current());
        let rows = store.audit_log(None, i64::MAX).await.unwrap();
        assert_eq!(rows.len() as i64, c.audit_rows);
        // A snapshot, not a torn copy: ids 1..=n without a hole, each row whole.
        let mut ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (1..=c.audit_rows).collect::<Vec<_>>());
        assert!(rows.iter().all(|r| r.entry.detail["pad"].as_str().map(str::len) == Some(200)));
        // And it takes writes again.
        store.audit(&entry(9, 0)).await.unwrap();
        store.close().await;
    }
}
