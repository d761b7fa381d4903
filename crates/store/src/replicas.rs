//! Replica membership and work ownership, so that several `lifeline serve` replicas on one PostgreSQL
//! database share the unattended work without a consensus layer of their own: the database is the referee.
//!
//! Membership is a heartbeat row per replica with an expiry. Work (a scheduled backup slot, a console's
//! always-on logger, a runbook run) is a row in `replica_work` owned by one holder at a time: claimed by one
//! atomic upsert that succeeds only when the row is absent, or expired and not done (SQLite and PostgreSQL
//! both evaluate `ON CONFLICT … DO UPDATE … WHERE` atomically, the row lock serialising concurrent takers on
//! PostgreSQL). `fence` grows with every new holder; renewals, releases and the done mark name it, so a
//! replica that was paused past its expiry (and lost the work) cannot extend, release or finish it. A done
//! row is never claimable again: that is what makes each backup slot run exactly once. Orphans (expired,
//! not done) are taken over in batches with `FOR UPDATE SKIP LOCKED` on PostgreSQL, so replicas scanning at
//! the same moment split them instead of queueing on the same rows.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::open::Backend;
use crate::{Store, now_ms};

/// A replica as its heartbeat row says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicaRow {
    pub id: String,
    pub started_at_ms: i64,
    pub heartbeat_at_ms: i64,
    pub expires_at_ms: i64,
    /// Free-form facts the replica publishes about itself (listen address, version).
    pub info: serde_json::Value,
}

/// One unit of work and who owns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkRow {
    pub key: String,
    pub holder: String,
    pub fence: i64,
    pub acquired_at_ms: i64,
    pub expires_at_ms: i64,
    pub done_at_ms: Option<i64>,
    pub outcome: Option<String>,
}

/// The result of trying to claim a unit of work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkClaim {
    /// Ours; `previous` is the expired claim it replaced (its holder died or was paused), if any.
    Claimed { work: WorkRow, previous: Option<WorkRow> },
    /// Someone holds it and the claim has not expired.
    Held(WorkRow),
    /// It was finished already (by anyone): never run again.
    Done(WorkRow),
}

const WORK_COLUMNS: &str = "key, holder, fence, acquired_at, expires_at, done_at, outcome";

fn work_row(r: &sqlx::any::AnyRow) -> Result<WorkRow, StoreError> {
    Ok(WorkRow {
        key: r.try_get("key").op("work.key")?,
        holder: r.try_get("holder").op("work.holder")?,
        fence: r.try_get("fence").op("work.fence")?,
        acquired_at_ms: r.try_get("acquired_at").op("work.acquired_at")?,
        expires_at_ms: r.try_get("expires_at").op("work.expires_at")?,
        done_at_ms: r.try_get("done_at").op("work.done_at")?,
        outcome: r.try_get("outcome").op("work.outcome")?,
    })
}

fn replica_row(r: &sqlx::any::AnyRow) -> Result<ReplicaRow, StoreError> {
    let info: String = r.try_get("info_json").op("replica.info")?;
    Ok(ReplicaRow {
        id: r.try_get("id").op("replica.id")?,
        started_at_ms: r.try_get("started_at").op("replica.started_at")?,
        heartbeat_at_ms: r.try_get("heartbeat_at").op("replica.heartbeat_at")?,
        expires_at_ms: r.try_get("expires_at").op("replica.expires_at")?,
        info: serde_json::from_str(&info)
            .map_err(|source| StoreError::Json { op: "replica.info", source })?,
    })
}

impl Store {
    /// Announces (or keeps announcing) replica `id` as alive for `ttl_ms` more.
    pub async fn replica_heartbeat(
        &self,
        id: &str,
        info: &serde_json::Value,
        ttl_ms: i64,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let q = self.sql(
            "INSERT INTO replicas (id, started_at, heartbeat_at, expires_at, info_json) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, \
             expires_at = excluded.expires_at, info_json = excluded.info_json",
        );
        sqlx::query(&q)
            .bind(id.to_owned())
            .bind(now)
            .bind(now)
            .bind(now + ttl_ms)
            .bind(info.to_string())
            .execute(&self.pool)
            .await
            .op("replica.heartbeat")?;
        Ok(())
    }

