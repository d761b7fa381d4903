//! The fail-closed second pass: after a platform's rules, any value on a line the rules do not know
//! to be safe that follows a secret-like keyword (`password`, `secret`, `key`, `community`, `auth`,
//! `priv`, `psk`, `token`, `-cvauth=…`) or that looks like a secret by itself (a `$6$` crypt hash, a
//! long hex or base64 run) is masked too, and each such masking is reported with its reason.
//!
//! Why: every leak the rule tables ever had was a form nobody had listed (`sha512` where the rule knew
//! `md5`, a key id that was not a number). A list of known forms fails open; this pass makes an unknown
//! form cost an over-masked word (visible, reported, fixed by a rule) instead of a secret in a git
//! export. Keywords are matched as whole parts of a token (`hashed-password`, `auth-sha`,
//! `community-map`), never as substrings (`authorization`, `privilege`), and a token with a structural
//! part (`key-id`, `auth-port`, `community-list`, `send-community`) is not a keyword.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

use super::grammar::{self, Span};
use super::tag::is_mask;

/// Why the fallback masked a value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "why", content = "what")]
pub enum Reason {
    /// The value follows this secret-like keyword (lower case, as written).
    Keyword(String),
    /// The value looks like a secret by itself.
    Value(&'static str),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Keyword(k) => write!(f, "follows the secret-like keyword `{k}`"),
            Reason::Value(v) => write!(f, "looks like {v}"),
        }
    }
}

/// Parts of a token (split on `-`, `_`, `.`) that make it a secret keyword.
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "passkey",
    "secret",
    "key",
    "apikey",
    "community",
    "passphrase",
    "psk",
    "token",
    "credential",
    "credentials",
    "auth",
    "priv",
    "cvauth",
    "encrypt",
];

/// Parts that make a token structural even when another part is a secret word (`key-id 3`,
/// `auth-port 1812`, `community-list NAME`, `send-community both`, `ssh-key ssh-rsa …` (public)).
const STRUCTURAL: &[&str] = &[
    "id",
    "port",
    "list",
    "type",
    "mode",
    "management",
    "trusted",
    "route",
    "bgp",
    "named",
    "length",
    "policy",
    "chain",
    "send",
    "ssh",
    "pubkey",
    "public",
    "strength",
    "check",
    "min",
    "minimum",
    "max",
    "maximum",
    "lifetime",
    "rollover",
    "interval",
    "timeout",
    "retries",
    "retransmit",
    "file",
    "name",
    "algorithm",
    "source",
    "prompt",
    "recovery",
    "history",
    "age",
    "aging",
    "expiry",
    "expire",
    "group",
    "size",
    "bits",
    "count",
    "exchange",
    "format",
    "profile",
    "server",
    "manager",
    "methods",
    "method",
    "tracking",
    "hash",
];

/// Tokens that may sit between a keyword and its value besides the grammar's type digits and
/// algorithm names (key lengths, encodings, cipher names).
const MODIFIERS: &[&str] = &[
    "1",
    "2",
    "aes",
    "aes128",
    "aes-128",
    "aes192",
    "aes-192",
    "aes256",
    "aes-256",
    "des",
    "3des",
    "128",
    "192",
    "256",
    "algorithm",
    "encrypted",
    "unencrypted",
    "hidden",
    "clear",
    "cleartext",
    "plaintext",
    "plain",
    "ascii",
    "hex",
    "text",
    "encrypt",
    "=",
    ":",
];

/// Values that are never secrets whatever keyword precedes them (BGP well-known communities).
const HARMLESS: &[&str] = &[
    "none",
    "no-export",
    "no-advertise",
    "no-export-subconfed",
    "local-as",
    "internet",
    "additive",
    "gshut",
    "graceful-shutdown",
    "blackhole",
    "permit",
    "deny",
];

