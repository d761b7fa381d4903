//! The LLDP neighbours a simulated switch lists, per platform, and the `miscabled` fault.
//!
//! Why: Lifeline checks the inventory's cabling against what the switches see over LLDP; the simulator's
//! switches answer the same show commands as real ones (SONiC `show lldp table` / `show lldp neighbors`,
//! EOS and IOS/NX-OS `show lldp neighbors detail`, Cumulus `lldpcli -f json`), from the cabling the
//! fleet was described with. `miscabled=PORT_A:PORT_B` swaps the neighbours of two ports (two cables in
//! each other's ports; a port with nobody on it makes the move of one cable), until the switch's
//! faults are cleared.
//!
//! The neighbours are hosts running lldpd with its defaults: the port id is the NIC's MAC address, the
//! port description the NIC's name, the system name the host name.

use std::sync::Mutex;

use lifeline_types::Platform;

use crate::spec::LldpPeer;

/// The cabling as described and as it is now.
#[derive(Debug, Default)]
pub struct Cabling {
    described: Vec<LldpPeer>,
    now: Mutex<Vec<LldpPeer>>,
}

/// A locally administered MAC address derived from `key` (stable across runs).
fn mac(key: &str) -> [u8; 6] {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let b = h.to_be_bytes();
    [0x02, b[1], b[2], b[3], b[4], b[5]]
}

