//! Column tables as switches print them. SONiC (Python `tabulate`) underlines its header with runs of
//! dashes, whose spans say where each column is even when a header or a value holds spaces
//! (`RX Pause Transitions`, `2000.00 MB/s`, `Sat Jan 17 00:04:42 2025`); EOS and NX-OS tables are read
//! by whitespace, a row counted only when it has as many fields as the header.

use std::collections::BTreeMap;

use super::{Counter, PortCounters, number};

/// One table: its header names (upper case, single-spaced) and rows of cells.
#[derive(Debug, Default)]
pub(crate) struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }
}

fn norm(h: &str) -> String {
    h.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_uppercase()
}

fn is_rule(l: &str) -> bool {
    let t = l.trim();
    t.len() >= 3 && t.contains('-') && t.chars().all(|c| c == '-' || c == ' ')
}

/// Character spans of the dash runs of a rule line.
fn spans(rule: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in rule.chars().enumerate() {
        match (c == '-', start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, rule.chars().count()));
    }
    out
}

/// The cell of each span in `line`: from the span's start to the next span's start, so a value that
/// sticks out to the left of its column (right-aligned numbers wider than the header) is still whole.
fn cut(line: &str, spans: &[(usize, usize)]) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    let mut cells = Vec::with_capacity(spans.len());
    for (i, &(s, e)) in spans.iter().enumerate() {
        // A right-aligned value may start before its span: begin after the previous span's end.
        let from = if i == 0 { 0 } else { spans[i - 1].1.min(s) };
        let to = if i + 1 == spans.len() { chars.len() } else { e.max(from) };
        let cell: String =
            chars.get(from.min(chars.len())..to.min(chars.len())).unwrap_or(&[]).iter().collect();
        cells.push(cell.trim().to_owned());
    }
    cells
}

/// Every dash-underlined table in `text`, in order; a blank line or a new header ends a table.
pub(crate) fn ruled(text: &str) -> Vec<Table> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        if !is_rule(lines[i + 1]) || lines[i].trim().is_empty() || is_rule(lines[i]) {
            i += 1;
            continue;
        }
        let sp = spans(lines[i + 1]);
        let header = cut(lines[i], &sp).iter().map(|h| norm(h)).collect();
        let mut t = Table { header, rows: Vec::new() };
        i += 2;
        while i < lines.len() && !lines[i].trim().is_empty() {
            if i + 1 < lines.len() && is_rule(lines[i + 1]) {
                break;
            }
            t.rows.push(cut(lines[i], &sp));
            i += 1;
        }
        out.push(t);
    }
    out
}

/// A whitespace table whose header line starts with `first` (e.g. `Port`): rows with as many fields.
pub(crate) fn spaced(text: &str, first: &str) -> Option<Table> {
    let mut lines = text
        .lines()
        .skip_while(|l| l.split_whitespace().next().is_none_or(|w| !w.eq_ignore_ascii_case(first)));
    let header: Vec<String> = lines.next()?.split_whitespace().map(norm).collect();
    let rows = lines
        .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|r| r.len() == header.len() && !is_rule(&r.join(" ")))
        .collect();
    Some(Table { header, rows })
}

/// Rows of `t` as port counters: column `name` of the header gives each counter.
pub(crate) fn ports(t: &Table, port_col: usize, cols: &[(&str, Counter)]) -> Vec<PortCounters> {
    let idx: Vec<(usize, Counter)> = cols.iter().filter_map(|(n, c)| t.col(n).map(|i| (i, *c))).collect();
    t.rows
        .iter()
        .filter_map(|r| {
            let port = r.get(port_col)?.trim();
            if port.is_empty() || port.contains(' ') {
                return None;
            }
            let counters: BTreeMap<Counter, u64> =
                idx.iter().filter_map(|(i, c)| Some((*c, number(r.get(*i)?)?))).collect();
            Some(PortCounters { port: port.to_owned(), counters, last_flap: None })
        })
        .collect()
}

/// EOS `show interfaces counters errors`: `Port FCS Align Symbol Rx Runts Giants Tx`.
pub(crate) fn eos_errors(text: &str) -> Vec<PortCounters> {
    let Some(t) = spaced(text, "Port") else { return Vec::new() };
    ports(&t, 0, &[("FCS", Counter::Crc), ("RX", Counter::RxErrors), ("TX", Counter::TxErrors)])
}

/// EOS `show priority-flow-control counters`: `Port RxPfc TxPfc` (all priorities summed).
pub(crate) fn eos_pfc(text: &str) -> Vec<PortCounters> {
    let Some(t) = spaced(text, "Port") else { return Vec::new() };
    ports(&t, 0, &[("RXPFC", Counter::PfcRxAll), ("TXPFC", Counter::PfcTxAll)])
}

/// NX-OS / IOS `show interface priority-flow-control`: `Port Mode Oper(VL bmap) RxPPP TxPPP`; the
/// `Oper(VL bmap)` value is two fields (`On (8)`), so the counters are the last two fields of a row.
pub(crate) fn nxos_pfc(text: &str) -> Vec<PortCounters> {
    let mut out = Vec::new();
    let mut seen_header = false;
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.first().is_some_and(|w| w.eq_ignore_ascii_case("port")) && l.contains("RxPPP") {
            seen_header = true;
            continue;
        }
        if !seen_header || f.len() < 4 {
            continue;
        }
        let (Some(rx), Some(tx)) = (number(f[f.len() - 2]), number(f[f.len() - 1])) else { continue };
        out.push(PortCounters {
            port: f[0].to_owned(),
            counters: BTreeMap::from([(Counter::PfcRxAll, rx), (Counter::PfcTxAll, tx)]),
            last_flap: None,
        });
    }
    out
}
