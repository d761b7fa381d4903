//! Who may deliver a pushed Redfish event: the authentication in front of [`crate::event_listener`].
//!
//! Why: the receiver listens on the OOB network, where every neighbour can POST. A delivery is accepted
//! only when all of these hold:
//! - its `Context` names a device this receiver subscribed (unknown devices are refused);
//! - its URL carries that device's secret: the subscription's `Destination` ends in
//!   `HMAC-SHA256(key, device)`, the key random per process, so a restart rotates every secret (the server
//!   subscribes each BMC again at start, replacing the old subscription);
//! - it comes from the BMC's inventory address (a loopback peer matches a loopback BMC: on 127.0.0.0/8 the
//!   kernel picks 127.0.0.1 as the source whatever address the sender's BMC serves on, and the jump
//!   host's own processes are not told apart by address anyway);
//! - its source is within the per-source rate and concurrency limits.
//!
//! Even an accepted delivery only prompts a read of that BMC's own log over the authenticated client; its
//! body is never stored or turned into a fault. The secret travels in clear HTTP (BMCs deliver to plain
//! `http://` destinations), so a neighbour who sniffs it can at worst prompt reads, within the limits.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ring::hmac;

use crate::targets::BmcSelection;

/// Deliveries a source may start in a burst, and per second after it.
const BURST: f64 = 20.0;
const PER_SECOND: f64 = 2.0;
/// Connections one source may hold open at once (a slow sender holds one for the read limit).
const PER_SOURCE_OPEN: u32 = 4;
/// Sources remembered before idle ones are forgotten (bounds the limiter's memory under a spoofing flood).
const MAX_SOURCES: usize = 4096;
/// How long resolving a BMC's host name may take when the gate is built.
const RESOLVE_LIMIT: Duration = Duration::from_secs(5);

/// Why a delivery was refused; each maps to one HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("too many deliveries from this source")]
    RateLimited,
    #[error("no Lifeline Context naming a subscribed device")]
    UnknownDevice,
    #[error("missing or wrong subscription secret")]
    BadSecret,
    #[error("not sent from the BMC's inventory address")]
    WrongSource,
}

impl Refusal {
    pub fn status(self) -> &'static str {
        match self {
            Refusal::RateLimited => "429 Too Many Requests",
            Refusal::UnknownDevice => "404 Not Found",
            Refusal::BadSecret => "401 Unauthorized",
            Refusal::WrongSource => "403 Forbidden",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::RateLimited => "rate-limited",
            Refusal::UnknownDevice => "unknown-device",
            Refusal::BadSecret => "bad-secret",
            Refusal::WrongSource => "wrong-source",
        }
    }
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
    open: u32,
}

/// The devices a receiver accepts deliveries for, their sources, the secret key and the limits.
pub struct EventGate {
    key: hmac::Key,
    sources: HashMap<String, Vec<IpAddr>>,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

impl std::fmt::Debug for EventGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventGate").field("devices", &self.sources.len()).finish_non_exhaustive()
    }
}

/// Whether a delivery from `peer` may come from a BMC at `bmc`.
fn same_source(bmc: IpAddr, peer: IpAddr) -> bool {
    let (bmc, peer) = (bmc.to_canonical(), peer.to_canonical());
    bmc == peer || (bmc.is_loopback() && peer.is_loopback())
}

