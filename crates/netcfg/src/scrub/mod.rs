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

pub mod grammar;
mod json;
pub mod rules;

use std::collections::BTreeSet;
use std::sync::LazyLock;

use lifeline_types::Platform;
use regex::Regex;
use serde_json::Value;

use grammar::{Pattern, Span, tokens};
use rules::{BlockRule, LineRule, RuleSet};

/// What every secret is replaced with (Oxidized uses the same word, so operators recognise it).
pub const MASK: &str = "<removed>";

/// The kinds of secret the rules cover (for the coverage table and test reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

struct CompiledLine {
    section: Option<Pattern>,
    pattern: Pattern,
}

struct CompiledBlock {
    section: Option<Pattern>,
    start: Pattern,
    end: Pattern,
}

struct Compiled {
    lines: Vec<CompiledLine>,
    blocks: Vec<CompiledBlock>,
}

fn compile(set: &RuleSet) -> Compiled {
    let p = |s| Pattern::parse(s).unwrap_or_else(|e| panic!("{e}"));
    Compiled {
        lines: set
            .lines
            .iter()
            .flat_map(|chunk| chunk.iter())
            .map(|r: &LineRule| CompiledLine { section: r.section.map(p), pattern: p(r.pattern) })
            .collect(),
        blocks: set
            .blocks
            .iter()
            .map(|b: &BlockRule| CompiledBlock {
                section: b.section.map(p),
                start: p(b.start),
                end: p(b.end),
            })
            .collect(),
    }
}

static IOS: LazyLock<Compiled> = LazyLock::new(|| compile(&rules::IOS));
static NXOS: LazyLock<Compiled> = LazyLock::new(|| compile(&rules::NXOS));
static EOS: LazyLock<Compiled> = LazyLock::new(|| compile(&rules::EOS));
static NVUE: LazyLock<Compiled> = LazyLock::new(|| compile(&rules::NVUE));

/// The line rule set of a line-oriented platform.
fn ruleset(platform: Platform) -> Option<&'static RuleSet> {
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

/// Mask the secrets of a config of `platform`.
pub fn scrub(platform: Platform, config: &str) -> String {
    let compiled: &Compiled = match platform {
        Platform::Ios => &IOS,
        Platform::Nxos => &NXOS,
        Platform::Eos => &EOS,
        Platform::Cumulus => &NVUE,
        Platform::Sonic => {
            return match serde_json::from_str::<Value>(config) {
                Ok(mut v) => {
                    json::scrub_value(&mut v);
                    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
                    s.push('\n');
                    s
                }
                Err(_) => scrub_json_lines(config),
            };
        }
    };
    scrub_lines(config, compiled)
}

fn split_eol(line: &str) -> (&str, &str) {
    let body = line.trim_end_matches(['\n', '\r']);
    (body, &line[body.len()..])
}

fn scrub_lines(config: &str, rules: &Compiled) -> String {
    let mut out = String::with_capacity(config.len());
    // The current top-level section header (IOS/EOS/NX-OS indent a section's lines under it).
    let mut section: Option<(String, Vec<Span>)> = None;
    let mut in_block: Option<&CompiledBlock> = None;
    for line in config.split_inclusive('\n') {
        let (body, eol) = split_eol(line);
        let toks = tokens(body);
        let indented = body.starts_with([' ', '\t']);
        if let Some(b) = in_block {
            if b.end.matches(body, &toks).is_some() {
                in_block = None;
                out.push_str(line);
            } else if toks.is_empty() {
                out.push_str(line);
            } else {
                // Every byte of a key or certificate body is secret: keep only the indentation.
                out.push_str(&body[..toks[0].0]);
                out.push_str(MASK);
                out.push_str(eol);
            }
            continue;
        }
        if !indented && !toks.is_empty() {
            section = Some((body.to_owned(), toks.clone()));
        }
        let in_section = |p: &Option<Pattern>| match (p, &section) {
            (None, _) => true,
            (Some(p), Some((head, htoks))) => indented && p.matches(head, htoks).is_some(),
            (Some(_), None) => false,
        };
        if let Some(b) =
            rules.blocks.iter().find(|b| in_section(&b.section) && b.start.matches(body, &toks).is_some())
        {
            in_block = Some(b);
            out.push_str(line);
            continue;
        }
        let spans = rules
            .lines
            .iter()
            .filter(|r| in_section(&r.section))
            .find_map(|r| r.pattern.matches(body, &toks))
            .unwrap_or_default();
        out.push_str(&mask_spans(body, spans));
        out.push_str(eol);
    }
    out
}

