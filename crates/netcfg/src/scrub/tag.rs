//! Per-secret tags: a masked value becomes `<removed:3f2a>`, where `3f2a` is a keyed hash of the value,
//! so a diff between two versions shows *that* a secret changed (the tag changes) without showing it.
//!
//! Why keyed (HMAC-SHA-256 with a random 32-byte key kept in the config store's directory) and short
//! (16 bits): an unkeyed hash of a short password is brute-forced offline in seconds, so whoever reads
//! a git export or a `backup show` must not be able to test guesses against the tag; without the key
//! they cannot, and even with it 16 bits leave ~65,000 candidates per tag for every password space
//! worth the name. The cost of 16 bits is that a changed secret keeps its tag with probability
//! 1/65,536. Equal secrets get equal tags within one installation (a reused password is visible as
//! such); tags from two installations are unrelated.

use std::io::Write;
use std::path::Path;

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// What a masked value starts with (Oxidized uses the same word, so operators recognise it).
pub const MASK: &str = "<removed>";
const PREFIX: &str = "<removed";

/// The key of the tags of one installation.
#[derive(Clone)]
pub struct TagKey([u8; 32]);

impl std::fmt::Debug for TagKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TagKey(<removed>)")
    }
}

impl TagKey {
    /// A fresh random key (tags are then stable only while this key lives: `scrub-check`, tests).
    pub fn random() -> TagKey {
        let mut k = [0u8; 32];
        rand::rng().fill_bytes(&mut k);
        TagKey(k)
    }

    /// A key from given bytes (tests and fuzz targets that need reproducible tags).
    pub fn from_bytes(bytes: [u8; 32]) -> TagKey {
        TagKey(bytes)
    }

    /// The key stored at `path`, created (random, mode 0600, written atomically without replacing a
    /// key another process wrote first) when absent.
    pub fn load_or_create(path: &Path) -> std::io::Result<TagKey> {
        match std::fs::read(path) {
            Ok(bytes) => return Self::parse(path, &bytes),
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            Err(_) => {}
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let key = TagKey::random();
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        tmp.write_all(hex::encode(key.0).as_bytes())?;
        tmp.as_file().sync_all()?;
        match tmp.persist_noclobber(path) {
            Ok(_) => Ok(key),
            // Another process created it between our read and our write: theirs is the key.
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                Self::parse(path, &std::fs::read(path)?)
            }
            Err(e) => Err(e.error),
        }
    }

    fn parse(path: &Path, bytes: &[u8]) -> std::io::Result<TagKey> {
        let text = String::from_utf8_lossy(bytes);
        let mut k = [0u8; 32];
        hex::decode_to_slice(text.trim(), &mut k).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: not a scrub tag key (64 hex digits)", path.display()),
            )
        })?;
        Ok(TagKey(k))
    }

    /// The mask for `secret`: `<removed:xxxx>`.
    pub fn mask(&self, secret: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(secret.as_bytes());
        let d = mac.finalize().into_bytes();
        format!("{PREFIX}:{:02x}{:02x}>", d[0], d[1])
    }
}

/// Whether `s` is already a mask (`<removed>` of earlier versions, or `<removed:xxxx>`), so scrubbing
/// again leaves it alone (scrubbing is idempotent).
pub fn is_mask(s: &str) -> bool {
    s == MASK
        || s.strip_prefix(PREFIX)
            .and_then(|r| r.strip_prefix(':'))
            .and_then(|r| r.strip_suffix('>'))
            .is_some_and(|h| {
                h.len() == 4 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            })
}

/// `text` with every mask's tag dropped (`<removed:3f2a>` → `<removed>`): for comparing scrubbed
/// text with an expectation written without tags.
pub fn untagged(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(PREFIX) {
        out.push_str(&rest[..i]);
        let cand = &rest[i..];
        let len = PREFIX.len() + 6;
        if cand.len() >= len && cand.is_char_boundary(len) && is_mask(&cand[..len]) {
            out.push_str(MASK);
            rest = &cand[len..];
        } else {
            out.push_str(PREFIX);
            rest = &cand[PREFIX.len()..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_keyed_stable_and_recognised() {
        let a = TagKey::from_bytes([1; 32]);
        let b = TagKey::from_bytes([2; 32]);
        assert_eq!(a.mask("S3cret"), a.mask("S3cret"));
        assert_ne!(a.mask("S3cret"), a.mask("S3cret!"));
        // Another installation's key gives another tag for the same secret (checked for a fixed pair).
        assert_ne!(a.mask("S3cret"), b.mask("S3cret"));
        assert!(is_mask(&a.mask("x")) && is_mask(MASK));
        assert!(!is_mask("<removed:zzzz>") && !is_mask("<removed:3f2a") && !is_mask("removed"));
        assert_eq!(untagged(&format!("a {} b <removed:12> c", a.mask("x"))), "a <removed> b <removed:12> c");
    }

    #[test]
    fn key_file_is_created_once_and_reread() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/scrub-tag.key");
        let k1 = TagKey::load_or_create(&p).unwrap();
        let k2 = TagKey::load_or_create(&p).unwrap();
        assert_eq!(k1.mask("x"), k2.mask("x"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::write(&p, "nonsense").unwrap();
        assert!(TagKey::load_or_create(&p).is_err());
    }
}
