//! Host-key trust on first use, checked inside the SSH handshake.
//!
//! Why in the handshake: the key is verified before a password is ever sent, so a spoofed switch on
//! the OOB network never receives credentials. The first key seen is pinned; a different key later is
//! refused with both fingerprints in the error, and only an explicit re-pin (`lifeline backup trust`)
//! accepts the new one — and only the very key the operator was shown ([`PinPolicy::Look`] shows it
//! without sending a credential) and confirmed by its fingerprint ([`PinPolicy::Repin`]).

use std::sync::{Arc, Mutex};

use lifeline_types::{DeviceName, Fingerprint};
use russh::keys::{PublicKey, PublicKeyOrCertificate};
use sha2::{Digest, Sha256};

use crate::index::{HostKeyPins, IndexError};

/// SHA-256 of the public key's SSH wire blob (the same bytes `ssh-keygen -lf` hashes).
pub fn fingerprint(key: &PublicKey) -> Fingerprint {
    let blob = key.to_bytes().unwrap_or_default();
    Fingerprint(Sha256::digest(&blob).into())
}

/// What to do with the presented key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinPolicy {
    /// Pin when none is stored, else require a match.
    TrustOnFirstUse,
    /// Store the presented key only when it is this one: the fingerprint the operator was shown and
    /// confirmed (anything else is refused before a credential is sent).
    Repin(Fingerprint),
    /// Record the presented key and end the handshake: nothing stored, no credential sent.
    Look,
}

/// What the handshake found, for the error the connect path reports.
#[derive(Debug)]
pub(crate) enum KeyVerdict {
    Changed { pinned: Fingerprint, presented: Fingerprint },
    NotConfirmed { expected: Fingerprint, presented: Fingerprint },
    Looked,
    Certificate,
    Store(IndexError),
}

pub(crate) struct PinningHandler {
    pub device: DeviceName,
    pub pins: Arc<dyn HostKeyPins>,
    pub policy: PinPolicy,
    pub verdict: Arc<Mutex<Option<KeyVerdict>>>,
    pub seen: Arc<Mutex<Option<Fingerprint>>>,
}

impl PinningHandler {
    fn refuse(&self, v: KeyVerdict) -> Result<bool, russh::Error> {
        *self.verdict.lock().expect("verdict lock") = Some(v);
        Ok(false)
    }
}

impl russh::client::Handler for PinningHandler {
    type Error = russh::Error;

    async fn check_server_key(&mut self, server_key: &PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        let PublicKeyOrCertificate::PublicKey { key, .. } = server_key else {
            return self.refuse(KeyVerdict::Certificate);
        };
        let presented = fingerprint(key);
        *self.seen.lock().expect("seen lock") = Some(presented);
        match self.policy {
            PinPolicy::Look => return self.refuse(KeyVerdict::Looked),
            PinPolicy::Repin(expected) if expected != presented => {
                return self.refuse(KeyVerdict::NotConfirmed { expected, presented });
            }
            PinPolicy::Repin(_) => {
                return match self.pins.set(&self.device, presented).await {
                    Ok(()) => Ok(true),
                    Err(e) => self.refuse(KeyVerdict::Store(e)),
                };
            }
            PinPolicy::TrustOnFirstUse => {}
        }
        match self.pins.get(&self.device).await {
            Err(e) => self.refuse(KeyVerdict::Store(e)),
            Ok(Some(pinned)) if pinned == presented => Ok(true),
            Ok(Some(pinned)) => self.refuse(KeyVerdict::Changed { pinned, presented }),
            Ok(None) => {
                tracing::info!(device = %self.device, %presented, "pinning SSH host key on first use");
                match self.pins.set(&self.device, presented).await {
                    Ok(()) => Ok(true),
                    Err(e) => self.refuse(KeyVerdict::Store(e)),
                }
            }
        }
    }
}
