//! `show interfaces` on EOS, IOS and NX-OS: one block per interface, opened by `NAME is STATE, line
//! protocol is STATE` (NX-OS: `NAME is up`), with counters inside sentences (`0 input errors, 0 CRC`).
//! The phrases differ by platform and release, so each counter is a phrase found anywhere in the block.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::{Counter, PortCounters};

static HEAD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\S+) is (?:administratively )?(?:up|down|reset|deleted|disabled|testing|dormant|notpresent|lowerlayerdown)\b")
        .expect("static regex")
});

/// `(phrase, counter)`: the number right before the phrase (case-insensitive, whole words).
static PHRASES: LazyLock<Vec<(Regex, Counter)>> = LazyLock::new(|| {
    [
        (r"input errors", Counter::RxErrors),
        (r"input error", Counter::RxErrors),
        (r"output errors", Counter::TxErrors),
        (r"output error", Counter::TxErrors),
        (r"CRC", Counter::Crc),
        (r"input discards", Counter::RxDrops),
        (r"output discards", Counter::TxDrops),
        (r"link status changes", Counter::LinkFlaps),
        (r"carrier transitions", Counter::LinkFlaps),
        (r"pause input", Counter::PauseRx),
        (r"pause output", Counter::PauseTx),
        (r"Rx pause", Counter::PauseRx),
        (r"Tx pause", Counter::PauseTx),
    ]
    .into_iter()
    .map(|(p, c)| (Regex::new(&format!(r"(?i)(?:^|[\s,])(\d+) {p}\b")).expect("static regex"), c))
    .collect()
});

static FLAPPED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:Last link flapped (.+)|((?:Up|Down) \d.*))$").expect("static regex")
});

pub(crate) fn parse(text: &str) -> Vec<PortCounters> {
    let mut out: Vec<PortCounters> = Vec::new();
    for line in text.lines() {
        if let Some(c) = HEAD.captures(line) {
            out.push(PortCounters { port: c[1].to_owned(), counters: BTreeMap::new(), last_flap: None });
            continue;
        }
        let Some(cur) = out.last_mut() else { continue };
        for (re, counter) in PHRASES.iter() {
            for cap in re.captures_iter(line) {
                if let Ok(v) = cap[1].parse::<u64>() {
                    // The first phrase found wins (`input errors` before the singular form).
                    cur.counters.entry(*counter).or_insert(v);
                }
            }
        }
        if let Some(c) = FLAPPED.captures(line) {
            let when = c.get(1).or(c.get(2)).map(|m| m.as_str().trim().to_owned());
            cur.last_flap = when;
        }
    }
    out
}
