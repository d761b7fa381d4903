//! What `lifeline serve` keeps besides the engine's tables: local users (argon2id hashes made by the
//! caller; the store never sees a password), browser sessions and API tokens (stored by hash only, so a
//! copy of the database does not log anyone in), fault records, and the scheduler's last-run slots.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRow {
    pub name: String,
    /// `viewer`, `operator`, `admin`.
    pub role: String,
    #[serde(skip_serializing)]
    pub password_hash: String,
    pub disabled: bool,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRow {
    pub username: String,
    pub csrf: String,
    pub expires_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRow {
    /// Public id (the token's prefix), safe to show and to revoke by.
    pub id: String,
    #[serde(skip_serializing)]
    pub token_hash: String,
    pub username: String,
    pub role: String,
    pub created_at_ms: i64,
    pub expires_at_ms: Option<i64>,
    pub revoked_at_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRow {
    pub id: i64,
    pub kind: String,
    pub device: String,
    pub severity: String,
    /// `open`, `acked`, `resolved`.
    pub state: String,
    pub message: String,
    pub detail: serde_json::Value,
    /// How many times the rule fired while this record was open.
    pub count: i64,
    pub opened_at_ms: i64,
    pub updated_at_ms: i64,
    pub acked_by: Option<String>,
    pub acked_at_ms: Option<i64>,
}

fn user_row(r: &sqlx::any::AnyRow) -> Result<UserRow, StoreError> {
    Ok(UserRow {
        name: r.try_get("name").op("user.name")?,
        role: r.try_get("role").op("user.role")?,
        password_hash: r.try_get("password_hash").op("user.hash")?,
        disabled: r.try_get::<i64, _>("disabled").op("user.disabled")? != 0,
        created_at_ms: r.try_get("created_at").op("user.created")?,
        updated_at_ms: r.try_get("updated_at").op("user.updated")?,
    })
}

fn token_row(r: &sqlx::any::AnyRow) -> Result<TokenRow, StoreError> {
    Ok(TokenRow {
        id: r.try_get("id").op("token.id")?,
        token_hash: r.try_get("token_hash").op("token.hash")?,
        username: r.try_get("username").op("token.user")?,
        role: r.try_get("role").op("token.role")?,
        created_at_ms: r.try_get("created_at").op("token.created")?,
        expires_at_ms: r.try_get("expires_at").op("token.expires")?,
        revoked_at_ms: r.try_get("revoked_at").op("token.revoked")?,
    })
}

fn fault_row(r: &sqlx::any::AnyRow) -> Result<FaultRow, StoreError> {
    let detail: String = r.try_get("detail_json").op("fault.detail")?;
    Ok(FaultRow {
        id: r.try_get("id").op("fault.id")?,
        kind: r.try_get("kind").op("fault.kind")?,
        device: r.try_get("device").op("fault.device")?,
        severity: r.try_get("severity").op("fault.severity")?,
        state: r.try_get("state").op("fault.state")?,
        message: r.try_get("message").op("fault.message")?,
        detail: serde_json::from_str(&detail)
            .map_err(|source| StoreError::Json { op: "fault.detail", source })?,
        count: r.try_get("count").op("fault.count")?,
        opened_at_ms: r.try_get("opened_at").op("fault.opened")?,
        updated_at_ms: r.try_get("updated_at").op("fault.updated")?,
        acked_by: r.try_get("acked_by").op("fault.acked_by")?,
        acked_at_ms: r.try_get("acked_at").op("fault.acked_at")?,
    })
}

const USER_COLUMNS: &str = "name, role, password_hash, disabled, created_at, updated_at";
const TOKEN_COLUMNS: &str = "id, token_hash, username, role, created_at, expires_at, revoked_at";
const FAULT_COLUMNS: &str = "id, kind, device, severity, state, message, detail_json, count, opened_at, updated_at, acked_by, acked_at";

impl Store {
    /// Adds a user; `Ok(false)` when the name exists already.
    pub async fn user_add(&self, name: &str, role: &str, password_hash: &str) -> Result<bool, StoreError> {
        let now = now_ms();
        let q = self.sql(
            "INSERT INTO users (name, role, password_hash, disabled, created_at, updated_at) \
             VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT (name) DO NOTHING",
        );
        let done = sqlx::query(&q)
            .bind(name.to_owned())
            .bind(role.to_owned())
            .bind(password_hash.to_owned())
            .bind(now)
            .bind(now)
            .execute(&self.pool)
            .await
            .op("user.add")?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn user(&self, name: &str) -> Result<Option<UserRow>, StoreError> {
        let q = self.sql(&format!("SELECT {USER_COLUMNS} FROM users WHERE name = ?"));
        let row = sqlx::query(&q).bind(name.to_owned()).fetch_optional(&self.pool).await.op("user.get")?;
        row.as_ref().map(user_row).transpose()
    }

    pub async fn users(&self) -> Result<Vec<UserRow>, StoreError> {
        let q = format!("SELECT {USER_COLUMNS} FROM users ORDER BY name");
        let rows = sqlx::query(&q).fetch_all(&self.pool).await.op("user.list")?;
        rows.iter().map(user_row).collect()
    }

    /// Sets a new password hash; `Ok(false)` when there is no such user. Ends the user's sessions.
    pub async fn user_set_password(&self, name: &str, password_hash: &str) -> Result<bool, StoreError> {
        let q = self.sql("UPDATE users SET password_hash = ?, updated_at = ? WHERE name = ?");
        let done = sqlx::query(&q)
            .bind(password_hash.to_owned())
            .bind(now_ms())
            .bind(name.to_owned())
            .execute(&self.pool)
            .await
            .op("user.passwd")?;
        self.sessions_end_for(name).await?;
        Ok(done.rows_affected() == 1)
    }

    /// Disables (or re-enables) a user; disabling ends their sessions and revokes their tokens.
    pub async fn user_set_disabled(&self, name: &str, disabled: bool) -> Result<bool, StoreError> {
        let q = self.sql("UPDATE users SET disabled = ?, updated_at = ? WHERE name = ?");
        let done = sqlx::query(&q)
            .bind(i64::from(disabled))
            .bind(now_ms())
            .bind(name.to_owned())
            .execute(&self.pool)
            .await
            .op("user.disable")?;
        if disabled {
            self.sessions_end_for(name).await?;
            let q =
                self.sql("UPDATE api_tokens SET revoked_at = ? WHERE username = ? AND revoked_at IS NULL");
            sqlx::query(&q)
                .bind(now_ms())
                .bind(name.to_owned())
                .execute(&self.pool)
                .await
                .op("user.revoke")?;
        }
        Ok(done.rows_affected() == 1)
    }

    pub async fn session_create(
        &self,
        id_hash: &str,
        username: &str,
        csrf: &str,
        expires_at_ms: i64,
    ) -> Result<(), StoreError> {
        let q = self.sql(
            "INSERT INTO web_sessions (id_hash, username, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
        );
        sqlx::query(&q)
            .bind(id_hash.to_owned())
            .bind(username.to_owned())
            .bind(csrf.to_owned())
            .bind(now_ms())
            .bind(expires_at_ms)
            .execute(&self.pool)
            .await
            .op("session.create")?;
        Ok(())
    }

    /// A live (unexpired) session.
    pub async fn session(&self, id_hash: &str) -> Result<Option<SessionRow>, StoreError> {
        let q = self
            .sql("SELECT username, csrf, expires_at FROM web_sessions WHERE id_hash = ? AND expires_at > ?");
        let row = sqlx::query(&q)
            .bind(id_hash.to_owned())
            .bind(now_ms())
            .fetch_optional(&self.pool)
            .await
            .op("session.get")?;
        row.map(|r| {
            Ok(SessionRow {
                username: r.try_get("username").op("session.user")?,
                csrf: r.try_get("csrf").op("session.csrf")?,
                expires_at_ms: r.try_get("expires_at").op("session.expires")?,
            })
        })
        .transpose()
    }

    pub async fn session_end(&self, id_hash: &str) -> Result<(), StoreError> {
        let q = self.sql("DELETE FROM web_sessions WHERE id_hash = ?");
        sqlx::query(&q).bind(id_hash.to_owned()).execute(&self.pool).await.op("session.end")?;
        Ok(())
    }

    async fn sessions_end_for(&self, username: &str) -> Result<(), StoreError> {
        let q = self.sql("DELETE FROM web_sessions WHERE username = ?");
        sqlx::query(&q).bind(username.to_owned()).execute(&self.pool).await.op("session.end_user")?;
        Ok(())
    }

    pub async fn token_create(&self, t: &TokenRow) -> Result<(), StoreError> {
        let q = self.sql(&format!("INSERT INTO api_tokens ({TOKEN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"));
        sqlx::query(&q)
            .bind(t.id.clone())
            .bind(t.token_hash.clone())
            .bind(t.username.clone())
            .bind(t.role.clone())
            .bind(t.created_at_ms)
            .bind(t.expires_at_ms)
            .bind(t.revoked_at_ms)
            .execute(&self.pool)
            .await
            .op("token.create")?;
        Ok(())
    }

    pub async fn token(&self, id: &str) -> Result<Option<TokenRow>, StoreError> {
        let q = self.sql(&format!("SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE id = ?"));
        let row = sqlx::query(&q).bind(id.to_owned()).fetch_optional(&self.pool).await.op("token.get")?;
        row.as_ref().map(token_row).transpose()
    }

    /// Tokens of one user, or of everyone.
    pub async fn tokens(&self, username: Option<&str>) -> Result<Vec<TokenRow>, StoreError> {
        let rows = match username {
            Some(u) => {
                let q = self.sql(&format!(
                    "SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE username = ? ORDER BY created_at"
                ));
                sqlx::query(&q).bind(u.to_owned()).fetch_all(&self.pool).await
            }
            None => {
                let q = format!("SELECT {TOKEN_COLUMNS} FROM api_tokens ORDER BY created_at");
                sqlx::query(&q).fetch_all(&self.pool).await
            }
        }
        .op("token.list")?;
        rows.iter().map(token_row).collect()
    }

    pub async fn token_revoke(&self, id: &str) -> Result<bool, StoreError> {
        let q = self.sql("UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL");
        let done = sqlx::query(&q)
            .bind(now_ms())
            .bind(id.to_owned())
            .execute(&self.pool)
            .await
            .op("token.revoke")?;
        Ok(done.rows_affected() == 1)
    }

    /// Opens a fault, or bumps the open (or acknowledged) one of the same kind on the same device.
    /// Returns the record and whether it is new.
    pub async fn fault_raise(
        &self,
        kind: &str,
        device: &str,
        severity: &str,
        message: &str,
        detail: &serde_json::Value,
    ) -> Result<(FaultRow, bool), StoreError> {
        let now = now_ms();
        let q = self.sql(&format!(
            "SELECT {FAULT_COLUMNS} FROM faults WHERE kind = ? AND device = ? AND state <> 'resolved' \
             ORDER BY id DESC LIMIT 1"
        ));
        let open = sqlx::query(&q)
            .bind(kind.to_owned())
            .bind(device.to_owned())
            .fetch_optional(&self.pool)
            .await
            .op("fault.find")?;
        if let Some(r) = open {
            let f = fault_row(&r)?;
            let q = self.sql("UPDATE faults SET count = count + 1, updated_at = ?, message = ?, detail_json = ? WHERE id = ?");
            sqlx::query(&q)
                .bind(now)
                .bind(message.to_owned())
                .bind(detail.to_string())
                .bind(f.id)
                .execute(&self.pool)
                .await
                .op("fault.bump")?;
            let f = self.fault(f.id).await?.unwrap_or(f);
            return Ok((f, false));
        }
        let q = self.sql(
            "INSERT INTO faults (kind, device, severity, state, message, detail_json, count, opened_at, updated_at) \
             VALUES (?, ?, ?, 'open', ?, ?, 1, ?, ?) RETURNING id",
        );
        let row = sqlx::query(&q)
            .bind(kind.to_owned())
            .bind(device.to_owned())
            .bind(severity.to_owned())
            .bind(message.to_owned())
            .bind(detail.to_string())
            .bind(now)
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .op("fault.insert")?;
        let id: i64 = row.try_get("id").op("fault.id")?;
        let f = self
            .fault(id)
            .await?
            .ok_or(StoreError::Query { op: "fault.reread", source: sqlx::Error::RowNotFound })?;
        self.touched();
        Ok((f, true))
    }

    /// Marks the open faults of a kind on a device resolved (the condition went away).
    pub async fn fault_resolve(&self, kind: &str, device: &str) -> Result<u64, StoreError> {
        let q = self.sql("UPDATE faults SET state = 'resolved', updated_at = ? WHERE kind = ? AND device = ? AND state <> 'resolved'");
        let done = sqlx::query(&q)
            .bind(now_ms())
            .bind(kind.to_owned())
            .bind(device.to_owned())
            .execute(&self.pool)
            .await
            .op("fault.resolve")?;
        if done.rows_affected() > 0 {
            self.touched();
        }
        Ok(done.rows_affected())
    }

    pub async fn fault(&self, id: i64) -> Result<Option<FaultRow>, StoreError> {
        let q = self.sql(&format!("SELECT {FAULT_COLUMNS} FROM faults WHERE id = ?"));
        let row = sqlx::query(&q).bind(id).fetch_optional(&self.pool).await.op("fault.get")?;
        row.as_ref().map(fault_row).transpose()
    }

    /// Newest first; `state` filters (`open`, `acked`, `resolved`).
    pub async fn faults(&self, state: Option<&str>, limit: i64) -> Result<Vec<FaultRow>, StoreError> {
        let rows = match state {
            Some(s) => {
                let q = self.sql(&format!(
                    "SELECT {FAULT_COLUMNS} FROM faults WHERE state = ? ORDER BY id DESC LIMIT ?"
                ));
                sqlx::query(&q).bind(s.to_owned()).bind(limit).fetch_all(&self.pool).await
            }
            None => {
                let q = self.sql(&format!("SELECT {FAULT_COLUMNS} FROM faults ORDER BY id DESC LIMIT ?"));
                sqlx::query(&q).bind(limit).fetch_all(&self.pool).await
            }
        }
        .op("fault.list")?;
        rows.iter().map(fault_row).collect()
    }

    /// Acknowledges an open fault; `Ok(false)` when it is not open.
    pub async fn fault_ack(&self, id: i64, by: &str) -> Result<bool, StoreError> {
        let now = now_ms();
        let q = self.sql(
            "UPDATE faults SET state = 'acked', acked_by = ?, acked_at = ?, updated_at = ? WHERE id = ? AND state = 'open'",
        );
        let done = sqlx::query(&q)
            .bind(by.to_owned())
            .bind(now)
            .bind(now)
            .bind(id)
            .execute(&self.pool)
            .await
            .op("fault.ack")?;
        if done.rows_affected() == 1 {
            self.touched();
        }
        Ok(done.rows_affected() == 1)
    }

    /// The newest slot a scheduled job has run.
    pub async fn schedule_last(&self, job: &str) -> Result<Option<i64>, StoreError> {
        let q = self.sql("SELECT last_slot FROM schedule_state WHERE job = ?");
        let row = sqlx::query(&q).bind(job.to_owned()).fetch_optional(&self.pool).await.op("schedule.get")?;
        row.map(|r| r.try_get("last_slot").op("schedule.slot")).transpose()
    }

    pub async fn schedule_mark(&self, job: &str, slot_ms: i64) -> Result<(), StoreError> {
        let q = self.sql(
            "INSERT INTO schedule_state (job, last_slot, updated_at) VALUES (?, ?, ?) \
             ON CONFLICT (job) DO UPDATE SET last_slot = excluded.last_slot, updated_at = excluded.updated_at",
        );
        sqlx::query(&q)
            .bind(job.to_owned())
            .bind(slot_ms)
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .op("schedule.mark")?;
        Ok(())
    }
}
