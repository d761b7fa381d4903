//! SHA-256 fingerprints of TLS certificates and SSH host keys, as pinned in the inventory and the store.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A SHA-256 digest written as 64 hex digits, optionally in colon-separated pairs and optionally
/// prefixed `sha256:` (both forms appear in vendor UIs and `openssl x509 -fingerprint` output).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Fingerprint(pub [u8; 32]);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FingerprintError {
    #[error(
        "fingerprint `{text}` must be 32 bytes of hex (64 digits, colons allowed), found {digits} hex digits"
    )]
    Length { text: String, digits: usize },
    #[error("fingerprint `{text}` has a non-hex character `{ch}`")]
    NotHex { text: String, ch: char },
}

impl FromStr for Fingerprint {
    type Err = FingerprintError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let body = text.strip_prefix("sha256:").or_else(|| text.strip_prefix("SHA256:")).unwrap_or(text);
        let mut digits = Vec::with_capacity(64);
        for ch in body.chars().filter(|&c| c != ':') {
            let d = ch.to_digit(16).ok_or_else(|| FingerprintError::NotHex { text: text.to_owned(), ch })?;
            digits.push(d as u8);
        }
        if digits.len() != 64 {
            return Err(FingerprintError::Length { text: text.to_owned(), digits: digits.len() });
        }
        let mut out = [0u8; 32];
        for (i, pair) in digits.chunks(2).enumerate() {
            out[i] = (pair[0] << 4) | pair[1];
        }
        Ok(Fingerprint(out))
    }
}

impl fmt::Display for Fingerprint {
    /// `sha256:` + lowercase hex: one canonical form for pins, logs and error messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl TryFrom<String> for Fingerprint {
    type Error = FingerprintError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Fingerprint> for String {
    fn from(f: Fingerprint) -> String {
        f.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_colon_and_prefix_forms() {
        let plain = "ab".repeat(32);
        let colons = vec!["AB"; 32].join(":");
        let a: Fingerprint = plain.parse().unwrap();
        let b: Fingerprint = colons.parse().unwrap();
        let c: Fingerprint = format!("sha256:{plain}").parse().unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert!(matches!("abc".parse::<Fingerprint>(), Err(FingerprintError::Length { digits: 3, .. })));
        assert!(matches!(
            "zz".repeat(32).parse::<Fingerprint>(),
            Err(FingerprintError::NotHex { ch: 'z', .. })
        ));
    }

    proptest! {
        #[test]
        fn round_trips(bytes in proptest::array::uniform32(any::<u8>())) {
            let f = Fingerprint(bytes);
            prop_assert_eq!(f.to_string().parse::<Fingerprint>().unwrap(), f);
        }
    }
}