fn mask_spans(body: &str, mut spans: Vec<Span>) -> String {
    if spans.is_empty() {
        return body.to_owned();
    }
    spans.sort();
    let mut out = String::with_capacity(body.len());
    let mut at = 0;
    for (start, end) in spans {
        if start < at {
            continue;
        }
        out.push_str(&body[at..start]);
        out.push_str(MASK);
        at = end;
    }
    out.push_str(&body[at..]);
    out
}

/// Fallback for SONiC output that is not JSON (truncated): mask `"field": "value"` pairs by field name.
static JSON_FALLBACK: LazyLock<Regex> = LazyLock::new(|| {
    let names: Vec<String> = rules::SONIC_FIELDS.iter().map(|f| regex::escape(f.field)).collect();
    Regex::new(&format!(r#"(?i)"(?:{})"\s*:\s*"(?P<s>(?:[^"\\]|\\.)*)""#, names.join("|")))
        .expect("fallback regex")
});

fn scrub_json_lines(config: &str) -> String {
    let mut out = String::with_capacity(config.len());
    for line in config.split_inclusive('\n') {
        let spans: Vec<Span> = JSON_FALLBACK
            .captures_iter(line)
            .filter_map(|c| c.name("s"))
            .filter(|m| !m.as_str().is_empty())
            .map(|m| (m.start(), m.end()))
            .collect();
        out.push_str(&mask_spans(line, spans));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
        let s = scrub(Platform::Ios, cfg);
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
        let s = scrub(Platform::Eos, cfg);
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
        let s = scrub(Platform::Cumulus, cfg);
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
        let s = scrub(Platform::Sonic, cfg);
        for secret in ["tacpass", "secretcomm", "bgppw"] {
            assert!(!s.contains(secret), "{secret}:\n{s}");
        }
        assert!(s.contains("\"mtu\": \"9100\""));
        assert_eq!(scrub(Platform::Sonic, &s), s);
        // Not JSON (truncated): the line fallback still masks.
        let broken = "{\"TACPLUS\": {\"x\": {\"passkey\": \"tacpass\",";
        assert!(!scrub(Platform::Sonic, broken).contains("tacpass"));
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
                let s = scrub(p, &cfg);
                for x in [&a, &b, &c, &d, &e] {
                    prop_assert!(!s.contains(x.as_str()), "{} leaked in {}", x, s);
                }
                prop_assert_eq!(s.lines().count(), cfg.lines().count());
                prop_assert_eq!(scrub(p, &s), s.clone());
            }
        }

        #[test]
        fn generated_json_secrets_never_leak(a in secret(), b in secret()) {
            let cfg = serde_json::json!({
                "TACPLUS_SERVER": {"10.0.0.1": {"passkey": a}},
                "SNMP_COMMUNITY": {b.clone(): {"TYPE": "RO"}},
            }).to_string();
            let s = scrub(Platform::Sonic, &cfg);
            prop_assert!(!s.contains(a.as_str()) && !s.contains(b.as_str()));
        }

        #[test]
        fn never_panics_and_keeps_lines(s in any::<String>()) {
            for p in Platform::ALL {
                let out = scrub(*p, &s);
                if *p != Platform::Sonic {
                    prop_assert_eq!(out.lines().count(), s.lines().count());
                }
            }
        }
    }
}
