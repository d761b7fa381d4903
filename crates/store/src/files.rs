//! The SQLite file on disk: private permissions, a plain-words diagnosis of files that are not a database or
//! cannot be written, and the lock that makes concurrent first use migrate once.
//!
//! Why here: an operator who points Lifeline at a read-only copy of the store (a backup, a forensic copy)
//! should still read the audit log, and one who points it at the wrong file should be told so in one line,
//! not after ten seconds of pool retries.

use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sqlx::AnyPool;
use sqlx::migrate::Migrator;

use crate::error::StoreError;

/// Creates `dir` (and parents) readable by the owner only when it does not exist yet.
pub(crate) fn private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Creates the database file 0600 before SQLite does (SQLite gives its -wal and -shm files the same mode).
pub(crate) fn private_file(path: &Path) -> std::io::Result<()> {
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Says whether an existing SQLite file must be opened read-only; refuses a file that is not SQLite.
pub(crate) fn check_sqlite_file(path: &Path) -> Result<bool, StoreError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(source) => return Err(StoreError::DataDir { path: path.to_path_buf(), source }),
    };
    if meta.is_dir() {
        return Err(StoreError::NotADatabase {
            path: path.to_path_buf(),
            detail: "it is a directory".into(),
        });
    }
    // Opening and closing our own descriptor on a database file that SQLite already has open in this
    // process would drop SQLite's POSIX locks on it (fcntl locks are per process and per file): lost writes
    // and a corrupted WAL. So the header is read only on the first open of this file in this process.
    if meta.len() > 0 && first_open_in_process(path) {
        let mut head = [0u8; 16];
        let n = std::fs::File::open(path)
            .and_then(|mut f| f.read(&mut head))
            .map_err(|source| StoreError::DataDir { path: path.to_path_buf(), source })?;
        if n < 16 || &head != SQLITE_MAGIC {
            return Err(StoreError::NotADatabase {
                path: path.to_path_buf(),
                detail: "its header is not `SQLite format 3` (corrupt, truncated or another kind of file)"
                    .into(),
            });
        }
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let writable = |p: &Path| nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).is_ok();
    Ok(!writable(path) || !writable(dir))
}

/// Records `path` as opened by this process; true the first time.
fn first_open_in_process(path: &Path) -> bool {
    static OPENED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut seen = OPENED.lock().unwrap_or_else(|p| p.into_inner());
    if seen.contains(&key) {
        return false;
    }
    seen.push(key);
    true
}

/// A read-only store can only be used when it needs no migration.
pub(crate) async fn check_migrated(
    pool: &AnyPool,
    migrator: &Migrator,
    location: &str,
) -> Result<(), StoreError> {
    let latest = migrator.iter().map(|m| m.version).max().unwrap_or(0);
    let applied: Option<i64> =
        sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations").fetch_one(pool).await.ok().flatten();
    match applied {
        Some(v) if v >= latest => Ok(()),
        _ => Err(StoreError::ReadOnlyNeedsMigration {
            location: location.to_owned(),
            applied: applied.unwrap_or(0),
            latest,
        }),
    }
}

/// An exclusive `flock` on `<db>.lock`, held while migrating; released on drop.
pub(crate) struct MigrationLock {
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl MigrationLock {
    pub(crate) async fn take(location: &str) -> Result<MigrationLock, StoreError> {
        let db = PathBuf::from(location.trim_start_matches("sqlite://").trim_start_matches("sqlite:"));
        let path = db.with_extension("db.lock");
        let lock_path = path.clone();
        // flock blocks; keep it off the runtime's worker threads.
        tokio::task::spawn_blocking(move || {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&lock_path)
                .map_err(|source| StoreError::DataDir { path: lock_path.clone(), source })?;
            nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, errno)| {
                StoreError::DataDir { path: lock_path.clone(), source: std::io::Error::from(errno) }
            })
        })
        .await
        .map_err(|e| StoreError::DataDir { path, source: std::io::Error::other(e) })?
        .map(|lock| MigrationLock { _lock: lock })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_file_is_not_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("lifeline.db");
        std::fs::write(&f, "this is not sqlite at all, just some text").unwrap();
        let e = check_sqlite_file(&f).unwrap_err().to_string();
        assert!(e.contains("lifeline.db") && e.contains("not a SQLite database"), "{e}");
    }

    #[test]
    fn missing_and_empty_files_are_fine() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("lifeline.db");
        assert!(!check_sqlite_file(&f).unwrap());
        private_file(&f).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(!check_sqlite_file(&f).unwrap());
    }
}
