//! A tiny token grammar for scrub rules, so a rule says what a command looks like (`enable secret
//! [level <n>] [<type>] SECRET`) instead of guessing the secret's position with a regular expression.
//!
//! Why a grammar and not regexes: the leaks this replaces all came from position guesses — an optional
//! encryption-type digit or a key length (`priv aes 128 P`) shifting the match by one token. Here an
//! optional token is optional by construction, alternatives are tried in order with backtracking, and
//! a rule only masks the tokens it names `SECRET`.
//!
//! Pattern syntax (whitespace separates items; `[ ] { } |` need no spaces):
//! - `word`: that keyword (ASCII case-insensitive);
//! - `<any>` one token; `<n>` a number; `<type>` an encryption/hash type (`0 3 4 5 6 7 8 8a 9 sha512`);
//!   `<hash>` an authentication algorithm (`md5`, `sha`, `sha256`, `hmac-sha-256`, …);
//! - `SECRET` the token to mask; `SECRET...` the rest of the line (a passphrase with spaces);
//!   `text,SECRET` (a word ending in `SECRET`) a token containing `text,` whose remainder is masked
//!   (`-cvauth=key,S` inside a TerminAttr command line);
//! - `[ … ]` optional (tried first), `{ a | b c }` alternatives (tried in order), `*` any number of
//!   tokens (fewest first), `$` the end of the line.
//!
//! A pattern matches a prefix of the line's tokens unless it ends with `$`. Tokens are split on
//! whitespace; a token that starts with a quote runs to the matching quote (NX-OS `key 7 "…"`, NVUE
//! `password 'a b'`).

/// Byte range of a token in its line.
pub type Span = (usize, usize);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Word(String),
    Any,
    Num,
    Type,
    Hash,
    Secret { rest: bool },
    SecretAfter(String),
    Opt(Vec<Node>),
    Alt(Vec<Vec<Node>>),
    Skip,
    End,
}

/// Encryption / hash type tokens that may sit between a keyword and its secret.
pub(super) const TYPES: &[&str] = &["0", "3", "4", "5", "6", "7", "8", "8a", "9", "sha512"];

/// Authentication algorithm names seen in the vendors' command references.
pub(super) const HASHES: &[&str] = &[
    "md5",
    "sha",
    "sha1",
    "sha-1",
    "sha2",
    "sha224",
    "sha-224",
    "sha256",
    "sha-256",
    "sha384",
    "sha-384",
    "sha512",
    "sha-512",
    "hmac-md5",
    "hmac-sha1",
    "hmac-sha-1",
    "hmac-sha-256",
    "hmac-sha2-256",
    "hmac-sha-384",
    "hmac-sha-512",
    "cmac-aes-128",
    "aes-128-cmac",
    "aes-256-cmac",
];

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    nodes: Vec<Node>,
    source: &'static str,
}

/// A pattern that does not parse (a bug in the rule table, caught by its unit test).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scrub pattern `{pattern}`: {problem}")]
pub struct PatternError {
    pub pattern: &'static str,
    pub problem: &'static str,
}

impl Pattern {
    pub fn parse(source: &'static str) -> Result<Pattern, PatternError> {
        let items = lex(source);
        let mut pos = 0;
        let nodes = parse_seq(&items, &mut pos, source)?;
        if pos != items.len() {
            return Err(PatternError { pattern: source, problem: "unbalanced `]`, `}` or `|`" });
        }
        Ok(Pattern { nodes, source })
    }

    pub fn source(&self) -> &'static str {
        self.source
    }

    /// Whether the pattern names at least one secret (a rule without one protects lines).
    pub fn has_secret(&self) -> bool {
        fn any(nodes: &[Node]) -> bool {
            nodes.iter().any(|n| match n {
                Node::Secret { .. } | Node::SecretAfter(_) => true,
                Node::Opt(v) => any(v),
                Node::Alt(a) => a.iter().any(|v| any(v)),
                _ => false,
            })
        }
        any(&self.nodes)
    }

    /// Match against a line's tokens; on success, the spans to mask (possibly none).
    pub fn matches(&self, line: &str, toks: &[Span]) -> Option<Vec<Span>> {
        let mut out = Vec::new();
        let top = Cont { nodes: &self.nodes, next: None };
        run(Some(&top), line, toks, 0, &mut out).then_some(out)
    }
}

fn lex(source: &str) -> Vec<&str> {
    let mut items = Vec::new();
    for word in source.split_whitespace() {
        let mut start = 0;
        for (i, c) in word.char_indices() {
            if "[]{}|".contains(c) {
                if start < i {
                    items.push(&word[start..i]);
                }
                items.push(&word[i..i + 1]);
                start = i + 1;
            }
        }
        if start < word.len() {
            items.push(&word[start..]);
        }
    }
    items
}

