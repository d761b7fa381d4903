//! What `lifeline sim` prints about the fleet it serves: every endpoint for a small fleet (the table
//! operators copy addresses from), a summary for a large one. `--nodes 100000` would otherwise print
//! ~200,000 lines before the "up" line; the full list is what `--endpoints-json FILE` (or `--list`) is for.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

use lifeline_sim::{Endpoint, EndpointKind};

/// Fleets of at most this many devices get the full table by default.
pub const FULL_LIST_MAX_DEVICES: usize = 64;
/// Endpoints shown at each end of the list in a summary.
const EDGE: usize = 3;

/// The lines to print, without the final "simulated fleet up" line.
pub fn render(endpoints: &[Endpoint], list_all: bool, endpoints_json: Option<&Path>) -> Vec<String> {
    let devices = device_count(endpoints);
    if list_all || devices <= FULL_LIST_MAX_DEVICES {
        return std::iter::once(header()).chain(endpoints.iter().map(row)).collect();
    }
    let mut out = vec![format!("{devices} simulated devices, {} endpoints:", endpoints.len())];
    out.push(format!("  {:<8} {:>8} {:>9}  {:<34} port", "kind", "count", "addresses", "address range"));
    for ((_, kind), s) in per_kind(endpoints) {
        out.push(format!(
            "  {:<8} {:>8} {:>9}  {:<34} {}",
            kind,
            s.count,
            s.addresses,
            format!("{} - {}", s.low, s.high),
            if s.port_low == s.port_high {
                s.port_low.to_string()
            } else {
                format!("{}-{}", s.port_low, s.port_high)
            }
        ));
    }
    out.push(format!("first {EDGE} and last {EDGE}:"));
    out.push(header());
    out.extend(endpoints.iter().take(EDGE).map(row));
    out.push(format!("{:<20} ({} more)", "...", endpoints.len().saturating_sub(2 * EDGE)));
    out.extend(endpoints.iter().skip(endpoints.len().saturating_sub(EDGE).max(EDGE)).map(row));
    out.push(match endpoints_json {
        Some(p) => format!("full list: {} (JSON); --list prints it here", p.display()),
        None => {
            "full list: pass --endpoints-json FILE (JSON) or --list (this table, every endpoint)".to_owned()
        }
    });
    out
}

fn header() -> String {
    format!("{:<20} {:<8} {:<22} {:<10} password", "device", "kind", "address", "user")
}

fn row(e: &Endpoint) -> String {
    format!(
        "{:<20} {:<8} {:<22} {:<10} {}",
        e.name,
        kind_name(e.kind),
        format!("{}:{}", e.address, e.port),
        e.username,
        e.password
    )
}

fn kind_name(k: EndpointKind) -> &'static str {
    match k {
        EndpointKind::Redfish => "redfish",
        EndpointKind::Ipmi => "ipmi",
        EndpointKind::Ssh => "ssh",
        EndpointKind::Control => "control",
    }
}

