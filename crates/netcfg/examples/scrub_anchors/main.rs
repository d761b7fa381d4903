//! The anchors' table: Lifeline's scrubber beside Oxidized's `secret` rules and RANCID's filters
//! (both re-implemented here from their documented behaviour, see [`oxidized`] and [`rancid`]) over
//! the same real-world corpus, judged by the same independent extractor and leak count as the
//! corpus test. Prints, per platform, the secrets each left (and their share of all secrets) and
//! the lines each changed that hold no secret.
//!
//! `LIFELINE_SCRUB_CORPUS=/path/to/netcfg-corpus cargo run --release -p lifeline-netcfg --example scrub_anchors [-- --list]`
//! (`--list`: each secret left, with the tool that left it).

mod oxidized;
mod rancid;
#[path = "../../tests/realworld/mod.rs"]
mod realworld;

use std::collections::BTreeMap;

use lifeline_netcfg::scrub::{TagKey, scrub_report};
use realworld::corpus::{Entry, leaks, load, over_scrubbed, secrets};
use realworld::extract::Secret;

#[derive(Default, Clone, Copy)]
struct Tally {
    left: usize,
    over: usize,
    /// No rules for the platform: the config is stored as it is.
    none: bool,
}

#[derive(Default)]
struct Row {
    files: usize,
    secrets: usize,
    tools: [Tally; 3],
}

fn judge(tool: &str, e: &Entry, found: &[Secret], scrubbed: Option<String>, t: &mut Tally) {
    let Some(s) = scrubbed else {
        t.none = true;
        t.left += found.len();
        return;
    };
    let left = leaks(e, found, &s);
    if std::env::args().any(|a| a == "--list") {
        for l in &left {
            println!("{tool} left {l}");
        }
    }
    t.left += left.len();
    if e.platform != lifeline_types::Platform::Sonic {
        t.over += over_scrubbed(e, found, &s).len();
    }
}

fn main() {
    let Some(corpus) = load() else { std::process::exit(2) };
    let key = TagKey::random();
    let mut table: BTreeMap<String, Row> = BTreeMap::new();
    for e in &corpus {
        let found = secrets(e);
        let row = table.entry(e.folder.clone()).or_default();
        row.files += 1;
        row.secrets += found.len();
        judge("Lifeline", e, &found, Some(scrub_report(e.platform, &e.text, &key).text), &mut row.tools[0]);
        judge("Oxidized", e, &found, oxidized::scrub(e.platform, &e.text), &mut row.tools[1]);
        judge("RANCID", e, &found, rancid::scrub(e.platform, &e.text), &mut row.tools[2]);
    }
    let share = |n: usize, of: usize| if of == 0 { 0.0 } else { 100.0 * n as f64 / of as f64 };
    println!("secrets left (share of all) and over-scrubbed lines; `-`: no rules for the platform");
    println!(
        "{:<12} {:>5} {:>7} | {:>14} {:>5} | {:>14} {:>5} | {:>14} {:>5}",
        "platform",
        "files",
        "secrets",
        "Lifeline left",
        "over",
        "Oxidized left",
        "over",
        "RANCID left",
        "over"
    );
    let mut total = Row::default();
    for (p, r) in &table {
        let cell = |t: &Tally| {
            let left =
                format!("{} ({:.0}%){}", t.left, share(t.left, r.secrets), if t.none { " -" } else { "" });
            format!("{left:>14} {:>5}", t.over)
        };
        println!(
            "{p:<12} {:>5} {:>7} | {} | {} | {}",
            r.files,
            r.secrets,
            cell(&r.tools[0]),
            cell(&r.tools[1]),
            cell(&r.tools[2])
        );
        total.files += r.files;
        total.secrets += r.secrets;
        for (a, b) in total.tools.iter_mut().zip(&r.tools) {
            a.left += b.left;
            a.over += b.over;
        }
    }
    let [l, o, r] = total.tools;
    println!(
        "{:<12} {:>5} {:>7} | {:>14} {:>5} | {:>14} {:>5} | {:>14} {:>5}",
        "all",
        total.files,
        total.secrets,
        format!("{} ({:.0}%)", l.left, share(l.left, total.secrets)),
        l.over,
        format!("{} ({:.0}%)", o.left, share(o.left, total.secrets)),
        o.over,
        format!("{} ({:.0}%)", r.left, share(r.left, total.secrets)),
        r.over
    );
}

#[cfg(test)]
mod tests {
    //! The ports read as their sources do (`cargo test -p lifeline-netcfg --example scrub_anchors`).
    use lifeline_types::Platform;

    use super::{oxidized, rancid};

    #[test]
    fn oxidized_substitutes_as_its_models_do() {
        let ios = "enable secret 5 $1$abcd$efgh\nenable password cisco\n password 7 0822455D0A16\nend\n";
        // `enable (password|secret) N` needs the type digit; the indented line rule does not.
        assert_eq!(
            oxidized::scrub(Platform::Ios, ios).unwrap(),
            "enable secret 5 <secret hidden>\nenable password cisco\n password <secret hidden>\nend\n"
        );
        // Its EOS `secret` rule drops the rest of the line.
        assert_eq!(
            oxidized::scrub(Platform::Eos, "username a privilege 15 secret sha512 $6$x role r\n").unwrap(),
            "username a privilege 15 secret sha512 <secret hidden>\n"
        );
        assert_eq!(oxidized::scrub(Platform::Sonic, "{}"), None);
    }

    #[test]
    fn rancid_filters_as_its_modules_do() {
        let ios = "snmp-server host 10.1.1.1 version 2c Comm1 udp-port 162\n\
                   snmp-server community Comm2 RO\n\
                   crypto isakmp key Key1 address 10.0.0.1\n\
                   hostname r1\n";
        assert_eq!(
            rancid::scrub(Platform::Ios, ios).unwrap(),
            "!snmp-server host 10.1.1.1 version 2c <removed> udp-port 162\n\
             !snmp-server community <removed> RO\n\
             !crypto isakmp key <removed> address 10.0.0.1\n\
             hostname r1\n"
        );
        // NX-OS: any other `username` line is kept whole and no later filter sees it.
        assert_eq!(
            rancid::scrub(Platform::Nxos, "username admin password 5 $5$x role network-admin\n").unwrap(),
            "!username admin password <removed> role network-admin\n"
        );
        assert_eq!(rancid::scrub(Platform::Sonic, "{}"), None);
    }
}
