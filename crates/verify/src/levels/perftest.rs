//! perftest `ib_write_bw` (and `ib_read_bw`, `ib_send_bw`): the bandwidth table.
//!
//! The table header names the unit: `BW peak[Gb/sec]` with `--report_gbits` (perftest divides by
//! 125,000,000: 10^9 bits), `BW peak[MB/sec]` otherwise (perftest divides by 0x100000: MiB). Rows are
//! `#bytes #iterations peak average [MsgRate]`; anything else between the header and the closing rule
//! (perftest's own "Conflicting CPU frequency values detected" warnings, for one) is skipped. With a
//! duration run (`-D`) perftest prints `0.00` as the peak ("BW peak won't be measured"), so the peak is
//! kept as printed and only the average is judged.

use super::{LevelError, first_line, numbers};

const TOOL: &str = "ib_write_bw";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum BwUnit {
    /// 10^9 bits per second (`--report_gbits`).
    GbitPerSec,
    /// 2^20 bytes per second (perftest's default "MB/sec").
    MibPerSec,
}

impl BwUnit {
    /// Converts a value in this unit to Gb/s (10^9 bits per second).
    pub fn to_gbps(self, v: f64) -> f64 {
        match self {
            BwUnit::GbitPerSec => v,
            BwUnit::MibPerSec => v * 1_048_576.0 * 8.0 / 1e9,
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BwRow {
    pub bytes: u64,
    pub iterations: u64,
    /// As printed, in [`PerftestBw::unit`] (0 when perftest did not measure the peak).
    pub peak: f64,
    pub average: f64,
    pub msg_rate_mpps: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PerftestBw {
    /// `RDMA_Write BW Test`, `Send BW Test`, ...
    pub test: Option<String>,
    pub device: Option<String>,
    pub link_type: Option<String>,
    pub unit: BwUnit,
    pub rows: Vec<BwRow>,
}

impl PerftestBw {
    /// The row with the largest message size (the one that shows the link's rate).
    pub fn largest(&self) -> Option<&BwRow> {
        self.rows.iter().max_by_key(|r| r.bytes)
    }

    /// Average bandwidth of the largest-message row, in Gb/s.
    pub fn average_gbps(&self) -> Option<f64> {
        self.largest().map(|r| self.unit.to_gbps(r.average))
    }
}

fn field(line: &str, key: &str) -> Option<String> {
    // Banner lines hold one or two `Key : value` pairs: " Dual-port : OFF   Device : mlx5_0".
    let at = line.find(key)?;
    let rest = line[at + key.len()..].trim_start().strip_prefix(':')?;
    let v = rest.split_whitespace().next()?;
    Some(v.to_owned())
}

/// Parses one `*_bw` run's output.
pub fn parse_perftest_bw(output: &str) -> Result<PerftestBw, LevelError> {
    if output.trim().is_empty() {
        return Err(LevelError::Empty { tool: TOOL });
    }
    let (mut test, mut device, mut link_type) = (None, None, None);
    let mut unit = None;
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in output.lines() {
        let t = line.trim();
        if test.is_none() && t.ends_with("BW Test") {
            test = Some(t.to_owned());
        }
        if device.is_none() {
            device = field(line, "Device");
        }
        if link_type.is_none() {
            link_type = field(line, "Link type");
        }
        if t.starts_with("#bytes") && t.contains("BW average") {
            unit = Some(if t.contains("[Gb/sec]") {
                BwUnit::GbitPerSec
            } else if t.contains("[MB/sec]") {
                BwUnit::MibPerSec
            } else {
                return Err(LevelError::Unparseable {
                    tool: TOOL,
                    what: "known bandwidth unit",
                    detail: t.chars().take(120).collect(),
                });
            });
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if t.starts_with("---") {
            in_table = false;
            continue;
        }
        let fields: Vec<&str> = t.split_whitespace().collect();
        let Some([bytes, iters, peak, avg]) = numbers::<4>(&fields) else { continue };
        if bytes < 0.0 || iters < 0.0 || bytes.fract() != 0.0 || iters.fract() != 0.0 {
            continue;
        }
        rows.push(BwRow {
            bytes: bytes as u64,
            iterations: iters as u64,
            peak,
            average: avg,
            msg_rate_mpps: fields.get(4).and_then(|f| f.parse().ok()).filter(|v: &f64| v.is_finite()),
        });
    }
    let Some(unit) = unit else {
        let waiting = output.contains("Waiting for client");
        return Err(LevelError::Unparseable {
            tool: TOOL,
            what: "bandwidth table",
            detail: if waiting { "the server never saw a client".into() } else { first_line(output) },
        });
    };
    if rows.is_empty() {
        return Err(LevelError::Unparseable {
            tool: TOOL,
            what: "bandwidth rows",
            detail: "the table is empty".into(),
        });
    }
    Ok(PerftestBw { test, device, link_type, unit, rows })
}
