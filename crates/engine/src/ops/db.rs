//! Lifeline's own database as the front ends see it: opened on purpose (so contexts made from one share
//! it), and looked at, upgraded and copied on purpose (`lifeline db status|migrate|backup`).
//!
//! Why a handle of its own for `db`: every other operation opens the store through [`Lifeline::store`],
//! which migrates on open (zero setup for the SQLite default). An upgrade wants to see the pending
//! migrations first, take a backup, then migrate, so [`Database`] opens the store without migrating.

use std::path::Path;

use lifeline_store::{AuditEntry, Store, StoreError};
pub use lifeline_store::{BackupSummary, MigrationRow, MigrationState, SchemaStatus};

use crate::context::Lifeline;
use crate::error::{EngineError, Result};

impl Lifeline {
    /// Opens (and migrates) the store now, so every context made from this one afterwards
    /// ([`Lifeline::for_actor`]) shares the one open store instead of opening the file again.
    pub async fn open_store(&self) -> Result<()> {
        self.store().await?;
        Ok(())
    }

    /// The store opened without migrating it, for `db status|migrate|backup`.
    pub async fn database(&self) -> Result<Database> {
        let store = Store::open_unmigrated(&self.paths.data_dir, self.paths.database_url.as_deref()).await?;
        Ok(Database { store, actor: self.actor().to_owned() })
    }
}

/// The store as a database to look at, upgrade or copy; acts (and audits) as the context's actor.
#[derive(Debug)]
pub struct Database {
    store: Store,
    actor: String,
}

impl Database {
    /// The backend, and which migrations are applied or pending.
    pub async fn status(&self) -> Result<SchemaStatus> {
        Ok(self.store.schema_status().await?)
    }

    /// Applies the pending migrations up to `to` (forward-only); returns the versions applied.
    pub async fn migrate_to(&self, to: i64) -> Result<Vec<i64>> {
        Ok(self.store.migrate_to(to).await?)
    }

    /// A consistent copy of a SQLite store in `file`. A file that exists, or a backend with its own tool
    /// (PostgreSQL: `pg_dump`), is the operator's mistake: a usage error.
    pub async fn backup_to(&self, file: &Path) -> Result<BackupSummary> {
        self.store.backup_to(file).await.map_err(|e| match e {
            StoreError::BackupExists { .. } | StoreError::BackupUnsupported { .. } => {
                EngineError::bad_argument(e.to_string())
            }
            e => EngineError::from(e),
        })
    }

    /// Records a done upgrade or copy in the audit log (target `lifeline-store`); a failure to write the
    /// row is logged, not returned (the work is done).
    pub async fn record(&self, action: lifeline_types::AuditAction, detail: serde_json::Value) {
        let entry = AuditEntry {
            actor: self.actor.clone(),
            action: action.as_str().into(),
            target: "lifeline-store".into(),
            outcome: crate::audit::Outcome::Ok.as_str().into(),
            detail,
            request_id: None,
        };
        if let Err(e) = self.store.audit(&entry).await {
            tracing::warn!(error = %e, %action, "could not write the audit row");
        }
    }

    pub async fn close(&self) {
        self.store.close().await;
    }
}
