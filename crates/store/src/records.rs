//! Small tables other crates index through traits: the protocol `auto` chose per BMC, switch config
//! versions, console log files. The traits live in those crates; the store only offers plain rows.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

/// One stored switch configuration version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigVersionRow {
    pub device: String,
    pub version: i64,
    pub platform: String,
    /// SHA-256 of the normalised, scrubbed config blob under the data directory.
    pub blob_sha256: String,
    pub size: i64,
    pub fetched_at_ms: i64,
    pub raw_sealed: bool,
}

/// One console log file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleLogRow {
    pub console: String,
    pub seq: i64,
    pub path: String,
    pub first_ms: i64,
    pub last_ms: Option<i64>,
    pub bytes: i64,
    pub closed: bool,
}

impl Store {
    pub async fn remembered_protocol(&self, device: &str) -> Result<Option<String>, StoreError> {
        let q = self.sql("SELECT protocol FROM bmc_protocols WHERE device = ?");
        let row =
            sqlx::query(&q).bind(device.to_owned()).fetch_optional(&self.pool).await.op("protocol.get")?;
        row.map(|r| r.try_get::<String, _>("protocol").op("protocol.value")).transpose()
    }

    pub async fn remember_protocol(&self, device: &str, protocol: &str) -> Result<(), StoreError> {
        let q = self.sql(
            "INSERT INTO bmc_protocols (device, protocol, decided_at) VALUES (?, ?, ?) \
             ON CONFLICT (device) DO UPDATE SET protocol = excluded.protocol, decided_at = excluded.decided_at",
        );
        sqlx::query(&q)
            .bind(device.to_owned())
            .bind(protocol.to_owned())
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .op("protocol.set")?;
        Ok(())
    }

    pub async fn forget_protocol(&self, device: &str) -> Result<(), StoreError> {
        let q = self.sql("DELETE FROM bmc_protocols WHERE device = ?");
        sqlx::query(&q).bind(device.to_owned()).execute(&self.pool).await.op("protocol.forget")?;
        Ok(())
    }

    /// Appends a version with the next number for the device. Concurrent writers for one device (two
    /// replicas backing up the same switch) race on the `UNIQUE (device, version)` constraint; the loser
    /// retries with the next number, so no version is lost or doubled.
    pub async fn record_config_version(
        &self,
        device: &str,
        platform: &str,
        blob_sha256: &str,
        size: i64,
        fetched_at_ms: i64,
        raw_sealed: bool,
    ) -> Result<ConfigVersionRow, StoreError> {
        self.record_config_version_fenced(
            device,
            platform,
            blob_sha256,
            size,
            fetched_at_ms,
            raw_sealed,
            None,
        )
        .await
    }

