//! IOS and NX-OS `show lldp neighbors detail`: one block per neighbour. IOS opens a block with
//! `Local Intf:` (blocks between dashed lines); NX-OS opens it with `Chassis id:` and names the local
//! port later (`Local Port id:`). A block starts at either key when the current one already has it.

use super::{Neighbor, value};

pub fn parse_detail(text: &str) -> Vec<Neighbor> {
    let mut out: Vec<Neighbor> = Vec::new();
    let mut cur = Neighbor::default();
    let mut open = false;
    let mut flush = |cur: &mut Neighbor, open: &mut bool| {
        if *open {
            out.push(std::mem::take(cur));
        }
        *open = false;
    };
    for l in text.lines() {
        let t = l.trim();
        if t.len() >= 8 && t.chars().all(|c| c == '-') {
            flush(&mut cur, &mut open);
            continue;
        }
        if t.starts_with("System Name - not advertised") {
            continue;
        }
        let Some((k, v)) = t.split_once(':') else { continue };
        match k.trim() {
            "Local Intf" => {
                if open && (!cur.local_port.is_empty() || cur.chassis_id.is_some()) {
                    flush(&mut cur, &mut open);
                }
                cur.local_port = value(v).unwrap_or_default();
                open = true;
            }
            "Chassis id" => {
                if open && cur.chassis_id.is_some() {
                    flush(&mut cur, &mut open);
                }
                cur.chassis_id = value(v);
                open = true;
            }
            "Local Port id" if open && cur.local_port.is_empty() => {
                cur.local_port = value(v).unwrap_or_default()
            }
            "Port id" if open && cur.port_id.is_none() => cur.port_id = value(v),
            "Port Description" if open && cur.port_descr.is_none() => cur.port_descr = value(v),
            "System Name" if open && cur.system_name.is_none() => cur.system_name = value(v),
            _ => {}
        }
    }
    flush(&mut cur, &mut open);
    out
}
