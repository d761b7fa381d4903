//! BMC sessions Lifeline keeps open, recorded so that a process that dies leaves none behind (the next
//! start reclaims or deletes them), and the write probe readiness uses.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

/// How an IPMI session is recorded in `session_uri`: `ipmi:0x` and its BMC-side session id (the managed
/// system's id from the RMCP+ Open Session Response, what Close Session names) in 8 hex digits. Nothing
/// secret goes with it (`token` is empty: Close Session from another session of ours needs no token).
pub const IPMI_SESSION_PREFIX: &str = "ipmi:0x";

/// `session_uri` of the IPMI session with this BMC-side id.
pub fn ipmi_session_uri(bmc_session_id: u32) -> String {
    format!("{IPMI_SESSION_PREFIX}{bmc_session_id:08x}")
}

/// The BMC-side id of a recorded IPMI session (`None`: a Redfish session, or not this form).
pub fn ipmi_session_id(session_uri: &str) -> Option<u32> {
    let hex = session_uri.strip_prefix(IPMI_SESSION_PREFIX)?;
    (hex.len() == 8).then(|| u32::from_str_radix(hex, 16).ok()).flatten()
}

/// A kept BMC session as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BmcSessionRow {
    pub bmc: String,
    /// Where the session lives on the BMC (Redfish: its `@odata.id`; IPMI: [`ipmi_session_uri`]).
    pub session_uri: String,
    /// The token, sealed by the caller.
    pub token: String,
    /// The holder name of the process that opened it.
    pub owner: String,
    pub opened_at_ms: i64,
}

impl Store {
    /// Records a session just kept (replacing a row of the same path: a BMC reuses session ids). A Redfish
    /// session strikes off the owner's other Redfish sessions on that BMC (one is kept per BMC: an older one
    /// was deleted, or expired when the BMC answered 401 and the client logged in again); IPMI sessions are
    /// each written down and struck off on their own (a process holds several at once on one BMC: a kept
    /// read session, a power action's, a console's).
    pub async fn record_bmc_session(&self, s: &BmcSessionRow) -> Result<(), StoreError> {
        if ipmi_session_id(&s.session_uri).is_none() {
            let q = self.sql(&format!(
                "DELETE FROM bmc_sessions WHERE bmc = ? AND owner = ? AND session_uri <> ? \
                 AND session_uri NOT LIKE '{IPMI_SESSION_PREFIX}%'"
            ));
            sqlx::query(&q)
                .bind(s.bmc.clone())
                .bind(s.owner.clone())
                .bind(s.session_uri.clone())
                .execute(&self.pool)
                .await
                .op("bmc_session.replace")?;
        }
        let q = self.sql(
            "INSERT INTO bmc_sessions (bmc, session_uri, token, owner, opened_at) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (bmc, session_uri) DO UPDATE SET token = excluded.token, owner = excluded.owner, \
             opened_at = excluded.opened_at",
        );
        sqlx::query(&q)
            .bind(s.bmc.clone())
            .bind(s.session_uri.clone())
            .bind(s.token.clone())
            .bind(s.owner.clone())
            .bind(s.opened_at_ms)
            .execute(&self.pool)
            .await
            .op("bmc_session.record")?;
        Ok(())
    }

    /// Forgets a session (closed, or found gone on the BMC).
    pub async fn forget_bmc_session(&self, bmc: &str, session_uri: &str) -> Result<(), StoreError> {
        let q = self.sql("DELETE FROM bmc_sessions WHERE bmc = ? AND session_uri = ?");
        sqlx::query(&q)
            .bind(bmc.to_owned())
            .bind(session_uri.to_owned())
            .execute(&self.pool)
            .await
            .op("bmc_session.forget")?;
        Ok(())
    }

    /// Hands a session to a new owner, only if `from` still owns it (two processes reclaiming the same dead
    /// owner's session: one wins).
    pub async fn reclaim_bmc_session(
        &self,
        bmc: &str,
        session_uri: &str,
        from: &str,
        to: &str,
    ) -> Result<bool, StoreError> {
        let q = self.sql("UPDATE bmc_sessions SET owner = ? WHERE bmc = ? AND session_uri = ? AND owner = ?");
        let done = sqlx::query(&q)
            .bind(to.to_owned())
            .bind(bmc.to_owned())
            .bind(session_uri.to_owned())
            .bind(from.to_owned())
            .execute(&self.pool)
            .await
            .op("bmc_session.reclaim")?;
        Ok(done.rows_affected() == 1)
    }

    /// Every recorded session, oldest first.
    pub async fn bmc_sessions(&self) -> Result<Vec<BmcSessionRow>, StoreError> {
        let q = self.sql(
            "SELECT bmc, session_uri, token, owner, opened_at FROM bmc_sessions ORDER BY opened_at, bmc",
        );
        let rows = sqlx::query(&q).fetch_all(&self.pool).await.op("bmc_session.list")?;
        rows.iter()
            .map(|r| {
                Ok(BmcSessionRow {
                    bmc: r.try_get("bmc").op("bmc_session.bmc")?,
                    session_uri: r.try_get("session_uri").op("bmc_session.uri")?,
                    token: r.try_get("token").op("bmc_session.token")?,
                    owner: r.try_get("owner").op("bmc_session.owner")?,
                    opened_at_ms: r.try_get("opened_at").op("bmc_session.opened_at")?,
                })
            })
            .collect()
    }

    /// One committed write, for readiness: a store that reads but cannot write (a full disk, a read-only
    /// replica of the database) cannot record actions.
    pub async fn probe_write(&self) -> Result<(), StoreError> {
        let q = self.sql(
            "INSERT INTO write_probe (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at",
        );
        sqlx::query(&q).bind(now_ms()).execute(&self.pool).await.op("write_probe")?;
        Ok(())
    }
}