    /// [`Store::record_config_version`] under a lease: the row is inserted only if the lease on
    /// `fence.0` is still held by `fence.1` with token `fence.2` and unexpired, in the same statement, so
    /// a holder that was paused past its expiry (another replica took the switch) records nothing and
    /// gets [`StoreError::Fenced`].
    #[allow(clippy::too_many_arguments)]
    pub async fn record_config_version_fenced(
        &self,
        device: &str,
        platform: &str,
        blob_sha256: &str,
        size: i64,
        fetched_at_ms: i64,
        raw_sealed: bool,
        fence: Option<(&str, &str, i64)>,
    ) -> Result<ConfigVersionRow, StoreError> {
        let mut attempt = 0;
        loop {
            let q = self.sql("SELECT COALESCE(MAX(version), 0) AS v FROM config_versions WHERE device = ?");
            let next: i64 = sqlx::query(&q)
                .bind(device.to_owned())
                .fetch_one(&self.pool)
                .await
                .op("config_version.max")?
                .try_get::<i64, _>("v")
                .op("config_version.max.v")?
                + 1;
            // The same content as the newest version is that version, not a new one: two writers that raced
            // past the lease (or a retried request) must not store identical versions v3 = v4.
            if next > 1
                && let Some(latest) = self.config_version(device, next - 1).await?
                && latest.blob_sha256 == blob_sha256
            {
                if raw_sealed && !latest.raw_sealed {
                    self.mark_config_sealed(device, latest.version).await?;
                    return Ok(ConfigVersionRow { raw_sealed: true, ..latest });
                }
                return Ok(latest);
            }
            let insert = "INSERT INTO config_versions (device, version, blob_sha256, normalized_sha256, size, \
                          platform, fetched_at, raw_sealed)";
            let q = match fence {
                None => self.sql(&format!("{insert} VALUES (?, ?, ?, ?, ?, ?, ?, ?)")),
                Some(_) => self.sql(&format!(
                    "{insert} SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM leases \
                     WHERE target = ? AND holder = ? AND fence = ? AND expires_at >= ?)"
                )),
            };
            let mut query = sqlx::query(&q)
                .bind(device.to_owned())
                .bind(next)
                .bind(blob_sha256.to_owned())
                .bind(blob_sha256.to_owned())
                .bind(size)
                .bind(platform.to_owned())
                .bind(fetched_at_ms)
                .bind(i64::from(raw_sealed));
            if let Some((target, holder, token)) = fence {
                query =
                    query.bind(target.to_owned()).bind(holder.to_owned()).bind(token).bind(crate::now_ms());
            }
            let res = query.execute(&self.pool).await;
            match res {
                Ok(done) if done.rows_affected() == 0 => {
                    let (target, _, token) = fence.unwrap_or_default();
                    return Err(StoreError::Fenced { target: target.to_owned(), fence: token });
                }
                Ok(_) => {
                    return Ok(ConfigVersionRow {
                        device: device.to_owned(),
                        version: next,
                        platform: platform.to_owned(),
                        blob_sha256: blob_sha256.to_owned(),
                        size,
                        fetched_at_ms,
                        raw_sealed,
                    });
                }
                // Each retry means another writer committed a version: bounded, with a short pause.
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() && attempt < 50 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(
                        u64::try_from(attempt % 8).unwrap_or(0) * 2,
                    ))
                    .await;
                }
                Err(e) => return Err(StoreError::Query { op: "config_version.insert", source: e }),
            }
        }
    }

    /// One version of a device.
    pub async fn config_version(
        &self,
        device: &str,
        version: i64,
    ) -> Result<Option<ConfigVersionRow>, StoreError> {
        let q = self.sql(
            "SELECT device, version, platform, blob_sha256, size, fetched_at, raw_sealed FROM config_versions \
             WHERE device = ? AND version = ?",
        );
        let row = sqlx::query(&q)
            .bind(device.to_owned())
            .bind(version)
            .fetch_optional(&self.pool)
            .await
            .op("config_version")?;
        row.map(config_row).transpose()
    }

    /// Records that a sealed raw copy now exists for a version stored without one.
    pub async fn mark_config_sealed(&self, device: &str, version: i64) -> Result<(), StoreError> {
        let q = self.sql("UPDATE config_versions SET raw_sealed = 1 WHERE device = ? AND version = ?");
        sqlx::query(&q)
            .bind(device.to_owned())
            .bind(version)
            .execute(&self.pool)
            .await
            .op("config_version.sealed")?;
        Ok(())
    }

    /// Versions of a device, oldest first.
    pub async fn config_versions(&self, device: &str) -> Result<Vec<ConfigVersionRow>, StoreError> {
        let q = self.sql(
            "SELECT device, version, platform, blob_sha256, size, fetched_at, raw_sealed FROM config_versions \
             WHERE device = ? ORDER BY version",
        );
        let rows =
            sqlx::query(&q).bind(device.to_owned()).fetch_all(&self.pool).await.op("config_versions")?;
        rows.into_iter().map(config_row).collect()
    }

    /// Devices with at least one config version.
    pub async fn config_devices(&self) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query("SELECT DISTINCT device FROM config_versions ORDER BY device")
            .fetch_all(&self.pool)
            .await
            .op("config_devices")?;
        rows.into_iter().map(|r| r.try_get::<String, _>("device").op("config_devices.device")).collect()
    }

    pub async fn console_log_upsert(&self, e: &ConsoleLogRow) -> Result<(), StoreError> {
        let q = self.sql(
            "INSERT INTO console_logs (console, seq, path, first_ms, last_ms, bytes, closed) VALUES (?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (console, seq) DO UPDATE SET path = excluded.path, last_ms = excluded.last_ms, \
             bytes = excluded.bytes, closed = excluded.closed",
        );
        sqlx::query(&q)
            .bind(e.console.clone())
            .bind(e.seq)
            .bind(e.path.clone())
            .bind(e.first_ms)
            .bind(e.last_ms)
            .bind(e.bytes)
            .bind(i64::from(e.closed))
            .execute(&self.pool)
            .await
            .op("console_log.upsert")?;
        Ok(())
    }

    pub async fn console_log_removed(&self, console: &str, seq: i64) -> Result<(), StoreError> {
        let q = self.sql("UPDATE console_logs SET removed = 1 WHERE console = ? AND seq = ?");
        sqlx::query(&q)
            .bind(console.to_owned())
            .bind(seq)
            .execute(&self.pool)
            .await
            .op("console_log.removed")?;
        Ok(())
    }

    /// Files of a console still on disk, in `seq` order.
    pub async fn console_logs(&self, console: &str) -> Result<Vec<ConsoleLogRow>, StoreError> {
        let q = self.sql(
            "SELECT console, seq, path, first_ms, last_ms, bytes, closed FROM console_logs \
             WHERE console = ? AND removed = 0 ORDER BY seq",
        );
        let rows = sqlx::query(&q).bind(console.to_owned()).fetch_all(&self.pool).await.op("console_logs")?;
        rows.into_iter()
            .map(|r| {
                Ok(ConsoleLogRow {
                    console: r.try_get("console").op("console_logs.console")?,
                    seq: r.try_get("seq").op("console_logs.seq")?,
                    path: r.try_get("path").op("console_logs.path")?,
                    first_ms: r.try_get("first_ms").op("console_logs.first")?,
                    last_ms: r.try_get("last_ms").op("console_logs.last")?,
                    bytes: r.try_get("bytes").op("console_logs.bytes")?,
                    closed: r.try_get::<i64, _>("closed").op("console_logs.closed")? != 0,
                })
            })
            .collect()
    }
}

fn config_row(r: sqlx::any::AnyRow) -> Result<ConfigVersionRow, StoreError> {
    Ok(ConfigVersionRow {
        device: r.try_get("device").op("config_versions.device")?,
        version: r.try_get("version").op("config_versions.version")?,
        platform: r.try_get("platform").op("config_versions.platform")?,
        blob_sha256: r.try_get("blob_sha256").op("config_versions.blob")?,
        size: r.try_get("size").op("config_versions.size")?,
        fetched_at_ms: r.try_get("fetched_at").op("config_versions.at")?,
        raw_sealed: r.try_get::<i64, _>("raw_sealed").op("config_versions.raw_sealed")? != 0,
    })
}
