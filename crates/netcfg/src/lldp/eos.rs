//! EOS `show lldp neighbors detail`: an `Interface X detected N LLDP neighbors:` heading per port, then
//! per neighbour `- Key: value` lines. The 802.1 link-aggregation block repeats a `Port ID` (a number),
//! so only the first port id of a neighbour counts.

use super::{Neighbor, value};

pub fn parse_detail(text: &str) -> Vec<Neighbor> {
    let mut out: Vec<Neighbor> = Vec::new();
    let mut port: Option<String> = None;
    let mut cur: Option<Neighbor> = None;
    for l in text.lines() {
        let t = l.trim();
        if let Some(rest) = t.strip_prefix("Interface ")
            && let Some((p, _)) = rest.split_once(" detected")
        {
            out.extend(cur.take());
            port = Some(p.trim().to_owned());
            continue;
        }
        let Some(port) = &port else { continue };
        if t.starts_with("Neighbor ") {
            out.extend(cur.take());
            cur = Some(Neighbor { local_port: port.clone(), ..Neighbor::default() });
            continue;
        }
        let Some(n) = cur.as_mut() else { continue };
        let t = t.trim_start_matches('-').trim();
        let Some((k, v)) = t.split_once(':') else { continue };
        match k.trim() {
            "Chassis ID" if n.chassis_id.is_none() => n.chassis_id = value(v),
            "Port ID" if n.port_id.is_none() => n.port_id = value(v),
            "Port Description" if n.port_descr.is_none() => n.port_descr = value(v),
            "System Name" if n.system_name.is_none() => n.system_name = value(v),
            _ => {}
        }
    }
    out.extend(cur);
    out
}
