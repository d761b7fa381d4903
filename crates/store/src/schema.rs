//! The schema's lifecycle: which migrations a database has, which this binary would add, and applying them
//! on an operator's word (`lifeline db status|migrate`).
//!
//! Why its own module: opening the store migrates it silently (the zero-setup SQLite default must stay zero
//! setup), but an upgrade of a shared PostgreSQL database, or of a jump host's store before a rollback
//! window closes, wants to be looked at first and done explicitly. Migrations are forward-only: a database
//! that a newer Lifeline migrated is refused in words, never "repaired" by an older binary.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use sqlx::AnyPool;
use sqlx::migrate::Migrator;

use crate::error::{QueryContext, StoreError};
use crate::open::{Backend, Store};

/// Where one migration stands on one database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MigrationState {
    /// Applied, and its text is the one this binary carries.
    Applied,
    /// Carried by this binary, not applied yet.
    Pending,
    /// Started and did not finish (sqlx marks it `success = false`): the schema needs a person.
    Failed,
    /// Applied from a different text than this binary's (an edited migration file).
    Modified,
    /// Applied by a newer Lifeline: this binary does not know it.
    Unknown,
}

/// One migration's row in `lifeline db status`.
#[derive(Debug, Clone, Serialize)]
pub struct MigrationRow {
    pub version: i64,
    pub description: String,
    pub state: MigrationState,
    /// When it was applied, as the database prints its timestamp.
    pub installed_on: Option<String>,
}

/// The schema of one database as this binary sees it.
#[derive(Debug, Clone, Serialize)]
pub struct SchemaStatus {
    pub backend: &'static str,
    /// The database, password removed.
    pub location: String,
    pub read_only: bool,
    /// The newest migration this binary carries.
    pub binary_version: i64,
    /// The newest migration applied to the database (0: an empty database).
    pub database_version: i64,
    /// Every migration known to either side, oldest first.
    pub migrations: Vec<MigrationRow>,
}

impl SchemaStatus {
    fn with_state(&self, state: MigrationState) -> impl Iterator<Item = &MigrationRow> {
        self.migrations.iter().filter(move |m| m.state == state)
    }

    pub fn pending(&self) -> impl Iterator<Item = &MigrationRow> {
        self.with_state(MigrationState::Pending)
    }

    /// Migrations applied by a newer release.
    pub fn unknown(&self) -> impl Iterator<Item = &MigrationRow> {
        self.with_state(MigrationState::Unknown)
    }

    /// Failed or modified migrations: the schema is not what any release expects.
    pub fn broken(&self) -> impl Iterator<Item = &MigrationRow> {
        self.migrations
            .iter()
            .filter(|m| matches!(m.state, MigrationState::Failed | MigrationState::Modified))
    }

    /// Every migration of this binary is applied, and nothing else is.
    pub fn is_current(&self) -> bool {
        self.migrations.iter().all(|m| m.state == MigrationState::Applied)
    }
}

/// A migration as recorded in sqlx's `_sqlx_migrations` table.
struct AppliedRow {
    version: i64,
    description: String,
    success: bool,
    checksum: Vec<u8>,
    installed_on: Option<String>,
}

impl Store {
    /// Opens the store without running migrations (`Store::open` migrates on open).
    pub async fn open_unmigrated(data_dir: &Path, database_url: Option<&str>) -> Result<Store, StoreError> {
        Self::open_url_with(&Self::url_for(data_dir, database_url)?, false).await
    }

    /// Opens a `sqlite:` or `postgres://` URL without running migrations.
    pub async fn open_url_unmigrated(url: &str) -> Result<Store, StoreError> {
        Self::open_url_with(url, false).await
    }

    /// The applied and pending migrations; changes nothing.
    pub async fn schema_status(&self) -> Result<SchemaStatus, StoreError> {
        let applied = applied_rows(&self.pool, self.backend()).await?;
        Ok(status_of(self, &applied))
    }

    /// Applies every pending migration; returns the versions applied (empty: already current).
    pub async fn migrate(&self) -> Result<Vec<i64>, StoreError> {
        self.migrate_to(i64::MAX).await
    }

