//! Secret scrubbing: passwords, secrets, SNMP communities, keys masked before anything is shown,
//! diffed, exported or stored in the clear.
//!
//! Why per platform: each network OS spells secrets differently (IOS `enable secret 5 …`, EOS
//! `secret sha512 …`, NVUE `password '…'`, SONiC JSON `passkey`). The rules are data
//! ([`rules`]), one entry per secret-bearing command in that command's token grammar ([`grammar`]),
//! so an optional type digit or a key length never shifts what is masked. Scrubbing is pure,
//! line-preserving for line configs (same number of lines, every non-secret byte kept, trailing
//! whitespace included), idempotent, and tested against a per-platform corpus of secret-bearing
//! lines plus generated variants. The raw text is kept only when the operator enables sealed raw
//! storage (see [`crate::index::RawStore`]).
//!
//! After the rules, a fail-closed pass ([`fallback`]) masks what the rules do not know about but
//! looks secret, and says so ([`MaskedBy::Fallback`]); known-safe forms are data beside the rules.
//! Each masked value becomes `<removed:xxxx>` with a keyed per-secret tag ([`tag`]).

pub mod check;
pub mod fallback;
pub mod grammar;
mod json;
mod lines;
pub mod rules;
pub mod tag;

use std::collections::BTreeSet;
use std::sync::LazyLock;

use lifeline_types::Platform;
use regex::Regex;
use serde_json::Value;

use grammar::{Pattern, Span};
pub use tag::{MASK, TagKey, is_mask, untagged};

/// Where a masking happened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// 1-based line of the config.
    Line(usize),
    /// JSON pointer into a SONiC document (row keys are named as such).
    Json(String),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Line(n) => write!(f, "line {n}"),
            Place::Json(p) => f.write_str(p),
        }
    }
}

/// Which pass masked a value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MaskedBy {
    /// A platform rule of this kind.
    Rule(Kind),
    /// The fail-closed pass: no rule knew the form (a rule should be written for it).
    Fallback(fallback::Reason),
}

/// One masked value (never the value itself: its tag).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Masked {
    pub at: Place,
    pub by: MaskedBy,
    pub tag: String,
}

/// A scrubbed config and what was masked in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scrubbed {
    pub text: String,
    pub masked: Vec<Masked>,
}

impl Scrubbed {
    /// The maskings the fallback pass made.
    pub fn by_fallback(&self) -> impl Iterator<Item = &Masked> {
        self.masked.iter().filter(|m| matches!(m.by, MaskedBy::Fallback(_)))
    }
}

/// The kinds of secret the rules cover (for the coverage table and test reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    EnableSecret,
    UserSecret,
    LinePassword,
    KeyChain,
    Tacacs,
    Radius,
    SnmpCommunity,
    SnmpV3,
    Bgp,
    Ospf,
    Isis,
    Eigrp,
    Ntp,
    Ppp,
    Isakmp,
    Wireless,
    Dot1x,
    Fhrp,
    Macsec,
    PrivateKey,
    Certificate,
    Other,
}

impl Kind {
    pub const ALL: &[Kind] = &[
        Kind::EnableSecret,
        Kind::UserSecret,
        Kind::LinePassword,
        Kind::KeyChain,
        Kind::Tacacs,
        Kind::Radius,
        Kind::SnmpCommunity,
        Kind::SnmpV3,
        Kind::Bgp,
        Kind::Ospf,
        Kind::Isis,
        Kind::Eigrp,
        Kind::Ntp,
        Kind::Ppp,
        Kind::Isakmp,
        Kind::Wireless,
        Kind::Dot1x,
        Kind::Fhrp,
        Kind::Macsec,
        Kind::PrivateKey,
        Kind::Certificate,
        Kind::Other,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Kind::EnableSecret => "enable / root secret",
            Kind::UserSecret => "user secrets and passwords",
            Kind::LinePassword => "line and service passwords",
            Kind::KeyChain => "key chains",
            Kind::Tacacs => "TACACS+ keys",
            Kind::Radius => "RADIUS keys",
            Kind::SnmpCommunity => "SNMP communities",
            Kind::SnmpV3 => "SNMPv3 auth/priv passwords",
            Kind::Bgp => "BGP passwords",
            Kind::Ospf => "OSPF authentication",
            Kind::Isis => "IS-IS authentication",
            Kind::Eigrp => "EIGRP authentication",
            Kind::Ntp => "NTP keys",
            Kind::Ppp => "PPP CHAP/PAP",
            Kind::Isakmp => "ISAKMP/IKE pre-shared keys",
            Kind::Wireless => "WPA PSK / WEP keys",
            Kind::Dot1x => "802.1X credentials",
            Kind::Fhrp => "HSRP/VRRP authentication",
            Kind::Macsec => "MACsec CAK",
            Kind::PrivateKey => "PEM private keys and certificates",
            Kind::Certificate => "certificate chains",
            Kind::Other => "other password fields",
        }
    }
}

