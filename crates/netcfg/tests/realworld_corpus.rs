//! The real-world corpus: configurations that no one on the project wrote, gathered from public
//! repositories (Batfish's grammar tests and snapshots, Arista AVD's generated configs, NAPALM's
//! fixtures, FRR's topotests, sonic-utilities' config_db documents). Each file's source (repository,
//! path, commit, licence) is a row of its `SOURCES.tsv`. The corpus is third-party data, so it is not
//! in this repository: it lives beside the project's peers (`shared/netcfg-corpus`) or wherever
//! `LIFELINE_SCRUB_CORPUS` points; without it the tests skip loudly, and fail with
//! `LIFELINE_SCRUB_CORPUS_REQUIRED=1` (CI).
//!
//! Every secret the independent extractor ([`realworld::extract`]) finds must be gone from the
//! scrubbed copy — scrubbed directly, and through the real backup path (a real OpenSSH `sshd`
//! serving the file, `backup_one`, the blob store, the git export) — and the over-scrubbed lines
//! (lines changed that hold no extracted secret) stay under a bound per platform.

mod common;
#[path = "realworld/extract.rs"]
mod extract;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use extract::{Secret, json_secrets, line_secrets};
use lifeline_netcfg::backup::{BackupOutcome, backup_one};
use lifeline_netcfg::scrub::{TagKey, scrub_report};
use lifeline_netcfg::ssh::{SshAuth, Transport};
use lifeline_netcfg::{driver_for, git_export};
use lifeline_types::{DeviceName, Platform};

/// Over-scrubbed lines allowed, per thousand lines of the platform's files.
const OVER_SCRUB_PER_MILLE: usize = 1;

struct Entry {
    platform: Platform,
    file: String,
    text: String,
}

fn corpus_dir() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = std::env::var_os("LIFELINE_SCRUB_CORPUS").map(PathBuf::from).into_iter().chain([
        manifest.join("../../shared/netcfg-corpus"),
        manifest.join("../../../shared/netcfg-corpus"),
        manifest.join("../../../netcfg-corpus"),
    ]);
    for c in candidates {
        if c.join("SOURCES.tsv").is_file() {
            return Some(c);
        }
    }
    let why = "real-world scrub corpus not found (set LIFELINE_SCRUB_CORPUS to a folder with SOURCES.tsv)";
    if std::env::var("LIFELINE_SCRUB_CORPUS_REQUIRED").is_ok_and(|v| v == "1") {
        panic!("{why}");
    }
    eprintln!("SKIP: {why}");
    None
}

fn platform_of(dir: &str) -> Platform {
    match dir {
        "eos" => Platform::Eos,
        "ios" => Platform::Ios,
        "nxos" => Platform::Nxos,
        "sonic" => Platform::Sonic,
        "cumulus-frr" | "cumulus-nvue" => Platform::Cumulus,
        other => panic!("corpus folder `{other}` names no platform"),
    }
}

fn load() -> Option<Vec<Entry>> {
    let dir = corpus_dir()?;
    let sources = std::fs::read_to_string(dir.join("SOURCES.tsv")).unwrap();
    let mut out = Vec::new();
    for row in sources.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let cols: Vec<&str> = row.split('\t').collect();
        assert_eq!(cols.len(), 6, "SOURCES.tsv row without repository, path, commit and licence: {row}");
        let file = cols[1];
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        out.push(Entry { platform: platform_of(cols[0]), file: file.to_owned(), text });
    }
    Some(out)
}

fn secrets(e: &Entry) -> Vec<Secret> {
    if e.platform == Platform::Sonic { json_secrets(&e.text) } else { line_secrets(&e.text) }
}

/// The tokens of a line, split where a secret's neighbours end (`-cvauth=key,S`, `"S"`).
fn pieces(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| c.is_whitespace() || matches!(c, ',' | '=' | '"' | '\''))
}

