//! Shared by the checker's tests: the shipped example and edits of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use lifeline_inventory::{Severity, check_str};

pub fn example_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../inventory/example-cluster.toml")
}

pub fn example() -> String {
    std::fs::read_to_string(example_path()).expect("example inventory")
}

/// Replaces exactly one occurrence, so a fixture never silently stops matching the example.
pub fn edit(text: &str, from: &str, to: &str) -> String {
    assert_eq!(text.matches(from).count(), 1, "fixture anchor `{from}` must occur exactly once");
    text.replacen(from, to, 1)
}

pub fn errors(text: &str) -> Vec<String> {
    check_str(Path::new("inv.toml"), text)
        .diagnostics
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.to_string())
        .collect()
}

pub fn line_of(text: &str, needle: &str) -> usize {
    let at = text.find(needle).unwrap_or_else(|| panic!("`{needle}` not in text"));
    text[..at].matches('\n').count() + 1
}
