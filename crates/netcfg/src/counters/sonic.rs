//! SONiC's counters commands (sonic-utilities `portstat`, `pfcstat`, `pfcwd`, `intfutil`), all tabulate
//! tables underlined with dashes.

use std::collections::BTreeMap;

use super::table::{ports, ruled};
use super::{Counter, PortCounters, number};

/// `show interfaces counters`: RX_ERR, RX_DRP, TX_ERR, TX_DRP per port (`N/A` where the ASIC has none).
pub(crate) fn counters(text: &str) -> Vec<PortCounters> {
    ruled(text)
        .iter()
        .filter_map(|t| Some((t, t.col("IFACE")?)))
        .flat_map(|(t, i)| {
            ports(
                t,
                i,
                &[
                    ("RX_ERR", Counter::RxErrors),
                    ("RX_DRP", Counter::RxDrops),
                    ("TX_ERR", Counter::TxErrors),
                    ("TX_DRP", Counter::TxDrops),
                ],
            )
        })
        .collect()
}

/// `show pfc counters`: a `Port Rx` table and a `Port Tx` table, PFC0..PFC7 per port.
pub(crate) fn pfc(text: &str) -> Vec<PortCounters> {
    let mut by_port: BTreeMap<String, PortCounters> = BTreeMap::new();
    for t in ruled(text) {
        let rx = match t.header.first().map(String::as_str) {
            Some("PORT RX") => true,
            Some("PORT TX") => false,
            _ => continue,
        };
        let cols: Vec<(String, Counter)> = (0..8u8)
            .map(|p| (format!("PFC{p}"), if rx { Counter::PfcRx(p) } else { Counter::PfcTx(p) }))
            .collect();
        let cols: Vec<(&str, Counter)> = cols.iter().map(|(n, c)| (n.as_str(), *c)).collect();
        for row in ports(&t, 0, &cols) {
            by_port
                .entry(row.port.clone())
                .or_insert_with(|| PortCounters { port: row.port.clone(), ..Default::default() })
                .counters
                .extend(row.counters);
        }
    }
    by_port.into_values().collect()
}

/// `show pfcwd stats`: `QUEUE` is `PORT:PRIORITY`, `STORM DETECTED/RESTORED` is `D/R`.
pub(crate) fn pfc_watchdog(text: &str) -> Vec<PortCounters> {
    let mut by_port: BTreeMap<String, PortCounters> = BTreeMap::new();
    for t in ruled(text) {
        let (Some(q), Some(s)) = (t.col("QUEUE"), t.col("STORM DETECTED/RESTORED")) else { continue };
        for r in &t.rows {
            let Some((port, prio)) = r.get(q).and_then(|v| v.rsplit_once(':')) else { continue };
            let Some(prio) = prio.trim().parse::<u8>().ok().filter(|p| *p < 8) else { continue };
            let Some(detected) = r.get(s).and_then(|v| v.split('/').next()).and_then(number) else {
                continue;
            };
            let port = port.trim();
            if port.is_empty() {
                continue;
            }
            by_port
                .entry(port.to_owned())
                .or_insert_with(|| PortCounters { port: port.to_owned(), ..Default::default() })
                .counters
                .insert(Counter::PfcWatchdogStorms(prio), detected);
        }
    }
    by_port.into_values().collect()
}

/// `show interfaces flap`: `Flap Count` (`Never` is 0) and the last link-down time.
pub(crate) fn flap(text: &str) -> Vec<PortCounters> {
    let mut out = Vec::new();
    for t in ruled(text) {
        let (Some(i), Some(c)) = (t.col("INTERFACE"), t.col("FLAP COUNT")) else { continue };
        let down = t.header.iter().position(|h| h.starts_with("LINK DOWN"));
        for r in &t.rows {
            let Some(port) = r.get(i).map(|p| p.trim()).filter(|p| !p.is_empty() && !p.contains(' ')) else {
                continue;
            };
            let count = match r.get(c).map(|v| v.trim()) {
                Some(v) if v.eq_ignore_ascii_case("never") => Some(0),
                Some(v) => number(v),
                None => None,
            };
            let Some(count) = count else { continue };
            let last = down
                .and_then(|d| r.get(d))
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty() && !v.eq_ignore_ascii_case("never"));
            out.push(PortCounters {
                port: port.to_owned(),
                counters: BTreeMap::from([(Counter::LinkFlaps, count)]),
                last_flap: last,
            });
        }
    }
    out
}