/// The secrets of `e` still present in `scrubbed`. Line configs keep every line in place, so a secret
/// leaks when its line holds more copies of the value than the original line held apart from the
/// secret itself (`username cisco … password 0 cisco` keeps the user name); JSON: as a string or key.
fn leaks(e: &Entry, found: &[Secret], scrubbed: &str) -> Vec<String> {
    let before: Vec<&str> = e.text.lines().collect();
    let after: Vec<&str> = scrubbed.lines().collect();
    let count = |line: &str, v: &str| {
        if v.len() >= 6 { line.matches(v).count() } else { pieces(line).filter(|t| *t == v).count() }
    };
    found
        .iter()
        .filter(|s| match e.platform {
            Platform::Sonic => {
                // The secret's own place still holds it: a field its value, or a row key its row.
                let doc: serde_json::Value = serde_json::from_str(scrubbed).unwrap_or_default();
                match doc.pointer(&s.path) {
                    Some(serde_json::Value::String(v)) => *v == s.value,
                    Some(_) => true,
                    None => false,
                }
            }
            _ => {
                let secrets_here = found.iter().filter(|x| x.line == s.line && x.value == s.value).count();
                let kept = count(before[s.line - 1], &s.value) - secrets_here;
                after.get(s.line - 1).is_some_and(|l| count(l, &s.value) > kept)
            }
        })
        .map(|s| format!("{} line {}: `{}`", e.file, s.line, s.value))
        .collect()
}

#[derive(Default)]
struct Row {
    files: usize,
    lines: usize,
    secrets: usize,
    leaks: usize,
    over: usize,
    fallback: usize,
}

#[test]
fn no_secret_survives_and_over_scrubbing_is_bounded() {
    let Some(corpus) = load() else { return };
    let key = TagKey::random();
    let mut table: BTreeMap<String, Row> = BTreeMap::new();
    let (mut all_leaks, mut over_lines) = (Vec::new(), Vec::new());
    for e in &corpus {
        let found = secrets(e);
        let s = scrub_report(e.platform, &e.text, &key);
        let row = table.entry(e.file.split('/').next().unwrap().to_owned()).or_default();
        row.files += 1;
        row.lines += e.text.lines().count();
        row.secrets += found.len();
        let l = leaks(e, &found, &s.text);
        row.leaks += l.len();
        all_leaks.extend(l);
        row.fallback += s.by_fallback().count();
        if e.platform == Platform::Sonic {
            // A document has no lines to compare: every masked string the extractor does not call a
            // secret is one over-scrubbed value.
            let extra = s.masked.len().saturating_sub(found.len());
            row.over += extra;
            if extra > 0 {
                let places: Vec<String> = s.masked.iter().map(|m| m.at.to_string()).collect();
                over_lines.push(format!(
                    "{}: {extra} more masked than extracted: {}",
                    e.file,
                    places.join(" ")
                ));
            }
        } else {
            for (i, (a, b)) in e.text.lines().zip(s.text.lines()).enumerate() {
                if a != b && !found.iter().any(|x| x.line == i + 1) {
                    row.over += 1;
                    over_lines.push(format!("{} line {}: {a}\n    -> {b}", e.file, i + 1));
                }
            }
        }
    }
    eprintln!("platform      files   lines  secrets  leaks  over-scrubbed  fallback");
    for (p, r) in &table {
        eprintln!(
            "{p:<12} {:>6} {:>7} {:>8} {:>6} {:>14} {:>9}",
            r.files, r.lines, r.secrets, r.leaks, r.over, r.fallback
        );
    }
    for o in &over_lines {
        eprintln!("over-scrubbed: {o}");
    }
    assert!(all_leaks.is_empty(), "{} leaks:\n{}", all_leaks.len(), all_leaks.join("\n"));
    for (p, r) in &table {
        assert!(
            r.over * 1000 <= r.lines * OVER_SCRUB_PER_MILLE,
            "{p}: {} over-scrubbed lines in {} (bound {OVER_SCRUB_PER_MILLE} per 1000)",
            r.over,
            r.lines
        );
        assert!(r.secrets > 0, "{p}: the extractor found no secret at all");
    }
}

/// What a real switch would print: IOS and EOS end with `end` (the backup refuses a config without
/// it as truncated); the corpus files are fragments of running configs and some stop before it.
fn as_served(e: &Entry) -> String {
    let mut t = e.text.clone();
    if matches!(e.platform, Platform::Ios | Platform::Eos)
        && t.lines().map(str::trim).rfind(|l| !l.is_empty()) != Some("end")
    {
        if !t.ends_with('\n') {
            t.push('\n');
        }
        t.push_str("end\n");
    }
    t
}

