//! TLS session resumption shared by the clients built from one [`ClientOptions`](crate::ClientOptions).
//!
//! Why: a fleet sweep builds a new client per BMC each time (its own rustls configuration, so the verifier
//! knows whose pin it enforces), and a client's own session cache dies with it, so every sweep paid a full
//! handshake (ECDSA signature and verification, certificate parse) per BMC. Keeping the tickets here, beside
//! the options a pool or the server keeps, lets the next client of the same BMC resume instead.
//!
//! rustls resumes a session only with the very verifier that checked it (the same `Arc`), so each entry
//! keeps the BMC's verifier too, and every client of that BMC (and trust) uses it; its pin state (last
//! certificate seen, last refusal) is then shared by those clients, which see the same BMC.
//!
//! Why it keeps the trust rules: an entry is kept per (BMC, base URL, what the handshake was verified
//! against: the pinned fingerprint or the CA bundle's hash), never per host name alone, so a ticket is
//! never offered to another BMC behind the same address, and a re-pin or another CA starts from a full
//! handshake through a new verifier. A resumed handshake proves the peer holds the secret of a session that
//! passed that verification, which a peer without the pinned key cannot have. Connections that must see the
//! certificate (the certificate probe, trust on first use) do not use this cache. What resumption delays:
//! noticing an intended certificate replacement on a BMC that still accepts its old tickets (at most the
//! ticket lifetime the BMC announced, 7 days by RFC 8446); a BMC whose web server restarts with the new
//! certificate (bmcweb, the simulator) refuses them and the next handshake shows it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use rustls::NamedGroup;
use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;

use crate::tls::BmcVerifier;

/// TLS 1.3 tickets kept per BMC. Why two: a sweep of an HTTP/2 BMC opens one connection, which uses one
/// ticket and brings the BMC's new ones (2 from OpenSSL-based web servers and the simulator), so two always
/// cover the next sweep, while rustls' own cache keeps up to eight per server, each with a copy of the
/// BMC's certificate chain (~1 KiB): at 10,000 BMCs in the server that was tens of MiB held for nothing.
const TICKETS_PER_BMC: usize = 2;

/// Default number of BMCs whose tickets are kept (about 2 KiB each: two tickets with the certificate).
pub const DEFAULT_RESUMPTION_BMCS: usize = 10_000;

/// The sessions of one BMC (one server name): a key-exchange hint, a TLS 1.2 session, and at most
/// [`TICKETS_PER_BMC`] TLS 1.3 tickets, newest kept.
#[derive(Debug, Default)]
pub(crate) struct BmcSessions(Mutex<Sessions>);

#[derive(Debug, Default)]
struct Sessions {
    /// The server name these are for: a client of another name (never expected: an entry is per BMC and
    /// base URL) finds nothing and replaces them.
    name: Option<ServerName<'static>>,
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    tls13: VecDeque<Tls13ClientSessionValue>,
}

impl BmcSessions {
    fn with<R>(&self, name: &ServerName<'_>, f: impl FnOnce(&mut Sessions) -> Option<R>) -> Option<R> {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if s.name.as_ref().is_some_and(|n| n == name) { f(&mut s) } else { None }
    }

    fn for_name(&self, name: ServerName<'static>, f: impl FnOnce(&mut Sessions)) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if s.name.as_ref() != Some(&name) {
            *s = Sessions { name: Some(name), ..Sessions::default() };
        }
        f(&mut s);
    }

    fn tickets(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).tls13.len()
    }
}

impl ClientSessionStore for BmcSessions {
    fn set_kx_hint(&self, name: ServerName<'static>, group: NamedGroup) {
        self.for_name(name, |s| s.kx_hint = Some(group));
    }
    fn kx_hint(&self, name: &ServerName<'_>) -> Option<NamedGroup> {
        self.with(name, |s| s.kx_hint)
    }
    fn set_tls12_session(&self, name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.for_name(name, |s| s.tls12 = Some(value));
    }
    fn tls12_session(&self, name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.with(name, |s| s.tls12.clone())
    }
    fn remove_tls12_session(&self, name: &ServerName<'static>) {
        self.with(name, |s| s.tls12.take());
    }
    fn insert_tls13_ticket(&self, name: ServerName<'static>, value: Tls13ClientSessionValue) {
        self.for_name(name, |s| {
            if s.tls13.len() >= TICKETS_PER_BMC {
                s.tls13.pop_front();
            }
            s.tls13.push_back(value);
        });
    }
    fn take_tls13_ticket(&self, name: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        // Newest first: the oldest is the likeliest to have expired.
        self.with(name, |s| s.tls13.pop_back())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    bmc: String,
    base: String,
    /// The pinned fingerprint, or the SHA-256 of the CA bundle.
    identity: [u8; 32],
}

/// What the clients of one BMC share: the verifier that checked the sessions, and their tickets.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub verifier: Arc<BmcVerifier>,
    pub store: Arc<BmcSessions>,
}

