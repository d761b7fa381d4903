//! `lifeline db status|migrate|backup`: Lifeline's own database, looked at and upgraded on purpose.
//!
//! Why a verb of its own: every other verb opens the store through the engine, which migrates on open
//! (zero setup for the SQLite default). An upgrade wants to see the pending migrations first, take a backup,
//! then migrate — and an older binary must refuse a database a newer one migrated, in words.

use std::path::PathBuf;

use clap::Subcommand;
use lifeline_engine::ops::db::{Database, MigrationState, SchemaStatus};
use lifeline_types::AuditAction;
use serde_json::json;

use crate::args::Global;
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Code, Exit};
use crate::outln;

#[derive(Debug, Subcommand)]
pub enum DbCmd {
    /// The backend, and which migrations are applied or pending; changes nothing. Exit 1 when the database
    /// needs `db migrate`, was migrated by a newer release, or has a failed or edited migration.
    Status,
    /// Apply the pending migrations (forward-only; a database from a newer release is refused).
    Migrate {
        /// Stop after this migration (a staged upgrade); default: all of them.
        #[arg(long, value_name = "VERSION")]
        to: Option<i64>,
    },
    /// Write a consistent copy of the SQLite store to FILE while the server runs (SQLite's `VACUUM INTO`);
    /// for PostgreSQL use `pg_dump` (deploy/README.md).
    Backup {
        /// A new file (an existing non-empty one is refused); written 0600.
        file: PathBuf,
    },
}

pub async fn run(g: &Global, cmd: DbCmd) -> CmdResult {
    let l = lifeline(g)?;
    // Looking at, or copying, a SQLite store that is not there must not create one (a mistyped
    // --data-dir would otherwise report an empty database); `db migrate` creates it, as any verb does.
    let file = l.paths.data_dir.join("lifeline.db");
    if l.paths.database_url.is_none() && !matches!(cmd, DbCmd::Migrate { .. }) && !file.exists() {
        return Err(Exit::usage(anyhow::anyhow!(
            "no store at {} (it is created on first use, or by `lifeline db migrate`)",
            file.display()
        )));
    }
    let db = l.database().await?;
    let result = match cmd {
        DbCmd::Status => status(g, &db).await,
        DbCmd::Migrate { to } => migrate(g, &db, to).await,
        DbCmd::Backup { file } => backup(g, &db, file).await,
    };
    db.close().await;
    result
}

async fn status(g: &Global, db: &Database) -> CmdResult {
    let s = db.status().await?;
    if g.json {
        print_json(&s)?;
    } else {
        print_status(&s)?;
    }
    Ok(if s.is_current() { Code::Ok } else { Code::Failed })
}

fn print_status(s: &SchemaStatus) -> Result<(), Exit> {
    outln!("backend:  {}{}", s.backend, if s.read_only { " (read-only)" } else { "" });
    outln!("database: {}", s.location);
    outln!("schema:   database at migration {}, this binary at {}", s.database_version, s.binary_version);
    for m in &s.migrations {
        let state = match m.state {
            MigrationState::Applied => "applied",
            MigrationState::Pending => "pending",
            MigrationState::Failed => "FAILED",
            MigrationState::Modified => "MODIFIED",
            MigrationState::Unknown => "newer release",
        };
        outln!(
            "  {:04}  {:<14} {:<28} {}",
            m.version,
            state,
            m.description,
            m.installed_on.as_deref().unwrap_or("")
        );
    }
    let pending = s.pending().count();
    if s.unknown().next().is_some() {
        outln!(
            "this database was migrated by a newer Lifeline: run that release, or restore a backup taken before"
        );
    } else if s.broken().next().is_some() {
        outln!("a migration failed or was edited after it was applied: restore a backup (deploy/README.md)");
    } else if pending > 0 {
        outln!(
            "{pending} pending: take a backup (`lifeline db backup FILE` or pg_dump), then `lifeline db migrate`"
        );
    } else {
        outln!("up to date");
    }
    Ok(())
}

async fn migrate(g: &Global, db: &Database, to: Option<i64>) -> CmdResult {
    let applied = db.migrate_to(to.unwrap_or(i64::MAX)).await?;
    let s = db.status().await?;
    if !applied.is_empty() && s.is_current() {
        db.record(AuditAction::DbMigrate, json!({ "applied": applied, "schema": s.database_version })).await;
    }
    if g.json {
        print_json(&json!({ "applied": applied, "status": s }))?;
    } else if applied.is_empty() {
        outln!("nothing to apply: database at migration {}", s.database_version);
    } else {
        for v in &applied {
            let d =
                s.migrations.iter().find(|m| m.version == *v).map(|m| m.description.as_str()).unwrap_or("");
            outln!("applied {v:04}  {d}");
        }
        outln!("database at migration {} ({})", s.database_version, s.backend);
    }
    Ok(Code::Ok)
}

async fn backup(g: &Global, db: &Database, file: PathBuf) -> CmdResult {
    // The operator naming the wrong file or the wrong tool is a usage error, not a broken store.
    let b = db.backup_to(&file).await?;
    if db.status().await.map(|s| s.is_current()).unwrap_or(false) {
        db.record(
            AuditAction::DbBackup,
            json!({ "file": b.file, "bytes": b.bytes, "audit_rows": b.audit_rows }),
        )
        .await;
    }
    if g.json {
        print_json(&b)?;
    } else {
        outln!(
            "wrote {} ({} bytes, schema {}, {} audit rows) in {} ms; checked with PRAGMA quick_check",
            b.file.display(),
            b.bytes,
            b.schema_version,
            b.audit_rows,
            b.took_ms
        );
    }
    Ok(Code::Ok)
}
