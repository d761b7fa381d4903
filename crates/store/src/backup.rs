//! A consistent copy of a live SQLite store (`lifeline db backup FILE`), taken while the server writes.
//!
//! Why `VACUUM INTO` and not a file copy: copying `lifeline.db` while the server runs misses what sits in
//! the `-wal` file and can tear a page mid-write; `VACUUM INTO` reads one snapshot through SQLite's own
//! locking (writers go on meanwhile) and writes a compact, self-contained database. PostgreSQL is backed up
//! with its own tool (`pg_dump`), documented in `deploy/README.md`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use sqlx::{ConnectOptions, Connection};

use crate::error::{QueryContext, StoreError};
use crate::open::{Backend, Store};

/// What `lifeline db backup` wrote, checked by reading the copy back.
#[derive(Debug, Clone, Serialize)]
pub struct BackupSummary {
    pub file: PathBuf,
    pub bytes: u64,
    /// The newest migration in the copy.
    pub schema_version: i64,
    /// Audit rows in the copy (a restore is checked against this).
    pub audit_rows: i64,
    pub took_ms: u64,
}

impl Store {
    /// Writes a consistent copy of this SQLite store to `file` (which must not exist or be empty), 0600,
    /// and checks it (`PRAGMA quick_check`).
    pub async fn backup_to(&self, file: &Path) -> Result<BackupSummary, StoreError> {
        if self.backend() != Backend::Sqlite {
            return Err(StoreError::BackupUnsupported { backend: self.backend().as_str() });
        }
        let started = Instant::now();
        let file = std::path::absolute(file)
            .map_err(|source| StoreError::Backup { path: file.to_path_buf(), source })?;
        if std::fs::metadata(&file).map(|m| m.len() > 0).unwrap_or(false) {
            return Err(StoreError::BackupExists { path: file });
        }
        // Created 0600 before SQLite writes into it: the copy holds password hashes and audit rows.
        crate::files::private_file(&file)
            .map_err(|source| StoreError::Backup { path: file.clone(), source })?;
        let path = file.to_str().ok_or_else(|| StoreError::Backup {
            path: file.clone(),
            source: std::io::Error::other("the path is not UTF-8"),
        })?;
        if let Err(e) = sqlx::query("VACUUM INTO ?").bind(path).execute(&self.pool).await {
            let _ = std::fs::remove_file(&file);
            return Err(StoreError::Query { op: "backup: VACUUM INTO", source: e });
        }
        let (schema_version, audit_rows) = check_copy(&file).await?;
        let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        Ok(BackupSummary {
            file,
            bytes,
            schema_version,
            audit_rows,
            took_ms: started.elapsed().as_millis() as u64,
        })
    }
}

/// Opens the copy read-only on its own connection and checks its structure; returns (schema, audit rows).
async fn check_copy(file: &Path) -> Result<(i64, i64), StoreError> {
    let url = format!("sqlite://{}?mode=ro", file.display());
    let connect_err = |source| StoreError::Connect { backend: "sqlite", location: url.clone(), source };
    let mut conn = url
        .parse::<sqlx::any::AnyConnectOptions>()
        .map_err(connect_err)?
        .disable_statement_logging()
        .connect()
        .await
        .map_err(connect_err)?;
    let check: String =
        sqlx::query_scalar("PRAGMA quick_check").fetch_one(&mut conn).await.op("backup: quick_check")?;
    if check != "ok" {
        return Err(StoreError::BackupCorrupt { path: file.to_path_buf(), detail: check });
    }
    let version: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(&mut conn)
        .await
        .op("backup: schema version")?;
    let audit: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM audit_log")
        .fetch_one(&mut conn)
        .await
        .op("backup: audit rows")?;
    let _ = conn.close().await;
    Ok((version.unwrap_or(0), audit))
}
