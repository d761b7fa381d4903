//! The per-insert tokens of the image server: one image per token, unguessable (256 random bits), expiring,
//! and kept only as their SHA-256 (a token is a capability: a copy of the table, a log line or an audit
//! record must not hand it out). Each token answers only requests from the addresses of the BMC it was
//! made for: a URL copied from a BMC's page (which shows it to anyone who may read the slot) opens nothing
//! from anywhere else. What was fetched with each is counted for the audit.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ring::digest::{SHA256, digest};
use ring::rand::{SecureRandom, SystemRandom};
use serde::Serialize;

/// An image offered under a fresh token.
#[derive(Debug, Clone)]
pub struct Offer {
    /// The secret part of the URL (64 hex digits): handed to one BMC, never audited.
    pub token: String,
    /// The first 12 hex digits of the token's SHA-256: names the token in the audit and the logs.
    pub id: String,
    /// The file name the URL ends with (the only name the token answers for).
    pub name: String,
    pub expires: chrono::DateTime<chrono::Utc>,
    /// The source addresses whose requests the token answers (the BMC's).
    pub from: Vec<IpAddr>,
}

/// What a token served, for the audit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Served {
    /// The token's id (see [`Offer::id`]).
    pub token: String,
    pub file: PathBuf,
    /// Requests answered with the image (whole or a range).
    pub requests: u64,
    /// Of those, range requests (206).
    pub ranges: u64,
    /// Bytes of the image sent.
    pub bytes: u64,
    pub expires: String,
    /// The source addresses the token answers (the BMC's).
    pub from: Vec<IpAddr>,
}

struct Entry {
    path: PathBuf,
    name: String,
    /// The BMC the token was made for (by name).
    owner: String,
    from: Vec<IpAddr>,
    deadline: Instant,
    served: Served,
}

/// The table of live tokens.
#[derive(Default)]
pub struct Tokens {
    map: Mutex<HashMap<[u8; 32], Entry>>,
    /// Requests refused (unknown, expired or revoked token, another name): nothing was served.
    refused: Mutex<u64>,
}

fn hash(token: &str) -> [u8; 32] {
    let mut h = [0u8; 32];
    h.copy_from_slice(digest(&SHA256, token.as_bytes()).as_ref());
    h
}

fn id_of(h: &[u8; 32]) -> String {
    hex::encode(&h[..6])
}

