//! RDMA rail checks from sysfs.
//!
//! One bad rail stalls a synchronous AllReduce across the whole job, so every expected HCA is checked for
//! presence, link state, speed, link layer, a RoCEv2 GID carrying the rail's IPv4 address, netdev MTU and
//! error counters that must not rise. A node that expects rails but has no `/sys/class/infiniband` at all
//! (driver not loaded) FAILS: absence of evidence is not health.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use crate::policy::{LinkLayer, RailPolicy};
use crate::report::{Check, Evidence, Status};
use crate::roots::Roots;
use crate::timed;

pub fn subject(rail: &RailPolicy) -> String {
    format!("rail {}", rail.hca)
}

fn port_dir(rail: &RailPolicy) -> String {
    format!("class/infiniband/{}/ports/{}", rail.hca, rail.port)
}

/// Parses sysfs `state` / `phys_state` values such as `4: ACTIVE` or `5: LinkUp` into (code, name).
pub fn parse_state(text: &str) -> Option<(u32, &str)> {
    let (code, name) = text.split_once(':')?;
    Some((code.trim().parse().ok()?, name.trim()))
}

/// Parses a sysfs `rate` such as `400 Gb/sec (4X NDR)` or `2.5 Gb/sec (1X SDR)` into Gb/s.
pub fn parse_rate_gbps(text: &str) -> Option<f64> {
    let mut words = text.split_whitespace();
    let number: f64 = words.next()?.parse().ok()?;
    let unit = words.next()?;
    if !number.is_finite() || number < 0.0 {
        return None;
    }
    match unit {
        "Gb/sec" | "Gb/s" => Some(number),
        "Mb/sec" | "Mb/s" => Some(number / 1000.0),
        _ => None,
    }
}

/// The IPv4 address carried by an IPv4-mapped GID (`0000:...:ffff:0a01:000b`), if it is one.
pub fn gid_ipv4(gid: &str) -> Option<Ipv4Addr> {
    let addr: Ipv6Addr = gid.trim().parse().ok()?;
    addr.to_ipv4_mapped()
}

/// Presence, link, rate, link layer, GID and MTU: the checks that need one read each.
pub fn static_checks(roots: &Roots, rail: &RailPolicy) -> Vec<Check> {
    let mut out = Vec::new();
    let present = timed(|| present(roots, rail));
    let hca_ok = present.status == Status::Pass;
    out.push(present);
    let mut link_up = false;
    for (id, f) in [
        ("rail.link", link as fn(&Roots, &RailPolicy) -> Check),
        ("rail.rate", rate),
        ("rail.link_layer", link_layer),
        ("rail.gid", gid),
    ] {
        if !hca_ok {
            out.push(Check::new(
                id,
                subject(rail),
                Status::Skip,
                format!("not evaluated: HCA {} absent", rail.hca),
            ));
        } else if id == "rail.rate" && !link_up {
            // A down port reports 0 or a stale rate: the link failure is the finding, not the speed.
            out.push(Check::new(id, subject(rail), Status::Skip, "not evaluated: link not up"));
        } else {
            let c = timed(|| f(roots, rail));
            if id == "rail.link" {
                link_up = c.status == Status::Pass;
            }
            out.push(c);
        }
    }
    out.push(timed(|| mtu(roots, rail)));
    out
}

fn present(roots: &Roots, rail: &RailPolicy) -> Check {
    let subj = subject(rail);
    let (_, class_logical) = roots.sys_path("class/infiniband");
    if !roots.sys_exists("class/infiniband") {
        return Check::new(
            "rail.present",
            subj,
            Status::Fail,
            format!(
                "{class_logical} is missing: no RDMA driver loaded, but this node expects HCA {}",
                rail.hca
            ),
        )
        .with_evidence(vec![Evidence::new("exists", "false", class_logical)]);
    }
    let present_hcas = roots.sys_list("class/infiniband").unwrap_or_default();
    let port = port_dir(rail);
    let (_, port_logical) = roots.sys_path(&port);
    let ev = vec![
        Evidence::new("hcas", present_hcas.join(","), class_logical),
        Evidence::new("port_exists", roots.sys_exists(&port).to_string(), port_logical.clone()),
    ];
    if !present_hcas.iter().any(|h| h == &rail.hca) {
        return Check::new("rail.present", subj, Status::Fail, format!("HCA {} is missing", rail.hca))
            .with_evidence(ev);
    }
    if !roots.sys_exists(&port) {
        return Check::new("rail.present", subj, Status::Fail, format!("{port_logical} is missing"))
            .with_evidence(ev);
    }
    Check::new("rail.present", subj, Status::Pass, format!("HCA {} port {} present", rail.hca, rail.port))
        .with_evidence(ev)
}