/// The line rule set of a line-oriented platform.
fn ruleset(platform: Platform) -> Option<&'static rules::RuleSet> {
    match platform {
        Platform::Ios => Some(&rules::IOS),
        Platform::Nxos => Some(&rules::NXOS),
        Platform::Eos => Some(&rules::EOS),
        Platform::Cumulus => Some(&rules::NVUE),
        Platform::Sonic => None,
    }
}

/// The kinds of secret the rules of `platform` mask (rules without `SECRET` only protect lines).
pub fn coverage(platform: Platform) -> BTreeSet<Kind> {
    match ruleset(platform) {
        Some(set) => {
            let lines = set
                .lines
                .iter()
                .flat_map(|c| c.iter())
                .filter(|r| Pattern::parse(r.pattern).is_ok_and(|p| p.has_secret()))
                .map(|r| r.kind);
            lines.chain(set.blocks.iter().map(|b| b.kind)).collect()
        }
        None => rules::SONIC_FIELDS
            .iter()
            .map(|f| f.kind)
            .chain(rules::SONIC_SECRET_ROW_TABLES.iter().map(|(k, _)| *k))
            .chain([Kind::PrivateKey])
            .collect(),
    }
}

/// Mask the secrets of a config of `platform`, each with its tag under `key`.
pub fn scrub(platform: Platform, config: &str, key: &TagKey) -> String {
    scrub_report(platform, config, key).text
}

/// [`scrub`], with what was masked where and by which pass.
pub fn scrub_report(platform: Platform, config: &str, key: &TagKey) -> Scrubbed {
    let mut masked = Vec::new();
    let text = match lines::compiled(platform) {
        Some(rules) => lines::scrub_lines(config, rules, key, &mut masked),
        None => match serde_json::from_str::<Value>(config) {
            Ok(mut v) => {
                json::scrub_value(&mut v, key, &mut masked);
                let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
                s.push('\n');
                s
            }
            Err(_) => scrub_json_lines(config, key, &mut masked),
        },
    };
    Scrubbed { text, masked }
}

/// Fallback for SONiC output that is not JSON (truncated): mask `"field": "value"` pairs whose field
/// is listed or secret-like.
static JSON_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""(?P<f>(?:[^"\\]|\\.)*)"\s*:\s*"(?P<s>(?:[^"\\]|\\.)*)""#).expect("json field regex")
});

