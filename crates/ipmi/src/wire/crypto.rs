//! Cipher suites 3 and 17: RAKP key exchange maths for BOTH ends, session integrity
//! (HMAC-SHA1-96 / HMAC-SHA256-128) and confidentiality (AES-CBC-128).
//!
//! ipmi-rs 0.6 hard-codes suite 3 inside its synchronous RMCP+ transport; Lifeline
//! needs suite 17 first with a fallback to 3, and the simulator needs the BMC half
//! of RAKP, so the arithmetic lives here once, as pure functions (IVs and random
//! numbers are passed in by the caller).

use super::DecodeError;
use aes::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit, block_padding::NoPadding};
use hmac::{Hmac, Mac};

/// RMCP+ authentication algorithm numbers (RAKP).
pub mod auth_alg {
    pub const NONE: u8 = 0x00;
    pub const HMAC_SHA1: u8 = 0x01;
    pub const HMAC_MD5: u8 = 0x02;
    pub const HMAC_SHA256: u8 = 0x03;
}
/// RMCP+ integrity algorithm numbers.
pub mod integrity_alg {
    pub const NONE: u8 = 0x00;
    pub const HMAC_SHA1_96: u8 = 0x01;
    pub const HMAC_MD5_128: u8 = 0x02;
    pub const MD5_128: u8 = 0x03;
    pub const HMAC_SHA256_128: u8 = 0x04;
}
/// RMCP+ confidentiality algorithm numbers.
pub mod conf_alg {
    pub const NONE: u8 = 0x00;
    pub const AES_CBC_128: u8 = 0x01;
}

/// The cipher suites Lifeline speaks. Both use AES-CBC-128 for confidentiality.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CipherSuite {
    /// RAKP-HMAC-SHA1, HMAC-SHA1-96, AES-CBC-128.
    Suite3,
    /// RAKP-HMAC-SHA256, HMAC-SHA256-128, AES-CBC-128.
    Suite17,
}

impl CipherSuite {
    pub fn id(self) -> u8 {
        match self {
            Self::Suite3 => 3,
            Self::Suite17 => 17,
        }
    }
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            3 => Some(Self::Suite3),
            17 => Some(Self::Suite17),
            _ => None,
        }
    }
    /// The suite selected by an (auth, integrity, confidentiality) algorithm triple.
    pub fn from_algorithms(auth: u8, integrity: u8, conf: u8) -> Option<Self> {
        [Self::Suite3, Self::Suite17].into_iter().find(|s| s.algorithms() == (auth, integrity, conf))
    }
    pub fn algorithms(self) -> (u8, u8, u8) {
        match self {
            Self::Suite3 => (auth_alg::HMAC_SHA1, integrity_alg::HMAC_SHA1_96, conf_alg::AES_CBC_128),
            Self::Suite17 => (auth_alg::HMAC_SHA256, integrity_alg::HMAC_SHA256_128, conf_alg::AES_CBC_128),
        }
    }
    /// Length of the RAKP2/RAKP3 key-exchange authentication code (full HMAC).
    pub fn rakp_code_len(self) -> usize {
        match self {
            Self::Suite3 => 20,
            Self::Suite17 => 32,
        }
    }
    /// Length of the RAKP4 integrity check value and of each packet's AuthCode.
    pub fn icv_len(self) -> usize {
        match self {
            Self::Suite3 => 12,
            Self::Suite17 => 16,
        }
    }
    /// HMAC over the concatenation of `parts` with the suite's RAKP hash.
    pub fn hmac(self, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        match self {
            Self::Suite3 => hmac_with::<Hmac<sha1::Sha1>>(key, parts),
            Self::Suite17 => hmac_with::<Hmac<sha2::Sha256>>(key, parts),
        }
    }
}

impl std::fmt::Display for CipherSuite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cipher suite {}", self.id())
    }
}

fn hmac_with<M: Mac + hmac::digest::KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <M as hmac::digest::KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().to_vec()
}