fn link(roots: &Roots, rail: &RailPolicy) -> Check {
    let subj = subject(rail);
    let state = roots.sys(&format!("{}/state", port_dir(rail)));
    let phys = roots.sys(&format!("{}/phys_state", port_dir(rail)));
    let mut ev = Vec::new();
    let mut values = Vec::new();
    for (key, read) in [("state", &state), ("phys_state", &phys)] {
        match &read.result {
            Ok(v) => {
                ev.push(Evidence::new(key, v.clone(), read.logical.clone()));
                values.push(parse_state(v).map(|(_, n)| n.to_owned()));
            }
            Err(e) => {
                ev.push(Evidence::new(key, format!("unreadable: {e}"), read.logical.clone()));
                return Check::new("rail.link", subj, Status::Error, format!("cannot read {}", read.logical))
                    .with_evidence(ev);
            }
        }
    }
    let (s, p) = (values[0].as_deref(), values[1].as_deref());
    if s == Some("ACTIVE") && p == Some("LinkUp") {
        Check::new("rail.link", subj, Status::Pass, "ACTIVE, LinkUp").with_evidence(ev)
    } else {
        Check::new(
            "rail.link",
            subj,
            Status::Fail,
            format!("port is {} / {} (want ACTIVE / LinkUp)", s.unwrap_or("?"), p.unwrap_or("?")),
        )
        .with_evidence(ev)
    }
}

fn rate(roots: &Roots, rail: &RailPolicy) -> Check {
    let subj = subject(rail);
    let read = roots.sys(&format!("{}/rate", port_dir(rail)));
    let text = match read.result {
        Ok(t) => t,
        Err(e) => {
            return Check::new("rail.rate", subj, Status::Error, format!("cannot read {}", read.logical))
                .with_evidence(vec![Evidence::new("rate", format!("unreadable: {e}"), read.logical)]);
        }
    };
    let ev = vec![Evidence::new("rate", text.clone(), read.logical.clone())];
    match parse_rate_gbps(&text) {
        Some(r) if r >= f64::from(rail.rate_gbps) => {
            Check::new("rail.rate", subj, Status::Pass, format!("{text} >= {} Gb/s", rail.rate_gbps))
                .with_evidence(ev)
        }
        Some(_) => {
            Check::new("rail.rate", subj, Status::Fail, format!("{text} < {} Gb/s expected", rail.rate_gbps))
                .with_evidence(ev)
        }
        None => Check::new("rail.rate", subj, Status::Error, format!("unparsable rate `{text}`"))
            .with_evidence(ev),
    }
}

fn link_layer(roots: &Roots, rail: &RailPolicy) -> Check {
    let subj = subject(rail);
    let read = roots.sys(&format!("{}/link_layer", port_dir(rail)));
    let want = rail.link_layer.sysfs_name();
    match read.result {
        Ok(t) => {
            let ev = vec![Evidence::new("link_layer", t.clone(), read.logical)];
            if t.eq_ignore_ascii_case(want) {
                Check::new("rail.link_layer", subj, Status::Pass, t).with_evidence(ev)
            } else {
                Check::new("rail.link_layer", subj, Status::Fail, format!("link layer {t}, expected {want}"))
                    .with_evidence(ev)
            }
        }
        Err(e) => Check::new("rail.link_layer", subj, Status::Error, format!("cannot read {}", read.logical))
            .with_evidence(vec![Evidence::new("link_layer", format!("unreadable: {e}"), read.logical)]),
    }
}