fn parse_seq(items: &[&str], pos: &mut usize, src: &'static str) -> Result<Vec<Node>, PatternError> {
    let err = |problem| PatternError { pattern: src, problem };
    let mut seq = Vec::new();
    while let Some(&item) = items.get(*pos) {
        match item {
            "]" | "}" | "|" => break,
            "[" => {
                *pos += 1;
                let inner = parse_seq(items, pos, src)?;
                if items.get(*pos) != Some(&"]") {
                    return Err(err("`[` without `]`"));
                }
                *pos += 1;
                seq.push(Node::Opt(inner));
            }
            "{" => {
                *pos += 1;
                let mut alts = vec![parse_seq(items, pos, src)?];
                while items.get(*pos) == Some(&"|") {
                    *pos += 1;
                    alts.push(parse_seq(items, pos, src)?);
                }
                if items.get(*pos) != Some(&"}") {
                    return Err(err("`{` without `}`"));
                }
                *pos += 1;
                seq.push(Node::Alt(alts));
            }
            _ => {
                *pos += 1;
                seq.push(match item {
                    "<any>" => Node::Any,
                    "<n>" => Node::Num,
                    "<type>" => Node::Type,
                    "<hash>" => Node::Hash,
                    "SECRET" => Node::Secret { rest: false },
                    "SECRET..." => Node::Secret { rest: true },
                    "*" => Node::Skip,
                    "$" => Node::End,
                    w if w.starts_with('<') => return Err(err("unknown token class")),
                    w if w.len() > "SECRET".len() && w.ends_with("SECRET") => {
                        Node::SecretAfter(w[..w.len() - "SECRET".len()].to_ascii_lowercase())
                    }
                    w => Node::Word(w.to_owned()),
                });
            }
        }
    }
    Ok(seq)
}

/// The rest of the pattern to match: this slice, then the continuation (a linked list on the stack,
/// so backtracking through nested optionals needs no allocation).
struct Cont<'a> {
    nodes: &'a [Node],
    next: Option<&'a Cont<'a>>,
}

fn one_of(set: &[&str], tok: &str) -> bool {
    set.iter().any(|s| s.eq_ignore_ascii_case(tok))
}

fn run(c: Option<&Cont<'_>>, line: &str, toks: &[Span], pos: usize, out: &mut Vec<Span>) -> bool {
    let Some(c) = c else { return true };
    let Some((first, rest)) = c.nodes.split_first() else { return run(c.next, line, toks, pos, out) };
    let after = Cont { nodes: rest, next: c.next };
    let tok = toks.get(pos).map(|&(s, e)| &line[s..e]);
    let mark = out.len();
    let ok = match first {
        Node::Word(w) => {
            tok.is_some_and(|t| t.eq_ignore_ascii_case(w)) && run(Some(&after), line, toks, pos + 1, out)
        }
        Node::Any => tok.is_some() && run(Some(&after), line, toks, pos + 1, out),
        Node::Num => {
            tok.is_some_and(|t| t.bytes().all(|b| b.is_ascii_digit()))
                && run(Some(&after), line, toks, pos + 1, out)
        }
        Node::Type => tok.is_some_and(|t| one_of(TYPES, t)) && run(Some(&after), line, toks, pos + 1, out),
        Node::Hash => tok.is_some_and(|t| one_of(HASHES, t)) && run(Some(&after), line, toks, pos + 1, out),
        Node::Secret { rest: false } => {
            tok.is_some() && {
                out.push(unquoted(line, toks[pos]));
                run(Some(&after), line, toks, pos + 1, out)
            }
        }
        Node::Secret { rest: true } => {
            tok.is_some() && {
                out.push((toks[pos].0, toks[toks.len() - 1].1));
                run(Some(&after), line, toks, toks.len(), out)
            }
        }
        Node::SecretAfter(prefix) => tok.is_some_and(|t| {
            let at = t.to_ascii_lowercase().find(prefix.as_str());
            at.is_some_and(|i| {
                let start = toks[pos].0 + i + prefix.len();
                if start < toks[pos].1 {
                    out.push((start, toks[pos].1));
                }
                run(Some(&after), line, toks, pos + 1, out)
            })
        }),
        Node::Opt(inner) => {
            let with = Cont { nodes: inner, next: Some(&after) };
            run(Some(&with), line, toks, pos, out) || {
                out.truncate(mark);
                run(Some(&after), line, toks, pos, out)
            }
        }
        Node::Alt(alts) => alts.iter().any(|a| {
            out.truncate(mark);
            run(Some(&Cont { nodes: a, next: Some(&after) }), line, toks, pos, out)
        }),
        Node::Skip => (pos..=toks.len()).any(|p| {
            out.truncate(mark);
            run(Some(&after), line, toks, p, out)
        }),
        Node::End => pos == toks.len() && run(Some(&after), line, toks, pos, out),
    };
    if !ok {
        out.truncate(mark);
    }
    ok
}

