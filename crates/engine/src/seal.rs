//! Sealed raw switch configs: the faithful copy (with secrets) that a restore needs, encrypted at rest with
//! AES-256-GCM (ring) and written atomically to `DATA_DIR/sealed/<device>/<blob>.bin` as nonce ‖ ciphertext.
//!
//! The key lives outside the data directory (the config's `seal-key`, `$LIFELINE_SEAL_KEY`, else
//! `~/.config/lifeline/seal.key`), created 0600 once, so a copy of the data directory does not carry the key
//! to its own secrets. A data directory from an older version with `DATA_DIR/seal.key` keeps working.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use lifeline_netcfg::{BlobId, IndexError, RawStore};
use lifeline_types::DeviceName;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

fn bad(what: &'static str, msg: String) -> IndexError {
    IndexError { what, source: msg.into() }
}

/// Raw configs, encrypted at rest.
#[derive(Debug, Clone)]
pub struct SealedFiles {
    dir: PathBuf,
    key_file: PathBuf,
}

impl SealedFiles {
    pub fn new(data_dir: &Path, key_file: &Path) -> SealedFiles {
        let legacy = data_dir.join("seal.key");
        let key_file = if !key_file.exists() && legacy.exists() {
            tracing::warn!(
                legacy = %legacy.display(),
                "using the seal key inside the data directory; move it out (config `seal-key`) so copies of the data directory do not carry it"
            );
            legacy
        } else {
            key_file.to_path_buf()
        };
        SealedFiles { dir: data_dir.join("sealed"), key_file }
    }

    /// Whether a key exists (sealed copies can be read).
    pub fn has_key(&self) -> bool {
        self.key_file.exists()
    }

    fn key(&self, create: bool) -> Result<Option<LessSafeKey>, IndexError> {
        let bytes = match std::fs::read(&self.key_file) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => self
                .create_key()
                .map_err(|e| IndexError { what: "writing the seal key", source: Box::new(e) })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(IndexError { what: "reading the seal key", source: Box::new(e) }),
        };
        let unbound = UnboundKey::new(&AES_256_GCM, &bytes).map_err(|_| {
            bad("reading the seal key", format!("{} is not a 32-byte key", self.key_file.display()))
        })?;
        Ok(Some(LessSafeKey::new(unbound)))
    }

    /// Creates the key exactly once, even when many backups (or processes) race for it: the key is written
    /// to a private temporary file and hard-linked into place, which fails if another writer won; then the
    /// winner's key is used.
    fn create_key(&self) -> std::io::Result<Vec<u8>> {
        let mut k = [0u8; 32];
        SystemRandom::new()
            .fill(&mut k)
            .map_err(|_| std::io::Error::other("no randomness for the seal key"))?;
        let mut suffix = [0u8; 8];
        SystemRandom::new().fill(&mut suffix).map_err(|_| std::io::Error::other("no randomness"))?;
        let tmp = self.key_file.with_extension(format!("tmp.{}", hex::encode(suffix)));
        write_private(&tmp, &k)?;
        let linked = std::fs::hard_link(&tmp, &self.key_file);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(k.to_vec()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => std::fs::read(&self.key_file),
            Err(e) => Err(e),
        }
    }

    fn path(&self, device: &DeviceName, blob: &BlobId) -> PathBuf {
        self.dir.join(device.as_str()).join(format!("{}.bin", blob.as_str()))
    }
}

/// Small secrets (BMC passwords) sealed with the same key, kept in the store as hex of nonce ‖ ciphertext.
/// `context` (the device and reference name) is bound as associated data, so a row copied onto another
/// device's does not decrypt.
impl SealedFiles {
    pub fn seal_secret(&self, context: &str, secret: &str) -> Result<String, IndexError> {
        let key = self.key(true)?.ok_or_else(|| bad("sealing", "no key".into()))?;
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).map_err(|_| bad("sealing", "no randomness".into()))?;
        let mut data = secret.as_bytes().to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(context.as_bytes()),
            &mut data,
        )
        .map_err(|_| bad("sealing", "encryption failed".into()))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Ok(hex::encode(out))
    }

    pub fn unseal_secret(&self, context: &str, sealed: &str) -> Result<String, IndexError> {
        let key = self.key(false)?.ok_or_else(|| {
            bad("unsealing", format!("the seal key {} is missing", self.key_file.display()))
        })?;
        let bytes = hex::decode(sealed).map_err(|_| bad("unsealing", "not hex".into()))?;
        if bytes.len() < NONCE_LEN {
            return Err(bad("unsealing", "truncated".into()));
        }
        let (nonce, ct) = bytes.split_at(NONCE_LEN);
        let nonce =
            Nonce::try_assume_unique_for_key(nonce).map_err(|_| bad("unsealing", "bad nonce".into()))?;
        let mut ct = ct.to_vec();
        let plain = key.open_in_place(nonce, Aad::from(context.as_bytes()), &mut ct).map_err(|_| {
            bad("unsealing", format!("the secret for `{context}` does not decrypt with this key"))
        })?;
        String::from_utf8(plain.to_vec()).map_err(|_| bad("unsealing", "not UTF-8".into()))
    }
}