/// Constant-time-ish comparison for authentication codes.
pub fn codes_equal(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Everything both ends know after RAKP 1 and 2, from which every code and key follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RakpParams {
    pub suite: CipherSuite,
    /// Remote console session id (SIDm).
    pub console_session_id: u32,
    /// Managed system (BMC) session id (SIDc).
    pub bmc_session_id: u32,
    /// Remote console random number (Rm).
    pub console_random: [u8; 16],
    /// Managed system random number (Rc).
    pub bmc_random: [u8; 16],
    /// Managed system GUID.
    pub bmc_guid: [u8; 16],
    /// Requested maximum privilege level byte of RAKP1 (role; bit 4 = name-only lookup).
    pub role: u8,
    pub username: Vec<u8>,
}

impl RakpParams {
    /// RAKP2 key exchange authentication code, keyed with the user password (Kuid).
    pub fn rakp2_code(&self, password: &[u8]) -> Vec<u8> {
        self.suite.hmac(
            password,
            &[
                &self.console_session_id.to_le_bytes(),
                &self.bmc_session_id.to_le_bytes(),
                &self.console_random,
                &self.bmc_random,
                &self.bmc_guid,
                &[self.role, self.username.len() as u8],
                &self.username,
            ],
        )
    }

    /// RAKP3 key exchange authentication code, keyed with Kuid.
    pub fn rakp3_code(&self, password: &[u8]) -> Vec<u8> {
        self.suite.hmac(
            password,
            &[
                &self.bmc_random,
                &self.console_session_id.to_le_bytes(),
                &[self.role, self.username.len() as u8],
                &self.username,
            ],
        )
    }

    /// Session integrity key. `kg` is the BMC key; when unset (all zero / empty) Kuid is used.
    pub fn sik(&self, password: &[u8], kg: Option<&[u8]>) -> Vec<u8> {
        let key = match kg {
            Some(k) if k.iter().any(|b| *b != 0) => k,
            _ => password,
        };
        self.suite.hmac(
            key,
            &[
                &self.console_random,
                &self.bmc_random,
                &[self.role, self.username.len() as u8],
                &self.username,
            ],
        )
    }

    /// RAKP4 integrity check value (truncated HMAC keyed with SIK).
    pub fn rakp4_icv(&self, sik: &[u8]) -> Vec<u8> {
        let mut v =
            self.suite.hmac(sik, &[&self.console_random, &self.bmc_session_id.to_le_bytes(), &self.bmc_guid]);
        v.truncate(self.suite.icv_len());
        v
    }
}

/// Keys of an established session (derived from SIK).
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKeys {
    pub suite: CipherSuite,
    /// K1: integrity key.
    pub k1: Vec<u8>,
    /// First 16 bytes of K2: AES-CBC-128 key.
    pub aes_key: [u8; 16],
}

impl std::fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.debug_struct("SessionKeys").field("suite", &self.suite).finish_non_exhaustive()
    }
}

impl SessionKeys {
    pub fn derive(suite: CipherSuite, sik: &[u8]) -> Self {
        // The constants are 20 bytes for every suite (FreeIPMI and ipmitool agree).
        let k1 = suite.hmac(sik, &[&[0x01; 20]]);
        let k2 = suite.hmac(sik, &[&[0x02; 20]]);
        let mut aes_key = [0u8; 16];
        aes_key.copy_from_slice(&k2[..16]);
        Self { suite, k1, aes_key }
    }

    /// Packet AuthCode over `signed` (AuthType .. Next Header), truncated.
    pub fn auth_code(&self, signed: &[u8]) -> Vec<u8> {
        let mut v = self.suite.hmac(&self.k1, &[signed]);
        v.truncate(self.suite.icv_len());
        v
    }

    /// AES-CBC-128 confidentiality: IV, then the ciphertext of payload + pad 1,2,.. + pad length.
    pub fn encrypt(&self, iv: [u8; 16], plain: &[u8]) -> Vec<u8> {
        let pad = (16 - (plain.len() + 1) % 16) % 16;
        let mut buf = Vec::with_capacity(16 + plain.len() + pad + 1);
        buf.extend_from_slice(plain);
        buf.extend((1..=pad as u8).collect::<Vec<_>>());
        buf.push(pad as u8);
        let enc = cbc::Encryptor::<aes::Aes128>::new(&self.aes_key.into(), &iv.into());
        let ct = enc.encrypt_padded_vec_mut::<NoPadding>(&buf);
        let mut out = iv.to_vec();
        out.extend_from_slice(&ct);
        out
    }

    /// Inverse of [`encrypt`](Self::encrypt). The pad bytes' values are not checked
    /// (some BMCs pad with zeros), only the length.
    pub fn decrypt(&self, data: &[u8]) -> Result<Vec<u8>, DecodeError> {
        if data.len() < 32 || !data.len().is_multiple_of(16) {
            return Err(DecodeError::Decrypt);
        }
        let (iv, ct) = data.split_at(16);
        let mut iv16 = [0u8; 16];
        iv16.copy_from_slice(iv);
        let dec = cbc::Decryptor::<aes::Aes128>::new(&self.aes_key.into(), &iv16.into());
        let mut pt = dec.decrypt_padded_vec_mut::<NoPadding>(ct).map_err(|_| DecodeError::Decrypt)?;
        let pad = *pt.last().ok_or(DecodeError::Decrypt)? as usize;
        if pad + 1 > pt.len() || pad > 15 {
            return Err(DecodeError::Decrypt);
        }
        pt.truncate(pt.len() - pad - 1);
        Ok(pt)
    }
}
