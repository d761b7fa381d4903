//! Unified diffs between config versions (or a version and the running config).
//!
//! Why both a string and hunks: the CLI prints (and colours on a TTY) the unified text, the web
//! console and tests want structure (which lines were added or removed where).

use similar::{ChangeTag, TextDiff};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Hunk {
    /// 1-based start line and length in the old text (as in `@@ -a,b +c,d @@`).
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    pub lines: Vec<(LineKind, String)>,
}

/// `diff -u` style text; empty when the texts are equal.
pub fn unified(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    if old == new {
        return String::new();
    }
    TextDiff::from_lines(old, new).unified_diff().context_radius(3).header(old_label, new_label).to_string()
}

/// Structured hunks (3 lines of context).
pub fn hunks(old: &str, new: &str) -> Vec<Hunk> {
    let diff = TextDiff::from_lines(old, new);
    let mut out = Vec::new();
    for group in diff.grouped_ops(3) {
        let first = group.first().expect("group");
        // From the ops that hold lines on each side: `similar` may give a deletion a `new_index` past the
        // equal lines that follow it, so first/last ops alone can give a negative length (found by the
        // `text` fuzz target: a panic in debug builds, a wrapped length in release).
        let (old_start, old_len) = span(group.iter().map(|o| o.old_range()), first.old_range().start);
        let (new_start, new_len) = span(group.iter().map(|o| o.new_range()), first.new_range().start);
        let mut lines = Vec::new();
        for op in &group {
            for change in diff.iter_changes(op) {
                let kind = match change.tag() {
                    ChangeTag::Equal => LineKind::Context,
                    ChangeTag::Insert => LineKind::Added,
                    ChangeTag::Delete => LineKind::Removed,
                };
                lines.push((kind, change.value().trim_end_matches('\n').to_owned()));
            }
        }
        out.push(Hunk { old_start: old_start + 1, old_len, new_start: new_start + 1, new_len, lines });
    }
    out
}

/// Start and length covering the non-empty `ranges`; `(fallback, 0)` when there are none (a pure insertion
/// or deletion has no lines on one side).
fn span(ranges: impl Iterator<Item = std::ops::Range<usize>>, fallback: usize) -> (usize, usize) {
    let (lo, hi) = ranges
        .filter(|r| !r.is_empty())
        .fold((usize::MAX, 0), |(lo, hi), r| (lo.min(r.start), hi.max(r.end)));
    if lo == usize::MAX { (fallback, 0) } else { (lo, hi - lo) }
}

/// Only the changed lines, prefixed `-`/`+` (what a test asserts "exactly that diff" against).
pub fn changed_lines(old: &str, new: &str) -> Vec<String> {
    hunks(old, new)
        .into_iter()
        .flat_map(|h| h.lines)
        .filter_map(|(k, l)| match k {
            LineKind::Added => Some(format!("+{l}")),
            LineKind::Removed => Some(format!("-{l}")),
            LineKind::Context => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_shapes() {
        let a = "a\nb\nc\nd\n";
        let b = "a\nB\nc\nd\ne\n";
        let u = unified(a, b, "v1", "v2");
        assert!(u.starts_with("--- v1\n+++ v2\n@@ -1,4 +1,5 @@\n"), "{u}");
        assert_eq!(changed_lines(a, b), vec!["-b", "+B", "+e"]);
        let h = hunks(a, b);
        assert_eq!(h.len(), 1);
        assert_eq!((h[0].old_start, h[0].old_len, h[0].new_start, h[0].new_len), (1, 4, 1, 5));
        assert_eq!(unified(a, a, "x", "y"), "");
    }
}
