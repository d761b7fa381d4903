//! Per-target action leases and request idempotency, in the database so that they hold across processes
//! and replicas (in-process locks are only an optimisation on top).
//!
//! A lease is taken with one atomic statement: insert the row, or replace it only when it has expired.
//! SQLite and PostgreSQL both evaluate `ON CONFLICT … DO UPDATE … WHERE` atomically, so two takers never
//! both succeed. `fence` increases with every new holder: renewals and releases name it, so a holder that
//! was paused past its expiry (and lost the lease) cannot extend or delete its successor's lease.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

/// Who holds a target, and for what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseRow {
    pub target: String,
    pub holder: String,
    pub request_id: String,
    pub action: String,
    pub acquired_at_ms: i64,
    pub expires_at_ms: i64,
    pub fence: i64,
}

/// The result of trying to take a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseAttempt {
    /// Taken; `previous` is the expired lease it replaced (its holder died or hung), if any.
    Acquired { lease: LeaseRow, previous: Option<LeaseRow> },
    /// Someone else holds it and it has not expired.
    Held(LeaseRow),
}

/// One request as the idempotency table knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRow {
    pub request_id: String,
    pub target: String,
    pub action: String,
    pub actor: String,
    /// `running`, `done`, `coalesced` (answered by another request's execution), or `interrupted` (its
    /// process stopped while it ran; the outcome says what is known).
    pub state: String,
    pub outcome: Option<serde_json::Value>,
    pub started_at_ms: i64,
    pub finished_at_ms: Option<i64>,
}

fn lease_row(r: &sqlx::any::AnyRow) -> Result<LeaseRow, StoreError> {
    Ok(LeaseRow {
        target: r.try_get("target").op("lease.target")?,
        holder: r.try_get("holder").op("lease.holder")?,
        request_id: r.try_get("request_id").op("lease.request_id")?,
        action: r.try_get("action").op("lease.action")?,
        acquired_at_ms: r.try_get("acquired_at").op("lease.acquired_at")?,
        expires_at_ms: r.try_get("expires_at").op("lease.expires_at")?,
        fence: r.try_get("fence").op("lease.fence")?,
    })
}

fn request_row(r: &sqlx::any::AnyRow) -> Result<RequestRow, StoreError> {
    let outcome: Option<String> = r.try_get("outcome_json").op("request.outcome")?;
    Ok(RequestRow {
        request_id: r.try_get("request_id").op("request.id")?,
        target: r.try_get("target").op("request.target")?,
        action: r.try_get("action").op("request.action")?,
        actor: r.try_get("actor").op("request.actor")?,
        state: r.try_get("state").op("request.state")?,
        outcome: outcome
            .map(|s| serde_json::from_str(&s))
            .transpose()
            .map_err(|source| StoreError::Json { op: "request.outcome", source })?,
        started_at_ms: r.try_get("started_at").op("request.started_at")?,
        finished_at_ms: r.try_get("finished_at").op("request.finished_at")?,
    })
}

const LEASE_COLUMNS: &str = "target, holder, request_id, action, acquired_at, expires_at, fence";

impl Store {
    /// The current lease on `target`, expired or not.
    pub async fn lease(&self, target: &str) -> Result<Option<LeaseRow>, StoreError> {
        let q = self.sql(&format!("SELECT {LEASE_COLUMNS} FROM leases WHERE target = ?"));
        let row = sqlx::query(&q).bind(target.to_owned()).fetch_optional(&self.pool).await.op("lease.get")?;
        row.as_ref().map(lease_row).transpose()
    }

