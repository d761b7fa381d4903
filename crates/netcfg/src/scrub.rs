//! Secret scrubbing: passwords, secrets, SNMP communities, keys masked before anything is shown,
//! diffed, exported or stored in the clear.
//!
//! Why per platform: each network OS spells secrets differently (IOS `enable secret 5 …`, EOS
//! `secret sha512 …`, NVUE `password '…'`, SONiC JSON `passkey`). Scrubbing is pure and
//! line-preserving (a masked config has the same number of lines), idempotent, and property-tested to
//! never let a generated secret through. The raw text is kept only when the operator enables sealed
//! raw storage (see [`crate::index::RawStore`]).

use std::sync::LazyLock;

use lifeline_types::Platform;
use regex::Regex;
use serde_json::Value;

/// What every secret is replaced with (Oxidized uses the same word, so operators recognise it).
pub const MASK: &str = "<removed>";

struct Rule {
    re: Regex,
    /// The rule does not apply to lines matching this (e.g. `key chain X`, `key 1` in a key chain).
    unless: Option<Regex>,
}

fn rule(re: &str) -> Rule {
    Rule { re: Regex::new(re).expect("scrub rule regex"), unless: None }
}

/// Optional hash/encryption type token between a keyword and the secret: `5`, `7`, `sha512`, `0`.
const TYPE: &str = r"(?: (?:[0-9]|sha512|md5|sha256|scrypt))?";

static CISCO_LIKE: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        rule(&format!(r"^\s*enable (?:secret|password)(?: level \d+)?{TYPE} (?P<s>\S+)")),
        rule(&format!(r"^\s*username \S+\b.*? (?:secret|password){TYPE} (?P<s>\S+)")),
        rule(r"^\s*snmp-server community (?P<s>\S+)"),
        rule(r"^\s*snmp-server user \S+ .*?\bauth \S+ (?P<s>\S+)"),
        rule(r"^\s*snmp-server user \S+ .*?\bpriv(?: (?:aes|des|3des|aes-?\d+|aes \d+))? (?P<s>\S+)"),
        rule(r"^\s*snmp-server host \S+ (?:.*?\b)?(?:version (?:1|2c|3 \S+) )(?P<s>\S+)"),
        rule(&format!(r"^\s*(?:tacacs-server|radius-server)\b.*? key{TYPE} (?P<s>\S+)")),
        Rule {
            re: Regex::new(&format!(r"^\s*key{TYPE} (?P<s>\S+)\s*$")).expect("key rule"),
            unless: Some(Regex::new(r"^\s*key (?:chain\b|\d+\s*$)").expect("unless")),
        },
        rule(&format!(r"^\s*(?:password|secret){TYPE} (?P<s>\S+)")),
        rule(&format!(r"\bneighbor \S+ password{TYPE} (?P<s>\S+)")),
        rule(&format!(r"\bcrypto isakmp key{TYPE} (?P<s>\S+)")),
        rule(&format!(r"\bkey-string{TYPE} (?P<s>\S+)")),
        rule(&format!(r"\b(?:message-digest-key \d+ md5|authentication-key){TYPE} (?P<s>\S+)")),
        rule(&format!(r"\bpre-shared-key{TYPE} (?P<s>\S+)")),
    ]
});

static NVUE: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![rule(
        r#"\b(?:password|hashed-password|secret|key|community|readonly-community|auth-password|priv-password|passphrase|shared-secret)\s+(?P<s>'[^']*'|"[^"]*"|\S+)"#,
    )]
});

static JSON_FALLBACK: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![rule(
        r#"(?i)"(?:passkey|password|passwd|secret|key|auth_key|community|auth_password|priv_password|shared_secret|hashed_password|community_string)"\s*:\s*"(?P<s>(?:[^"\\]|\\.)*)""#,
    )]
});

/// JSON object keys whose string values are secrets (compared case-insensitively).
const JSON_SECRET_KEYS: &[&str] = &[
    "passkey",
    "password",
    "passwd",
    "secret",
    "key",
    "auth_key",
    "community",
    "auth_password",
    "priv_password",
    "shared_secret",
    "hashed_password",
    "community_string",
];

/// SONiC tables whose *row keys* are themselves secrets (`SNMP_COMMUNITY: {"public": {...}}`).
const JSON_SECRET_TABLES: &[&str] = &["SNMP_COMMUNITY"];

/// Mask the secrets of a config of `platform`.
pub fn scrub(platform: Platform, config: &str) -> String {
    match platform {
        Platform::Ios | Platform::Nxos | Platform::Eos => scrub_lines(config, &CISCO_LIKE),
        Platform::Cumulus => scrub_lines(config, &NVUE),
        Platform::Sonic => match serde_json::from_str::<Value>(config) {
            Ok(mut v) => {
                scrub_json(&mut v);
                let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
                s.push('\n');
                s
            }
            Err(_) => scrub_lines(config, &JSON_FALLBACK),
        },
    }
}

fn scrub_lines(config: &str, rules: &[Rule]) -> String {
    let mut out = String::with_capacity(config.len());
    for line in config.split_inclusive('\n') {
        out.push_str(&scrub_line(line, rules));
    }
    out
}

fn scrub_line(line: &str, rules: &[Rule]) -> String {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for r in rules {
        if r.unless.as_ref().is_some_and(|u| u.is_match(line)) {
            continue;
        }
        for caps in r.re.captures_iter(line) {
            if let Some(m) = caps.name("s") {
                // Already masked: leave it, so scrubbing is idempotent.
                if m.as_str().contains(MASK) {
                    continue;
                }
                spans.push((m.start(), m.end()));
            }
        }
    }
    if spans.is_empty() {
        return line.to_owned();
    }
    spans.sort();
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for (start, end) in spans {
        if start < at {
            // Overlapping matches of two rules: the earlier span already covers this one.
            at = at.max(end);
            continue;
        }
        out.push_str(&line[at..start]);
        out.push_str(MASK);
        at = end;
    }
    out.push_str(&line[at..]);
    out
}

fn scrub_json(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let lower = k.to_ascii_lowercase();
                if JSON_SECRET_TABLES.contains(&k.as_str()) {
                    if let Some(Value::Object(rows)) = map.get_mut(&k) {
                        let old = std::mem::take(rows);
                        for (i, (_, mut row)) in old.into_iter().enumerate() {
                            scrub_json(&mut row);
                            rows.insert(format!("{MASK}-{}", i + 1), row);
                        }
                    }
                    continue;
                }
                if let Some(val) = map.get_mut(&k) {
                    if JSON_SECRET_KEYS.contains(&lower.as_str()) && val.is_string() {
                        *val = Value::String(MASK.to_owned());
                    } else {
                        scrub_json(val);
                    }
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub_json),
        _ => {}
    }
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