    /// A replica leaving cleanly (its share moves at once instead of after its expiry).
    pub async fn replica_leave(&self, id: &str) -> Result<(), StoreError> {
        let q = self.sql("DELETE FROM replicas WHERE id = ?");
        sqlx::query(&q).bind(id.to_owned()).execute(&self.pool).await.op("replica.leave")?;
        Ok(())
    }

    /// Every replica row, live or not, ordered by id (dead rows are deleted by [`Store::replicas_prune`]).
    pub async fn replicas(&self) -> Result<Vec<ReplicaRow>, StoreError> {
        let q = "SELECT id, started_at, heartbeat_at, expires_at, info_json FROM replicas ORDER BY id";
        let rows = sqlx::query(q).fetch_all(&self.pool).await.op("replica.list")?;
        rows.iter().map(replica_row).collect()
    }

    /// Forgets replicas whose heartbeat expired before `before_ms`.
    pub async fn replicas_prune(&self, before_ms: i64) -> Result<u64, StoreError> {
        let q = self.sql("DELETE FROM replicas WHERE expires_at < ?");
        let done = sqlx::query(&q).bind(before_ms).execute(&self.pool).await.op("replica.prune")?;
        Ok(done.rows_affected())
    }

    /// The work row `key`, whoever holds it.
    pub async fn work(&self, key: &str) -> Result<Option<WorkRow>, StoreError> {
        let q = self.sql(&format!("SELECT {WORK_COLUMNS} FROM replica_work WHERE key = ?"));
        let row = sqlx::query(&q).bind(key.to_owned()).fetch_optional(&self.pool).await.op("work.get")?;
        row.as_ref().map(work_row).transpose()
    }

    /// Every work row whose key starts with `prefix`, ordered by key.
    pub async fn work_with_prefix(&self, prefix: &str) -> Result<Vec<WorkRow>, StoreError> {
        let q = self.sql(&format!(
            "SELECT {WORK_COLUMNS} FROM replica_work WHERE substr(key, 1, CAST(? AS INTEGER)) = ? ORDER BY key"
        ));
        let rows = sqlx::query(&q)
            .bind(i64::try_from(prefix.len()).unwrap_or(i64::MAX))
            .bind(prefix.to_owned())
            .fetch_all(&self.pool)
            .await
            .op("work.prefix")?;
        rows.iter().map(work_row).collect()
    }

    /// Claims `key` for `holder` for `ttl_ms`, unless someone holds it or it is done.
    pub async fn claim_work(&self, key: &str, holder: &str, ttl_ms: i64) -> Result<WorkClaim, StoreError> {
        let before = self.work(key).await?;
        if let Some(b) = before.as_ref().filter(|b| b.done_at_ms.is_some()) {
            return Ok(WorkClaim::Done(b.clone()));
        }
        let now = now_ms();
        let q = self.sql(&format!(
            "INSERT INTO replica_work (key, holder, fence, acquired_at, expires_at) VALUES (?, ?, 1, ?, ?) \
             ON CONFLICT (key) DO UPDATE SET holder = excluded.holder, fence = replica_work.fence + 1, \
             acquired_at = excluded.acquired_at, expires_at = excluded.expires_at \
             WHERE replica_work.done_at IS NULL AND replica_work.expires_at < ? \
             RETURNING {WORK_COLUMNS}"
        ));
        let row = sqlx::query(&q)
            .bind(key.to_owned())
            .bind(holder.to_owned())
            .bind(now)
            .bind(now + ttl_ms)
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .op("work.claim")?;
        match row {
            Some(r) => {
                let work = work_row(&r)?;
                // `before` was read outside the statement: it is the replaced claim only when its fence is
                // the one just below ours.
                let previous = before.filter(|b| b.fence + 1 == work.fence);
                Ok(WorkClaim::Claimed { work, previous })
            }
            None => match self.work(key).await? {
                Some(w) if w.done_at_ms.is_some() => Ok(WorkClaim::Done(w)),
                Some(w) => Ok(WorkClaim::Held(w)),
                // Released between the statement and the read: the caller tries again at its next tick.
                None => Err(StoreError::Query {
                    op: "work.claim",
                    source: sqlx::Error::Protocol("work row vanished while being claimed; retry".into()),
                }),
            },
        }
    }