#[tokio::test]
async fn no_secret_survives_the_backup_path_and_the_git_export() {
    let Some(corpus) = load() else { return };
    let Some(sshd) = lifeline_test_utils::start_sshd_in("ed25519", |d| {
        std::fs::write(d.join("config.txt"), "").unwrap();
        format!("ForceCommand cat {}\n", d.join("config.txt").display())
    }) else {
        return;
    };
    let client_key = Arc::new(russh::keys::load_secret_key(&sshd.client_key, None).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let ctx = common::ctx(dir.path(), false);
    let (mut backed_up, mut rejected) = (0, Vec::new());
    let mut secret_counts: BTreeMap<String, usize> = BTreeMap::new();
    for (i, e) in corpus.iter().enumerate() {
        let served = as_served(e);
        if let Err(why) = driver_for(e.platform).validate(&served) {
            rejected.push(format!("{}: {why}", e.file));
            continue;
        }
        std::fs::write(sshd.dir.path().join("config.txt"), &served).unwrap();
        let name = format!("corpus-{i}");
        let mut t = common::target(
            &name,
            &sshd.addr.to_string(),
            sshd.port,
            &sshd.user,
            SshAuth::PublicKey(client_key.clone()),
            e.platform,
        );
        t.ssh.transport = Transport::Exec;
        let out = backup_one(&ctx, &t).await.unwrap_or_else(|err| panic!("{}: {}", e.file, err.chain()));
        assert!(matches!(out, BackupOutcome::NewVersion { version: 1, .. }), "{}: {out:?}", e.file);
        let v = ctx.index.latest(&DeviceName::new(&name).unwrap()).await.unwrap().unwrap();
        let stored = String::from_utf8(ctx.blobs.get(&v.blob).await.unwrap()).unwrap();
        let found = secrets(e);
        for s in &found {
            // The stored copy may hold the value elsewhere as often as the original did apart from
            // its secret occurrences (a user named like its password), never more.
            let count = |t: &str| {
                if s.value.len() >= 6 {
                    t.matches(s.value.as_str()).count()
                } else {
                    pieces(t).filter(|x| *x == s.value).count()
                }
            };
            let kept = count(&served) - found.iter().filter(|x| x.value == s.value).count();
            assert!(count(&stored) <= kept, "{} line {}: `{}` stored by the backup", e.file, s.line, s.value);
            if s.value.len() >= 6 {
                *secret_counts.entry(s.value.clone()).or_insert(0) += 1;
            }
        }
        backed_up += 1;
    }
    eprintln!(
        "backed up {backed_up} of {} corpus files; rejected as not a config of their platform:",
        corpus.len()
    );
    for r in &rejected {
        eprintln!("  {r}");
    }
    assert!(backed_up * 10 >= corpus.len() * 9, "fewer than 90% of the corpus went through the backup path");
    // In the git export, look for the values that appear nowhere in the corpus but as secrets.
    let texts: Vec<String> = corpus.iter().map(as_served).collect();
    let all: Vec<String> = secret_counts
        .into_iter()
        .filter(|(v, n)| texts.iter().map(|t| t.matches(v.as_str()).count()).sum::<usize>() == *n)
        .map(|(v, _)| v)
        .collect();
    assert!(all.len() > 100, "only {} distinct secrets to look for in the git export", all.len());
    let repo_dir = dir.path().join("git");
    git_export::export_git(&repo_dir, ctx.index.as_ref(), &ctx.blobs).await.unwrap();
    let repo = git2::Repository::open(&repo_dir).unwrap();
    let odb = repo.odb().unwrap();
    let mut oids = Vec::new();
    odb.foreach(|o| {
        oids.push(*o);
        true
    })
    .unwrap();
    for oid in oids {
        let data = odb.read(oid).unwrap();
        let text = String::from_utf8_lossy(data.data());
        for s in &all {
            assert!(!text.contains(s.as_str()), "`{s}` in git object {oid}");
        }
    }
}