/// Writes a file readable by the owner only, atomically (tmp + fsync + rename).
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
    }
    let mut suffix = [0u8; 8];
    SystemRandom::new().fill(&mut suffix).map_err(|_| std::io::Error::other("no randomness"))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", hex::encode(suffix)));
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[async_trait]
impl RawStore for SealedFiles {
    async fn seal(&self, device: &DeviceName, blob: &BlobId, raw: &str) -> Result<(), IndexError> {
        let this = self.clone();
        let (device, blob, raw) = (device.clone(), blob.clone(), raw.to_owned());
        tokio::task::spawn_blocking(move || {
            let key = this.key(true)?.ok_or_else(|| bad("sealing", "no key".into()))?;
            let mut nonce = [0u8; NONCE_LEN];
            SystemRandom::new().fill(&mut nonce).map_err(|_| bad("sealing", "no randomness".into()))?;
            let mut data = raw.into_bytes();
            key.seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(blob.as_str().as_bytes()),
                &mut data,
            )
            .map_err(|_| bad("sealing", "encryption failed".into()))?;
            let mut out = nonce.to_vec();
            out.extend_from_slice(&data);
            write_private(&this.path(&device, &blob), &out)
                .map_err(|e| IndexError { what: "writing a sealed config", source: Box::new(e) })
        })
        .await
        .map_err(|e| IndexError { what: "sealing task", source: Box::new(e) })?
    }

    async fn unseal(&self, device: &DeviceName, blob: &BlobId) -> Result<Option<String>, IndexError> {
        let this = self.clone();
        let (device, blob) = (device.clone(), blob.clone());
        tokio::task::spawn_blocking(move || {
            let path = this.path(&device, &blob);
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(IndexError { what: "reading a sealed config", source: Box::new(e) }),
            };
            let Some(key) = this.key(false)? else {
                return Err(bad(
                    "unsealing",
                    format!("{} exists but the seal key is missing", path.display()),
                ));
            };
            if bytes.len() < NONCE_LEN {
                return Err(bad("unsealing", format!("{} is truncated", path.display())));
            }
            let (nonce, ct) = bytes.split_at(NONCE_LEN);
            let nonce =
                Nonce::try_assume_unique_for_key(nonce).map_err(|_| bad("unsealing", "bad nonce".into()))?;
            let mut ct = ct.to_vec();
            let plain =
                key.open_in_place(nonce, Aad::from(blob.as_str().as_bytes()), &mut ct).map_err(|_| {
                    bad(
                        "unsealing",
                        format!(
                            "{} does not decrypt with this key (tampered or another key)",
                            path.display()
                        ),
                    )
                })?;
            String::from_utf8(plain.to_vec()).map(Some).map_err(|_| bad("unsealing", "not UTF-8".into()))
        })
        .await
        .map_err(|e| IndexError { what: "unsealing task", source: Box::new(e) })?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn seal_round_trip_and_tamper_detection() {
        let dir = tempfile::tempdir().unwrap();
        let s = SealedFiles::new(dir.path(), &dir.path().join("keys/seal.key"));
        let dev = DeviceName::new("leaf1").unwrap();
        let blob = BlobId::of(b"normalised");
        assert_eq!(s.unseal(&dev, &blob).await.unwrap(), None);
        s.seal(&dev, &blob, "username admin secret 5 $1$abc\n").await.unwrap();
        assert_eq!(s.unseal(&dev, &blob).await.unwrap().as_deref(), Some("username admin secret 5 $1$abc\n"));
        let on_disk = std::fs::read(s.path(&dev, &blob)).unwrap();
        assert!(!String::from_utf8_lossy(&on_disk).contains("secret 5"), "stored encrypted");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(dir.path().join("keys/seal.key")).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let mut t = on_disk.clone();
        let last = t.len() - 1;
        t[last] ^= 1;
        std::fs::write(s.path(&dev, &blob), t).unwrap();
        assert!(s.unseal(&dev, &blob).await.unwrap_err().to_string().contains("unsealing"));
    }

    #[test]
    fn secrets_round_trip_bound_to_their_context() {
        let dir = tempfile::tempdir().unwrap();
        let s = SealedFiles::new(dir.path(), &dir.path().join("keys/seal.key"));
        let sealed = s.seal_secret("bmc/n1", "s3cret-pw").unwrap();
        assert!(!sealed.contains("s3cret"));
        assert_eq!(s.unseal_secret("bmc/n1", &sealed).unwrap(), "s3cret-pw");
        assert!(s.unseal_secret("bmc/n2", &sealed).is_err(), "bound to its device");
    }

    #[tokio::test]
    async fn concurrent_first_seals_share_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let mut tasks = Vec::new();
        for i in 0..16 {
            let s = SealedFiles::new(dir.path(), &dir.path().join("keys/seal.key"));
            tasks.push(tokio::spawn(async move {
                let dev = DeviceName::new(format!("sw{i}")).unwrap();
                let blob = BlobId::of(format!("c{i}").as_bytes());
                s.seal(&dev, &blob, &format!("raw {i}")).await.unwrap();
                (dev, blob)
            }));
        }
        let s = SealedFiles::new(dir.path(), &dir.path().join("keys/seal.key"));
        for (i, t) in tasks.into_iter().enumerate() {
            let (dev, blob) = t.await.unwrap();
            assert_eq!(s.unseal(&dev, &blob).await.unwrap().unwrap(), format!("raw {i}"));
        }
    }
}
