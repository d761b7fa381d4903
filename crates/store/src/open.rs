//! Opening the store: choosing the backend from the URL, creating the SQLite file, running migrations.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::Migrator;
use sqlx::{AnyPool, ConnectOptions, Executor};

use crate::error::StoreError;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/postgres");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The migrations embedded in this binary for this backend.
    pub(crate) fn migrator(self) -> &'static Migrator {
        match self {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// A handle to the store; cheap to clone (the pool is shared).
/// How long a request waits for a PostgreSQL connection before the store is reported unavailable.
pub const POSTGRES_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) pool: AnyPool,
    backend: Backend,
    location: String,
    read_only: bool,
    pub(crate) changes: crate::changes::Changes,
}

impl Store {
    /// Opens the store named by `database_url`, or the SQLite file `lifeline.db` in `data_dir`.
    pub async fn open(data_dir: &Path, database_url: Option<&str>) -> Result<Store, StoreError> {
        Self::open_url(&Self::url_for(data_dir, database_url)?).await
    }

    /// The database URL: `database_url`, or the SQLite file `lifeline.db` in `data_dir` (created 0700).
    pub(crate) fn url_for(data_dir: &Path, database_url: Option<&str>) -> Result<String, StoreError> {
        match database_url {
            Some(url) => Ok(url.to_owned()),
            None => {
                crate::files::private_dir(data_dir)
                    .map_err(|source| StoreError::DataDir { path: data_dir.to_path_buf(), source })?;
                Ok(format!("sqlite://{}", data_dir.join("lifeline.db").display()))
            }
        }
    }

    /// Opens a `sqlite:` or `postgres://` URL and runs the migrations.
    pub async fn open_url(url: &str) -> Result<Store, StoreError> {
        Self::open_url_with(url, true).await
    }