    /// Takes the lease on `target` for `ttl_ms` unless a live one exists.
    pub async fn try_lease(
        &self,
        target: &str,
        holder: &str,
        request_id: &str,
        action: &str,
        ttl_ms: i64,
    ) -> Result<LeaseAttempt, StoreError> {
        let before = self.lease(target).await?;
        let now = now_ms();
        let q = self.sql(&format!(
            "INSERT INTO leases ({LEASE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 1) \
             ON CONFLICT (target) DO UPDATE SET holder = excluded.holder, request_id = excluded.request_id, \
             action = excluded.action, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, \
             fence = leases.fence + 1 WHERE leases.expires_at < ? \
             RETURNING {LEASE_COLUMNS}"
        ));
        let row = sqlx::query(&q)
            .bind(target.to_owned())
            .bind(holder.to_owned())
            .bind(request_id.to_owned())
            .bind(action.to_owned())
            .bind(now)
            .bind(now + ttl_ms)
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .op("lease.take")?;
        match row {
            Some(r) => {
                let lease = lease_row(&r)?;
                // `before` was read outside the statement; it is the replaced lease only if its fence is the
                // one just below ours (nobody else took and lost it in between).
                let previous = before.filter(|b| b.fence + 1 == lease.fence);
                Ok(LeaseAttempt::Acquired { lease, previous })
            }
            None => match self.lease(target).await? {
                Some(held) => Ok(LeaseAttempt::Held(held)),
                // Released between our statement and the read: the caller simply tries again.
                None => Err(StoreError::Query {
                    op: "lease.take",
                    source: sqlx::Error::Protocol("lease vanished while being taken; retry".into()),
                }),
            },
        }
    }

    /// Takes over a lease whose holder is known to be gone (a dead process on this host), only if it is
    /// still the lease with `fence` (nobody else took it meanwhile).
    pub async fn take_over_lease(
        &self,
        target: &str,
        fence: i64,
        holder: &str,
        request_id: &str,
        action: &str,
        ttl_ms: i64,
    ) -> Result<Option<LeaseRow>, StoreError> {
        let now = now_ms();
        let q = self.sql(&format!(
            "UPDATE leases SET holder = ?, request_id = ?, action = ?, acquired_at = ?, expires_at = ?, \
             fence = fence + 1 WHERE target = ? AND fence = ? RETURNING {LEASE_COLUMNS}"
        ));
        let row = sqlx::query(&q)
            .bind(holder.to_owned())
            .bind(request_id.to_owned())
            .bind(action.to_owned())
            .bind(now)
            .bind(now + ttl_ms)
            .bind(target.to_owned())
            .bind(fence)
            .fetch_optional(&self.pool)
            .await
            .op("lease.take_over")?;
        row.as_ref().map(lease_row).transpose()
    }

    /// Extends a lease we still hold. `false` means it was lost (expired and taken by someone else).
    pub async fn renew_lease(
        &self,
        target: &str,
        holder: &str,
        fence: i64,
        ttl_ms: i64,
    ) -> Result<bool, StoreError> {
        let q = self.sql("UPDATE leases SET expires_at = ? WHERE target = ? AND holder = ? AND fence = ?");
        let done = sqlx::query(&q)
            .bind(now_ms() + ttl_ms)
            .bind(target.to_owned())
            .bind(holder.to_owned())
            .bind(fence)
            .execute(&self.pool)
            .await
            .op("lease.renew")?;
        Ok(done.rows_affected() == 1)
    }

    /// Gives a lease back; a lease that is no longer ours is left alone.
    pub async fn release_lease(&self, target: &str, holder: &str, fence: i64) -> Result<bool, StoreError> {
        let q = self.sql("DELETE FROM leases WHERE target = ? AND holder = ? AND fence = ?");
        let done = sqlx::query(&q)
            .bind(target.to_owned())
            .bind(holder.to_owned())
            .bind(fence)
            .execute(&self.pool)
            .await
            .op("lease.release")?;
        Ok(done.rows_affected() == 1)
    }

    /// Every lease that has not expired (for status pages and `/metrics`).
    pub async fn live_leases(&self) -> Result<Vec<LeaseRow>, StoreError> {
        let q =
            self.sql(&format!("SELECT {LEASE_COLUMNS} FROM leases WHERE expires_at >= ? ORDER BY target"));
        let rows = sqlx::query(&q).bind(now_ms()).fetch_all(&self.pool).await.op("lease.live")?;
        rows.iter().map(lease_row).collect()
    }

