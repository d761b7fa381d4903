//! lldpd's outputs (`lldpcli show neighbors`), which Cumulus Linux, SONiC's `show lldp neighbors` and
//! any Linux host running lldpd print.
//!
//! JSON (`-f json`) has two shapes for one list: `interface` is an object keyed by port when one port has
//! a neighbour and an array of one-key objects when several do; `chassis` is keyed by the system name,
//! or holds `id` directly when the neighbour sends none. Both shapes are read. On Linux hosts lldpd
//! announces the MAC address as port id and the interface name as port description.

use serde_json::Value;

use super::{Neighbor, value};

fn text_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => value(s),
        // `{"type": "mac", "value": "…"}`
        Value::Object(m) => text_of(m.get("value")),
        // json0 wraps each value in a list of objects.
        Value::Array(a) => text_of(a.first()),
        _ => None,
    }
}

fn one(port: &str, body: &Value) -> Neighbor {
    let mut n = Neighbor { local_port: port.to_owned(), ..Neighbor::default() };
    if let Some(Value::Object(ch)) = body.get("chassis") {
        let nameless = ch.get("id").is_some_and(|i| i.get("type").is_some() || i.is_string());
        if nameless {
            n.chassis_id = text_of(ch.get("id"));
            n.system_name = text_of(ch.get("name"));
        } else if let Some((name, c)) = ch.iter().next() {
            n.system_name = value(name);
            n.chassis_id = text_of(c.get("id"));
        }
    }
    if let Some(p) = body.get("port") {
        n.port_id = text_of(p.get("id"));
        n.port_descr = text_of(p.get("descr"));
    }
    n
}

pub fn parse_json(text: &str) -> Vec<Neighbor> {
    let Ok(v) = serde_json::from_str::<Value>(text) else { return Vec::new() };
    let mut out = Vec::new();
    let ifaces = v.get("lldp").and_then(|l| l.get("interface"));
    let mut visit = |m: &serde_json::Map<String, Value>| {
        for (port, body) in m {
            out.push(one(port, body));
        }
    };
    match ifaces {
        Some(Value::Object(m)) => visit(m),
        Some(Value::Array(a)) => {
            for x in a {
                if let Value::Object(m) = x {
                    visit(m);
                }
            }
        }
        _ => {}
    }
    out
}

/// The plain text: `Interface:    Ethernet0, via: LLDP, …` opens a neighbour, then `Key: value` lines
/// (`ChassisID:    mac 4a:…` carries its subtype first).
pub fn parse_text(text: &str) -> Vec<Neighbor> {
    let mut out: Vec<Neighbor> = Vec::new();
    let mut cur: Option<Neighbor> = None;
    for l in text.lines() {
        let t = l.trim();
        let Some((k, v)) = t.split_once(':') else { continue };
        let typed = |v: &str| {
            let v = v.trim();
            match v.split_once(' ') {
                Some(("mac" | "ifname" | "local" | "ip" | "ifalias", rest)) => value(rest),
                _ => value(v),
            }
        };
        match k.trim() {
            "Interface" => {
                out.extend(cur.take());
                let port = v.split(',').next().unwrap_or("").trim();
                cur = Some(Neighbor { local_port: port.to_owned(), ..Neighbor::default() });
            }
            key => {
                let Some(n) = cur.as_mut() else { continue };
                match key {
                    "ChassisID" if n.chassis_id.is_none() => n.chassis_id = typed(v),
                    "SysName" if n.system_name.is_none() => n.system_name = value(v),
                    "PortID" if n.port_id.is_none() => n.port_id = typed(v),
                    "PortDescr" if n.port_descr.is_none() => n.port_descr = value(v),
                    _ => {}
                }
            }
        }
    }
    out.extend(cur);
    out
}
