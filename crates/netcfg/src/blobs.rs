//! Content-addressed config blobs under the data directory.
//!
//! Why content addressing: two devices with the same config, or a device that flips back to an old
//! config, share one file, and a blob's name proves its content (checked on read). Writes go to a
//! temporary file, are fsynced, then renamed into place and the directory fsynced, so a crash or a cut
//! connection never leaves a half-written blob under a valid name.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};

use crate::scrub::TagKey;

/// The file, in the blob directory, that holds the key of the scrub tags (`<removed:xxxx>`): one key
/// per config store, so tags are stable across runs and restarts and differ between installations.
pub const TAG_KEY_FILE: &str = "scrub-tag.key";

/// SHA-256 of a blob's bytes, hex.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct BlobId(String);

impl BlobId {
    pub fn of(bytes: &[u8]) -> BlobId {
        BlobId(hex::encode(Sha256::digest(bytes)))
    }
    /// Accepts exactly 64 lowercase hex digits (what [`BlobId::of`] produces and the index stores).
    pub fn parse(s: &str) -> Option<BlobId> {
        (s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
            .then(|| BlobId(s.to_owned()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("cannot write blob {id} under {dir}")]
    Write {
        id: BlobId,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read blob {id} under {dir}")]
    Read {
        id: BlobId,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("blob {id} under {dir} is corrupted: its content hashes to {actual}")]
    Corrupted { id: BlobId, dir: PathBuf, actual: BlobId },
    #[error("cannot read or create the scrub tag key {path}")]
    TagKey {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("blob task panicked or was cancelled")]
    Join(#[source] tokio::task::JoinError),
}

/// Blobs live at `DIR/ab/abcdef…` (two-level fan-out keeps directories small).
#[derive(Debug, Clone)]
pub struct BlobStore {
    dir: PathBuf,
    tag_key: Arc<OnceLock<TagKey>>,
}

impl BlobStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        BlobStore { dir: dir.into(), tag_key: Arc::default() }
    }

    /// The key of this store's scrub tags ([`TAG_KEY_FILE`], created on first use).
    pub fn tag_key(&self) -> Result<TagKey, BlobError> {
        if let Some(k) = self.tag_key.get() {
            return Ok(k.clone());
        }
        let path = self.dir.join(TAG_KEY_FILE);
        let key = TagKey::load_or_create(&path).map_err(|source| BlobError::TagKey { path, source })?;
        Ok(self.tag_key.get_or_init(|| key).clone())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_of(&self, id: &BlobId) -> PathBuf {
        self.dir.join(&id.0[..2]).join(&id.0)
    }

    /// Store `bytes`; returns its id. Idempotent (an existing blob is left alone).
    pub async fn put(&self, bytes: Vec<u8>) -> Result<BlobId, BlobError> {
        let id = BlobId::of(&bytes);
        let path = self.path_of(&id);
        let dir = self.dir.clone();
        let id2 = id.clone();
        tokio::task::spawn_blocking(move || write_atomic(&path, &bytes))
            .await
            .map_err(BlobError::Join)?
            .map_err(|source| BlobError::Write { id: id2, dir, source })?;
        Ok(id)
    }

    /// Read a blob and check its hash.
    pub async fn get(&self, id: &BlobId) -> Result<Vec<u8>, BlobError> {
        let path = self.path_of(id);
        let bytes = tokio::task::spawn_blocking(move || std::fs::read(path))
            .await
            .map_err(BlobError::Join)?
            .map_err(|source| BlobError::Read { id: id.clone(), dir: self.dir.clone(), source })?;
        let actual = BlobId::of(&bytes);
        if &actual != id {
            return Err(BlobError::Corrupted { id: id.clone(), dir: self.dir.clone(), actual });
        }
        Ok(bytes)
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if path.exists() {
        return Ok(());
    }
    let parent = path.parent().expect("blob path has a parent");
    std::fs::create_dir_all(parent)?;
    let mut tmp = tempfile::NamedTempFile::new_in(parent)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    std::fs::File::open(parent)?.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn put_get_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::new(dir.path());
        let id = store.put(b"hostname x\n".to_vec()).await.unwrap();
        assert_eq!(store.put(b"hostname x\n".to_vec()).await.unwrap(), id);
        assert_eq!(store.get(&id).await.unwrap(), b"hostname x\n");
        // No temporary files are left next to the blob.
        let files: Vec<_> = std::fs::read_dir(dir.path().join(&id.as_str()[..2])).unwrap().collect();
        assert_eq!(files.len(), 1);
        std::fs::write(store.path_of(&id), b"tampered").unwrap();
        assert!(matches!(store.get(&id).await, Err(BlobError::Corrupted { .. })));
        assert!(BlobId::parse(id.as_str()).is_some());
        assert!(BlobId::parse("../etc/passwd").is_none());
    }
}
