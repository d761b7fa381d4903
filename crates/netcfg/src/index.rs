//! The store-facing traits: version index, host-key pins, sealed raw configs; plus in-memory
//! implementations for tests and the CLI's dry runs.
//!
//! Why traits: the SQL store (`lifeline-store`, sqlx, SQLite + PostgreSQL) owns the tables; netcfg
//! only states what it needs, so it can be tested without a database and the store can implement
//! these on its pool.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use lifeline_types::{DeviceName, Fingerprint, Platform};

use crate::blobs::BlobId;

/// A failure of the backing store (database, file), boxed so each implementation keeps its own error.
#[derive(Debug, thiserror::Error)]
#[error("{what} failed in the store")]
pub struct IndexError {
    pub what: &'static str,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// One stored config version of one device.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VersionRecord {
    pub device: DeviceName,
    /// 1, 2, 3… per device, assigned by the index.
    pub version: u32,
    pub platform: Platform,
    /// The normalised, scrubbed config.
    pub blob: BlobId,
    pub size: u64,
    pub taken_at: DateTime<Utc>,
    /// Whether a sealed raw copy (with secrets) was kept by the [`RawStore`].
    pub raw_sealed: bool,
}

/// The version index (a table in the store).
#[async_trait]
pub trait VersionIndex: Send + Sync {
    /// Append a version; the index assigns the next number for the device atomically.
    async fn record(
        &self,
        device: &DeviceName,
        platform: Platform,
        blob: &BlobId,
        size: u64,
        taken_at: DateTime<Utc>,
        raw_sealed: bool,
    ) -> Result<VersionRecord, IndexError>;
    /// Versions of a device, oldest first.
    async fn list(&self, device: &DeviceName) -> Result<Vec<VersionRecord>, IndexError>;
    async fn get(&self, device: &DeviceName, version: u32) -> Result<Option<VersionRecord>, IndexError>;
    async fn latest(&self, device: &DeviceName) -> Result<Option<VersionRecord>, IndexError> {
        Ok(self.list(device).await?.pop())
    }
    /// Every device that has at least one version (for export).
    async fn devices(&self) -> Result<Vec<DeviceName>, IndexError>;
    /// Records that a sealed raw copy now exists for a version stored without one.
    async fn mark_sealed(&self, device: &DeviceName, version: u32) -> Result<(), IndexError>;
}

/// SSH host-key pins (trust on first use).
#[async_trait]
pub trait HostKeyPins: Send + Sync {
    async fn get(&self, device: &DeviceName) -> Result<Option<Fingerprint>, IndexError>;
    async fn set(&self, device: &DeviceName, fingerprint: Fingerprint) -> Result<(), IndexError>;
}

/// Sealed storage of raw configs (with secrets), used only when the operator enables it. Sealing
/// (encryption) is the implementation's job; netcfg hands over the raw text and asks for it back
/// for a restore.
#[async_trait]
pub trait RawStore: Send + Sync {
    async fn seal(&self, device: &DeviceName, blob: &BlobId, raw: &str) -> Result<(), IndexError>;
    async fn unseal(&self, device: &DeviceName, blob: &BlobId) -> Result<Option<String>, IndexError>;
}

/// In-memory [`VersionIndex`].
#[derive(Debug, Default)]
pub struct MemoryIndex {
    versions: Mutex<HashMap<DeviceName, Vec<VersionRecord>>>,
}

#[async_trait]
impl VersionIndex for MemoryIndex {
    async fn record(
        &self,
        device: &DeviceName,
        platform: Platform,
        blob: &BlobId,
        size: u64,
        taken_at: DateTime<Utc>,
        raw_sealed: bool,
    ) -> Result<VersionRecord, IndexError> {
        let mut map = self.versions.lock().expect("index lock");
        let list = map.entry(device.clone()).or_default();
        let rec = VersionRecord {
            device: device.clone(),
            version: list.len() as u32 + 1,
            platform,
            blob: blob.clone(),
            size,
            taken_at,
            raw_sealed,
        };
        list.push(rec.clone());
        Ok(rec)
    }
    async fn list(&self, device: &DeviceName) -> Result<Vec<VersionRecord>, IndexError> {
        Ok(self.versions.lock().expect("index lock").get(device).cloned().unwrap_or_default())
    }
    async fn get(&self, device: &DeviceName, version: u32) -> Result<Option<VersionRecord>, IndexError> {
        Ok(self.list(device).await?.into_iter().find(|v| v.version == version))
    }
    async fn devices(&self) -> Result<Vec<DeviceName>, IndexError> {
        let mut d: Vec<_> = self.versions.lock().expect("index lock").keys().cloned().collect();
        d.sort();
        Ok(d)
    }
    async fn mark_sealed(&self, device: &DeviceName, version: u32) -> Result<(), IndexError> {
        if let Some(v) = self
            .versions
            .lock()
            .expect("index lock")
            .get_mut(device)
            .and_then(|l| l.iter_mut().find(|v| v.version == version))
        {
            v.raw_sealed = true;
        }
        Ok(())
    }
}

/// In-memory [`HostKeyPins`].
#[derive(Debug, Default)]
pub struct MemoryHostKeyPins {
    pins: Mutex<HashMap<DeviceName, Fingerprint>>,
}

#[async_trait]
impl HostKeyPins for MemoryHostKeyPins {
    async fn get(&self, device: &DeviceName) -> Result<Option<Fingerprint>, IndexError> {
        Ok(self.pins.lock().expect("pins lock").get(device).copied())
    }
    async fn set(&self, device: &DeviceName, fingerprint: Fingerprint) -> Result<(), IndexError> {
        self.pins.lock().expect("pins lock").insert(device.clone(), fingerprint);
        Ok(())
    }
}

/// In-memory [`RawStore`] (not sealed: tests only).
#[derive(Debug, Default)]
pub struct MemoryRawStore {
    raw: Mutex<HashMap<(DeviceName, BlobId), String>>,
}

#[async_trait]
impl RawStore for MemoryRawStore {
    async fn seal(&self, device: &DeviceName, blob: &BlobId, raw: &str) -> Result<(), IndexError> {
        self.raw.lock().expect("raw lock").insert((device.clone(), blob.clone()), raw.to_owned());
        Ok(())
    }
    async fn unseal(&self, device: &DeviceName, blob: &BlobId) -> Result<Option<String>, IndexError> {
        Ok(self.raw.lock().expect("raw lock").get(&(device.clone(), blob.clone())).cloned())
    }
}