static BGP_COMMUNITY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:\d+:\d+(?::\d+)?|\d+:\*|\*:\d+)$").expect("community"));
static CRYPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\$(?:1|2[abxy]?|5|6|7|8|9|y|gy|sha1|md5|apr1|pbkdf2[-\w]*|scrypt)\$[./A-Za-z0-9$=+,-]{4,}$")
        .expect("crypt")
});
static LONG_HEX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:0[xX][0-9A-Fa-f]{16,}|[0-9A-Fa-f]{32,})$").expect("hex"));
static BASE64: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[A-Za-z0-9+/]{24,}={0,2}$").expect("b64"));

fn lower_parts(token: &str) -> Vec<String> {
    token
        .trim_start_matches('-')
        .trim_end_matches(':')
        .split(['-', '_', '.'])
        .filter(|p| !p.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Whether `token` is a secret-like keyword (`password`, `hashed-password`, `auth-sha`, `-cvauth`).
pub fn is_secret_keyword(token: &str) -> bool {
    // An assignment or a path is not a keyword (assignments are read by [`assignment_value`]).
    if token.contains(['=', '/', ',', ':']) && !token.ends_with(':') {
        return false;
    }
    let parts = lower_parts(token);
    parts.iter().any(|p| SECRET_WORDS.contains(&p.as_str()))
        && !parts.iter().any(|p| STRUCTURAL.contains(&p.as_str()))
}

fn is_modifier(token: &str) -> bool {
    [MODIFIERS, grammar::TYPES, grammar::HASHES]
        .iter()
        .any(|set| set.iter().any(|m| m.eq_ignore_ascii_case(token)))
}

/// SSH public keys (`ssh-rsa AAAAB3NzaC1yc2E…`) are long base64 runs that are not secret.
fn is_public_key(token: &str) -> bool {
    token.starts_with("AAAAB3NzaC1") || token.starts_with("AAAAC3NzaC1") || token.starts_with("AAAAE2VjZHNh")
}

/// Shannon entropy of `s` in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[usize::from(b)] += 1;
    }
    let n = s.len() as f64;
    counts.iter().filter(|&&c| c > 0).map(|&c| f64::from(c) / n).map(|p| -p * p.log2()).sum()
}

/// What `value` looks like, if it has a shape only secrets have (a crypt hash, a PEM block): checked
/// even on lines a rule owns.
pub fn unmistakable_secret(value: &str) -> Option<&'static str> {
    if CRYPT.is_match(value) {
        return Some("a crypt(3) hash (`$n$…`)");
    }
    if value.contains("-----BEGIN ") && (value.contains("PRIVATE KEY") || value.contains("CERTIFICATE")) {
        return Some("a PEM block");
    }
    None
}

/// What `value` looks like, if it looks like a secret by itself.
pub fn secret_like_value(value: &str) -> Option<&'static str> {
    if let Some(what) = unmistakable_secret(value) {
        return Some(what);
    }
    if LONG_HEX.is_match(value) {
        return Some("a long hex run (a key or a hash)");
    }
    if BASE64.is_match(value) && !is_public_key(value) {
        let (up, low, dig) = value.bytes().fold((false, false, false), |(u, l, d), b| {
            (u || b.is_ascii_uppercase(), l || b.is_ascii_lowercase(), d || b.is_ascii_digit())
        });
        if up && low && dig && entropy(value) >= 4.0 {
            return Some("a long base64 run (a key or a hash)");
        }
    }
    None
}

fn unquote(line: &str, (s, e): Span) -> Span {
    let t = line.as_bytes();
    if e - s >= 2 && (t[s] == b'"' || t[s] == b'\'') && t[e - 1] == t[s] { (s + 1, e - 1) } else { (s, e) }
}

fn harmless(value: &str) -> bool {
    value.is_empty()
        || is_mask(value)
        || HARMLESS.iter().any(|h| h.eq_ignore_ascii_case(value))
        || BGP_COMMUNITY.is_match(value)
}