    /// Takes `key` over from a holder known to be gone (a dead process on this host), only if the claim is
    /// still the one with `fence` and not done.
    pub async fn take_over_work(
        &self,
        key: &str,
        fence: i64,
        holder: &str,
        ttl_ms: i64,
    ) -> Result<Option<WorkRow>, StoreError> {
        let now = now_ms();
        let q = self.sql(&format!(
            "UPDATE replica_work SET holder = ?, fence = fence + 1, acquired_at = ?, expires_at = ? \
             WHERE key = ? AND fence = ? AND done_at IS NULL RETURNING {WORK_COLUMNS}"
        ));
        let row = sqlx::query(&q)
            .bind(holder.to_owned())
            .bind(now)
            .bind(now + ttl_ms)
            .bind(key.to_owned())
            .bind(fence)
            .fetch_optional(&self.pool)
            .await
            .op("work.take_over")?;
        row.as_ref().map(work_row).transpose()
    }

    /// Takes over up to `limit` expired, unfinished claims under `prefix` (their holders died or hung).
    /// On PostgreSQL the candidates are locked with `FOR UPDATE SKIP LOCKED`, so replicas scanning at
    /// once each get different rows; SQLite serialises writers, and each take-over names the fence it saw.
    pub async fn take_orphaned_work(
        &self,
        prefix: &str,
        holder: &str,
        ttl_ms: i64,
        limit: i64,
    ) -> Result<Vec<(WorkRow, WorkRow)>, StoreError> {
        let now = now_ms();
        let select = format!(
            "SELECT {WORK_COLUMNS} FROM replica_work WHERE substr(key, 1, CAST(? AS INTEGER)) = ? AND done_at IS NULL \
             AND expires_at < ? ORDER BY key LIMIT ?"
        );
        let plen = i64::try_from(prefix.len()).unwrap_or(i64::MAX);
        let mut out = Vec::new();
        if self.backend() == Backend::Postgres {
            let mut tx = self.begin_write().await.op("work.orphans.begin")?;
            let q = self.sql(&format!("{select} FOR UPDATE SKIP LOCKED"));
            let rows = sqlx::query(&q)
                .bind(plen)
                .bind(prefix.to_owned())
                .bind(now)
                .bind(limit)
                .fetch_all(&mut *tx)
                .await
                .op("work.orphans.select")?;
            let q = self.sql(&format!(
                "UPDATE replica_work SET holder = ?, fence = fence + 1, acquired_at = ?, expires_at = ? \
                 WHERE key = ? AND fence = ? RETURNING {WORK_COLUMNS}"
            ));
            for r in &rows {
                let old = work_row(r)?;
                let row = sqlx::query(&q)
                    .bind(holder.to_owned())
                    .bind(now)
                    .bind(now + ttl_ms)
                    .bind(old.key.clone())
                    .bind(old.fence)
                    .fetch_optional(&mut *tx)
                    .await
                    .op("work.orphans.take")?;
                if let Some(r) = row {
                    out.push((work_row(&r)?, old));
                }
            }
            tx.commit().await.op("work.orphans.commit")?;
        } else {
            let q = self.sql(&select);
            let rows = sqlx::query(&q)
                .bind(plen)
                .bind(prefix.to_owned())
                .bind(now)
                .bind(limit)
                .fetch_all(&self.pool)
                .await
                .op("work.orphans.select")?;
            for r in &rows {
                let old = work_row(r)?;
                if let Some(new) = self.take_over_work(&old.key, old.fence, holder, ttl_ms).await? {
                    out.push((new, old));
                }
            }
        }
        Ok(out)
    }

    /// Extends a claim we still hold. `false` means it was lost (expired and claimed by someone else, or
    /// finished).
    pub async fn renew_work(
        &self,
        key: &str,
        holder: &str,
        fence: i64,
        ttl_ms: i64,
    ) -> Result<bool, StoreError> {
        let q = self.sql(
            "UPDATE replica_work SET expires_at = ? WHERE key = ? AND holder = ? AND fence = ? AND done_at IS NULL",
        );
        let done = sqlx::query(&q)
            .bind(now_ms() + ttl_ms)
            .bind(key.to_owned())
            .bind(holder.to_owned())
            .bind(fence)
            .execute(&self.pool)
            .await
            .op("work.renew")?;
        Ok(done.rows_affected() == 1)
    }