impl EventGate {
    /// A gate for `sources` (device → the addresses its BMC may deliver from), with a fresh random key.
    pub fn new(sources: HashMap<String, Vec<IpAddr>>) -> EventGate {
        let rng = ring::rand::SystemRandom::new();
        // Generating 32 random bytes from the OS fails only without an OS random source at all.
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng).expect("the OS random source");
        EventGate { key, sources, buckets: Mutex::default() }
    }

    /// A gate for the BMCs of `sel`, their addresses resolved now; BMCs whose address does not resolve are
    /// left out (their deliveries refused) and named in the returned problems.
    pub async fn for_selection(sel: &BmcSelection) -> (EventGate, Vec<String>) {
        let mut sources = HashMap::new();
        let mut problems = Vec::new();
        for b in &sel.bmcs {
            let host = b.target.address.trim_start_matches('[').trim_end_matches(']');
            let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
                Ok(ip) => vec![ip],
                Err(_) => {
                    match tokio::time::timeout(RESOLVE_LIMIT, tokio::net::lookup_host((host, 0))).await {
                        Ok(Ok(a)) => a.map(|s| s.ip()).collect(),
                        Ok(Err(e)) => {
                            problems
                                .push(format!("`{}`: BMC address `{host}` does not resolve: {e}", b.name()));
                            continue;
                        }
                        Err(_) => {
                            problems
                                .push(format!("`{}`: resolving BMC address `{host}` timed out", b.name()));
                            continue;
                        }
                    }
                }
            };
            sources.insert(b.name().to_owned(), addrs);
        }
        (EventGate::new(sources), problems)
    }

    /// The devices deliveries are accepted for.
    pub fn devices(&self) -> impl Iterator<Item = &str> {
        self.sources.keys().map(String::as_str)
    }

    /// The secret of `device`'s subscription (64 hex digits).
    pub fn secret(&self, device: &str) -> String {
        hex::encode(hmac::sign(&self.key, format!("lifeline-event:{device}").as_bytes()).as_ref())
    }

    /// The `Destination` to subscribe `device` with: the receiver's URL, then the device's secret.
    pub fn destination(&self, receiver_url: &str, device: &str) -> String {
        format!("{}/{}", receiver_url.trim_end_matches('/'), self.secret(device))
    }

    /// Admits one connection from `peer` (before anything is read): within the rate and the open
    /// connections allowed per source. The returned guard gives the connection back when dropped.
    pub fn admit(&self, peer: IpAddr) -> Result<Admitted<'_>, Refusal> {
        let peer = peer.to_canonical();
        let now = Instant::now();
        let mut b = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if b.len() >= MAX_SOURCES && !b.contains_key(&peer) {
            // Forget sources with nothing open whose bucket has refilled: they are indistinguishable from new.
            b.retain(|_, v| v.open > 0 || (now - v.at).as_secs_f64() * PER_SECOND + v.tokens < BURST);
            if b.len() >= MAX_SOURCES {
                return Err(Refusal::RateLimited);
            }
        }
        let e = b.entry(peer).or_insert(Bucket { tokens: BURST, at: now, open: 0 });
        e.tokens = (e.tokens + (now - e.at).as_secs_f64() * PER_SECOND).min(BURST);
        e.at = now;
        if e.tokens < 1.0 || e.open >= PER_SOURCE_OPEN {
            return Err(Refusal::RateLimited);
        }
        e.tokens -= 1.0;
        e.open += 1;
        Ok(Admitted { gate: self, peer })
    }

    /// Checks one delivery: `device` from its `Context`, `secret` from the URL's last segment.
    pub fn check(&self, device: Option<&str>, secret: Option<&str>, peer: IpAddr) -> Result<String, Refusal> {
        let device = device.ok_or(Refusal::UnknownDevice)?;
        let allowed = self.sources.get(device).ok_or(Refusal::UnknownDevice)?;
        let sent = secret.and_then(|s| hex::decode(s).ok()).ok_or(Refusal::BadSecret)?;
        hmac::verify(&self.key, format!("lifeline-event:{device}").as_bytes(), &sent)
            .map_err(|_| Refusal::BadSecret)?;
        if !allowed.iter().any(|a| same_source(*a, peer)) {
            return Err(Refusal::WrongSource);
        }
        Ok(device.to_owned())
    }
}

/// One admitted connection; counted against its source while it lives.
pub struct Admitted<'a> {
    gate: &'a EventGate,
    peer: IpAddr,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        let mut b = self.gate.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = b.get_mut(&self.peer) {
            e.open = e.open.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> EventGate {
        let mut s = HashMap::new();
        s.insert("gpu-node-04".to_owned(), vec!["192.0.2.10".parse().unwrap()]);
        s.insert("local".to_owned(), vec!["127.0.0.1".parse().unwrap()]);
        EventGate::new(s)
    }

    #[test]
    fn secret_source_and_device_are_all_required() {
        let g = gate();
        let bmc: IpAddr = "192.0.2.10".parse().unwrap();
        let other: IpAddr = "192.0.2.99".parse().unwrap();
        let s = g.secret("gpu-node-04");
        assert_eq!(g.check(Some("gpu-node-04"), Some(&s), bmc), Ok("gpu-node-04".into()));
        assert_eq!(g.check(Some("gpu-node-04"), None, bmc), Err(Refusal::BadSecret));
        assert_eq!(g.check(Some("gpu-node-04"), Some("00"), bmc), Err(Refusal::BadSecret));
        assert_eq!(g.check(Some("gpu-node-04"), Some(&g.secret("local")), bmc), Err(Refusal::BadSecret));
        assert_eq!(g.check(Some("gpu-node-04"), Some(&s), other), Err(Refusal::WrongSource));
        // A neighbour on loopback is not the BMC at 192.0.2.10.
        assert_eq!(
            g.check(Some("gpu-node-04"), Some(&s), "127.0.0.1".parse().unwrap()),
            Err(Refusal::WrongSource)
        );
        assert_eq!(g.check(Some("nope"), Some(&s), bmc), Err(Refusal::UnknownDevice));
        assert_eq!(g.check(None, Some(&s), bmc), Err(Refusal::UnknownDevice));
        // IPv4-mapped IPv6 is the same source; loopback matches a loopback BMC.
        assert!(g.check(Some("gpu-node-04"), Some(&s), "::ffff:192.0.2.10".parse().unwrap()).is_ok());
        assert!(g.check(Some("local"), Some(&g.secret("local")), "127.0.0.9".parse().unwrap()).is_ok());
        // Another process's gate (a restart) has another key.
        assert_eq!(gate().check(Some("gpu-node-04"), Some(&s), bmc), Err(Refusal::BadSecret));
        assert_eq!(
            g.destination("http://h:1/events/", "local"),
            format!("http://h:1/events/{}", g.secret("local"))
        );
    }

    #[test]
    fn a_source_is_limited_in_rate_and_open_connections() {
        let g = gate();
        let a: IpAddr = "192.0.2.50".parse().unwrap();
        let mut open = Vec::new();
        for _ in 0..PER_SOURCE_OPEN {
            open.push(g.admit(a).unwrap());
        }
        assert!(g.admit(a).is_err(), "a fifth connection at once");
        assert!(g.admit("192.0.2.51".parse().unwrap()).is_ok(), "another source is not held up");
        open.clear();
        let admitted = (0..100).filter(|_| g.admit(a).is_ok()).count();
        // The burst (less the four above), plus what refilled while the loop ran.
        assert!((15..=20).contains(&admitted), "{admitted}");
    }
}