    /// Opens `url`, running the pending migrations only when `migrate` is set (`lifeline db status` looks
    /// at the schema without changing it).
    pub(crate) async fn open_url_with(url: &str, migrate: bool) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres
        } else {
            return Err(StoreError::BadUrl { url: url.to_owned() });
        };
        let location = redact(url);
        let mut read_only = false;
        let mut url = url.to_owned();
        if backend == Backend::Sqlite && !url.contains('?') {
            let path =
                std::path::PathBuf::from(url.trim_start_matches("sqlite://").trim_start_matches("sqlite:"));
            read_only = crate::files::check_sqlite_file(&path)?;
            if read_only {
                tracing::warn!(file = %path.display(), "the store is read-only: reads work, actions that must be audited are refused");
                // A WAL database opened read-only still wants to write its -shm index; `immutable` reads the
                // file as it is. Writes not yet checkpointed (a crash) sit in the -wal file and are missed:
                // say so.
                // With a -wal file present SQLite can read it (and its -shm index) read-only; without one
                // there is nothing uncheckpointed to miss.
                let wal = path.with_extension("db-wal");
                let shm = path.with_extension("db-shm");
                url = if wal.exists() && shm.exists() {
                    format!("{url}?mode=ro")
                } else {
                    format!("{url}?mode=ro&immutable=1")
                };
            } else {
                crate::files::private_file(&path)
                    .map_err(|source| StoreError::DataDir { path: path.clone(), source })?;
            }
        }
        let url = url.as_str();
        let connect_err =
            |source| StoreError::Connect { backend: backend.as_str(), location: location.clone(), source };
        let url = match backend {
            // `mode=rwc` creates the file on first use.
            Backend::Sqlite if !url.contains('?') => format!("{url}?mode=rwc"),
            _ => url.to_owned(),
        };
        let opts = AnyConnectOptions::from_str(&url).map_err(connect_err)?.disable_statement_logging();
        // One direct connection first: a wrong host or password fails at once with the server's own error,
        // instead of after the pool's acquire timeout.
        let probe = opts.connect().await.map_err(connect_err)?;
        let _ = sqlx::Connection::close(probe).await;
        let pool = AnyPoolOptions::new()
            // SQLite serialises writers anyway; a small pool avoids lock contention.
            .max_connections(if backend == Backend::Sqlite { 4 } else { 10 })
            // How long a request waits for a connection. SQLite: a writer waits its turn (busy_timeout is
            // 10 s too). PostgreSQL: while the database is down every acquire retries the connection until
            // this runs out, and each client waits that long for its 503: fail fast instead (a healthy
            // pool hands out a connection in milliseconds).
            .acquire_timeout(match backend {
                Backend::Sqlite => Duration::from_secs(10),
                Backend::Postgres => POSTGRES_ACQUIRE_TIMEOUT,
            })
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        conn.execute("PRAGMA busy_timeout = 10000").await?;
                        conn.execute("PRAGMA foreign_keys = ON").await?;
                        conn.execute("PRAGMA synchronous = NORMAL").await?;
                    }
                    Ok(())
                })
            })
            .connect_with(opts)
            .await
            .map_err(connect_err)?;
        let migrator = backend.migrator();
        if !migrate {
            // Looked at as it is: `lifeline db status` or `db migrate`, which migrate explicitly.
        } else if read_only {
            crate::files::check_migrated(&pool, migrator, &location).await?;
        } else {
            // Concurrent first use of one SQLite file (eight `backup run`s on a fresh data dir) must migrate
            // once: sqlx's SQLite migrator takes no lock, so we hold an exclusive file lock around it.
            // PostgreSQL's migrator takes an advisory lock itself.
            let _guard = match backend {
                Backend::Sqlite => Some(crate::files::MigrationLock::take(&location).await?),
                Backend::Postgres => None,
            };
            if backend == Backend::Sqlite {
                // WAL lets the web console read while a sweep writes; the mode is stored in the file.
                sqlx::query("PRAGMA journal_mode = WAL").execute(&pool).await.map_err(connect_err)?;
            }
            // A database migrated by a newer Lifeline is refused in words before sqlx's own check.
            crate::schema::refuse_newer(&pool, backend, migrator, &location).await?;
            migrator
                .run(&pool)
                .await
                .map_err(|source| StoreError::Migrate { backend: backend.as_str(), source })?;
        }
        tracing::debug!(backend = backend.as_str(), %location, read_only, "store open");
        Ok(Store { pool, backend, location, read_only, changes: Default::default() })
    }

    /// The SQLite file could only be opened for reading: queries work, writes fail.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Where the data lives, with any password removed.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Closes the pool, waiting for connections to finish (SQLite checkpoints the WAL on last close).
    pub async fn close(&self) {
        if self.backend == Backend::Sqlite && !self.read_only {
            // Fold the WAL into the file now, so that a copy of the file (or a read-only reader) has it all.
            let _ = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&self.pool).await;
        }
        self.pool.close().await;
    }

    /// Rewrites `?` placeholders as `$1, $2, …` for PostgreSQL; SQLite accepts `?` as written.
    /// A transaction that reads and then writes. On SQLite it takes the write lock at `BEGIN` (`BEGIN
    /// IMMEDIATE`), waiting under the busy timeout: a deferred transaction that read first fails at its first
    /// write with `SQLITE_BUSY_SNAPSHOT` (517, "database is locked", no wait) whenever another connection
    /// wrote meanwhile, which stopped `lifeline demo` at start-up now and then (its sweeps write while the
    /// server syncs the inventory). PostgreSQL's default is right as it is.
    pub(crate) async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => self.pool.begin().await,
        }
    }

    pub(crate) fn sql(&self, q: &str) -> String {
        match self.backend {
            Backend::Sqlite => q.to_owned(),
            Backend::Postgres => {
                let mut out = String::with_capacity(q.len() + 8);
                let mut n = 0;
                for ch in q.chars() {
                    if ch == '?' {
                        n += 1;
                        out.push('$');
                        out.push_str(&n.to_string());
                    } else {
                        out.push(ch);
                    }
                }
                out
            }
        }
    }
}

/// Hides the password of a `postgres://user:pass@host/db` URL for logs and errors.
fn redact(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some((creds, host)) = rest.split_once('@')
    {
        let user = creds.split(':').next().unwrap_or("");
        return format!("{scheme}://{user}:***@{host}");
    }
    url.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords() {
        assert_eq!(redact("postgres://u:secret@127.0.0.1/db"), "postgres://u:***@127.0.0.1/db");
        assert_eq!(redact("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
    }
}
