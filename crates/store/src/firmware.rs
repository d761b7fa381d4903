//! Firmware rollouts: the plan as applied, each wave's state and each BMC's state (`firmware_rollouts`,
//! `firmware_waves`, `firmware_targets`). The engine writes a row before and after every step so that a
//! rollout killed mid-way resumes from the store; the meaning of the states lives in the engine.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

/// One rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutRow {
    pub id: String,
    pub component: String,
    pub version: String,
    pub plan: String,
    pub state: String,
    pub actor: String,
    pub detail: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One BMC of a rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolloutTargetRow {
    pub rollout: String,
    pub target: String,
    pub wave: i64,
    pub state: String,
    pub task: Option<String>,
    pub before_version: Option<String>,
    pub after_version: Option<String>,
    pub detail: Option<String>,
    pub updated_at: i64,
}

impl Store {
    /// Records a rollout and its targets (state `planned`, each target `pending`) unless it exists; returns
    /// whether it was new. An existing rollout is left as it is (a resume).
    pub async fn firmware_rollout_begin(
        &self,
        r: &RolloutRow,
        targets: &[(String, i64)],
        waves: i64,
    ) -> Result<bool, StoreError> {
        if self.firmware_rollout(&r.id).await?.is_some() {
            return Ok(false);
        }
        let mut tx = self.pool.begin().await.op("firmware.begin")?;
        let now = now_ms();
        let q = self.sql(
            "INSERT INTO firmware_rollouts (id, component, version, plan, state, actor, detail, created_at, \
             updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        );
        sqlx::query(&q)
            .bind(r.id.clone())
            .bind(r.component.clone())
            .bind(r.version.clone())
            .bind(r.plan.clone())
            .bind(r.state.clone())
            .bind(r.actor.clone())
            .bind(r.detail.clone())
            .bind(now)
            .bind(now)
            .execute(&mut *tx)
            .await
            .op("firmware.rollout_insert")?;
        let q = self.sql("INSERT INTO firmware_waves (rollout, wave, state, updated_at) VALUES (?, ?, ?, ?)");
        for w in 0..waves {
            sqlx::query(&q)
                .bind(r.id.clone())
                .bind(w)
                .bind("pending")
                .bind(now)
                .execute(&mut *tx)
                .await
                .op("firmware.wave_insert")?;
        }
        let q = self.sql(
            "INSERT INTO firmware_targets (rollout, target, wave, state, updated_at) VALUES (?, ?, ?, ?, ?)",
        );
        for (t, w) in targets {
            sqlx::query(&q)
                .bind(r.id.clone())
                .bind(t.clone())
                .bind(*w)
                .bind("pending")
                .bind(now)
                .execute(&mut *tx)
                .await
                .op("firmware.target_insert")?;
        }
        tx.commit().await.op("firmware.begin_commit")?;
        Ok(true)
    }

    /// One rollout, if recorded.
    pub async fn firmware_rollout(&self, id: &str) -> Result<Option<RolloutRow>, StoreError> {
        let q = self.sql(
            "SELECT id, component, version, plan, state, actor, detail, created_at, updated_at \
             FROM firmware_rollouts WHERE id = ?",
        );
        let row = sqlx::query(&q).bind(id.to_owned()).fetch_optional(&self.pool).await.op("firmware.get")?;
        row.map(|r| {
            Ok(RolloutRow {
                id: r.try_get("id").op("firmware.id")?,
                component: r.try_get("component").op("firmware.component")?,
                version: r.try_get("version").op("firmware.version")?,
                plan: r.try_get("plan").op("firmware.plan")?,
                state: r.try_get("state").op("firmware.state")?,
                actor: r.try_get("actor").op("firmware.actor")?,
                detail: r.try_get("detail").op("firmware.detail")?,
                created_at: r.try_get("created_at").op("firmware.created")?,
                updated_at: r.try_get("updated_at").op("firmware.updated")?,
            })
        })
        .transpose()
    }

    /// Sets a rollout's state.
    pub async fn firmware_rollout_state(
        &self,
        id: &str,
        state: &str,
        detail: Option<&str>,
    ) -> Result<(), StoreError> {
        let q = self.sql("UPDATE firmware_rollouts SET state = ?, detail = ?, updated_at = ? WHERE id = ?");
        sqlx::query(&q)
            .bind(state.to_owned())
            .bind(detail.map(str::to_owned))
            .bind(now_ms())
            .bind(id.to_owned())
            .execute(&self.pool)
            .await
            .op("firmware.rollout_state")?;
        Ok(())
    }

    /// Each wave's state, in order.
    pub async fn firmware_waves(&self, id: &str) -> Result<Vec<(i64, String)>, StoreError> {
        let q = self.sql("SELECT wave, state FROM firmware_waves WHERE rollout = ? ORDER BY wave");
        let rows = sqlx::query(&q).bind(id.to_owned()).fetch_all(&self.pool).await.op("firmware.waves")?;
        rows.iter()
            .map(|r| {
                Ok((r.try_get("wave").op("firmware.wave")?, r.try_get("state").op("firmware.wave_state")?))
            })
            .collect()
    }

    /// Sets a wave's state.
    pub async fn firmware_wave_state(&self, id: &str, wave: i64, state: &str) -> Result<(), StoreError> {
        let q =
            self.sql("UPDATE firmware_waves SET state = ?, updated_at = ? WHERE rollout = ? AND wave = ?");
        sqlx::query(&q)
            .bind(state.to_owned())
            .bind(now_ms())
            .bind(id.to_owned())
            .bind(wave)
            .execute(&self.pool)
            .await
            .op("firmware.wave_state")?;
        Ok(())
    }

    /// Every target of a rollout, by wave then name.
    pub async fn firmware_targets(&self, id: &str) -> Result<Vec<RolloutTargetRow>, StoreError> {
        let q = self.sql(
            "SELECT rollout, target, wave, state, task, before_version, after_version, detail, updated_at \
             FROM firmware_targets WHERE rollout = ? ORDER BY wave, target",
        );
        let rows = sqlx::query(&q).bind(id.to_owned()).fetch_all(&self.pool).await.op("firmware.targets")?;
        rows.iter()
            .map(|r| {
                Ok(RolloutTargetRow {
                    rollout: r.try_get("rollout").op("firmware.t_rollout")?,
                    target: r.try_get("target").op("firmware.t_target")?,
                    wave: r.try_get("wave").op("firmware.t_wave")?,
                    state: r.try_get("state").op("firmware.t_state")?,
                    task: r.try_get("task").op("firmware.t_task")?,
                    before_version: r.try_get("before_version").op("firmware.t_before")?,
                    after_version: r.try_get("after_version").op("firmware.t_after")?,
                    detail: r.try_get("detail").op("firmware.t_detail")?,
                    updated_at: r.try_get("updated_at").op("firmware.t_updated")?,
                })
            })
            .collect()
    }

    /// Rewrites one target's row (state, task, versions, detail).
    pub async fn firmware_target_set(&self, t: &RolloutTargetRow) -> Result<(), StoreError> {
        let q = self.sql(
            "UPDATE firmware_targets SET state = ?, task = ?, before_version = ?, after_version = ?, \
             detail = ?, updated_at = ? WHERE rollout = ? AND target = ?",
        );
        sqlx::query(&q)
            .bind(t.state.clone())
            .bind(t.task.clone())
            .bind(t.before_version.clone())
            .bind(t.after_version.clone())
            .bind(t.detail.clone())
            .bind(now_ms())
            .bind(t.rollout.clone())
            .bind(t.target.clone())
            .execute(&self.pool)
            .await
            .op("firmware.target_set")?;
        Ok(())
    }
}
