//! Cumulus Linux: NVUE prints one port's counters as a two-column table (`carrier-transitions  2`), and
//! `ethtool -S swpN` as `key: value` lines; neither names the port, so the caller does.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::{Counter, PortCounters, number};

/// A counter name (NVUE or ethtool spelling) as a counter.
fn counter(key: &str) -> Option<Counter> {
    static PRIO: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(rx|tx)_(?:prio_?(\d)_pause|pause_prio_?(\d)|prio(\d)_pause)$").expect("static regex")
    });
    let k = key.trim().to_ascii_lowercase().replace('-', "_");
    if let Some(c) = PRIO.captures(&k) {
        let p: u8 = c.get(2).or(c.get(3)).or(c.get(4))?.as_str().parse().ok()?;
        return Some(if &c[1] == "rx" { Counter::PfcRx(p) } else { Counter::PfcTx(p) });
    }
    Some(match k.as_str() {
        "carrier_transitions" | "carrier_changes" | "link_down_events_phy" | "link_down_events" => {
            Counter::LinkFlaps
        }
        "in_errors" | "rx_errors" => Counter::RxErrors,
        "out_errors" | "tx_errors" => Counter::TxErrors,
        "in_drops" | "rx_dropped" | "rx_discards_phy" => Counter::RxDrops,
        "out_drops" | "tx_dropped" | "tx_discards_phy" => Counter::TxDrops,
        "rx_crc_errors" | "rx_crc_errors_phy" | "in_fcs_errors" => Counter::Crc,
        "rx_pause_ctrl_phy" | "in_pause_frames" | "rx_pause" => Counter::PauseRx,
        "tx_pause_ctrl_phy" | "out_pause_frames" | "tx_pause" => Counter::PauseTx,
        _ => return None,
    })
}

/// A row of a `Counter  Receive  Transmit` table (Cumulus Linux 5.5 and later) as the counters of its
/// receive and transmit columns.
fn receive_transmit(name: &str) -> Option<(Option<Counter>, Option<Counter>)> {
    Some(match name.to_ascii_lowercase().as_str() {
        "total errors" => (Some(Counter::RxErrors), Some(Counter::TxErrors)),
        "total drops" => (Some(Counter::RxDrops), Some(Counter::TxDrops)),
        "fcs errors" => (Some(Counter::Crc), None),
        "pause frames" => (Some(Counter::PauseRx), Some(Counter::PauseTx)),
        _ => return None,
    })
}

/// `nv show interface PORT counters` (the key/value list before Cumulus Linux 5.5, the sectioned
/// `Counter  Receive  Transmit` tables since), `… counters errors|drops`, or `ethtool -S PORT`.
pub(crate) fn counters(text: &str, port: &str) -> Vec<PortCounters> {
    static COLUMNS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\s{2,}").expect("static regex"));
    let mut counters = BTreeMap::new();
    let mut receive_transmit_table = false;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words == ["Counter", "Receive", "Transmit"] {
            receive_transmit_table = true;
            continue;
        }
        if words.is_empty() {
            receive_transmit_table = false;
            continue;
        }
        if receive_transmit_table {
            let cols: Vec<&str> = COLUMNS.split(line.trim()).collect();
            if let [name, rx, tx] = cols.as_slice()
                && let Some((rx_counter, tx_counter)) = receive_transmit(name)
            {
                for (c, v) in [(rx_counter, rx), (tx_counter, tx)] {
                    if let (Some(c), Some(v)) = (c, number(v)) {
                        counters.entry(c).or_insert(v);
                    }
                }
            }
            continue;
        }
        // `key: value` (ethtool, comments after the value ignored) or `key   value` (NVUE's columns).
        let (key, rest) = match line.split_once(':') {
            Some((k, v)) if !k.trim().contains(' ') => (k, v),
            _ => match line.trim().split_once(char::is_whitespace) {
                Some(kv) => kv,
                None => continue,
            },
        };
        let Some(c) = counter(key) else { continue };
        let Some(v) = rest.split_whitespace().next().and_then(number) else { continue };
        counters.entry(c).or_insert(v);
    }
    if counters.is_empty() {
        return Vec::new();
    }
    vec![PortCounters { port: port.to_owned(), counters, last_flap: None }]
}

/// `nv show interface PORT counters qos pfc-stats`: a row per switch priority with rx/tx pause frames.
pub(crate) fn pfc(text: &str, port: &str) -> Vec<PortCounters> {
    let mut counters = BTreeMap::new();
    for t in super::table::ruled(text) {
        let (Some(p), rx, tx) =
            (t.col("SWITCH-PRIORITY"), t.col("RX-PAUSE-FRAMES"), t.col("TX-PAUSE-FRAMES"))
        else {
            continue;
        };
        for r in &t.rows {
            let Some(prio) = r.get(p).and_then(|v| v.trim().parse::<u8>().ok()).filter(|p| *p < 8) else {
                continue;
            };
            if let Some(v) = rx.and_then(|i| r.get(i)).and_then(|v| number(v)) {
                counters.insert(Counter::PfcRx(prio), v);
            }
            if let Some(v) = tx.and_then(|i| r.get(i)).and_then(|v| number(v)) {
                counters.insert(Counter::PfcTx(prio), v);
            }
        }
    }
    if counters.is_empty() {
        return Vec::new();
    }
    vec![PortCounters { port: port.to_owned(), counters, last_flap: None }]
}
