//! The topology keys, checked across devices: which leaf and port each rail is cabled to, the PDUs, the
//! NVLink domain and the OOB switch of each device. Fault correlation blames a shared part by these keys
//! (a leaf that drops one rail on eight nodes is one fault, not eight), so a reference to a switch that
//! does not exist, a rail cabled to a spine or to a switch of another fabric, or two cables in one port
//! would make it blame the wrong part: each is an error here, at the key that says it.
//!
//! Lookups use the raw devices (role and fabric as written), so a switch with an unrelated problem of its
//! own does not turn every reference to it into a second, misleading error.

use std::collections::HashMap;

use lifeline_types::{DeviceName, Fabric, Role, Tier};
use toml::Spanned;

use super::Cx;
use crate::raw::RawDevice;

/// What a referenced switch is, as written.
struct SwitchRef {
    role: Option<Role>,
    fabric: Option<Fabric>,
    tier: Option<Tier>,
}

pub(super) fn check(cx: &mut Cx<'_>, devices: &[Spanned<RawDevice>]) {
    let by_name: HashMap<&str, SwitchRef> = devices
        .iter()
        .map(|d| {
            let d = d.get_ref();
            let role = d.role.get_ref().parse().ok();
            let fabric = d.fabric.as_ref().and_then(|f| f.get_ref().parse().ok());
            let tier = d.tier.as_ref().and_then(|t| t.get_ref().parse().ok());
            (d.name.get_ref().as_str(), SwitchRef { role, fabric, tier })
        })
        .collect();
    // (switch, port) -> (device, line) of the first cable in it.
    let mut ports: HashMap<(String, String), (String, usize)> = HashMap::new();
    for d in devices {
        let d = d.get_ref();
        let device = d.name.get_ref();
        for r in &d.rail {
            let r = r.get_ref();
            let fabric = r.fabric.as_ref().map_or(Some(Fabric::Backend), |f| f.get_ref().parse().ok());
            match (&r.leaf, &r.port) {
                (Some(leaf), port) => {
                    let what = format!("rail `{}` of `{device}`", r.hca.get_ref());
                    if switch(cx, &by_name, leaf, &what, fabric, "rail.leaf")
                        && let Some(port) = port
                    {
                        cable(cx, &mut ports, leaf.get_ref(), port, device, &what);
                    }
                }
                (None, Some(port)) => cx.err(
                    port.span().start,
                    format!("rail.port of `{device}` needs a rail.leaf: a port names a port of a switch"),
                ),
                (None, None) => {}
            }
        }
        match (&d.oob_switch, &d.oob_port) {
            (Some(sw), port) => {
                let what = format!("`{device}`");
                if switch(cx, &by_name, sw, &what, Some(Fabric::Oob), "oob-switch")
                    && let Some(port) = port
                {
                    cable(cx, &mut ports, sw.get_ref(), port, device, &what);
                }
            }
            (None, Some(port)) => cx.err(
                port.span().start,
                format!("oob-port of `{device}` needs an oob-switch: a port names a port of a switch"),
            ),
            (None, None) => {}
        }
        let mut seen: Vec<&str> = Vec::new();
        for p in &d.pdus {
            name(cx, p, "PDU");
            if seen.contains(&p.get_ref().as_str()) {
                cx.err(p.span().start, format!("PDU `{}` listed twice for `{device}`", p.get_ref()));
            }
            seen.push(p.get_ref());
        }
        if let Some(n) = &d.nvlink_domain {
            name(cx, n, "NVLink domain");
            if d.role.get_ref().parse::<Role>().is_ok_and(|r| r != Role::GpuNode) {
                cx.err(
                    n.span().start,
                    format!(
                        "nvlink-domain applies to gpu-node devices only, but `{device}` is a {}",
                        d.role.get_ref()
                    ),
                );
            }
        }
    }
}

/// Checks that `v` names a switch of `fabric` that can take this cable; false when it cannot.
fn switch(
    cx: &mut Cx<'_>,
    by_name: &HashMap<&str, SwitchRef>,
    v: &Spanned<String>,
    what: &str,
    fabric: Option<Fabric>,
    key: &str,
) -> bool {
    let at = v.span().start;
    let Some(s) = by_name.get(v.get_ref().as_str()) else {
        cx.err(at, format!("{key} of {what} names unknown device `{}`", v.get_ref()));
        return false;
    };
    if s.role != Some(Role::Switch) {
        cx.err(at, format!("{key} of {what} names `{}`, which is not a switch", v.get_ref()));
        return false;
    }
    if let (Some(want), Some(have)) = (fabric, s.fabric)
        && want != have
    {
        cx.err(
            at,
            format!(
                "{key} of {what} names `{}`, a {have} switch, but the link is on the {want} fabric",
                v.get_ref()
            ),
        );
        return false;
    }
    if key == "rail.leaf" && s.tier == Some(Tier::Spine) {
        cx.err(at, format!("{key} of {what} names `{}`, a spine: rails are cabled to leaves", v.get_ref()));
        return false;
    }
    true
}

/// Records one cable in `switch`'s `port`; a second cable in the same port is an error.
fn cable(
    cx: &mut Cx<'_>,
    ports: &mut HashMap<(String, String), (String, usize)>,
    switch: &str,
    port: &Spanned<String>,
    device: &str,
    what: &str,
) {
    let p = port.get_ref().trim();
    if p.is_empty() || p.chars().any(|c| c.is_whitespace() || c.is_control()) {
        cx.err(
            port.span().start,
            format!("invalid port `{}` of {what} (expected e.g. `Ethernet12`)", port.get_ref()),
        );
        return;
    }
    let line = cx.map.line_col(port.span().start).0;
    match ports.get(&(switch.to_owned(), p.to_owned())) {
        Some((first, first_line)) => cx.err(
            port.span().start,
            format!("port {p} of `{switch}` is cabled twice: {what} and `{first}` (line {first_line})"),
        ),
        None => {
            ports.insert((switch.to_owned(), p.to_owned()), (device.to_owned(), line));
        }
    }
}

fn name(cx: &mut Cx<'_>, v: &Spanned<String>, what: &str) {
    if let Err(e) = DeviceName::new(v.get_ref().clone()) {
        cx.err(v.span().start, format!("invalid {what} name: {e}"));
    }
}
