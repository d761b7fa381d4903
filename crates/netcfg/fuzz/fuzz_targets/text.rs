//! What a switch's shell hands us, through every pure text step of a backup: terminal clean-up
//! (`remove_pages`, `strip_terminal`, `normalise_newlines`, `clean_transcript`, `output_between`), the
//! platform drivers (`canonical`, `normalise`, `validate`, `restorable`, restore steps, prompt) and diffs.
//! Properties: cleaned text holds no escape or control characters but `\n` and `\t`; canonicalising and
//! normalising are idempotent (a stored version compares equal to itself); a diff's hunks turn the old
//! text into the new one, and the unified diff is empty exactly when the texts are equal.
//!
//! Input: byte 0 picks the platform, byte 1 where the text splits into old and new (diff), byte 2.. the
//! shell bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lifeline_netcfg::diff::{self, LineKind};
use lifeline_netcfg::platform::normalise;
use lifeline_netcfg::{driver_for, text};
use lifeline_types::Platform;

/// Lines as `similar` (and so `diff::hunks`) cuts them: after `\n`, `\r\n` or a lone `\r`; the `\n` is
/// dropped from the line, a `\r` kept.
fn lines(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        let end = match b[i] {
            b'\n' => Some(i + 1),
            b'\r' if b.get(i + 1) == Some(&b'\n') => Some(i + 2),
            b'\r' => Some(i + 1),
            _ => None,
        };
        match end {
            Some(e) => {
                let l = &s[start..e];
                out.push(l.strip_suffix('\n').unwrap_or(l));
                start = e;
                i = e;
            }
            None => i += 1,
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// Apply the hunks of `diff::hunks(old, new)` to `old`.
fn apply(old: &str, hunks: &[diff::Hunk]) -> Vec<String> {
    let old = lines(old);
    let mut out = Vec::new();
    let mut at = 0;
    for h in hunks {
        let start = h.old_start - 1;
        assert!(start >= at && start <= old.len(), "hunk {h:?} out of order");
        out.extend(old[at..start].iter().map(|s| s.to_string()));
        at = start;
        for (kind, l) in &h.lines {
            match kind {
                LineKind::Context => {
                    assert_eq!(old.get(at).copied(), Some(l.as_str()), "context line");
                    out.push(l.clone());
                    at += 1;
                }
                LineKind::Removed => {
                    assert_eq!(old.get(at).copied(), Some(l.as_str()), "removed line");
                    at += 1;
                }
                LineKind::Added => out.push(l.clone()),
            }
        }
    }
    out.extend(old[at..].iter().map(|s| s.to_string()));
    out
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let platform = Platform::ALL[usize::from(data[0]) % Platform::ALL.len()];
    let split = usize::from(data[1]);
    // Configs are a few KB; longer inputs only slow the diff down.
    let raw = &data[2..data.len().min(4096)];

    // The shell side: pager ranges taken from the bytes themselves.
    let pages: Vec<(usize, usize)> = raw
        .chunks(2)
        .take(4)
        .map(|c| (usize::from(c[0]), usize::from(c[0]) + usize::from(*c.last().unwrap_or(&0) % 16)))
        .collect();
    let unpaged = text::remove_pages(raw, &pages);
    assert!(unpaged.len() <= raw.len());
    let s = String::from_utf8_lossy(&unpaged).into_owned();
    let cleaned = text::clean_transcript(&s);
    for c in cleaned.chars() {
        assert!(c == '\n' || c == '\t' || !(c.is_ascii_control()), "control {c:?} left in {cleaned:?}");
    }
    assert!(!text::normalise_newlines(&s).contains('\r'));
    let stripped = text::strip_terminal(&s);
    assert!(!stripped.contains('\x1b'));
    let out = text::output_between(&cleaned, "show running-config");
    assert!(out.is_empty() || out.ends_with('\n'));

    // The driver side.
    let d = driver_for(platform);
    let c = d.canonical(&out);
    assert_eq!(d.canonical(&c), c, "{platform}: canonical is not idempotent");
    let key = lifeline_netcfg::scrub::TagKey::from_bytes([9; 32]);
    let n = normalise(d.as_ref(), &out, &key);
    assert_eq!(normalise(d.as_ref(), &n, &key), n, "{platform}: normalise is not idempotent");
    let _ = d.validate(&out);
    let _ = d.validate(&n);
    let _ = d.restorable(&s);
    let _ = d.restore_steps(&n);
    let _ = d.prompt().is_match(&cleaned);
    let _ = d.is_volatile(&cleaned);

    // Diffs between two versions.
    let cut = split * s.len() / 256;
    let cut = (0..=cut).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
    let (old, new) = s.split_at(cut);
    // Each diff below runs Myers over the lines again: the unified rendering, the costliest, on one input
    // in four (chosen by the input itself, so a failure reproduces).
    if data.len() % 4 == 0 {
        let u = diff::unified(old, new, "v1", "v2");
        assert_eq!(u.is_empty(), old == new);
    }
    let h = diff::hunks(old, new);
    for x in &h {
        let old_lines = x.lines.iter().filter(|(k, _)| *k != LineKind::Added).count();
        let new_lines = x.lines.iter().filter(|(k, _)| *k != LineKind::Removed).count();
        assert_eq!((x.old_len, x.new_len), (old_lines, new_lines), "hunk header disagrees with its lines");
    }
    assert_eq!(apply(old, &h), lines(new), "hunks do not turn old into new");
    if data.len() % 4 == 1 {
        let changed = diff::changed_lines(old, new);
        let all_context = h.iter().all(|h| h.lines.iter().all(|(k, _)| *k == LineKind::Context));
        assert_eq!(changed.is_empty(), all_context);
    }
});