    /// Registers a request before acting. Returns the existing row instead when the id was seen before.
    pub async fn begin_request(
        &self,
        request_id: &str,
        target: &str,
        action: &str,
        actor: &str,
    ) -> Result<Option<RequestRow>, StoreError> {
        let q = self.sql(
            "INSERT INTO requests (request_id, target, action, actor, state, started_at) \
             VALUES (?, ?, ?, ?, 'running', ?) ON CONFLICT (request_id) DO NOTHING",
        );
        let done = sqlx::query(&q)
            .bind(request_id.to_owned())
            .bind(target.to_owned())
            .bind(action.to_owned())
            .bind(actor.to_owned())
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .op("request.begin")?;
        if done.rows_affected() == 1 {
            return Ok(None);
        }
        self.request(request_id).await
    }

    /// Records how a request ended (kept for replays).
    pub async fn finish_request(
        &self,
        request_id: &str,
        outcome: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.end_request(request_id, "done", outcome).await
    }

    /// Records that a request was answered by another one that did the same work while it waited; such a
    /// request never counts as an execution for [`Store::finished_since`].
    pub async fn coalesce_request(
        &self,
        request_id: &str,
        outcome: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.end_request(request_id, "coalesced", outcome).await
    }

    async fn end_request(
        &self,
        request_id: &str,
        state: &str,
        outcome: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let q =
            self.sql("UPDATE requests SET state = ?, outcome_json = ?, finished_at = ? WHERE request_id = ?");
        sqlx::query(&q)
            .bind(state.to_owned())
            .bind(outcome.to_string())
            .bind(now_ms())
            .bind(request_id.to_owned())
            .execute(&self.pool)
            .await
            .op("request.finish")?;
        Ok(())
    }

    /// Ends a request whose process stopped while it ran (its lease was taken over, or its outcome slot was
    /// left by a dead process): `interrupted`, with what is known. Only a request still `running` changes,
    /// so an outcome recorded meanwhile is never overwritten.
    pub async fn interrupt_request(
        &self,
        request_id: &str,
        outcome: &serde_json::Value,
    ) -> Result<bool, StoreError> {
        let q = self.sql(
            "UPDATE requests SET state = 'interrupted', outcome_json = ?, finished_at = ? \
             WHERE request_id = ? AND state = 'running'",
        );
        let done = sqlx::query(&q)
            .bind(outcome.to_string())
            .bind(now_ms())
            .bind(request_id.to_owned())
            .execute(&self.pool)
            .await
            .op("request.interrupt")?;
        Ok(done.rows_affected() == 1)
    }

    /// Forgets a request that never acted (refused before any effect), so its id can be used again.
    pub async fn drop_request(&self, request_id: &str) -> Result<(), StoreError> {
        let q = self.sql("DELETE FROM requests WHERE request_id = ? AND state = 'running'");
        sqlx::query(&q).bind(request_id.to_owned()).execute(&self.pool).await.op("request.drop")?;
        Ok(())
    }

    pub async fn request(&self, request_id: &str) -> Result<Option<RequestRow>, StoreError> {
        let q = self.sql(
            "SELECT request_id, target, action, actor, state, outcome_json, started_at, finished_at \
             FROM requests WHERE request_id = ?",
        );
        let row =
            sqlx::query(&q).bind(request_id.to_owned()).fetch_optional(&self.pool).await.op("request.get")?;
        row.as_ref().map(request_row).transpose()
    }

    /// The newest finished request of `action` on `target` that finished at or after `since_ms`.
    pub async fn finished_since(
        &self,
        target: &str,
        action: &str,
        since_ms: i64,
    ) -> Result<Option<RequestRow>, StoreError> {
        let q = self.sql(
            "SELECT request_id, target, action, actor, state, outcome_json, started_at, finished_at \
             FROM requests WHERE target = ? AND action = ? AND state = 'done' AND finished_at >= ? \
             ORDER BY finished_at DESC LIMIT 1",
        );
        let row = sqlx::query(&q)
            .bind(target.to_owned())
            .bind(action.to_owned())
            .bind(since_ms)
            .fetch_optional(&self.pool)
            .await
            .op("request.finished_since")?;
        row.as_ref().map(request_row).transpose()
    }
}