/// The value inside a `KEY=VALUE` token whose key part is secret-like (`-cvauth=key,S`,
/// `-cvopt=DEFAULT.auth=key,S`, `password=S`), as a span of the line.
fn assignment_value(line: &str, (s, e): Span) -> Option<(Span, String)> {
    let tok = &line[s..e];
    let mut at = 0;
    while let Some(i) = tok[at..].find('=') {
        let key = &tok[at..at + i];
        let key = key.rsplit(',').next().unwrap_or(key);
        let vstart = at + i + 1;
        if is_secret_keyword(key) {
            let value = &tok[vstart..];
            // `key,SECRET` / `token,FILE`: the word before the comma says what follows; a file
            // (a token or certificates on the switch's disk) is a path, not the secret.
            let vstart = match value.split_once(',') {
                Some((how, _)) if ["token", "token-secure", "certs"].contains(&how) => return None,
                Some((how, _)) if how.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-') => {
                    vstart + how.len() + 1
                }
                _ => vstart,
            };
            let (vs, ve) = unquote(line, (s + vstart, e));
            if vs < ve && !harmless(&line[vs..ve]) {
                return Some(((vs, ve), key.trim_start_matches('-').to_ascii_lowercase()));
            }
            return None;
        }
        at = vstart;
    }
    None
}

/// How much of the fallback a line gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A line no rule knows: keywords and secret-looking values.
    Full,
    /// Prose (descriptions, banners): values that look like secrets, not keywords.
    Values,
    /// A line a rule owns (its grammar says where the secret is): only unmistakable secrets (a
    /// `$6$` hash, a PEM block); a hex run there is as likely a key *name* (a MACsec CKN).
    Unmistakable,
}

/// Whether `token` has a secret word in it at all (`key-chain`, `key-id`): such a token after a
/// keyword is more grammar, not the value.
fn mentions_secret_word(token: &str) -> bool {
    lower_parts(token).iter().any(|p| SECRET_WORDS.contains(&p.as_str()))
}