fn gid(roots: &Roots, rail: &RailPolicy) -> Check {
    let subj = subject(rail);
    if rail.link_layer == LinkLayer::Infiniband {
        return Check::new("rail.gid", subj, Status::Skip, "InfiniBand rail: no RoCEv2 GID expected");
    }
    let Some(want) = rail.address() else {
        return Check::new("rail.gid", subj, Status::Skip, "no ipv4 for this rail in the policy");
    };
    let dir = format!("{}/gids", port_dir(rail));
    let indices = match roots.sys_list(&dir) {
        Ok(i) => i,
        Err(e) => {
            let (_, logical) = roots.sys_path(&dir);
            return Check::new("rail.gid", subj, Status::Error, format!("cannot list {logical}"))
                .with_evidence(vec![Evidence::new("gids", e, logical)]);
        }
    };
    let mut ev = Vec::new();
    let mut v1_only = false;
    for idx in indices {
        let read = roots.sys(&format!("{dir}/{idx}"));
        let Ok(text) = read.result else { continue };
        if gid_ipv4(&text) != Some(want) {
            continue;
        }
        ev.push(Evidence::new(format!("gid[{idx}]"), text, read.logical));
        let ty = roots.sys(&format!("{}/gid_attrs/types/{idx}", port_dir(rail)));
        match ty.result {
            Ok(t) => {
                let is_v2 = t.eq_ignore_ascii_case("RoCE v2");
                ev.push(Evidence::new(format!("type[{idx}]"), t, ty.logical));
                if is_v2 {
                    let nd = roots.sys(&format!("{}/gid_attrs/ndevs/{idx}", port_dir(rail)));
                    if let Ok(n) = nd.result {
                        ev.push(Evidence::new(format!("ndev[{idx}]"), n, nd.logical));
                    }
                    return Check::new(
                        "rail.gid",
                        subj,
                        Status::Pass,
                        format!("RoCE v2 GID index {idx} carries {want}"),
                    )
                    .with_evidence(ev);
                }
                v1_only = true;
            }
            // Older kernels have no gid_attrs: a mapped GID is then the best evidence available.
            Err(_) => {
                return Check::new(
                    "rail.gid",
                    subj,
                    Status::Pass,
                    format!("GID index {idx} carries {want} (no gid_attrs type to confirm RoCE v2)"),
                )
                .with_evidence(ev);
            }
        }
    }
    let message = if v1_only {
        format!("only RoCE v1 GIDs carry {want}; no RoCE v2 GID")
    } else {
        format!("no GID carries the rail address {want}")
    };
    let (_, logical) = roots.sys_path(&dir);
    ev.push(Evidence::new("expected", format!("::ffff:{want}"), logical));
    Check::new("rail.gid", subj, Status::Fail, message).with_evidence(ev)
}

fn mtu(roots: &Roots, rail: &RailPolicy) -> Check {
    let subj = subject(rail);
    let read = roots.sys(&format!("class/net/{}/mtu", rail.netdev));
    match read.result {
        Ok(t) => {
            let ev = vec![Evidence::new("mtu", t.clone(), read.logical)];
            match t.parse::<u32>() {
                Ok(m) if m == rail.mtu => {
                    Check::new("rail.mtu", subj, Status::Pass, format!("{} mtu {m}", rail.netdev))
                        .with_evidence(ev)
                }
                Ok(m) => Check::new(
                    "rail.mtu",
                    subj,
                    Status::Fail,
                    format!("{} mtu {m}, expected {}", rail.netdev, rail.mtu),
                )
                .with_evidence(ev),
                Err(_) => Check::new("rail.mtu", subj, Status::Error, format!("unparsable mtu `{t}`"))
                    .with_evidence(ev),
            }
        }
        Err(e) => {
            let missing = !roots.sys_exists(&format!("class/net/{}", rail.netdev));
            let (status, message) = if missing {
                (Status::Fail, format!("netdev {} is missing", rail.netdev))
            } else {
                (Status::Error, format!("cannot read {}", read.logical))
            };
            Check::new("rail.mtu", subj, status, message).with_evidence(vec![Evidence::new(
                "mtu",
                format!("unreadable: {e}"),
                read.logical,
            )])
        }
    }
}