/// Per-BMC TLS session stores, bounded by a number of BMCs. Cheap to clone (shared).
#[derive(Clone)]
pub struct ResumptionCache {
    inner: Arc<Mutex<HashMap<Key, Entry>>>,
    max_bmcs: usize,
}

impl std::fmt::Debug for ResumptionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumptionCache")
            .field("bmcs", &self.len())
            .field("max_bmcs", &self.max_bmcs)
            .finish()
    }
}

impl Default for ResumptionCache {
    fn default() -> Self {
        ResumptionCache::new(DEFAULT_RESUMPTION_BMCS)
    }
}

impl ResumptionCache {
    /// Keeps tickets for up to `max_bmcs` BMCs (0: never resume across clients).
    pub fn new(max_bmcs: usize) -> Self {
        ResumptionCache { inner: Arc::new(Mutex::new(HashMap::new())), max_bmcs }
    }

    /// BMCs with a store now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// TLS 1.3 tickets held now, over every BMC (bounded by two per BMC).
    pub fn tickets(&self) -> usize {
        self.lock().values().map(|e| e.store.tickets()).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The entry for one BMC verified against `identity`, made with `verifier` on first use; `None` when
    /// disabled.
    pub(crate) fn entry<E>(
        &self,
        bmc: &str,
        base: &str,
        identity: [u8; 32],
        verifier: impl FnOnce() -> Result<BmcVerifier, E>,
    ) -> Result<Option<Entry>, E> {
        if self.max_bmcs == 0 {
            return Ok(None);
        }
        let key = Key { bmc: bmc.to_owned(), base: base.to_owned(), identity };
        if let Some(e) = self.lock().get(&key) {
            return Ok(Some(e.clone()));
        }
        // Built outside the lock (a CA bundle is parsed here); a racing client's entry wins.
        let made = Entry { verifier: Arc::new(verifier()?), store: Arc::new(BmcSessions::default()) };
        let mut map = self.lock();
        if let Some(e) = map.get(&key) {
            return Ok(Some(e.clone()));
        }
        if map.len() >= self.max_bmcs {
            // Evict an arbitrary BMC (hash order): unlike oldest-first, a fleet larger than the cache swept
            // in the same order each time still finds some of its tickets.
            if let Some(k) = map.keys().next().cloned() {
                map.remove(&k);
            }
        }
        map.insert(key, made.clone());
        Ok(Some(made))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier() -> Result<BmcVerifier, ()> {
        Ok(crate::tls::pin_verifier(None))
    }

    #[test]
    fn one_entry_per_bmc_and_identity_and_bounded() {
        let c = ResumptionCache::new(2);
        let a = c.entry("a", "https://10.0.0.1/", [1; 32], verifier).unwrap().unwrap();
        let a2 = c.entry("a", "https://10.0.0.1/", [1; 32], verifier).unwrap().unwrap();
        assert!(Arc::ptr_eq(&a.verifier, &a2.verifier) && Arc::ptr_eq(&a.store, &a2.store));
        // Another pin (a re-pin) is another entry: its tickets were verified against the old one.
        let repinned = c.entry("a", "https://10.0.0.1/", [2; 32], verifier).unwrap().unwrap();
        assert!(!Arc::ptr_eq(&a.verifier, &repinned.verifier));
        // The same address under another BMC name (another port behind one address) shares nothing.
        assert_eq!(c.len(), 2);
        let b = c.entry("b", "https://10.0.0.1/", [1; 32], verifier).unwrap().unwrap();
        assert!(!Arc::ptr_eq(&a.store, &b.store));
        assert_eq!(c.len(), 2, "bounded");
        assert!(ResumptionCache::new(0).entry("a", "https://x/", [0; 32], verifier).unwrap().is_none());
    }
}
