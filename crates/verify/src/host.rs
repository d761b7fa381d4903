//! Host network settings that multi-rail training depends on.
//!
//! A default route on a rail sends job traffic (and the control plane's) out the wrong interface; strict
//! reverse-path filtering drops replies that arrive on a sibling rail; a PFC pause storm freezes a whole
//! lossless fabric. These are the host settings the seeds configure, checked here after every recovery.
//!
//! PFC pause counters are not in sysfs. On a live node they come from `ethtool -S <if>` (the lines
//! containing `pause`, e.g. mlx5's `rx_prio3_pause`, `tx_pause_ctrl_phy`); a recorded tree (simulator,
//! fixtures) supplies the same `ethtool -S` text in `<ethtool-dir>/<if>` (the simulator's `DIR/<node>/ethtool/`).

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use crate::policy::{HostPolicy, RailPolicy};
use crate::report::{Check, Evidence, Status};
use crate::roots::Roots;

/// Interfaces with a default route (destination and mask 0) in `/proc/net/route` text.
pub fn default_route_interfaces(route_table: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in route_table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 8 && f[1] == "00000000" && f[7] == "00000000" && !out.iter().any(|i| i == f[0]) {
            out.push(f[0].to_owned());
        }
    }
    out
}

pub fn default_route(roots: &Roots, host: &HostPolicy) -> Check {
    let Some(frontend) = &host.frontend_interface else {
        return Check::new("host.default_route", "host", Status::Skip, "no frontend_interface in the policy");
    };
    let read = roots.proc("net/route");
    let table = match read.result {
        Ok(t) => t,
        Err(e) => {
            return Check::new(
                "host.default_route",
                "host",
                Status::Error,
                format!("cannot read {}", read.logical),
            )
            .with_evidence(vec![Evidence::new(
                "route",
                format!("unreadable: {e}"),
                read.logical,
            )]);
        }
    };
    let ifaces = default_route_interfaces(&table);
    let ev = vec![Evidence::new("default_route_interfaces", ifaces.join(","), read.logical)];
    let others: Vec<&String> = ifaces.iter().filter(|i| *i != frontend).collect();
    if !others.is_empty() {
        let list = others.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
        Check::new(
            "host.default_route",
            "host",
            Status::Fail,
            format!("default route on {list}; only {frontend} may carry one"),
        )
        .with_evidence(ev)
    } else if ifaces.is_empty() {
        Check::new(
            "host.default_route",
            "host",
            Status::Fail,
            format!("no default route (expected on {frontend})"),
        )
        .with_evidence(ev)
    } else {
        Check::new("host.default_route", "host", Status::Pass, format!("default route only on {frontend}"))
            .with_evidence(ev)
    }
}

/// The kernel uses max(conf/all/rp_filter, conf/<if>/rp_filter), so both are read.
pub fn rp_filter(roots: &Roots, host: &HostPolicy, rail: &RailPolicy) -> Check {
    let subj = format!("host {}", rail.netdev);
    let mut ev = Vec::new();
    let mut values = Vec::new();
    for scope in ["all", rail.netdev.as_str()] {
        let read = roots.proc(&format!("sys/net/ipv4/conf/{scope}/rp_filter"));
        match read.result.as_ref().map(|t| t.trim().parse::<u32>()) {
            Ok(Ok(v)) => {
                ev.push(Evidence::new(format!("rp_filter[{scope}]"), v.to_string(), read.logical));
                values.push(v);
            }
            _ => {
                let shown = read.result.clone().unwrap_or_else(|e| format!("unreadable: {e}"));
                ev.push(Evidence::new(format!("rp_filter[{scope}]"), shown, read.logical.clone()));
                return Check::new(
                    "host.rp_filter",
                    subj,
                    Status::Error,
                    format!("cannot read {}", read.logical),
                )
                .with_evidence(ev);
            }
        }
    }
    let effective = values.iter().copied().max().unwrap_or(0);
    let allowed = host.rp_filter.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" or ");
    if host.rp_filter.contains(&effective) {
        Check::new("host.rp_filter", subj, Status::Pass, format!("effective rp_filter {effective}"))
            .with_evidence(ev)
    } else {
        Check::new(
            "host.rp_filter",
            subj,
            Status::Fail,
            format!("effective rp_filter {effective} (max of all and {}), expected {allowed}", rail.netdev),
        )
        .with_evidence(ev)
    }
}

/// Parses `ethtool -S` output (`     name: value` lines) into counters; odd lines are ignored.
pub fn parse_ethtool_stats(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_owned(), v.trim().parse().ok()?))
        })
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

/// Sum of received and transmitted pause frames (durations and transition counters excluded).
pub fn pause_totals(stats: &BTreeMap<String, u64>) -> (u64, u64) {
    let mut rx = 0u64;
    let mut tx = 0u64;
    for (k, v) in stats {
        if !k.contains("pause") || k.contains("duration") || k.contains("transition") {
            continue;
        }
        if k.starts_with("rx") {
            rx = rx.saturating_add(*v);
        } else if k.starts_with("tx") {
            tx = tx.saturating_add(*v);
        }
    }
    (rx, tx)
}

