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
mod realworld;

use std::collections::BTreeMap;
use std::sync::Arc;

use lifeline_netcfg::backup::{BackupOutcome, backup_one};
use lifeline_netcfg::scrub::{TagKey, scrub_report};
use lifeline_netcfg::ssh::{SshAuth, Transport};
use lifeline_netcfg::{driver_for, git_export};
use lifeline_types::{DeviceName, Platform};
use realworld::corpus::{Entry, leaks, load, over_scrubbed, pieces, secrets};

/// Over-scrubbed lines allowed, per thousand lines of the platform's files.
const OVER_SCRUB_PER_MILLE: usize = 1;

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
        let row = table.entry(e.folder.clone()).or_default();
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
            for (n, a, b) in over_scrubbed(e, &found, &s.text) {
                row.over += 1;
                over_lines.push(format!("{} line {n}: {a}\n    -> {b}", e.file));
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
