//! Store errors, with the operation and the database location in each variant.

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create data directory {path}")]
    DataDir {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a SQLite database: {detail}")]
    NotADatabase { path: std::path::PathBuf, detail: String },
    #[error(
        "the store {location} is read-only and its schema is at migration {applied}, this version needs {latest}: \
         open it once with write access"
    )]
    ReadOnlyNeedsMigration { location: String, applied: i64, latest: i64 },
    #[error(
        "the database {location} was migrated by a newer Lifeline (migrations {unknown:?}; this binary knows up \
         to {known}): run that release or a newer one, or restore a backup taken before the upgrade"
    )]
    SchemaNewer { location: String, known: i64, unknown: Vec<i64> },
    #[error(
        "`lifeline db backup` copies a SQLite store; back up the {backend} database with its own tool \
         (pg_dump, see deploy/README.md)"
    )]
    BackupUnsupported { backend: &'static str },
    #[error("the backup file {path} already exists and is not empty: name a new file")]
    BackupExists { path: std::path::PathBuf },
    #[error("cannot write the backup file {path}")]
    Backup {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the backup {path} fails SQLite's check: {detail}")]
    BackupCorrupt { path: std::path::PathBuf, detail: String },
    #[error("unsupported database URL `{url}` (expected sqlite:PATH or postgres://…)")]
    BadUrl { url: String },
    #[error("cannot connect to {backend} database {location}")]
    Connect {
        backend: &'static str,
        location: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("migrating the {backend} database failed")]
    Migrate {
        backend: &'static str,
        #[source]
        source: sqlx::migrate::MigrateError,
    },
    #[error("store query `{op}` failed")]
    Query {
        op: &'static str,
        #[source]
        source: sqlx::Error,
    },
    #[error("the lease on {target} (fence {fence}) was lost before the write: another holder acts on it now")]
    Fenced { target: String, fence: i64 },
    /// A closed set's word (a run's state) that this version does not know: the database is damaged or
    /// was written by a newer Lifeline.
    #[error("stored `{op}` is not a word this version knows")]
    Word {
        op: &'static str,
        #[source]
        source: lifeline_types::UnknownVariant,
    },
    #[error("stored JSON for `{op}` is invalid")]
    Json {
        op: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// Attaches the operation name to a sqlx error.
pub(crate) trait QueryContext<T> {
    fn op(self, op: &'static str) -> Result<T, StoreError>;
}

impl<T> QueryContext<T> for Result<T, sqlx::Error> {
    fn op(self, op: &'static str) -> Result<T, StoreError> {
        self.map_err(|source| StoreError::Query { op, source })
    }
}