/// mlx5's pause-storm watchdog counters (`tx_pause_storm_error_events`): non-zero means the NIC had to stop
/// a storm during this driver load.
pub fn storm_errors(stats: &BTreeMap<String, u64>) -> u64 {
    stats.iter().filter(|(k, _)| k.contains("pause_storm") && k.contains("error")).map(|(_, v)| *v).sum()
}

/// One read of a rail's pause counters.
#[derive(Debug, Clone)]
pub struct PauseSample {
    pub rx: u64,
    pub tx: u64,
    pub storm_errors: u64,
    pub source: String,
}

const ETHTOOL_TIMEOUT: Duration = Duration::from_secs(3);

pub fn sample_pause(roots: &Roots, rail: &RailPolicy) -> Result<PauseSample, String> {
    let (text, source) = match &roots.ethtool {
        Some(dir) => {
            let path = dir.join(&rail.netdev);
            let shown = format!("ethtool -S {} (recorded: {})", rail.netdev, path.display());
            (
                std::fs::read_to_string(&path).map_err(|e| format!("{shown}: {e}"))?,
                format!("ethtool -S {} (recorded)", rail.netdev),
            )
        }
        None if roots.is_live() => (run_ethtool(&rail.netdev)?, format!("ethtool -S {}", rail.netdev)),
        None => return Err("recorded tree without an ethtool directory (`ethtool -S` outputs)".into()),
    };
    let stats = parse_ethtool_stats(&text);
    if !stats.keys().any(|k| k.contains("pause")) {
        return Err(format!("{source}: no pause counters"));
    }
    let (rx, tx) = pause_totals(&stats);
    Ok(PauseSample { rx, tx, storm_errors: storm_errors(&stats), source })
}

fn run_ethtool(netdev: &str) -> Result<String, String> {
    let mut child = Command::new("ethtool")
        .arg("-S")
        .arg(netdev)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run ethtool -S {netdev}: {e}"))?;
    let deadline = std::time::Instant::now() + ETHTOOL_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("ethtool -S {netdev} timed out after {ETHTOOL_TIMEOUT:?}"));
            }
        }
    }
    let out = child.wait_with_output().map_err(|e| format!("ethtool -S {netdev}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ethtool -S {netdev} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn pfc_check(
    host: &HostPolicy,
    rail: &RailPolicy,
    first: &Result<PauseSample, String>,
    second: &Result<PauseSample, String>,
    interval: Duration,
) -> Check {
    let subj = format!("host {}", rail.netdev);
    let Some(max) = host.pfc_max_pause_per_sec else {
        return Check::new("host.pfc", subj, Status::Skip, "no pfc_max_pause_per_sec in the policy");
    };
    let (a, b) = match (first, second) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            return Check::new("host.pfc", subj, Status::Error, format!("cannot read pause counters: {e}"));
        }
    };
    let secs = interval.as_secs_f64().max(0.001);
    let rx_rate = (b.rx.saturating_sub(a.rx) as f64 / secs).round() as u64;
    let tx_rate = (b.tx.saturating_sub(a.tx) as f64 / secs).round() as u64;
    let ev = vec![
        Evidence::new("rx_pause", format!("{} -> {}", a.rx, b.rx), a.source.clone()),
        Evidence::new("tx_pause", format!("{} -> {}", a.tx, b.tx), a.source.clone()),
        Evidence::new("pause_storm_error_events", b.storm_errors.to_string(), b.source.clone()),
    ];
    let msg = format!("pause frames/s rx {rx_rate}, tx {tx_rate} (max {max})");
    let (status, msg) = if rx_rate.max(tx_rate) > max {
        (Status::Fail, format!("PFC pause storm: {msg}"))
    } else if b.storm_errors > 0 {
        (Status::Fail, format!("NIC stopped {} pause storm(s) since driver load; {msg}", b.storm_errors))
    } else {
        (Status::Pass, msg)
    };
    Check::new("host.pfc", subj, status, msg).with_evidence(ev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn finds_default_routes() {
        let t = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                 eno1\t00000000\t0101A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n\
                 eno1\t0001A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n\
                 ens1np0\t00000000\t01000A0A\t0003\t0\t0\t200\t00000000\t0\t0\t0\n";
        assert_eq!(default_route_interfaces(t), vec!["eno1", "ens1np0"]);
    }

    #[test]
    fn sums_pause_counters() {
        let s = parse_ethtool_stats(
            "NIC statistics:\n     rx_prio3_pause: 10\n     tx_prio3_pause: 4\n     rx_pause_ctrl_phy: 5\n     \
             rx_prio3_pause_duration: 999\n     rx_bytes: 77\n",
        );
        assert_eq!(pause_totals(&s), (15, 4));
        let s = parse_ethtool_stats(
            "     tx_pause_storm_warning_events: 3\n     tx_pause_storm_error_events: 1\n",
        );
        assert_eq!(storm_errors(&s), 1);
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in "(?s).{0,200}") {
            let _ = default_route_interfaces(&s);
            let _ = pause_totals(&parse_ethtool_stats(&s));
        }
    }
}
