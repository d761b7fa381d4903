//! One stored version as text (`lifeline backup show SWITCH [--version V] [--raw]`) and a device's
//! history as records that serialise with each version's digest, size and time (`backup history
//! --json`).
//!
//! Why here and not in the CLI: the web console and the CLI print the same thing, and the choice
//! between the scrubbed comparison copy and the sealed raw copy (with secrets) must be made in one
//! place. Who may see the raw copy, and the audit record of it, are the caller's job.

use chrono::{DateTime, Utc};
use lifeline_types::{DeviceName, Platform};

use crate::backup::BackupContext;
use crate::index::{IndexError, VersionIndex, VersionRecord};
use crate::restore::{RestoreError, load_version};

#[derive(Debug, thiserror::Error)]
pub enum ShowError {
    #[error(transparent)]
    Load(#[from] RestoreError),
    #[error(
        "{device} v{version}: no sealed raw copy was kept (sealed raw storage was off when it was taken)"
    )]
    NoRaw { device: DeviceName, version: u32 },
}

/// Which copy of a version to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Which {
    /// Normalised and scrubbed: what diffs and the git export show.
    #[default]
    Normalised,
    /// The sealed raw text, secrets included, exactly as fetched.
    Raw,
}

/// The text of `version` (default: the latest) of `device`, with its record.
pub async fn show_version(
    ctx: &BackupContext,
    device: &DeviceName,
    version: Option<u32>,
    which: Which,
) -> Result<(VersionRecord, String), ShowError> {
    let loaded = load_version(ctx, device, version).await?;
    match which {
        Which::Normalised => Ok((loaded.record, loaded.normalised)),
        Which::Raw => match loaded.raw {
            Some(raw) => Ok((loaded.record, raw)),
            None => Err(ShowError::NoRaw { device: device.clone(), version: loaded.record.version }),
        },
    }
}

/// One line of `backup history --json`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct HistoryEntry {
    pub device: DeviceName,
    pub version: u32,
    pub platform: Platform,
    /// SHA-256 (hex) of the normalised, scrubbed text: the blob's name, checked on every read.
    pub sha256: String,
    /// Bytes of the normalised text.
    pub size: u64,
    /// When it was fetched (RFC 3339, UTC).
    pub taken_at: DateTime<Utc>,
    /// Whether a sealed raw copy exists (`backup show --raw` can print it).
    pub raw_sealed: bool,
}

impl From<&VersionRecord> for HistoryEntry {
    fn from(r: &VersionRecord) -> Self {
        HistoryEntry {
            device: r.device.clone(),
            version: r.version,
            platform: r.platform,
            sha256: r.blob.as_str().to_owned(),
            size: r.size,
            taken_at: r.taken_at,
            raw_sealed: r.raw_sealed,
        }
    }
}

/// A device's versions, oldest first.
pub async fn history(index: &dyn VersionIndex, device: &DeviceName) -> Result<Vec<HistoryEntry>, IndexError> {
    Ok(index.list(device).await?.iter().map(HistoryEntry::from).collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::blobs::{BlobId, BlobStore};
    use crate::index::{MemoryHostKeyPins, MemoryIndex, MemoryRawStore};

    #[tokio::test]
    async fn show_and_history() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = BackupContext {
            pins: Arc::new(MemoryHostKeyPins::default()),
            index: Arc::new(MemoryIndex::default()),
            blobs: BlobStore::new(dir.path()),
            raw: Some(Arc::new(MemoryRawStore::default())),
        };
        let dev = DeviceName::new("leaf1").unwrap();
        let at = DateTime::from_timestamp(1_767_225_600, 0).unwrap();
        for (text, raw) in [
            ("hostname a\n", None),
            ("hostname b\nsecret <removed>\n", Some("hostname b\nsecret S3cr3t  \n")),
        ] {
            let id = ctx.blobs.put(text.as_bytes().to_vec()).await.unwrap();
            if let Some(r) = raw {
                ctx.raw.as_ref().unwrap().seal(&dev, &id, r).await.unwrap();
            }
            ctx.index.record(&dev, Platform::Eos, &id, text.len() as u64, at, raw.is_some()).await.unwrap();
        }
        let (rec, text) = show_version(&ctx, &dev, None, Which::Normalised).await.unwrap();
        assert_eq!((rec.version, text.as_str()), (2, "hostname b\nsecret <removed>\n"));
        let (_, raw) = show_version(&ctx, &dev, None, Which::Raw).await.unwrap();
        assert_eq!(raw, "hostname b\nsecret S3cr3t  \n");
        assert_eq!(show_version(&ctx, &dev, Some(1), Which::Normalised).await.unwrap().1, "hostname a\n");
        assert!(matches!(
            show_version(&ctx, &dev, Some(1), Which::Raw).await,
            Err(ShowError::NoRaw { version: 1, .. })
        ));
        assert!(matches!(
            show_version(&ctx, &dev, Some(9), Which::Normalised).await,
            Err(ShowError::Load(RestoreError::NoSuchVersion { version: 9, .. }))
        ));

        let h = history(ctx.index.as_ref(), &dev).await.unwrap();
        let json = serde_json::to_value(&h).unwrap();
        assert_eq!(json[0]["sha256"], BlobId::of(b"hostname a\n").as_str());
        assert_eq!(json[0]["size"], 11);
        assert_eq!(json[0]["taken_at"], "2026-01-01T00:00:00Z");
        assert_eq!(json[1]["raw_sealed"], true);
        assert_eq!(json[1]["version"], 2);
    }
}
