//! The secret extractor for the real-world corpus: every secret value of a config, found by a small
//! set of regular expressions, one per line form, written from the vendors' command references and
//! reviewed against the corpus, independently of the scrubber's token grammar and fallback (a leak
//! the scrubber's design cannot see, this can).

use std::sync::LazyLock;

use regex::Regex;

/// One secret occurrence: the 1-based line and the value as written (quotes removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    pub line: usize,
    pub value: String,
    /// JSON documents: where the secret is (a JSON pointer; row keys end in `/` + the key).
    pub path: String,
}

const TYPE: &str = r"(?:(?:0|3|5|6|7|8|8a|9|sha512|sha256|md5|clear|encrypted|hidden)\s+)?";

/// One regex per line form; group 1 (and 2 where present) is the secret.
static FORMS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    let t = TYPE;
    [
        format!(r"^\s*enable\s+(?:secret|password)(?:\s+level\s+\d+)?\s+{t}(\S+)"),
        r"^\s*enable\s+algorithm-type\s+\S+\s+secret\s+(\S+)".to_owned(),
        format!(r"^\s*(?:aaa\s+root|boot)\s+secret\s+{t}(\S+)"),
        format!(r"^\s*username\s+\S+\s+(?:.*\s)?(?:secret|password)\s+{t}(\S+)"),
        r"^\s*snmp-server\s+community\s+(\S+)".to_owned(),
        r"^\s*snmp-server\s+mib\s+community-map\s+(\S+)".to_owned(),
        r"^\s*snmp-server\s+host\s+\S+\s+(?:vrf\s+\S+\s+)?(?:(?:informs?|traps?)\s+)?(?:version\s+(?:1|2c)\s+)?([^\s]+)"
            .to_owned(),
        format!(r"^\s*(?:tacacs-server|radius-server)\s+(?:host\s+\S+\s+(?:.*\s)?)?key\s+{t}(\S+)"),
        r"^\s+(?:pac\s+)?key\s+[067]\s+(\S+)".to_owned(),
        format!(r"^\s*(?:\S+\s+)*?server-key\s+{t}(\S+)"),
        format!(r"^\s*(?:\S+\s+)*?key-string\s+{t}(\S+)"),
        format!(r"^\s*(?:\S+\s+)*?authentication-key\s+(?:\d+\s+\S+\s+)?{t}(\S+)"),
        format!(r"^\s*(?:\S+\s+)*?message-digest-key\s+\d+\s+\S+\s+{t}(\S+)"),
        format!(r"^\s*neighbor\s+\S+\s+(?:.*\s)?password\s+{t}(\S+)"),
        format!(r"^\s*password\s+{t}(\S+)"),
        format!(r"^\s*(?:isis\s+password|area-password|domain-password)\s+(?:(?:clear|md5|text|hmac-md5)\s+)?{t}(\S+)"),
        format!(r"^\s*(?:isis\s+)?authentication\s+key\s+{t}(\S+)"),
        format!(r"^\s*(?:isis\s+)?authentication\s+key-id\s+\d+\s+algorithm\s+\S+\s+(?:rfc-5310\s+)?key\s+{t}(\S+)"),
        r"(?:-cvauth|\.auth)=key,([^\s,]+)".to_owned(),
        format!(r"^\s*crypto\s+isakmp\s+key\s+{t}(\S+)"),
        format!(r"^\s*(?:\S+\s+)*?pre-shared-key\s+(?:.*\s)?key\s+{t}(\S+)"),
        format!(r"^\s*(?:standby|vrrp)\s+(?:\d+\s+)?(?:peer\s+)?authentication\s+(?:md5\s+key-string|ietf-md5\s+key-string|text)\s+{t}(\S+)"),
        r"^\s*snmp-server\s+user\s+\S+\s+(?:.*\s)?auth\s+\S+\s+(?:(?:sha-2\s+)?(?:256|384|512)\s+)?(\S+)(?:\s+priv\s+(?:(?:aes|des|3des|aes128|aes192|aes256|aes-128)\s+)?(?:(?:128|192|256)\s+)?(\S+))?".to_owned(),
        format!(r"^\s*ntp\s+authentication-key\s+\d+\s+\S+\s+{t}(\S+)"),
        format!(r"^\s*redis\s+password\s+{t}(\S+)"),
        r"^\s+secret\s+\S+\s+(?:[07]|8a)\s+(\S+)".to_owned(),
        format!(r"^\s*shared-key\s+{t}(\S+)"),
        format!(r"^\s*server-private\s+\S+\s+(?:.*\s)?key\s+{t}(\S+)"),
        r"^\s+key\s+\S+\s+[07]\s+(\S+)".to_owned(),
        format!(r"^\s*(?:\S+\s+)*?ppp\s+(?:chap|pap\s+sent-username\s+\S+)\s+password\s+{t}(\S+)"),
        r"^\s*ip\s+ospf6?\s+authentication\s+key-id\s+\d+\s+hash-algo\s+\S+\s+key\s+(\S+)".to_owned(),
        r"^\s*ipv6\s+ospf6\s+authentication\s+key-id\s+\d+\s+hash-algo\s+\S+\s+key\s+(\S+)".to_owned(),
        r"(\$(?:1|5|6|y|2[aby])\$[./A-Za-z0-9$]{4,})".to_owned(),
        r"^nv set .*\s(?:password|hashed-password|secret|key|readonly-community|community-password|auth-sha|auth-md5|encrypt-aes|encrypt-des|md5-key|shared-secret)\s+'?([^'\s]+)'?".to_owned(),
    ]
    .iter()
    .map(|f| Regex::new(&format!("(?i){f}")).expect("extractor form"))
    .collect()
});

