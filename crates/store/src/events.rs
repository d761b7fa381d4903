//! Observations (what Lifeline measured) and events (what happened), both append-only time series.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{QueryContext, StoreError};
use crate::{Store, now_ms};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub device: String,
    /// `power`, `health`, `sensors`, `verify`, …
    pub kind: String,
    pub observed_at_ms: i64,
    pub value: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewEvent {
    pub device: Option<String>,
    /// `sel`, `redfish-sse`, `sim`, `lifeline`.
    pub source: String,
    pub severity: String,
    pub message: String,
    pub data: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRow {
    pub id: i64,
    pub at_ms: i64,
    #[serde(flatten)]
    pub event: NewEvent,
}

impl Store {
    pub async fn observe(
        &self,
        device: &str,
        kind: &str,
        value: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let q =
            self.sql("INSERT INTO observations (device, kind, observed_at, value_json) VALUES (?, ?, ?, ?)");
        sqlx::query(&q)
            .bind(device.to_owned())
            .bind(kind.to_owned())
            .bind(now_ms())
            .bind(value.to_string())
            .execute(&self.pool)
            .await
            .op("observe")?;
        Ok(())
    }

    /// The newest observation of a kind for a device.
    pub async fn latest_observation(
        &self,
        device: &str,
        kind: &str,
    ) -> Result<Option<Observation>, StoreError> {
        let q = self.sql(
            "SELECT observed_at, value_json FROM observations WHERE device = ? AND kind = ? \
             ORDER BY observed_at DESC, id DESC LIMIT 1",
        );
        let row = sqlx::query(&q)
            .bind(device.to_owned())
            .bind(kind.to_owned())
            .fetch_optional(&self.pool)
            .await
            .op("latest_observation")?;
        row.map(|r| {
            let v: String = r.try_get("value_json").op("latest_observation.value")?;
            Ok(Observation {
                device: device.to_owned(),
                kind: kind.to_owned(),
                observed_at_ms: r.try_get("observed_at").op("latest_observation.at")?,
                value: serde_json::from_str(&v)
                    .map_err(|source| StoreError::Json { op: "latest_observation.value", source })?,
            })
        })
        .transpose()
    }

    /// The newest observation of `kind` for every device, in one query (the fleet list at 10,000 devices
    /// must not cost a query per device). "Newest" is the last inserted: observations are appended as they
    /// are made.
    pub async fn latest_observations(&self, kind: &str) -> Result<Vec<Observation>, StoreError> {
        let q = self.sql(
            "SELECT device, observed_at, value_json FROM observations WHERE id IN \
             (SELECT MAX(id) FROM observations WHERE kind = ? GROUP BY device)",
        );
        let rows =
            sqlx::query(&q).bind(kind.to_owned()).fetch_all(&self.pool).await.op("latest_observations")?;
        rows.into_iter()
            .map(|r| {
                let v: String = r.try_get("value_json").op("latest_observations.value")?;
                Ok(Observation {
                    device: r.try_get("device").op("latest_observations.device")?,
                    kind: kind.to_owned(),
                    observed_at_ms: r.try_get("observed_at").op("latest_observations.at")?,
                    value: serde_json::from_str(&v)
                        .map_err(|source| StoreError::Json { op: "latest_observations.value", source })?,
                })
            })
            .collect()
    }

    /// Every observation of `kind` for `device` made at or after `since_ms`, oldest first (by the
    /// `(device, kind, observed_at)` index: a recent window of one series, never a scan of the table).
    pub async fn observations_since(
        &self,
        device: &str,
        kind: &str,
        since_ms: i64,
    ) -> Result<Vec<Observation>, StoreError> {
        let q = self.sql(
            "SELECT observed_at, value_json FROM observations WHERE device = ? AND kind = ? \
             AND observed_at >= ? ORDER BY observed_at, id",
        );
        let rows = sqlx::query(&q)
            .bind(device.to_owned())
            .bind(kind.to_owned())
            .bind(since_ms)
            .fetch_all(&self.pool)
            .await
            .op("observations_since")?;
        rows.into_iter()
            .map(|r| {
                let v: String = r.try_get("value_json").op("observations_since.value")?;
                Ok(Observation {
                    device: device.to_owned(),
                    kind: kind.to_owned(),
                    observed_at_ms: r.try_get("observed_at").op("observations_since.at")?,
                    value: serde_json::from_str(&v)
                        .map_err(|source| StoreError::Json { op: "observations_since.value", source })?,
                })
            })
            .collect()
    }

    /// Deletes observations of `kind` older than `before_ms`, except each device's newest (the fleet list
    /// keeps showing a device that has not been observed since). Returns how many went.
    pub async fn prune_observations(&self, kind: &str, before_ms: i64) -> Result<u64, StoreError> {
        let q = self.sql(
            "DELETE FROM observations WHERE kind = ? AND observed_at < ? AND id NOT IN \
             (SELECT MAX(id) FROM observations WHERE kind = ? GROUP BY device)",
        );
        let done = sqlx::query(&q)
            .bind(kind.to_owned())
            .bind(before_ms)
            .bind(kind.to_owned())
            .execute(&self.pool)
            .await
            .op("prune_observations")?;
        Ok(done.rows_affected())
    }

    pub async fn record_event(&self, e: &NewEvent) -> Result<i64, StoreError> {
        let q = self.sql(
            "INSERT INTO events (device, at, source, severity, message, data_json) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
        );
        let row = sqlx::query(&q)
            .bind(&e.device)
            .bind(now_ms())
            .bind(&e.source)
            .bind(&e.severity)
            .bind(&e.message)
            .bind(e.data.to_string())
            .fetch_one(&self.pool)
            .await
            .op("record_event")?;
        row.try_get::<i64, _>("id").op("record_event.id")
    }

    /// Events with id greater than `after` (for live views that poll), oldest first.
    pub async fn events_after(&self, after: i64, limit: i64) -> Result<Vec<EventRow>, StoreError> {
        let q = self.sql(
            "SELECT id, device, at, source, severity, message, data_json FROM events WHERE id > ? ORDER BY id LIMIT ?",
        );
        let rows = sqlx::query(&q).bind(after).bind(limit).fetch_all(&self.pool).await.op("events_after")?;
        rows.into_iter()
            .map(|r| {
                let data: String = r.try_get("data_json").op("events.data")?;
                Ok(EventRow {
                    id: r.try_get("id").op("events.id")?,
                    at_ms: r.try_get("at").op("events.at")?,
                    event: NewEvent {
                        device: r.try_get("device").op("events.device")?,
                        source: r.try_get("source").op("events.source")?,
                        severity: r.try_get("severity").op("events.severity")?,
                        message: r.try_get("message").op("events.message")?,
                        data: serde_json::from_str(&data)
                            .map_err(|source| StoreError::Json { op: "events.data", source })?,
                    },
                })
            })
            .collect()
    }

    /// Records an event once per `(device, key)`: a second arrival of the same event (a push and the SEL
    /// poll that finds it again, a redelivery) is dropped. Returns the new id, or `None` for a duplicate.
    pub async fn record_event_once(&self, e: &NewEvent, key: &str) -> Result<Option<i64>, StoreError> {
        let q = self.sql(
            "INSERT INTO events (device, at, source, severity, message, data_json, dedup_key) \
             VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (device, dedup_key) DO NOTHING RETURNING id",
        );
        let row = sqlx::query(&q)
            .bind(&e.device)
            .bind(now_ms())
            .bind(&e.source)
            .bind(&e.severity)
            .bind(&e.message)
            .bind(e.data.to_string())
            .bind(key.to_owned())
            .fetch_optional(&self.pool)
            .await
            .op("record_event_once")?;
        row.map(|r| r.try_get::<i64, _>("id").op("record_event_once.id")).transpose()
    }
}
