//! The real-world corpus on disk and how a scrubbed copy is judged against it: shared by the corpus
//! test (`tests/realworld_corpus.rs`) and the anchors' benchmark (`examples/scrub_anchors`), so
//! that both count leaks and over-scrubbed lines the same way.

use std::path::{Path, PathBuf};

use lifeline_types::Platform;

use super::extract::{Secret, json_secrets, line_secrets};

pub struct Entry {
    pub platform: Platform,
    /// The corpus folder (`eos`, `cumulus-frr`, …): the row of the report.
    pub folder: String,
    pub file: String,
    pub text: String,
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

/// Every file `SOURCES.tsv` lists, or `None` (said on stderr) when the corpus is not here.
pub fn load() -> Option<Vec<Entry>> {
    let dir = corpus_dir()?;
    let sources = std::fs::read_to_string(dir.join("SOURCES.tsv")).unwrap();
    let mut out = Vec::new();
    for row in sources.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let cols: Vec<&str> = row.split('\t').collect();
        assert_eq!(cols.len(), 6, "SOURCES.tsv row without repository, path, commit and licence: {row}");
        let file = cols[1];
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        out.push(Entry {
            platform: platform_of(cols[0]),
            folder: cols[0].to_owned(),
            file: file.to_owned(),
            text,
        });
    }
    Some(out)
}

pub fn secrets(e: &Entry) -> Vec<Secret> {
    if e.platform == Platform::Sonic { json_secrets(&e.text) } else { line_secrets(&e.text) }
}

/// The tokens of a line, split where a secret's neighbours end (`-cvauth=key,S`, `"S"`, a Redis
/// dump's `"SNMP_COMMUNITY|S"`).
pub fn pieces(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| c.is_whitespace() || matches!(c, ',' | '=' | '"' | '\'' | '|'))
}

/// The secrets of `e` still present in `scrubbed`. Line configs keep every line in place, so a secret
/// leaks when its line holds more copies of the value than the original line held apart from the
/// secret itself (`username cisco … password 0 cisco` keeps the user name); JSON: the secret's own
/// place still holds it (a field its value, a row key its row).
pub fn leaks(e: &Entry, found: &[Secret], scrubbed: &str) -> Vec<String> {
    let before: Vec<&str> = e.text.lines().collect();
    let after: Vec<&str> = scrubbed.lines().collect();
    let count = |line: &str, v: &str| {
        if v.len() >= 6 { line.matches(v).count() } else { pieces(line).filter(|t| *t == v).count() }
    };
    let doc: Option<serde_json::Value> =
        (e.platform == Platform::Sonic).then(|| serde_json::from_str(scrubbed).unwrap_or_default());
    found
        .iter()
        .filter(|s| match &doc {
            Some(doc) => match doc.pointer(&s.path) {
                Some(serde_json::Value::String(v)) => *v == s.value,
                Some(_) => true,
                None => false,
            },
            None => {
                let secrets_here = found.iter().filter(|x| x.line == s.line && x.value == s.value).count();
                let kept = count(before[s.line - 1], &s.value) - secrets_here;
                after.get(s.line - 1).is_some_and(|l| count(l, &s.value) > kept)
            }
        })
        .map(|s| format!("{} line {}: `{}`", e.file, s.line, s.value))
        .collect()
}

/// Lines of a line config changed by scrubbing that hold no extracted secret (1-based, with both
/// versions of the line).
pub fn over_scrubbed(e: &Entry, found: &[Secret], scrubbed: &str) -> Vec<(usize, String, String)> {
    e.text
        .lines()
        .zip(scrubbed.lines())
        .enumerate()
        .filter(|(i, (a, b))| a != b && !found.iter().any(|x| x.line == i + 1))
        .map(|(i, (a, b))| (i + 1, a.to_owned(), b.to_owned()))
        .collect()
}