/// Values a form above captures that are grammar, not secrets (`password policy P`, a v3 user).
const NOT_SECRET: &[&str] = &[
    "policy",
    "minimum",
    "encryption",
    "encryption-key",
    "strength-check",
    "secure-mode",
    "shared-secret",
    "key-chain",
    "use-vrf",
    "filter-vrf",
    "source-interface",
    "version",
    "informs",
    "traps",
    "inform",
    "trap",
    "reversible",
    "prompt",
    "ssh-key",
    "nopassword",
    "privilege",
    "role",
    "key-id",
    "md5",
    "authenticate",
    "0",
    "7",
    "localizedkey",
    "auto",
    "clear",
    "message-digest",
    "null",
    "none",
    "sha512",
    "recovery",
    "hash",
    "keychain",
    "key-string",
];

fn keep(v: &str) -> bool {
    !v.is_empty()
        && !v.starts_with("<removed")
        && v != "''"
        && v != "\"\""
        && !NOT_SECRET.iter().any(|n| n.eq_ignore_ascii_case(v))
}

/// Every secret of a line-oriented config (IOS, NX-OS, EOS, NVUE, ifupdown2 + FRR).
pub fn line_secrets(text: &str) -> Vec<Secret> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        // `snmp-server host … version 3 USER` names a user; a host line with no community is not one.
        let v3 = line.contains("version 3");
        for (k, re) in FORMS.iter().enumerate() {
            for c in re.captures_iter(line) {
                for g in c.iter().skip(1).flatten() {
                    let v = g.as_str().trim_matches(|ch| ch == '"' || ch == '\'');
                    if (k == 6 && v3)
                        || !keep(v)
                        || out.iter().any(|s: &Secret| s.line == i + 1 && s.value == v)
                    {
                        continue;
                    }
                    out.push(Secret { line: i + 1, value: v.to_owned(), path: String::new() });
                }
            }
        }
    }
    out
}

/// Every secret of a SONiC config_db document: the secret fields and the SNMP community row keys, at
/// any depth (a multi-ASIC document nests one config_db per namespace), also as a Redis dump writes
/// them (`"SNMP_COMMUNITY|public": {…}`). A row key's path ends with
/// the key itself, as a field's ends with the field.
pub fn json_secrets(text: &str) -> Vec<Secret> {
    const FIELDS: &[&str] = &[
        "passkey",
        "password",
        "auth_password",
        "bind_password",
        "hashed_password",
        "snmp_user_auth_password",
        "snmp_user_encryption_password",
        "primary_cak",
        "fallback_cak",
        "secret",
        "shared_secret",
    ];
    fn walk(table: &str, at: &str, v: &serde_json::Value, out: &mut Vec<Secret>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, val) in m {
                    let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    match val {
                        serde_json::Value::String(s)
                            if (FIELDS.iter().any(|f| f.eq_ignore_ascii_case(k))
                                || (table == "NTP_KEY" && k == "value"))
                                && keep(s) =>
                        {
                            out.push(Secret { line: 0, value: s.clone(), path: here })
                        }
                        serde_json::Value::Object(rows) if k == "SNMP_COMMUNITY" => {
                            out.extend(rows.keys().filter(|r| keep(r)).map(|r| Secret {
                                line: 0,
                                value: r.clone(),
                                path: format!("{here}/{}", r.replace('~', "~0").replace('/', "~1")),
                            }));
                            walk(k, &here, val, out);
                        }
                        // A Redis dump names each row `TABLE|row`: the community is in the key.
                        serde_json::Value::Object(_)
                            if k.strip_prefix("SNMP_COMMUNITY|").is_some_and(keep) =>
                        {
                            out.push(Secret {
                                line: 0,
                                value: k["SNMP_COMMUNITY|".len()..].to_owned(),
                                path: here,
                            })
                        }
                        _ => {
                            // Below `NTP_KEY` (at whatever depth, or an `NTP_KEY|n` row) every
                            // `value` is a key.
                            let ntp = table == "NTP_KEY" || k.starts_with("NTP_KEY|");
                            let t = if ntp { "NTP_KEY" } else { k.as_str() };
                            walk(t, &here, val, out)
                        }
                    }
                }
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(table, &format!("{at}/{i}"), x, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        walk("", "", &v, &mut out);
    }
    out
}