fn device_count(endpoints: &[Endpoint]) -> usize {
    let mut names: Vec<&str> =
        endpoints.iter().filter(|e| e.kind != EndpointKind::Control).map(|e| e.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.len()
}

/// Per protocol: how many endpoints, on how many distinct addresses, lowest/highest address and port.
struct KindStats {
    count: usize,
    addresses: usize,
    low: IpAddr,
    high: IpAddr,
    port_low: u16,
    port_high: u16,
}

/// Keyed by (protocol order, name): Redfish, IPMI, SSH, then the control API.
fn per_kind(endpoints: &[Endpoint]) -> BTreeMap<(u8, &'static str), KindStats> {
    let mut addrs: BTreeMap<(u8, &'static str), Vec<IpAddr>> = BTreeMap::new();
    let mut stats: BTreeMap<(u8, &'static str), KindStats> = BTreeMap::new();
    for e in endpoints {
        let order = match e.kind {
            EndpointKind::Redfish => 0,
            EndpointKind::Ipmi => 1,
            EndpointKind::Ssh => 2,
            EndpointKind::Control => 3,
        };
        let k = (order, kind_name(e.kind));
        addrs.entry(k).or_default().push(e.address);
        let s = stats.entry(k).or_insert(KindStats {
            count: 0,
            addresses: 0,
            low: e.address,
            high: e.address,
            port_low: e.port,
            port_high: e.port,
        });
        s.count += 1;
        s.low = s.low.min(e.address);
        s.high = s.high.max(e.address);
        s.port_low = s.port_low.min(e.port);
        s.port_high = s.port_high.max(e.port);
    }
    for (k, mut a) in addrs {
        a.sort_unstable();
        a.dedup();
        if let Some(s) = stats.get_mut(&k) {
            s.addresses = a.len();
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use lifeline_sim::{Fleet, FleetSpec, SimOptions};

    fn ep(name: &str, kind: EndpointKind, last: u32, port: u16) -> Endpoint {
        let ip = std::net::Ipv4Addr::from(0x7f00_0000 + last);
        Endpoint {
            name: name.into(),
            kind,
            address: IpAddr::V4(ip),
            port,
            username: "admin".into(),
            password: "pw".into(),
        }
    }

    fn fleet(nodes: u32) -> Vec<Endpoint> {
        let mut v = Vec::new();
        for i in 0..nodes {
            v.push(ep(&format!("node-{i}"), EndpointKind::Redfish, 10 + i, 10443));
            v.push(ep(&format!("node-{i}"), EndpointKind::Ipmi, 10 + i, 10623));
        }
        v.push(ep("control", EndpointKind::Control, 1, 4321));
        v
    }

    #[test]
    fn a_small_fleet_lists_every_endpoint() {
        let eps = fleet(FULL_LIST_MAX_DEVICES as u32);
        let lines = render(&eps, false, None);
        assert_eq!(lines.len(), eps.len() + 1, "header + one line per endpoint");
        assert!(lines[0].starts_with("device"));
        assert!(lines.iter().any(|l| l.starts_with("node-63") && l.contains("127.0.0.73:10623")));
    }

    #[test]
    fn a_large_fleet_is_summarised_with_counts_ranges_and_both_ends() {
        let eps = fleet(5000);
        let lines = render(&eps, false, Some(Path::new("/tmp/eps.json")));
        assert!(lines.len() < 20, "{lines:#?}");
        let text = lines.join("\n");
        assert!(text.contains("5000 simulated devices, 10001 endpoints"), "{text}");
        let ipmi = lines.iter().find(|l| l.trim_start().starts_with("ipmi")).expect("ipmi row");
        assert!(
            ipmi.contains("5000") && ipmi.contains("127.0.0.10 - 127.0.19.145") && ipmi.ends_with("10623"),
            "{ipmi}"
        );
        let control = lines.iter().find(|l| l.trim_start().starts_with("control")).expect("control row");
        assert!(control.contains("127.0.0.1 - 127.0.0.1") && control.ends_with("4321"), "{control}");
        assert!(text.contains("node-0 ") && text.contains("node-4999 "), "both ends shown: {text}");
        assert!(text.contains("(9995 more)"), "{text}");
        assert!(text.contains("full list: /tmp/eps.json"), "{text}");
    }

    #[test]
    fn list_prints_every_endpoint_of_a_large_fleet() {
        let eps = fleet(100);
        assert_eq!(render(&eps, true, None).len(), eps.len() + 1);
        assert!(render(&eps, false, None).last().unwrap().contains("--endpoints-json FILE"));
    }

    /// The real simulator's endpoints: a 100-node fleet is summarised, every protocol counted.
    #[tokio::test]
    async fn the_simulators_endpoints_are_summarised() {
        let f = Fleet::start(FleetSpec::generate(100, 2), SimOptions::for_tests()).await.unwrap();
        let lines = render(f.endpoints(), false, None);
        let text = lines.join("\n");
        assert!(text.starts_with("102 simulated devices"), "{text}");
        for k in ["redfish", "ipmi", "ssh", "control"] {
            assert!(lines.iter().any(|l| l.trim_start().starts_with(k)), "{k} row: {text}");
        }
        f.shutdown().await;
    }
}