fn scrub_json_lines(config: &str, key: &TagKey, report: &mut Vec<Masked>) -> String {
    let mut out = String::with_capacity(config.len());
    for (n, line) in config.split_inclusive('\n').enumerate() {
        let spans: Vec<(Span, MaskedBy)> = JSON_FIELD
            .captures_iter(line)
            .filter_map(|c| {
                let (f, v) = (c.name("f")?, c.name("s")?);
                let by = if let Some(r) =
                    rules::SONIC_FIELDS.iter().find(|r| r.field.eq_ignore_ascii_case(f.as_str()))
                {
                    MaskedBy::Rule(r.kind)
                } else if fallback::is_secret_keyword(f.as_str()) {
                    MaskedBy::Fallback(fallback::Reason::Keyword(f.as_str().to_ascii_lowercase()))
                } else {
                    MaskedBy::Fallback(fallback::Reason::Value(fallback::secret_like_value(v.as_str())?))
                };
                Some(((v.start(), v.end()), by))
            })
            .collect();
        out.push_str(&lines::mask_spans(line, spans, key, n + 1, report));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key() -> TagKey {
        TagKey::from_bytes([7; 32])
    }

    /// Scrubbed with the test key, tags dropped (expectations are written with `<removed>`).
    fn sc(p: Platform, cfg: &str) -> String {
        untagged(&scrub(p, cfg, &key()))
    }

    #[test]
    fn ios_examples() {
        let cfg = "enable secret 5 $1$abcd$XYZ\n\
                   username admin privilege 15 secret 9 $9$hashhash\n\
                   username ops password 7 0822455D0A16\n\
                   snmp-server community s3cr3tRO RO\n\
                   tacacs-server key 7 TacKey123\n\
                   tacacs-server host 10.0.0.1 key SuperKey\n\
                   radius-server host 10.0.0.2 auth-port 1812 key 7 RadKey\n\
                   tacacs server T1\n address ipv4 10.0.0.3\n key 7 BlockKey\n\
                   key chain OSPF\n key 1\n  key-string ChainSecret\n\
                   line vty 0 4\n password 7 VtyPass\n\
                   router bgp 65001\n neighbor 10.1.1.1 password 7 BgpPass\n\
                   hostname leaf1\n";
        let s = sc(Platform::Ios, cfg);
        for secret in [
            "$1$abcd$XYZ",
            "$9$hashhash",
            "0822455D0A16",
            "s3cr3tRO",
            "TacKey123",
            "SuperKey",
            "RadKey",
            "BlockKey",
            "ChainSecret",
            "VtyPass",
            "BgpPass",
        ] {
            assert!(!s.contains(secret), "{secret} leaked:\n{s}");
        }
        assert!(s.contains("enable secret 5 <removed>"));
        assert!(s.contains("snmp-server community <removed> RO"));
        assert!(s.contains("key chain OSPF\n key 1\n"), "{s}");
        assert!(s.contains("hostname leaf1"));
        assert_eq!(s.lines().count(), cfg.lines().count());
    }

    #[test]
    fn eos_examples() {
        let cfg = "username admin privilege 15 role network-admin secret sha512 $6$salt$hash\n\
                   enable password sha512 $6$en$hash\n\
                   snmp-server community lifeline-ro ro\n\
                   router bgp 65001\n   neighbor SPINES password 7 Q1w2e3==\n";
        let s = sc(Platform::Eos, cfg);
        assert!(s.contains("secret sha512 <removed>"), "{s}");
        assert!(!s.contains("$6$"), "{s}");
        assert!(!s.contains("lifeline-ro") && !s.contains("Q1w2e3"), "{s}");
    }

    #[test]
    fn nvue_examples() {
        let cfg = "nv set system aaa user cumulus hashed-password '$6$x$y'\n\
                   nv set service snmp-server readonly-community PubComm access any\n\
                   nv set vrf default router bgp neighbor swp51 password 'bgp pass'\n\
                   nv set system aaa tacacs server 1 secret TacSecret\n\
                   nv set interface swp1 link mtu 9000\n";
        let s = sc(Platform::Cumulus, cfg);
        for secret in ["$6$x$y", "PubComm", "bgp pass", "TacSecret"] {
            assert!(!s.contains(secret), "{secret}:\n{s}");
        }
        assert!(s.contains("link mtu 9000"));
    }

    #[test]
    fn sonic_json() {
        let cfg = r#"{"TACPLUS_SERVER": {"10.0.0.1": {"passkey": "tacpass", "priority": "1"}},
                      "SNMP_COMMUNITY": {"secretcomm": {"TYPE": "RO"}},
                      "BGP_NEIGHBOR": {"10.0.0.2": {"asn": "65100", "password": "bgppw"}},
                      "PORT": {"Ethernet0": {"mtu": "9100"}}}"#;
        let s = sc(Platform::Sonic, cfg);
        for secret in ["tacpass", "secretcomm", "bgppw"] {
            assert!(!s.contains(secret), "{secret}:\n{s}");
        }
        assert!(s.contains("\"mtu\": \"9100\""));
        let tagged = scrub(Platform::Sonic, cfg, &key());
        assert_eq!(scrub(Platform::Sonic, &tagged, &key()), tagged);
        // Not JSON (truncated): the line fallback still masks.
        let broken = "{\"TACPLUS\": {\"x\": {\"passkey\": \"tacpass\",";
        assert!(!sc(Platform::Sonic, broken).contains("tacpass"));
    }

    fn secret() -> impl Strategy<Value = String> {
        "[A-Za-z0-9$/.]{8,20}".prop_map(|s| format!("Zq{s}"))
    }

    proptest! {
        #[test]
        fn generated_ios_secrets_never_leak(
            a in secret(), b in secret(), c in secret(), d in secret(), e in secret(),
            user in "[a-z]{3,8}", ty in prop::sample::select(vec!["", " 0", " 5", " 7", " 9"]),
        ) {
            let cfg = format!(
                "hostname x\nenable secret{ty} {a}\nusername {user} privilege 15 secret{ty} {b}\n\
                 snmp-server community {c} RO\ntacacs-server host 10.0.0.1 key{ty} {d}\n\
                 router bgp 1\n neighbor 10.0.0.9 password{ty} {e}\nend\n");
            for p in [Platform::Ios, Platform::Eos, Platform::Nxos] {
                let s = sc(p, &cfg);
                for x in [&a, &b, &c, &d, &e] {
                    prop_assert!(!s.contains(x.as_str()), "{} leaked in {}", x, s);
                }
                prop_assert_eq!(s.lines().count(), cfg.lines().count());
                let tagged = scrub(p, &cfg, &key());
                prop_assert_eq!(scrub(p, &tagged, &key()), tagged);
            }
        }

        #[test]
        fn generated_json_secrets_never_leak(a in secret(), b in secret()) {
            let cfg = serde_json::json!({
                "TACPLUS_SERVER": {"10.0.0.1": {"passkey": a}},
                "SNMP_COMMUNITY": {b.clone(): {"TYPE": "RO"}},
            }).to_string();
            let s = sc(Platform::Sonic, &cfg);
            prop_assert!(!s.contains(a.as_str()) && !s.contains(b.as_str()));
        }

        #[test]
        fn never_panics_and_keeps_lines(s in any::<String>()) {
            for p in Platform::ALL {
                let out = sc(*p, &s);
                if *p != Platform::Sonic {
                    prop_assert_eq!(out.lines().count(), s.lines().count());
                }
            }
        }
    }
}