/// `text` with the token of every image-server URL in it (`/image/TOKEN/`) replaced by `token:ID`: what
/// is recorded (an insert's intent, a slot's previous image) names a token and never holds one.
pub fn redact(text: &str) -> String {
    const MARK: &str = "/image/";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(MARK) {
        let (head, tail) = rest.split_at(i + MARK.len());
        out.push_str(head);
        let token = tail.get(..64).filter(|t| t.bytes().all(|b| b.is_ascii_hexdigit()));
        match token {
            Some(t) if tail[64..].starts_with('/') => {
                out.push_str("token:");
                out.push_str(&id_of(&hash(t)));
                rest = &tail[64..];
            }
            _ => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// The same address, an IPv4 one also as IPv6 sees it (`::ffff:a.b.c.d`, a dual-stack listener's peer).
fn same_ip(a: IpAddr, b: IpAddr) -> bool {
    a.to_canonical() == b.to_canonical()
}

impl Tokens {
    /// A fresh token for `path`, answering for `name` only, to requests from `from` only, until `ttl` from
    /// now. With no address in `from` it answers nobody.
    pub fn issue(
        &self,
        path: &Path,
        name: &str,
        owner: &str,
        from: &[IpAddr],
        ttl: Duration,
    ) -> Result<Offer, ring::error::Unspecified> {
        let mut raw = [0u8; 32];
        SystemRandom::new().fill(&mut raw)?;
        let token = hex::encode(raw);
        let h = hash(&token);
        let expires = chrono::Utc::now() + ttl;
        let id = id_of(&h);
        let served = Served {
            token: id.clone(),
            file: path.to_owned(),
            expires: expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            from: from.to_vec(),
            ..Served::default()
        };
        let entry = Entry {
            path: path.to_owned(),
            name: name.to_owned(),
            owner: owner.to_owned(),
            from: from.to_vec(),
            deadline: Instant::now() + ttl,
            served,
        };
        self.lock().insert(h, entry);
        Ok(Offer { token, id, name: name.to_owned(), expires, from: from.to_vec() })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Entry>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The file behind `token` when it is live, answers for `name` and for a request from `peer`, with the
    /// token's id; `None` (and the refusal counted) otherwise. A request whose source is unknown is refused.
    pub fn lookup(
        &self,
        token: &str,
        name: &str,
        peer: Option<IpAddr>,
        now: Instant,
    ) -> Option<(PathBuf, String)> {
        let h = hash(token);
        let from_bmc = |e: &&Entry| peer.is_some_and(|p| e.from.iter().any(|f| same_ip(*f, p)));
        let found = self
            .lock()
            .get(&h)
            .filter(|e| e.name == name && now < e.deadline)
            .filter(from_bmc)
            .map(|e| e.path.clone());
        if found.is_none() {
            *self.refused.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        }
        found.map(|p| (p, id_of(&h)))
    }

    /// Counts one answered request of the token `id`.
    pub fn record(&self, id: &str, ranged: bool, bytes: u64) {
        if let Some(e) = self.lock().values_mut().find(|e| e.served.token == id) {
            e.served.requests += 1;
            e.served.ranges += u64::from(ranged);
            e.served.bytes += bytes;
        }
    }

    /// Ends every token at once (the server stops serving): later requests are refused.
    pub fn revoke_all(&self) {
        for e in self.lock().values_mut() {
            e.deadline = Instant::now();
        }
    }

    /// Ends the live tokens of `owner` and drops them from the table: what they served.
    pub fn revoke_owner(&self, owner: &str) -> Vec<Served> {
        let mut map = self.lock();
        let hashes: Vec<[u8; 32]> = map.iter().filter(|(_, e)| e.owner == owner).map(|(h, _)| *h).collect();
        let mut out: Vec<Served> = hashes.iter().filter_map(|h| map.remove(h)).map(|e| e.served).collect();
        out.sort_by(|a, b| a.token.cmp(&b.token));
        out
    }

    /// Drops the tokens that expired (a long-running server's table does not grow with every insert).
    pub fn forget_expired(&self, now: Instant) {
        self.lock().retain(|_, e| now < e.deadline);
    }

    /// What each token served so far, and the refused requests.
    pub fn served(&self) -> (Vec<Served>, u64) {
        let mut v: Vec<Served> = self.lock().values().map(|e| e.served.clone()).collect();
        v.sort_by(|a, b| a.token.cmp(&b.token));
        (v, *self.refused.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The latest deadline of the live tokens (the server may stop after it).
    pub fn last_deadline(&self) -> Option<Instant> {
        self.lock().values().map(|e| e.deadline).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_answers_for_its_one_name_until_it_expires_or_is_revoked() {
        let t = Tokens::default();
        let (bmc_a, bmc_b): (IpAddr, IpAddr) = ("10.1.0.11".parse().unwrap(), "10.1.0.12".parse().unwrap());
        let a = t.issue(Path::new("/srv/a.iso"), "a.iso", "n1", &[bmc_a], Duration::from_secs(60)).unwrap();
        let b = t.issue(Path::new("/srv/b.iso"), "b.iso", "n2", &[bmc_b], Duration::from_secs(60)).unwrap();
        assert_ne!(a.token, b.token);
        assert_eq!(a.token.len(), 64);
        assert_eq!(a.id, hex::encode(&hash(&a.token)[..6]));
        let now = Instant::now();
        let found = Some((PathBuf::from("/srv/a.iso"), a.id.clone()));
        assert_eq!(t.lookup(&a.token, "a.iso", Some(bmc_a), now), found);
        // The same address as a dual-stack listener sees it.
        assert_eq!(t.lookup(&a.token, "a.iso", Some("::ffff:10.1.0.11".parse().unwrap()), now), found);
        // Only from the BMC it was made for: not from b's BMC, nor from a source unknown.
        assert_eq!(t.lookup(&a.token, "a.iso", Some(bmc_b), now), None);
        assert_eq!(t.lookup(&a.token, "a.iso", None, now), None);
        // One image per token: a's token does not open b's image, nor any other name.
        assert_eq!(t.lookup(&a.token, "b.iso", Some(bmc_a), now), None);
        assert_eq!(t.lookup(&b.token[..63], "b.iso", Some(bmc_b), now), None);
        assert_eq!(t.lookup(&a.token, "a.iso", Some(bmc_a), now + Duration::from_secs(61)), None);
        // A token made for no address answers nobody.
        let c = t.issue(Path::new("/srv/c.iso"), "c.iso", "n3", &[], Duration::from_secs(60)).unwrap();
        assert_eq!(t.lookup(&c.token, "c.iso", Some(bmc_a), now), None);
        t.record(&a.id, true, 2048);
        t.record(&a.id, false, 10);
        t.revoke_all();
        assert_eq!(t.lookup(&b.token, "b.iso", Some(bmc_b), Instant::now()), None);
        let (served, refused) = t.served();
        assert_eq!(refused, 7);
        let sa = served.iter().find(|s| s.token == a.id).unwrap();
        assert_eq!((sa.requests, sa.ranges, sa.bytes), (2, 1, 2058));
        // The secret itself is nowhere in what is audited.
        assert!(!serde_json::to_string(&served).unwrap().contains(&a.token));
    }

    #[test]
    fn redact_names_the_token_of_every_image_url() {
        let t = Tokens::default();
        let a = t.issue(Path::new("/srv/a.iso"), "a.iso", "n1", &[], Duration::from_secs(60)).unwrap();
        let url = format!("https://10.0.0.5:8443/image/{}/a.iso", a.token);
        let text = format!("was {url}, now {url}; /image/short/x and /image/");
        let r = redact(&text);
        let named = format!("https://10.0.0.5:8443/image/token:{}/a.iso", a.id);
        assert_eq!(r, format!("was {named}, now {named}; /image/short/x and /image/"));
        assert_eq!(redact("https://h/images/ubuntu.iso"), "https://h/images/ubuntu.iso");
    }

    proptest::proptest! {
        #[test]
        fn redact_never_panics_and_leaves_text_without_a_token_alone(s in "\\PC{0,200}") {
            let r = redact(&s);
            if !s.contains("/image/") {
                proptest::prop_assert_eq!(r, s);
            }
        }
    }
}
