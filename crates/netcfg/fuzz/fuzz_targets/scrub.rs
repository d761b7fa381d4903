//! Scrubbing never leaks a secret. Each input takes one secret-bearing stanza of the vendor-reference
//! corpus (`crates/netcfg/tests/corpus/`, the marked line with the section header it needs), puts a
//! generated secret in the marked place, surrounds it with arbitrary other config lines, and checks that
//! neither the secret nor any corpus secret of the stanza survives `scrub`, `normalise` or a diff against
//! the same config with the secret rotated; that line configs keep their line count; and that scrubbing
//! is idempotent.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use lifeline_netcfg::platform::normalise;
use lifeline_netcfg::scrub::{TagKey, scrub};
use lifeline_netcfg::{diff, driver_for};
use lifeline_types::Platform;

const OPEN: char = '⟦';
const CLOSE: char = '⟧';

const CORPORA: &[(Platform, &str)] = &[
    (Platform::Ios, include_str!("../../tests/corpus/ios.cfg")),
    (Platform::Nxos, include_str!("../../tests/corpus/nxos.cfg")),
    (Platform::Eos, include_str!("../../tests/corpus/eos.cfg")),
    (Platform::Cumulus, include_str!("../../tests/corpus/cumulus.nv")),
    (Platform::Sonic, include_str!("../../tests/corpus/sonic.json")),
];

#[derive(Arbitrary, Debug)]
struct Input {
    corpus: u8,
    stanza: u16,
    /// Which marked secret of the stanza gets the generated one.
    slot: u8,
    secret: Vec<u8>,
    before: Vec<String>,
    after: Vec<String>,
}

/// Stanzas of a line corpus: a marked line, preceded (when it is indented) by the lines from its section
/// header on. For SONiC the whole JSON document is one stanza.
fn stanzas(text: &str, json: bool) -> Vec<Vec<&str>> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("##")).collect();
    if json {
        return vec![lines];
    }
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !l.contains(OPEN) {
            continue;
        }
        let start = if l.starts_with([' ', '\t']) {
            (0..i).rev().find(|j| !lines[*j].starts_with([' ', '\t'])).unwrap_or(0)
        } else {
            i
        };
        out.push(lines[start..=i].to_vec());
    }
    out
}

/// The stanza with marker `slot` replaced by `secret` and the others by their corpus secrets, plus those.
fn fill(stanza: &[&str], slot: usize, secret: &str) -> (String, Vec<String>) {
    let mut text = String::new();
    let mut secrets = Vec::new();
    let mut n = 0;
    for line in stanza {
        let mut rest = *line;
        while let (Some(s), Some(e)) = (rest.find(OPEN), rest.find(CLOSE)) {
            text.push_str(&rest[..s]);
            let original = &rest[s + OPEN.len_utf8()..e];
            if n == slot {
                text.push_str(secret);
            } else {
                text.push_str(original);
                secrets.push(original.to_owned());
            }
            n += 1;
            rest = &rest[e + CLOSE.len_utf8()..];
        }
        text.push_str(rest);
        text.push('\n');
    }
    (text, secrets)
}

fn count_markers(stanza: &[&str]) -> usize {
    stanza.iter().map(|l| l.matches(OPEN).count()).sum()
}

const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghjkmnpqrstuvwxyz23456789";

fuzz_target!(|input: Input| {
    let (platform, text) = CORPORA[usize::from(input.corpus) % CORPORA.len()];
    let json = platform == Platform::Sonic;
    let all = stanzas(text, json);
    let stanza = &all[usize::from(input.stanza) % all.len()];
    let slot = usize::from(input.slot) % count_markers(stanza).max(1);
    // A token no rule keyword can be: a fixed prefix, then 4..40 characters.
    let body: String =
        input.secret.iter().take(40).map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char).collect();
    let secret = format!("Zq9{body}{}", "x".repeat(4usize.saturating_sub(body.len())));
    let (filled, mut secrets) = fill(stanza, slot, &secret);
    secrets.push(secret.clone());

    let config = if json {
        filled
    } else {
        let clean = |l: &String| {
            let l: String =
                l.chars().filter(|c| *c != '\n' && *c != '\r' && *c != OPEN && *c != CLOSE).collect();
            (!secrets.iter().any(|s| l.contains(s.as_str()))).then_some(l)
        };
        let mut c = String::new();
        for l in input.before.iter().take(8).filter_map(clean) {
            c.push_str(&l);
            c.push('\n');
        }
        c.push_str(&filled);
        for l in input.after.iter().take(8).filter_map(clean) {
            c.push_str(&l);
            c.push('\n');
        }
        c
    };

    let key = TagKey::from_bytes([9; 32]);
    let scrubbed = scrub(platform, &config, &key);
    let d = driver_for(platform);
    let normalised = normalise(d.as_ref(), &config, &key);
    let rotated = config.replace(&secret, &format!("{secret}R0t"));
    let normalised2 = normalise(d.as_ref(), &rotated, &key);
    let unified = diff::unified(&normalised, &normalised2, "v1", "v2");
    for s in &secrets {
        assert!(
            !scrubbed.contains(s.as_str()),
            "{platform}: `{s}` leaked by scrub:\n{config}\n=>\n{scrubbed}"
        );
        assert!(!normalised.contains(s.as_str()), "{platform}: `{s}` leaked by normalise");
        assert!(!unified.contains(s.as_str()), "{platform}: `{s}` leaked into a diff");
    }
    if !json {
        assert_eq!(scrubbed.lines().count(), config.lines().count(), "{platform}: line count changed");
    }
    assert_eq!(scrub(platform, &scrubbed, &key), scrubbed, "{platform}: scrubbing is not idempotent");
});