    /// Applies the pending migrations up to and including `target` (an upgrade test builds the previous
    /// release's schema this way). Forward-only: a database already past `target` is left as it is.
    pub async fn migrate_to(&self, target: i64) -> Result<Vec<i64>, StoreError> {
        let backend = self.backend();
        let full = backend.migrator();
        // The same file lock as the migration on open: two `db migrate`s, or one beside a starting server.
        let _guard = match backend {
            Backend::Sqlite if !self.is_read_only() => {
                Some(crate::files::MigrationLock::take(self.location()).await?)
            }
            _ => None,
        };
        let before = self.schema_status().await?;
        refuse_unknown(&before)?;
        let wanted: Vec<i64> = before.pending().map(|m| m.version).filter(|v| *v <= target).collect();
        if wanted.is_empty() {
            return Ok(wanted);
        }
        if self.is_read_only() {
            return Err(StoreError::ReadOnlyNeedsMigration {
                location: self.location().to_owned(),
                applied: before.database_version,
                latest: before.binary_version,
            });
        }
        if backend == Backend::Sqlite {
            // The mode `Store::open` sets before it migrates; it is stored in the file.
            sqlx::query("PRAGMA journal_mode = WAL").execute(&self.pool).await.op("journal mode")?;
        }
        // sqlx has no "run up to version N"; a migrator over a prefix of our own migrations does that, and
        // records each one exactly as the full migrator would (same checksums), so a later full run
        // continues where this one stopped. The fields are sqlx's documented way to build one statically.
        let prefix = Migrator {
            migrations: Cow::Owned(full.iter().filter(|m| m.version <= target).cloned().collect()),
            ..Migrator::DEFAULT
        };
        prefix
            .run(&self.pool)
            .await
            .map_err(|source| StoreError::Migrate { backend: backend.as_str(), source })?;
        let after = self.schema_status().await?;
        Ok(wanted
            .into_iter()
            .filter(|v| {
                after.migrations.iter().any(|m| m.version == *v && m.state == MigrationState::Applied)
            })
            .collect())
    }
}

/// Refuses, in words, a database that a newer Lifeline migrated (called before every migration run).
pub(crate) async fn refuse_newer(
    pool: &AnyPool,
    backend: Backend,
    migrator: &Migrator,
    location: &str,
) -> Result<(), StoreError> {
    let applied = applied_rows(pool, backend).await?;
    let unknown: Vec<i64> =
        applied.iter().map(|a| a.version).filter(|v| !migrator.version_exists(*v)).collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(StoreError::SchemaNewer {
        location: location.to_owned(),
        known: migrator.iter().map(|m| m.version).max().unwrap_or(0),
        unknown,
    })
}

fn refuse_unknown(status: &SchemaStatus) -> Result<(), StoreError> {
    let unknown: Vec<i64> = status.unknown().map(|m| m.version).collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(StoreError::SchemaNewer { location: status.location.clone(), known: status.binary_version, unknown })
}

fn status_of(store: &Store, applied: &[AppliedRow]) -> SchemaStatus {
    let migrator = store.backend().migrator();
    let mut rows: BTreeMap<i64, MigrationRow> = BTreeMap::new();
    for m in migrator.iter().filter(|m| !m.migration_type.is_down_migration()) {
        rows.insert(
            m.version,
            MigrationRow {
                version: m.version,
                description: m.description.to_string(),
                state: MigrationState::Pending,
                installed_on: None,
            },
        );
    }
    for a in applied {
        let ours = migrator.iter().find(|m| m.version == a.version);
        let state = match ours {
            None => MigrationState::Unknown,
            Some(_) if !a.success => MigrationState::Failed,
            Some(m) if m.checksum.as_ref() != a.checksum.as_slice() => MigrationState::Modified,
            Some(_) => MigrationState::Applied,
        };
        rows.insert(
            a.version,
            MigrationRow {
                version: a.version,
                description: a.description.clone(),
                state,
                installed_on: a.installed_on.clone(),
            },
        );
    }
    SchemaStatus {
        backend: store.backend().as_str(),
        location: store.location().to_owned(),
        read_only: store.is_read_only(),
        binary_version: migrator.iter().map(|m| m.version).max().unwrap_or(0),
        database_version: applied.iter().map(|a| a.version).max().unwrap_or(0),
        migrations: rows.into_values().collect(),
    }
}

/// version, description, success (0/1), checksum, installed_on.
type AppliedTuple = (i64, String, i64, Vec<u8>, Option<String>);

/// The rows of `_sqlx_migrations`, or none when the table does not exist yet (a new database).
async fn applied_rows(pool: &AnyPool, backend: Backend) -> Result<Vec<AppliedRow>, StoreError> {
    let exists = match backend {
        Backend::Sqlite => {
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'"
        }
        Backend::Postgres => {
            "SELECT COUNT(*) FROM information_schema.tables \
             WHERE table_name = '_sqlx_migrations' AND table_schema = current_schema()"
        }
    };
    let n: i64 = sqlx::query_scalar(exists).fetch_one(pool).await.op("schema: migrations table")?;
    if n == 0 {
        return Ok(Vec::new());
    }
    // Portable spellings: sqlx stores `success` as BOOLEAN (an integer in SQLite) and `installed_on` as
    // a timestamp whose type differs per backend.
    let rows: Vec<AppliedTuple> = sqlx::query_as(
        "SELECT version, description, CAST(CASE WHEN success THEN 1 ELSE 0 END AS BIGINT), checksum, \
         CAST(installed_on AS TEXT) FROM _sqlx_migrations ORDER BY version",
    )
    .fetch_all(pool)
    .await
    .op("schema: applied migrations")?;
    Ok(rows
        .into_iter()
        .map(|(version, description, success, checksum, installed_on)| AppliedRow {
            version,
            description,
            success: success != 0,
            checksum,
            installed_on,
        })
        .collect())
}
