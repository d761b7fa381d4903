//! Verification in depth: the parsers for what the `standard` level's real tools print, and the pure
//! judgements that apply thresholds to their typed results.
//!
//! - [`dcgm`]: `dcgmi diag -r 1|2|3`, the text grid and the `-j` JSON (both the `DCGM GPU Diagnostic`
//!   layout of DCGM 2/3 and the `DCGM Diagnostic` entity layout of DCGM 4);
//! - [`perftest`]: `ib_write_bw` (and the other perftest `*_bw` tools), the bandwidth table in Gb/s
//!   (`--report_gbits`) or MB/s (perftest's MB is 2^20 bytes);
//! - [`nccl`]: nccl-tests `all_reduce_perf` (any `*_perf`), the size table with `#wrong` (or the older
//!   `error` column), `Avg bus bandwidth` and the tool's own failure lines;
//! - [`judge`]: thresholds, kept apart from parsing so a parse is a fact and a verdict is a policy;
//! - [`check`]: a level's result as a report `Check` (a missing tool or unusable output is `Error`).
//!
//! Parsers are lenient about what they do not need (banners, warnings interleaved in tables, wrapped
//! cells, garbage before JSON) and strict about what they do: output without the table or the results
//! they are for is an error, never a pass. So is a tool that is not installed ([`locate_tool`]).

pub mod check;
pub mod dcgm;
pub mod judge;
pub mod nccl;
pub mod perftest;

use std::path::{Path, PathBuf};

pub use check::{dcgm_check, ib_write_bw_check, nccl_check};
pub use dcgm::{DcgmDiag, DiagStatus, DiagTest, parse_dcgmi, parse_dcgmi_json, parse_dcgmi_text};
pub use judge::{Judgement, LevelThresholds, judge_dcgm, judge_ib_write_bw, judge_nccl};
pub use nccl::{NcclPerf, NcclRow, NcclSide, parse_nccl_perf};
pub use perftest::{BwRow, BwUnit, PerftestBw, parse_perftest_bw};

/// Why a level's tool gave no usable result. None of these is ever a pass.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LevelError {
    #[error("{tool} is not installed on this node (searched {searched})")]
    ToolMissing { tool: String, searched: String },
    #[error("{tool}: no output")]
    Empty { tool: &'static str },
    #[error("{tool}: the output has no {what} ({detail})")]
    Unparseable { tool: &'static str, what: &'static str, detail: String },
    #[error("{tool} reported a failure: {message}")]
    ToolFailed { tool: &'static str, message: String },
}

/// Finds `tool` in the directories of `path` (a `PATH` value), the way a shell would; `is_executable`
/// decides for each candidate (tests pass a closure; the agent passes a metadata check). A tool that is
/// not found is [`LevelError::ToolMissing`], which the level reports as an error, never as a skipped pass.
pub fn locate_tool(
    tool: &str,
    path: &str,
    is_executable: impl Fn(&Path) -> bool,
) -> Result<PathBuf, LevelError> {
    let valid = !tool.is_empty() && !tool.contains('/') && tool != "." && tool != "..";
    if valid {
        for dir in path.split(':').filter(|d| !d.is_empty()) {
            let candidate = Path::new(dir).join(tool);
            if is_executable(&candidate) {
                return Ok(candidate);
            }
        }
    }
    Err(LevelError::ToolMissing {
        tool: tool.to_owned(),
        searched: if path.is_empty() { "an empty PATH".into() } else { path.to_owned() },
    })
}

/// The first non-blank line, shortened: what an error quotes of output it could not read.
pub(crate) fn first_line(s: &str) -> String {
    let l = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    l.chars().take(120).collect()
}

/// Whitespace-separated numbers of a table row, or `None` when a field is not a number.
pub(crate) fn numbers<const N: usize>(fields: &[&str]) -> Option<[f64; N]> {
    if fields.len() < N {
        return None;
    }
    let mut out = [0.0; N];
    for (o, f) in out.iter_mut().zip(fields) {
        let v: f64 = f.parse().ok()?;
        if !v.is_finite() {
            return None;
        }
        *o = v;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FIXTURES: &[&str] = &[
        include_str!("../../tests/data/levels/dcgmi_diag_r3_fail_h100.txt"),
        include_str!("../../tests/data/levels/dcgmi_diag_json_dcgm_repo.json"),
        include_str!("../../tests/data/levels/ib_write_bw_sweep_mbytes_cpufreq.txt"),
        include_str!("../../tests/data/levels/all_reduce_perf_h100_16ranks.txt"),
    ];

    fn all_parsers(s: &str) {
        let _ = parse_dcgmi(s);
        let _ = parse_dcgmi_text(s);
        let _ = parse_dcgmi_json(s);
        let _ = parse_perftest_bw(s);
        let _ = parse_nccl_perf(s);
    }

    proptest! {
        /// No input makes a parser panic: arbitrary text, and real outputs cut, spliced and corrupted.
        #[test]
        fn parsers_never_panic_on_arbitrary_text(s in "\\PC{0,400}") {
            all_parsers(&s);
        }

        #[test]
        fn parsers_never_panic_on_mangled_real_outputs(
            which in 0usize..4,
            cut in any::<prop::sample::Index>(),
            at in any::<prop::sample::Index>(),
            insert in "[|+#:{}\\[\\]0-9 .\n-]{0,12}",
        ) {
            let src = FIXTURES[which];
            let mut cuts: Vec<usize> = (0..=src.len()).filter(|i| src.is_char_boundary(*i)).collect();
            cuts.dedup();
            let end = cuts[cut.index(cuts.len())];
            let pos = cuts[at.index(cuts.len())].min(end);
            let mangled = format!("{}{}{}", &src[..pos], insert, &src[pos..end]);
            all_parsers(&mangled);
        }

        /// A parsed perftest or nccl result always has rows; a passing verdict needs them.
        #[test]
        fn an_ok_parse_is_never_empty(s in "[ 0-9.#a-zA-Z\\[\\]/:\n-]{0,300}") {
            if let Ok(b) = parse_perftest_bw(&s) { prop_assert!(!b.rows.is_empty()); }
            if let Ok(n) = parse_nccl_perf(&s) { prop_assert!(!n.rows.is_empty()); }
            if let Ok(d) = parse_dcgmi(&s) { prop_assert!(!d.tests.is_empty() || !d.errors.is_empty()); }
        }
    }

    #[test]
    fn a_missing_tool_is_an_error_that_names_it_and_where_it_looked() {
        let e = locate_tool("dcgmi", "/usr/bin:/usr/local/bin", |_| false).unwrap_err();
        assert_eq!(e.to_string(), "dcgmi is not installed on this node (searched /usr/bin:/usr/local/bin)");
        let found =
            locate_tool("ib_write_bw", "/opt/x::/usr/bin", |p| p == Path::new("/usr/bin/ib_write_bw"));
        assert_eq!(found, Ok(PathBuf::from("/usr/bin/ib_write_bw")));
        assert!(locate_tool("../dcgmi", "/usr/bin", |_| true).is_err(), "a path is not a tool name");
        assert!(locate_tool("dcgmi", "", |_| true).is_err());
    }
}