fn colon(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// Cisco and Arista print MACs as `xxxx.xxxx.xxxx`.
fn dotted(m: [u8; 6]) -> String {
    format!("{:02x}{:02x}.{:02x}{:02x}.{:02x}{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
}

fn same(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

impl Cabling {
    pub fn new(peers: Vec<LldpPeer>) -> Cabling {
        Cabling { now: Mutex::new(peers.clone()), described: peers }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<LldpPeer>> {
        self.now.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The neighbours now, ordered by port as the switch lists them.
    pub fn peers(&self) -> Vec<LldpPeer> {
        let mut v = self.lock().clone();
        v.sort_by_key(|p| port_order(&p.port));
        v
    }

    /// `miscabled=A:B`: what is on `a` moves to `b` and the other way round.
    /// Ports keep the switch's spelling; a port with nobody on it takes the one written in the fault.
    pub fn swap(&self, a: &str, b: &str) {
        let mut v = self.lock();
        let (ia, ib) = (v.iter().position(|p| same(&p.port, a)), v.iter().position(|p| same(&p.port, b)));
        match (ia, ib) {
            (Some(i), Some(j)) => {
                let (pi, pj) = (v[i].port.clone(), v[j].port.clone());
                v[i].port = pj;
                v[j].port = pi;
            }
            (Some(i), None) => v[i].port = b.to_owned(),
            (None, Some(j)) => v[j].port = a.to_owned(),
            (None, None) => {}
        }
    }

    /// Back to the cabling as described (`clear`).
    pub fn restore(&self) {
        *self.lock() = self.described.clone();
    }

    /// The answer to an LLDP show command, or `None` when `words` is not one.
    pub fn answer(&self, platform: Platform, words: &[&str]) -> Option<String> {
        let peers = self.peers();
        Some(match (platform, words) {
            (Platform::Sonic, ["show", "lldp", "table"]) => sonic_table(&peers),
            (Platform::Sonic, ["show", "lldp", "neighbors"]) => lldpd_text(&peers),
            (Platform::Cumulus, ["lldpcli" | "lldpctl", rest @ ..]) if rest.contains(&"json") => {
                lldpd_json(&peers)
            }
            (Platform::Cumulus, ["lldpcli" | "lldpctl", ..]) => lldpd_text(&peers),
            (Platform::Eos, ["show", "lldp", "neighbors", "detail"]) => eos_detail(&peers),
            (Platform::Ios, ["show", "lldp", "neighbors", "detail"]) => ios_detail(&peers, false),
            (Platform::Nxos, ["show", "lldp", "neighbors", "detail"]) => ios_detail(&peers, true),
            _ => return None,
        })
    }
}

/// Ports in the switch's order (`Ethernet8` before `Ethernet16`).
fn port_order(p: &str) -> (String, Vec<u32>) {
    let split = p.find(|c: char| c.is_ascii_digit()).unwrap_or(p.len());
    let nums = p[split..].split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
    (p[..split].to_ascii_lowercase(), nums)
}

fn nic_mac(p: &LldpPeer) -> [u8; 6] {
    mac(&format!("{}/{}", p.system_name, p.port_descr))
}

fn chassis_mac(p: &LldpPeer) -> [u8; 6] {
    mac(&p.system_name)
}

/// `show lldp table` as sonic-utilities' lldpshow prints it (tabulate's `simple` layout).
fn sonic_table(peers: &[LldpPeer]) -> String {
    let head = ["LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr"];
    let rows: Vec<[String; 5]> = peers
        .iter()
        .map(|p| [p.port.clone(), p.system_name.clone(), colon(nic_mac(p)), "O".into(), p.port_descr.clone()])
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].len()).chain([head[i].len() + 2]).max().unwrap_or(0);
    let w: Vec<usize> = (0..5).map(width).collect();
    let line = |cells: [&str; 5]| {
        let s: Vec<String> = cells.iter().zip(&w).map(|(c, w)| format!("{c:<w$}")).collect();
        s.join("  ").trim_end().to_owned()
    };
    let mut out = String::from("Capability codes: (R) Router, (B) Bridge, (O) Other\n");
    out.push_str(&line(head));
    out.push('\n');
    out.push_str(&w.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
    out.push('\n');
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
        out.push('\n');
    }
    out.push_str(&format!("{}\nTotal entries displayed:  {}\n", "-".repeat(50), rows.len()));
    out
}

/// lldpd's plain `show neighbors` text.
fn lldpd_text(peers: &[LldpPeer]) -> String {
    let rule = "-".repeat(79);
    let mut out = format!("{rule}\nLLDP neighbors:\n{rule}\n");
    for (i, p) in peers.iter().enumerate() {
        out.push_str(&format!(
            "Interface:    {}, via: LLDP, RID: {}, Time: 0 day, 01:02:03\n  Chassis:     \n    ChassisID:    mac {}\n    \
             SysName:      {}\n    SysDescr:     Ubuntu 22.04.4 LTS Linux 5.15.0-105-generic\n    Capability:   Station, on\n  \
             Port:        \n    PortID:       mac {}\n    PortDescr:    {}\n    TTL:          120\n{rule}\n",
            p.port,
            i + 1,
            colon(chassis_mac(p)),
            p.system_name,
            colon(nic_mac(p)),
            p.port_descr
        ));
    }
    out
}

/// lldpd's `-f json`: one port is an object, several an array of one-key objects.
fn lldpd_json(peers: &[LldpPeer]) -> String {
    use serde_json::json;
    let one = |p: &LldpPeer| {
        json!({ &p.port: {
            "via": "LLDP", "rid": "1", "age": "0 day, 01:02:03",
            "chassis": { &p.system_name: {
                "id": { "type": "mac", "value": colon(chassis_mac(p)) },
                "descr": "Ubuntu 22.04.4 LTS Linux 5.15.0-105-generic",
                "capability": [{ "type": "Station", "enabled": true }]
            }},
            "port": { "id": { "type": "mac", "value": colon(nic_mac(p)) }, "descr": &p.port_descr, "ttl": "120" }
        }})
    };
    let interface = match peers {
        [p] => one(p),
        _ => serde_json::Value::Array(peers.iter().map(one).collect()),
    };
    let mut s =
        serde_json::to_string_pretty(&json!({ "lldp": { "interface": interface } })).unwrap_or_default();
    s.push('\n');
    s
}

/// EOS `show lldp neighbors detail`.
fn eos_detail(peers: &[LldpPeer]) -> String {
    let mut out = String::new();
    for p in peers {
        let (ch, nic) = (dotted(chassis_mac(p)), dotted(nic_mac(p)));
        out.push_str(&format!(
            "Interface {} detected 1 LLDP neighbors:\n\n  Neighbor {ch}/{nic}, age 12 seconds\n  \
             Discovered 1:02:03 ago; Last changed 1:02:03 ago\n  - Chassis ID type: MAC address (4)\n    \
             Chassis ID     : {ch}\n  - Port ID type: MAC address (3)\n    Port ID     : {nic}\n  \
             - Time To Live: 120 seconds\n  - Port Description: \"{}\"\n  - System Name: \"{}\"\n  \
             - System Description: \"Ubuntu 22.04.4 LTS Linux 5.15.0-105-generic\"\n  \
             - System Capabilities : Station\n    Enabled Capabilities: Station\n\n",
            p.port, p.port_descr, p.system_name
        ));
    }
    out
}

/// IOS (`Local Intf:` first, dashed separators) or NX-OS (`Chassis id:` first, `Local Port id:`).
fn ios_detail(peers: &[LldpPeer], nxos: bool) -> String {
    let mut out = String::new();
    if nxos {
        out.push_str(
            "Capability codes:\n  (R) Router, (B) Bridge, (T) Telephone, (C) DOCSIS Cable Device\n  \
                      (W) WLAN Access Point, (P) Repeater, (S) Station, (O) Other\n\
                      Device ID            Local Intf      Hold-time  Capability  Port ID\n\n",
        );
    }
    for p in peers {
        let (ch, nic) = (dotted(chassis_mac(p)), dotted(nic_mac(p)));
        if nxos {
            out.push_str(&format!(
                "Chassis id: {ch}\nPort id: {nic}\nLocal Port id: {}\nPort Description: {}\nSystem Name: {}\n\
                 System Description: Ubuntu 22.04.4 LTS Linux 5.15.0-105-generic\nTime remaining: 101 seconds\n\
                 System Capabilities: S\nEnabled Capabilities: S\nManagement Address: not advertised\nVlan ID: not advertised\n\n",
                p.port.replacen("Ethernet", "Eth", 1),
                p.port_descr,
                p.system_name
            ));
        } else {
            out.push_str(&format!(
                "------------------------------------------------\nLocal Intf: {}\nChassis id: {ch}\nPort id: {nic}\n\
                 Port Description: {}\nSystem Name: {}\n\nSystem Description: \nUbuntu 22.04.4 LTS Linux 5.15.0-105-generic\n\n\
                 Time remaining: 101 seconds\nSystem Capabilities: S\nEnabled Capabilities: S\n\
                 Management Addresses - not advertised\nAuto Negotiation - not supported\n\n",
                p.port, p.port_descr, p.system_name
            ));
        }
    }
    out.push_str(&format!("\nTotal entries displayed: {}\n\n", peers.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(port: &str, host: &str, nic: &str) -> LldpPeer {
        LldpPeer { port: port.into(), system_name: host.into(), port_descr: nic.into() }
    }

    #[test]
    fn miscabled_swaps_two_ports_and_clear_restores() {
        let c = Cabling::new(vec![peer("Ethernet0", "a", "ens1np0"), peer("Ethernet8", "b", "ens1np0")]);
        c.swap("Ethernet0", "ethernet8");
        let now: Vec<_> = c.peers().iter().map(|p| (p.port.clone(), p.system_name.clone())).collect();
        assert_eq!(now, [("Ethernet0".to_owned(), "b".to_owned()), ("Ethernet8".to_owned(), "a".to_owned())]);
        c.swap("Ethernet8", "Ethernet16");
        assert_eq!(c.peers().last().unwrap().port, "Ethernet16", "a move to an empty port");
        c.restore();
        assert_eq!(c.peers()[0].system_name, "a");
    }

    #[test]
    fn every_platform_answers_and_others_do_not() {
        let c = Cabling::new(vec![peer("Ethernet8", "a", "ens1np0"), peer("Ethernet16", "b", "ens2np0")]);
        for (p, cmd) in [
            (Platform::Sonic, "show lldp table"),
            (Platform::Sonic, "show lldp neighbors"),
            (Platform::Cumulus, "lldpcli -f json show neighbors details"),
            (Platform::Eos, "show lldp neighbors detail"),
            (Platform::Ios, "show lldp neighbors detail"),
            (Platform::Nxos, "show lldp neighbors detail"),
        ] {
            let w: Vec<&str> = cmd.split_whitespace().collect();
            let t = c.answer(p, &w).unwrap_or_else(|| panic!("{p} {cmd}"));
            assert!(t.contains("ens2np0") && t.contains('b'), "{p} {cmd}: {t}");
        }
        assert!(c.answer(Platform::Eos, &["show", "lldp", "table"]).is_none());
        assert!(port_order("Ethernet8") < port_order("Ethernet16"));
    }
}