/// The spans of `line` the fallback masks, and why. `taken` are the spans the platform rules masked
/// already.
pub fn scan(line: &str, toks: &[Span], taken: &[Span], mode: Mode) -> Vec<(Span, Reason)> {
    let keywords = mode == Mode::Full;
    let text = |i: usize| &line[toks[i].0..toks[i].1];
    let overlaps = |sp: Span| taken.iter().any(|t| t.0 < sp.1 && sp.0 < t.1);
    let mut out: Vec<(Span, Reason)> = Vec::new();
    let mut i = 0;
    // Descriptions and remarks are free text for people; a keyword there is a word, not a field.
    // So are comments (`!` in Cisco-style configs, `#` in NVUE, ifupdown2 and FRR files).
    let prose = toks.first().is_some_and(|&(s, e)| {
        let first = &line[s..e];
        first.starts_with(['!', '#'])
            || ["description", "remark", "alias", "banner"].iter().any(|w| w.eq_ignore_ascii_case(first))
    });
    while i < toks.len() {
        let t = text(i);
        if overlaps(toks[i]) || is_mask(t) {
            i += 1;
            continue;
        }
        if keywords && !prose {
            // CLI keywords are lower case; `EXTENDED-COMMUNITY` is a name someone gave a peer group.
            if is_secret_keyword(t) && !t.bytes().any(|b| b.is_ascii_uppercase()) {
                let mut j = i + 1;
                while j < toks.len() && is_modifier(text(j)) && !overlaps(toks[j]) {
                    j += 1;
                }
                if j < toks.len() && !overlaps(toks[j]) && !mentions_secret_word(text(j)) {
                    let sp = unquote(line, toks[j]);
                    if !harmless(&line[sp.0..sp.1]) {
                        out.push((sp, Reason::Keyword(t.trim_start_matches('-').to_ascii_lowercase())));
                    }
                    i = j + 1;
                } else {
                    i = j;
                }
                continue;
            }
            if let Some((sp, key)) = assignment_value(line, toks[i]) {
                out.push((sp, Reason::Keyword(key)));
                i += 1;
                continue;
            }
        }
        let sp = unquote(line, toks[i]);
        let after_pubkey_type = i > 0 && {
            let prev = text(i - 1).to_ascii_lowercase();
            prev.starts_with("ssh-") || prev.starts_with("ecdsa-")
        };
        let shape = match mode {
            Mode::Unmistakable => unmistakable_secret(&line[sp.0..sp.1]),
            _ => secret_like_value(&line[sp.0..sp.1]),
        };
        if let Some(what) = shape.filter(|_| !after_pubkey_type) {
            out.push((sp, Reason::Value(what)));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::grammar::tokens;
    use super::*;

    fn masked(line: &str) -> Vec<String> {
        scan(line, &tokens(line), &[], Mode::Full).iter().map(|((s, e), _)| line[*s..*e].to_owned()).collect()
    }

    #[test]
    fn keywords_are_whole_parts_and_structural_parts_win() {
        assert!(is_secret_keyword("password") && is_secret_keyword("hashed-password"));
        assert!(
            is_secret_keyword("auth-sha")
                && is_secret_keyword("community-map")
                && is_secret_keyword("-cvauth")
        );
        assert!(is_secret_keyword("message-digest-key") && is_secret_keyword("key-string"));
        for not in [
            "authorization",
            "authentication",
            "privilege",
            "key-id",
            "auth-port",
            "community-list",
            "send-community",
            "ssh-key",
            "keepalive",
            "monkey",
        ] {
            assert!(!is_secret_keyword(not), "{not}");
        }
    }

    #[test]
    fn values_after_keywords_and_modifiers() {
        assert_eq!(masked("ip ospf message-digest-key 1 sha512 7 Zq0822455D"), ["Zq0822455D"]);
        assert_eq!(masked("authentication key-id 2 algorithm sha-512 key 0 IsisK3y"), ["IsisK3y"]);
        assert_eq!(masked("boot secret sha512 $6$abc$def"), ["$6$abc$def"]);
        assert_eq!(
            masked("exec /usr/bin/TerminAttr -cvaddr=1.2.3.4:9910 -cvauth=key,CvKey1 -taillogs"),
            ["CvKey1"]
        );
        assert_eq!(masked("exec x -cvopt=DEFAULT.auth=key,CvKey2"), ["CvKey2"]);
        assert_eq!(masked("exec x -cvauth=token,/tmp/token -next"), Vec::<String>::new());
        assert_eq!(masked("exec x -cvauth=token-secure,/tmp/t -cvcompression=gzip"), Vec::<String>::new());
        assert_eq!(masked("snmp-server mib community-map CommX context c1"), ["CommX"]);
        assert_eq!(
            masked("nv set x trap-destination 1.1.1.1 username u auth-sha AuthS encrypt-aes PrivS"),
            ["AuthS", "PrivS"]
        );
        assert_eq!(masked("password ''"), Vec::<String>::new());
        assert_eq!(masked("mka pre-shared-key key-chain KC1"), Vec::<String>::new());
        assert_eq!(masked("authentication key-management wpa"), Vec::<String>::new());
        assert_eq!(masked("set community 65000:100 additive"), Vec::<String>::new());
        assert_eq!(masked("aaa authorization exec default local"), Vec::<String>::new());
        assert_eq!(masked("description password reset portal"), Vec::<String>::new());
        assert_eq!(
            masked("username a ssh-key ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 x@y"),
            Vec::<String>::new()
        );
        assert_eq!(masked("hostname x $6$rounds=5000$abc$def"), ["$6$rounds=5000$abc$def"]);
        assert_eq!(masked("foo 0x0123456789abcdef01"), ["0x0123456789abcdef01"]);
        assert_eq!(masked("interface TenGigabitEthernet1/1/1"), Vec::<String>::new());
        assert_eq!(
            masked("foo dGhpcyBpcyBhIHNlY3JldCBrZXkgMTIzNA=="),
            ["dGhpcyBpcyBhIHNlY3JldCBrZXkgMTIzNA=="]
        );
    }

    #[test]
    fn owned_lines_get_only_the_value_check() {
        let line = "neighbor X password 7 Zq1 extra $6$abcd$efgh 0123456789abcdef0123456789abcdef";
        let t = tokens(line);
        let got: Vec<_> =
            scan(line, &t, &[t[4]], Mode::Unmistakable).into_iter().map(|(s, _)| &line[s.0..s.1]).collect();
        assert_eq!(got, ["$6$abcd$efgh"]);
    }
}
