//! nccl-tests `all_reduce_perf` (any `*_perf`): the size table, `#wrong`, `Avg bus bandwidth`, failures.
//!
//! The column header (`#  size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong`)
//! decides the layout: nccl-tests 2.x has a `root` column (-1 for all-reduce) and counts wrong elements
//! (`#wrong`, an integer or `N/A` when validation is off); older releases have no `root` and print a
//! floating `error` instead. Bandwidths are GB/s (10^9 bytes). The tool reports its own failures on lines
//! such as `Test CUDA failure common.cu:941 '...'` / `Test NCCL failure ...`, and `# Out of bounds values :
//! N FAILED`; any of them makes the run a failure whatever the table says.

use super::{LevelError, first_line, numbers};

const TOOL: &str = "nccl-tests";

/// One half (out-of-place or in-place) of a table row.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NcclSide {
    pub time_us: f64,
    pub algbw_gbs: f64,
    pub busbw_gbs: f64,
    /// `#wrong` elements; `None` for `N/A` (validation off) or the older float `error` column.
    pub wrong: Option<u64>,
    /// The older float `error` column.
    pub error: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NcclRow {
    pub bytes: u64,
    pub count: u64,
    pub dtype: String,
    pub redop: String,
    pub out_of_place: NcclSide,
    pub in_place: NcclSide,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NcclPerf {
    pub rows: Vec<NcclRow>,
    /// `# Avg bus bandwidth : X` (GB/s).
    pub avg_busbw_gbs: Option<f64>,
    /// `# Out of bounds values : N OK|FAILED`.
    pub out_of_bounds: Option<u64>,
    /// Sum of every row's `#wrong`, both halves.
    pub wrong_total: u64,
    /// Ranks listed under `# Using devices`.
    pub ranks: usize,
    /// The tool's own failure lines.
    pub failures: Vec<String>,
}

fn side(f: &[&str], float_error: bool) -> Option<NcclSide> {
    let [time_us, algbw_gbs, busbw_gbs] = numbers::<3>(f)?;
    let last = *f.get(3)?;
    let (wrong, error) = if float_error {
        (None, Some(last.parse::<f64>().ok().filter(|v| v.is_finite())?))
    } else if last.eq_ignore_ascii_case("N/A") {
        (None, None)
    } else {
        (Some(last.parse::<u64>().ok()?), None)
    };
    Some(NcclSide { time_us, algbw_gbs, busbw_gbs, wrong, error })
}

fn is_failure(line: &str) -> bool {
    let t = line.trim();
    t.contains("Test CUDA failure")
        || t.contains("Test NCCL failure")
        || t.contains("Test failure")
        || (t.starts_with("# Out of bounds values") && t.contains("FAILED"))
}

/// Parses one `*_perf` run's output.
pub fn parse_nccl_perf(output: &str) -> Result<NcclPerf, LevelError> {
    if output.trim().is_empty() {
        return Err(LevelError::Empty { tool: TOOL });
    }
    let mut layout: Option<(bool, bool)> = None; // (has root column, float error column)
    let mut perf = NcclPerf {
        rows: Vec::new(),
        avg_busbw_gbs: None,
        out_of_bounds: None,
        wrong_total: 0,
        ranks: 0,
        failures: Vec::new(),
    };
    for line in output.lines() {
        let t = line.trim();
        if is_failure(t) {
            perf.failures.push(t.to_owned());
        }
        if let Some(rest) = t.strip_prefix('#') {
            let words: Vec<&str> = rest.split_whitespace().collect();
            if words.first() == Some(&"size") && words.contains(&"redop") {
                layout = Some((words.contains(&"root"), words.contains(&"error")));
            } else if words.first() == Some(&"Rank") {
                perf.ranks += 1;
            } else if let Some(v) = rest.trim().strip_prefix("Avg bus bandwidth") {
                perf.avg_busbw_gbs = v.trim_start().strip_prefix(':').and_then(|v| v.trim().parse().ok());
            } else if let Some(v) = rest.trim().strip_prefix("Out of bounds values") {
                perf.out_of_bounds =
                    v.trim_start().strip_prefix(':').and_then(|v| v.split_whitespace().next()?.parse().ok());
            }
            continue;
        }
        let Some((root, float_error)) = layout else { continue };
        let f: Vec<&str> = t.split_whitespace().collect();
        let lead = if root { 5 } else { 4 };
        if f.len() < lead + 8 {
            continue;
        }
        let (Ok(bytes), Ok(count)) = (f[0].parse::<u64>(), f[1].parse::<u64>()) else { continue };
        let (Some(out_of_place), Some(in_place)) =
            (side(&f[lead..lead + 4], float_error), side(&f[lead + 4..lead + 8], float_error))
        else {
            continue;
        };
        perf.wrong_total = perf
            .wrong_total
            .saturating_add(out_of_place.wrong.unwrap_or(0))
            .saturating_add(in_place.wrong.unwrap_or(0));
        perf.rows.push(NcclRow {
            bytes,
            count,
            dtype: f[2].to_owned(),
            redop: f[3].to_owned(),
            out_of_place,
            in_place,
        });
    }
    if perf.rows.is_empty() && !perf.failures.is_empty() {
        return Err(LevelError::ToolFailed { tool: TOOL, message: perf.failures.join("; ") });
    }
    if perf.rows.is_empty() {
        return Err(LevelError::Unparseable {
            tool: TOOL,
            what: if layout.is_some() { "result rows" } else { "result table" },
            detail: first_line(output),
        });
    }
    Ok(perf)
}