/// The inside of a quoted token (`"abc"` → `abc`), so masking keeps the quotes the CLI wrote.
fn unquoted(line: &str, (s, e): Span) -> Span {
    let t = line.as_bytes();
    if e - s >= 3 && (t[s] == b'"' || t[s] == b'\'') && t[e - 1] == t[s] { (s + 1, e - 1) } else { (s, e) }
}

/// Split a config line into tokens (byte spans). A token starting with `"` or `'` runs to the same
/// quote followed by whitespace or the end of the line (or to the end of the line if unclosed).
pub fn tokens(line: &str) -> Vec<Span> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if b[i] == b'"' || b[i] == b'\'' {
            let q = b[i];
            i += 1;
            while i < b.len() && !(b[i] == q && (i + 1 == b.len() || b[i + 1].is_ascii_whitespace())) {
                i += 1;
            }
            i = (i + 1).min(b.len());
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                i += 1;
            }
        }
        out.push((start, i));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn masked(pattern: &'static str, line: &str) -> Option<Vec<String>> {
        let p = Pattern::parse(pattern).unwrap();
        p.matches(line, &tokens(line)).map(|v| v.iter().map(|&(s, e)| line[s..e].to_owned()).collect())
    }

    #[test]
    fn optional_tokens_do_not_shift_the_secret() {
        let p = "ntp authentication-key <n> <hash> SECRET";
        assert_eq!(masked(p, "ntp authentication-key 1 md5 NtpSecret123 7").unwrap(), ["NtpSecret123"]);
        let p = "ntp authentication-key <n> <hash> [<type>] SECRET";
        assert_eq!(masked(p, "ntp authentication-key 1 md5 7 0832XY").unwrap(), ["0832XY"]);
        assert_eq!(masked(p, "ntp authentication-key 1 sha1 Plain").unwrap(), ["Plain"]);
        let p = "snmp-server user <any> <any> * auth <hash> SECRET [priv {aes {128|192|256}|3des|des|aes} SECRET]";
        assert_eq!(masked(p, "snmp-server user u g v3 auth sha A priv aes 128 P").unwrap(), ["A", "P"]);
        assert_eq!(masked(p, "snmp-server user u g v3 auth md5 A priv des P").unwrap(), ["A", "P"]);
        assert_eq!(masked(p, "snmp-server user u g v3 auth md5 A").unwrap(), ["A"]);
        assert_eq!(masked("enable secret [level <n>] [<type>] SECRET", "enable secret 5").unwrap(), ["5"]);
        assert_eq!(masked("a $", "a b"), None);
        assert_eq!(masked("exec * auth=key,SECRET", "exec x -cvauth=key,K3y -y").unwrap(), ["K3y"]);
        assert_eq!(masked("exec * auth=key,SECRET", "exec x -cvauth=token,/f"), None);
        assert_eq!(
            masked("wpa-psk ascii [<type>] SECRET...", "wpa-psk ascii 0 two  words ").unwrap(),
            ["two  words"]
        );
    }

    #[test]
    fn quoted_tokens_and_bad_patterns() {
        let line = r#"tacacs-server key 7 "a b c" x"#;
        let t = tokens(line);
        assert_eq!(&line[t[3].0..t[3].1], r#""a b c""#);
        assert_eq!(masked("tacacs-server key [<type>] SECRET", line).unwrap(), ["a b c"]);
        assert_eq!(masked("x SECRET", "x ''").unwrap(), ["''"]);
        assert_eq!(tokens("  'unclosed x").len(), 1);
        assert!(Pattern::parse("a [b").is_err());
        assert!(Pattern::parse("a {b|c").is_err());
        assert!(Pattern::parse("a ]").is_err());
        assert!(Pattern::parse("<bogus>").is_err());
        assert!(!Pattern::parse("snmp-server host <any> * version 3").unwrap().has_secret());
    }

    proptest! {
        #[test]
        fn tokens_cover_non_space_and_never_panic(s in any::<String>()) {
            let t = tokens(&s);
            for w in t.windows(2) {
                prop_assert!(w[0].1 <= w[1].0);
            }
            let p = Pattern::parse("[<any>] * { SECRET | x SECRET... } [$]").unwrap();
            let _ = p.matches(&s, &t);
        }
    }
}
