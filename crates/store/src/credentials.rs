//! Sealed BMC credentials and their rotation states (`pending`, `active`, `retired`, `failed`).
//!
//! The store never sees a password: the engine seals it before calling here. What the store guarantees is
//! the ordering a crash-safe rotation needs: a `pending` row is durable before the BMC is touched, and
//! promoting a row to `active` retires the previous one in the same transaction, so at every instant the
//! store names the secrets the BMC may hold.

use serde::Serialize;
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

/// One generation of a BMC credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CredentialRow {
    pub id: i64,
    /// The reference name (`sealed:NAME`).
    pub name: String,
    pub device: String,
    pub username: String,
    /// `pending`, `active`, `retired` or `failed`.
    pub state: String,
    #[serde(skip)]
    pub sealed: String,
    pub request_id: Option<String>,
    pub note: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

const COLUMNS: &str = "id, name, device, username, state, sealed, request_id, note, created_at, updated_at";

fn row(r: sqlx::any::AnyRow) -> Result<CredentialRow, StoreError> {
    Ok(CredentialRow {
        id: r.try_get("id").op("credentials.id")?,
        name: r.try_get("name").op("credentials.name")?,
        device: r.try_get("device").op("credentials.device")?,
        username: r.try_get("username").op("credentials.username")?,
        state: r.try_get("state").op("credentials.state")?,
        sealed: r.try_get("sealed").op("credentials.sealed")?,
        request_id: r.try_get("request_id").op("credentials.request_id")?,
        note: r.try_get("note").op("credentials.note")?,
        created_at_ms: r.try_get("created_at").op("credentials.created_at")?,
        updated_at_ms: r.try_get("updated_at").op("credentials.updated_at")?,
    })
}

impl Store {
    /// Adds a generation (durable when this returns); returns its id.
    pub async fn insert_bmc_credential(
        &self,
        name: &str,
        device: &str,
        username: &str,
        state: &str,
        sealed: &str,
        request_id: Option<&str>,
    ) -> Result<i64, StoreError> {
        let now = now_ms();
        let q = self.sql(
            "INSERT INTO bmc_credentials (name, device, username, state, sealed, request_id, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        );
        let r = sqlx::query(&q)
            .bind(name.to_owned())
            .bind(device.to_owned())
            .bind(username.to_owned())
            .bind(state.to_owned())
            .bind(sealed.to_owned())
            .bind(request_id.map(str::to_owned))
            .bind(now)
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .op("credentials.insert")?;
        r.try_get::<i64, _>("id").op("credentials.insert.id")
    }

    /// Every generation of `name` for `device`, newest first.
    pub async fn bmc_credentials(&self, name: &str, device: &str) -> Result<Vec<CredentialRow>, StoreError> {
        let q = self.sql(&format!(
            "SELECT {COLUMNS} FROM bmc_credentials WHERE name = ? AND device = ? ORDER BY id DESC"
        ));
        let rows = sqlx::query(&q)
            .bind(name.to_owned())
            .bind(device.to_owned())
            .fetch_all(&self.pool)
            .await
            .op("credentials.select")?;
        rows.into_iter().map(row).collect()
    }

    /// The current generation of `name` for `device`.
    pub async fn active_bmc_credential(
        &self,
        name: &str,
        device: &str,
    ) -> Result<Option<CredentialRow>, StoreError> {
        Ok(self.bmc_credentials(name, device).await?.into_iter().find(|r| r.state == "active"))
    }

    /// Every generation of every device (for listings), newest first.
    pub async fn all_bmc_credentials(&self) -> Result<Vec<CredentialRow>, StoreError> {
        let q = self.sql(&format!("SELECT {COLUMNS} FROM bmc_credentials ORDER BY id DESC"));
        let rows = sqlx::query(&q).fetch_all(&self.pool).await.op("credentials.all")?;
        rows.into_iter().map(row).collect()
    }

    /// Marks one generation (`failed`, `retired`), with a note saying why.
    pub async fn set_bmc_credential_state(&self, id: i64, state: &str, note: &str) -> Result<(), StoreError> {
        let q = self.sql("UPDATE bmc_credentials SET state = ?, note = ?, updated_at = ? WHERE id = ?");
        sqlx::query(&q)
            .bind(state.to_owned())
            .bind(note.to_owned())
            .bind(now_ms())
            .bind(id)
            .execute(&self.pool)
            .await
            .op("credentials.state")?;
        Ok(())
    }

    /// Makes `id` the active generation and retires the previously active one(s) of the same name and
    /// device, in one transaction.
    pub async fn activate_bmc_credential(&self, id: i64, note: &str) -> Result<(), StoreError> {
        let now = now_ms();
        let mut tx = self.begin_write().await.op("credentials.activate.begin")?;
        let q = self.sql("SELECT name, device FROM bmc_credentials WHERE id = ?");
        let r = sqlx::query(&q).bind(id).fetch_one(&mut *tx).await.op("credentials.activate.select")?;
        let name: String = r.try_get("name").op("credentials.activate.name")?;
        let device: String = r.try_get("device").op("credentials.activate.device")?;
        let q = self.sql(
            "UPDATE bmc_credentials SET state = 'retired', note = ?, updated_at = ? \
             WHERE name = ? AND device = ? AND state = 'active' AND id <> ?",
        );
        sqlx::query(&q)
            .bind(format!("superseded by generation {id}"))
            .bind(now)
            .bind(name)
            .bind(device)
            .bind(id)
            .execute(&mut *tx)
            .await
            .op("credentials.activate.retire")?;
        let q =
            self.sql("UPDATE bmc_credentials SET state = 'active', note = ?, updated_at = ? WHERE id = ?");
        sqlx::query(&q)
            .bind(note.to_owned())
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await
            .op("credentials.activate.set")?;
        tx.commit().await.op("credentials.activate.commit")?;
        Ok(())
    }
}
