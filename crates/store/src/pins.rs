//! Trust-on-first-use pins for BMC TLS certificates and switch SSH host keys.

use lifeline_types::Fingerprint;
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinKind {
    /// SHA-256 of a BMC's TLS leaf certificate.
    Tls,
    /// SHA-256 of a switch's SSH host key blob.
    SshHostKey,
}

impl PinKind {
    fn as_str(self) -> &'static str {
        match self {
            PinKind::Tls => "tls",
            PinKind::SshHostKey => "ssh",
        }
    }
}

impl Store {
    pub async fn pin(&self, kind: PinKind, subject: &str) -> Result<Option<Fingerprint>, StoreError> {
        let q = self.sql("SELECT fingerprint FROM pins WHERE kind = ? AND subject = ?");
        let row = sqlx::query(&q)
            .bind(kind.as_str())
            .bind(subject.to_owned())
            .fetch_optional(&self.pool)
            .await
            .op("pin.select")?;
        let Some(row) = row else { return Ok(None) };
        let text: String = row.try_get("fingerprint").op("pin.fingerprint")?;
        // A pin we wrote ourselves always parses; if it does not, treat it as absent rather than lock out.
        Ok(text.parse().ok())
    }

    /// Sets (or replaces) a pin.
    pub async fn set_pin(&self, kind: PinKind, subject: &str, fp: Fingerprint) -> Result<(), StoreError> {
        let q = self.sql(
            "INSERT INTO pins (kind, subject, fingerprint, pinned_at) VALUES (?, ?, ?, ?) \
             ON CONFLICT (kind, subject) DO UPDATE SET fingerprint = excluded.fingerprint, pinned_at = excluded.pinned_at",
        );
        sqlx::query(&q)
            .bind(kind.as_str())
            .bind(subject.to_owned())
            .bind(fp.to_string())
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .op("pin.upsert")?;
        Ok(())
    }
}