/// One read of a rail's error counters.
#[derive(Debug, Clone, Default)]
pub struct CounterSample {
    pub values: BTreeMap<String, (u64, String)>,
    /// Counters listed in the policy but absent or unreadable, with the reason.
    pub unreadable: Vec<(String, String)>,
}

/// Reads the rail's error counters; `None` when the HCA port is absent (already reported by `rail.present`).
pub fn sample_counters(roots: &Roots, rail: &RailPolicy, names: &[String]) -> Option<CounterSample> {
    if !roots.sys_exists(&port_dir(rail)) {
        return None;
    }
    let mut sample = CounterSample::default();
    for name in names {
        let read = roots.sys(&format!("{}/counters/{name}", port_dir(rail)));
        match read.result.as_ref().map(|t| t.parse::<u64>()) {
            Ok(Ok(v)) => {
                sample.values.insert(name.clone(), (v, read.logical));
            }
            Ok(Err(_)) => sample.unreadable.push((name.clone(), format!("unparsable at {}", read.logical))),
            Err(e) => sample.unreadable.push((name.clone(), format!("{e} at {}", read.logical))),
        }
    }
    Some(sample)
}

/// Compares two samples taken `interval` apart.
pub fn counters_check(
    rail: &RailPolicy,
    first: Option<&CounterSample>,
    second: Option<&CounterSample>,
    interval: Duration,
) -> Check {
    let subj = subject(rail);
    let (Some(a), Some(b)) = (first, second) else {
        return Check::new(
            "rail.counters",
            subj,
            Status::Skip,
            format!("not evaluated: HCA {} absent", rail.hca),
        );
    };
    if a.values.is_empty() {
        let why = a.unreadable.iter().map(|(n, e)| format!("{n}: {e}")).collect::<Vec<_>>().join("; ");
        return Check::new(
            "rail.counters",
            subj,
            Status::Error,
            format!("no error counter readable ({why})"),
        );
    }
    let mut ev = Vec::new();
    let mut rising = Vec::new();
    for (name, (v1, logical)) in &a.values {
        let Some((v2, _)) = b.values.get(name) else { continue };
        ev.push(Evidence::new(name.clone(), format!("{v1} -> {v2}"), logical.clone()));
        if v2 > v1 {
            rising.push(format!("{name} +{}", v2 - v1));
        }
    }
    let ms = interval.as_millis();
    if rising.is_empty() {
        Check::new(
            "rail.counters",
            subj,
            Status::Pass,
            format!("{} error counters steady over {ms} ms", a.values.len()),
        )
        .with_evidence(ev)
    } else {
        Check::new("rail.counters", subj, Status::Fail, format!("rising over {ms} ms: {}", rising.join(", ")))
            .with_evidence(ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_sysfs_spellings() {
        assert_eq!(parse_state("4: ACTIVE"), Some((4, "ACTIVE")));
        assert_eq!(parse_state("5: LinkUp"), Some((5, "LinkUp")));
        assert_eq!(parse_state("ACTIVE"), None);
        assert_eq!(parse_rate_gbps("400 Gb/sec (4X NDR)"), Some(400.0));
        assert_eq!(parse_rate_gbps("2.5 Gb/sec (1X SDR)"), Some(2.5));
        assert_eq!(parse_rate_gbps("fast"), None);
        assert_eq!(gid_ipv4("0000:0000:0000:0000:0000:ffff:0a01:000b"), Some(Ipv4Addr::new(10, 1, 0, 11)));
        assert_eq!(gid_ipv4("fe80:0000:0000:0000:0a42:a1ff:fe6b:0001"), None);
        assert_eq!(gid_ipv4("0000:0000:0000:0000:0000:0000:0000:0000"), None);
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in ".{0,64}") {
            let _ = parse_state(&s);
            let _ = parse_rate_gbps(&s);
            let _ = gid_ipv4(&s);
        }

        #[test]
        fn mapped_gid_round_trips(a in any::<u32>()) {
            let ip = Ipv4Addr::from(a);
            let segs = ip.to_ipv6_mapped().segments();
            let text = segs.iter().map(|s| format!("{s:04x}")).collect::<Vec<_>>().join(":");
            prop_assert_eq!(gid_ipv4(&text), Some(ip));
        }
    }
}