    /// Extends every unfinished claim of `holder` under `prefix` at once and returns them (key, fence): one
    /// statement per tick for a replica holding thousands of units (a BMC's event subscription each),
    /// where [`Store::renew_work`] per unit would be thousands. A claim held before and missing from the
    /// answer was lost (taken over after expiring, or released).
    pub async fn renew_held_work(
        &self,
        holder: &str,
        prefix: &str,
        ttl_ms: i64,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let q = self.sql(
            "UPDATE replica_work SET expires_at = ? WHERE holder = ? \
             AND substr(key, 1, CAST(? AS INTEGER)) = ? AND done_at IS NULL RETURNING key, fence",
        );
        let rows = sqlx::query(&q)
            .bind(now_ms() + ttl_ms)
            .bind(holder.to_owned())
            .bind(i64::try_from(prefix.len()).unwrap_or(i64::MAX))
            .bind(prefix.to_owned())
            .fetch_all(&self.pool)
            .await
            .op("work.renew_held")?;
        rows.iter()
            .map(|r| Ok((r.try_get("key").op("work.key")?, r.try_get("fence").op("work.fence")?)))
            .collect()
    }

    /// Marks the work done, once, by its current holder only: `false` when the claim was lost meanwhile
    /// (the fencing check at the write that matters).
    pub async fn finish_work(
        &self,
        key: &str,
        holder: &str,
        fence: i64,
        outcome: &str,
    ) -> Result<bool, StoreError> {
        let q = self.sql(
            "UPDATE replica_work SET done_at = ?, outcome = ? \
             WHERE key = ? AND holder = ? AND fence = ? AND done_at IS NULL",
        );
        let done = sqlx::query(&q)
            .bind(now_ms())
            .bind(outcome.to_owned())
            .bind(key.to_owned())
            .bind(holder.to_owned())
            .bind(fence)
            .execute(&self.pool)
            .await
            .op("work.finish")?;
        Ok(done.rows_affected() == 1)
    }

    /// Gives unfinished work back (another replica may claim it at once); a claim no longer ours is left.
    pub async fn release_work(&self, key: &str, holder: &str, fence: i64) -> Result<bool, StoreError> {
        let q = self
            .sql("DELETE FROM replica_work WHERE key = ? AND holder = ? AND fence = ? AND done_at IS NULL");
        let done = sqlx::query(&q)
            .bind(key.to_owned())
            .bind(holder.to_owned())
            .bind(fence)
            .execute(&self.pool)
            .await
            .op("work.release")?;
        Ok(done.rows_affected() == 1)
    }

    /// Deletes finished work under `prefix` done before `before_ms` (old backup slots).
    pub async fn prune_done_work(&self, prefix: &str, before_ms: i64) -> Result<u64, StoreError> {
        let q =
            self.sql("DELETE FROM replica_work WHERE substr(key, 1, CAST(? AS INTEGER)) = ? AND done_at < ?");
        let done = sqlx::query(&q)
            .bind(i64::try_from(prefix.len()).unwrap_or(i64::MAX))
            .bind(prefix.to_owned())
            .bind(before_ms)
            .execute(&self.pool)
            .await
            .op("work.prune")?;
        Ok(done.rows_affected())
    }

    /// Starts counting job `job` from `slot_ms` unless it is known already (two replicas seeing a new job
    /// at once keep the first mark).
    pub async fn schedule_init(&self, job: &str, slot_ms: i64) -> Result<(), StoreError> {
        let q = self.sql(
            "INSERT INTO schedule_state (job, last_slot, updated_at) VALUES (?, ?, ?) ON CONFLICT (job) DO NOTHING",
        );
        sqlx::query(&q)
            .bind(job.to_owned())
            .bind(slot_ms)
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .op("schedule.init")?;
        Ok(())
    }

    /// Moves job `job`'s newest started slot forward to `slot_ms`, never back (replicas race here).
    pub async fn schedule_advance(&self, job: &str, slot_ms: i64) -> Result<(), StoreError> {
        let q = self
            .sql("UPDATE schedule_state SET last_slot = ?, updated_at = ? WHERE job = ? AND last_slot < ?");
        sqlx::query(&q)
            .bind(slot_ms)
            .bind(now_ms())
            .bind(job.to_owned())
            .bind(slot_ms)
            .execute(&self.pool)
            .await
            .op("schedule.advance")?;
        Ok(())
    }
}
