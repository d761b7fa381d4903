//! SSH algorithm profiles.
//!
//! Why explicit profiles: old switches (IOS 12/15, early NX-OS) only speak
//! `diffie-hellman-group14-sha1`, `ssh-rsa` (SHA-1 signatures), CBC ciphers and `hmac-sha1`. We talk to
//! them only when an operator said so for that platform or device; the default is the modern set.

use std::borrow::Cow;

use russh::keys::{Algorithm, EcdsaCurve, HashAlg};
use russh::{Preferred, cipher, kex, mac};

/// Which legacy algorithms may be negotiated, on top of the modern set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct AlgorithmProfile {
    /// `diffie-hellman-group14-sha1`, `diffie-hellman-group-exchange-sha1` (and group1 — never, it is
    /// broken).
    pub sha1_kex: bool,
    /// `ssh-rsa` host keys signed with SHA-1.
    pub ssh_rsa: bool,
    /// `aes128-cbc`, `aes192-cbc`, `aes256-cbc`.
    pub cbc: bool,
    /// `hmac-sha1`.
    pub hmac_sha1: bool,
}

impl AlgorithmProfile {
    pub const MODERN: AlgorithmProfile =
        AlgorithmProfile { sha1_kex: false, ssh_rsa: false, cbc: false, hmac_sha1: false };
    pub const LEGACY: AlgorithmProfile =
        AlgorithmProfile { sha1_kex: true, ssh_rsa: true, cbc: true, hmac_sha1: true };

    /// The russh preference lists for this profile.
    pub fn preferred(&self) -> Preferred {
        let mut kex = vec![
            kex::CURVE25519,
            kex::CURVE25519_PRE_RFC_8731,
            kex::ECDH_SHA2_NISTP256,
            kex::ECDH_SHA2_NISTP384,
            kex::ECDH_SHA2_NISTP521,
            kex::DH_GEX_SHA256,
            kex::DH_G16_SHA512,
            kex::DH_G14_SHA256,
        ];
        if self.sha1_kex {
            kex.extend([kex::DH_G14_SHA1, kex::DH_GEX_SHA1]);
        }
        kex.extend([kex::EXTENSION_SUPPORT_AS_CLIENT, kex::EXTENSION_OPENSSH_STRICT_KEX_AS_CLIENT]);

        let mut key = vec![
            Algorithm::Ed25519,
            Algorithm::Ecdsa { curve: EcdsaCurve::NistP256 },
            Algorithm::Ecdsa { curve: EcdsaCurve::NistP384 },
            Algorithm::Ecdsa { curve: EcdsaCurve::NistP521 },
            Algorithm::Rsa { hash: Some(HashAlg::Sha512) },
            Algorithm::Rsa { hash: Some(HashAlg::Sha256) },
        ];
        if self.ssh_rsa {
            key.push(Algorithm::Rsa { hash: None });
        }

        let mut ciphers = vec![
            cipher::CHACHA20_POLY1305,
            cipher::AES_256_GCM,
            cipher::AES_128_GCM,
            cipher::AES_256_CTR,
            cipher::AES_192_CTR,
            cipher::AES_128_CTR,
        ];
        if self.cbc {
            ciphers.extend([cipher::AES_256_CBC, cipher::AES_192_CBC, cipher::AES_128_CBC]);
        }

        let mut macs = vec![mac::HMAC_SHA512_ETM, mac::HMAC_SHA256_ETM, mac::HMAC_SHA512, mac::HMAC_SHA256];
        if self.hmac_sha1 {
            macs.extend([mac::HMAC_SHA1_ETM, mac::HMAC_SHA1]);
        }

        Preferred {
            kex: Cow::Owned(kex),
            key: Cow::Owned(key),
            cipher: Cow::Owned(ciphers),
            mac: Cow::Owned(macs),
            ..Preferred::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern_has_no_sha1_or_cbc() {
        let p = AlgorithmProfile::MODERN.preferred();
        assert!(!p.kex.contains(&kex::DH_G14_SHA1));
        assert!(!p.key.contains(&Algorithm::Rsa { hash: None }));
        assert!(!p.cipher.contains(&cipher::AES_128_CBC));
        assert!(!p.mac.contains(&mac::HMAC_SHA1));
        let l = AlgorithmProfile::LEGACY.preferred();
        assert!(l.kex.contains(&kex::DH_G14_SHA1) && l.cipher.contains(&cipher::AES_128_CBC));
    }
}
