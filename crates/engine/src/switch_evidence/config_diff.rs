//! Which ports a switch config change touches, and how: the settings that break a lossless RDMA rail when
//! they change — a port's MTU, its PFC (priority flow control, the PFC watchdog), its QoS (maps, queues,
//! buffers, service policies) and its LAG membership. Everything else (descriptions, BGP, syslog) is no
//! evidence about a rail.
//!
//! Read per platform from the configs as the backups keep them: SONiC's `config_db.json` (tables `PORT`,
//! `PORT_QOS_MAP`, `PFC_WD`, `BUFFER_PG`, `BUFFER_QUEUE`, `QUEUE`, `PORTCHANNEL_MEMBER`, keys naming one
//! port, `PORT|queues` or a comma list of ports), the `interface NAME` blocks of EOS, IOS and NX-OS (and
//! ifupdown2's `iface NAME` stanzas), and Cumulus NVUE's `nv set interface PORTS …` lines (`swp1-8`,
//! `swp1,swp3`). A config this cannot read yields no change: a diff is evidence only when it is understood.

use std::collections::{BTreeMap, BTreeSet};

use lifeline_types::Platform;
use serde::Serialize;

lifeline_types::kebab_enum! {
    /// What a change touches on a port.
    pub enum Aspect {
        Mtu => "mtu",
        Pfc => "pfc",
        Qos => "qos",
        Lag => "lag",
    }
}

/// One port's settings of one aspect before and after a change (`mtu 9100` → `mtu 1500`; an absent
/// setting is an empty list).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortChange {
    pub port: String,
    pub aspect: Aspect,
    pub before: Vec<String>,
    pub after: Vec<String>,
}

impl PortChange {
    /// The change without the port: `mtu 9100 → 1500`, `pfc: removed priority-flow-control priority 4
    /// no-drop`.
    pub fn what(&self) -> String {
        let mut removed: Vec<&String> = self.before.iter().filter(|l| !self.after.contains(l)).collect();
        let mut added: Vec<&String> = self.after.iter().filter(|l| !self.before.contains(l)).collect();
        // A setting whose value changed (same words but the last): `mtu 9100 → 1500`.
        let mut parts = Vec::new();
        removed.retain(|r| {
            let Some((k, vb)) = r.rsplit_once(' ') else { return true };
            match added.iter().position(|a| a.rsplit_once(' ').is_some_and(|(ka, _)| ka == k)) {
                Some(i) => {
                    let va = added.remove(i).rsplit_once(' ').map_or("", |(_, v)| v);
                    parts.push(format!("{k} {vb} → {va}"));
                    false
                }
                None => true,
            }
        });
        if removed.is_empty() && added.is_empty() {
            return parts.join("; ");
        }
        if !removed.is_empty() {
            parts.push(format!("removed {}", join(&removed)));
        }
        if !added.is_empty() {
            parts.push(format!("added {}", join(&added)));
        }
        format!("{}: {}", self.aspect.as_str(), parts.join("; "))
    }
}

fn join(lines: &[&String]) -> String {
    lines.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", ")
}

/// The port changes from `old` to `new`, by port then aspect.
pub fn classify(platform: Platform, old: &str, new: &str) -> Vec<PortChange> {
    let (a, b) = match platform {
        Platform::Sonic => (sonic(old), sonic(new)),
        Platform::Cumulus if is_nvue(old) || is_nvue(new) => (nvue(old), nvue(new)),
        _ => (blocks(old), blocks(new)),
    };
    let (Some(a), Some(b)) = (a, b) else { return Vec::new() };
    let keys: BTreeSet<&(String, Aspect)> = a.keys().chain(b.keys()).collect();
    let mut out = Vec::new();
    for key in keys {
        let before = a.get(key).cloned().unwrap_or_default();
        let after = b.get(key).cloned().unwrap_or_default();
        if before != after {
            out.push(PortChange {
                port: key.0.clone(),
                aspect: key.1,
                before: before.into_iter().collect(),
                after: after.into_iter().collect(),
            });
        }
    }
    out
}

/// (port, aspect) -> the settings of that aspect, as lines.
type Settings = BTreeMap<(String, Aspect), BTreeSet<String>>;

fn sonic(text: &str) -> Option<Settings> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let mut out = Settings::new();
    let tables = v.as_object()?;
    for (table, rows) in tables {
        let Some(rows) = rows.as_object() else { continue };
        for (key, fields) in rows {
            let Some(fields) = fields.as_object() else { continue };
            // `Ethernet0|3-4` (a port's queues), `PortChannel1|Ethernet0` (a member), `Ethernet0,Ethernet4`.
            let (head, tail) = key.split_once('|').map_or((key.as_str(), ""), |(h, t)| (h, t));
            let (ports, prefix): (Vec<&str>, String) = match table.as_str() {
                "PORTCHANNEL_MEMBER" => (vec![tail], String::new()),
                _ if tail.is_empty() => (head.split(',').collect(), String::new()),
                _ => (head.split(',').collect(), format!("{tail} ")),
            };
            for (field, value) in fields {
                let value = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
                let aspect = match (table.as_str(), field.as_str()) {
                    ("PORT", "mtu") => Aspect::Mtu,
                    ("PORT", "pfc_asym") => Aspect::Pfc,
                    ("PORT", _) => continue,
                    ("PORT_QOS_MAP", f) if f.starts_with("pfc") => Aspect::Pfc,
                    ("PORT_QOS_MAP" | "BUFFER_PG" | "BUFFER_QUEUE" | "QUEUE", _) => Aspect::Qos,
                    ("PFC_WD", _) => Aspect::Pfc,
                    ("PORTCHANNEL_MEMBER", _) => Aspect::Lag,
                    _ => continue,
                };
                let line = match table.as_str() {
                    "PORTCHANNEL_MEMBER" => format!("member of {head}"),
                    "PORT" => format!("{field} {value}"),
                    t => format!("{t} {prefix}{field} {value}"),
                };
                for p in ports.iter().filter(|p| !p.is_empty()) {
                    out.entry(((*p).to_owned(), aspect)).or_default().insert(line.clone());
                }
            }
            if table == "PORTCHANNEL_MEMBER" && fields.is_empty() && !tail.is_empty() {
                out.entry((tail.to_owned(), Aspect::Lag)).or_default().insert(format!("member of {head}"));
            }
        }
    }
    Some(out)
}

/// The aspect of one interface sub-command (its first words), if it is one that matters.
fn line_aspect(line: &str) -> Option<Aspect> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let first = *words.first()?;
    let second = words.get(1).copied().unwrap_or("");
    if first == "mtu" || (matches!(first, "ip" | "ipv6") && second == "mtu") {
        return Some(Aspect::Mtu);
    }
    Some(match (first, second) {
        ("priority-flow-control" | "pfc" | "flowcontrol" | "flow-control", _) => Aspect::Pfc,
        ("pfc-watchdog" | "pfcwd", _) => Aspect::Pfc,
        ("service-policy" | "qos" | "mls" | "trust" | "tx-queue" | "uc-tx-queue" | "random-detect", _)
        | ("bandwidth" | "shape" | "priority-queue" | "queue-monitor" | "wrr-queue" | "dcbx", _) => {
            Aspect::Qos
        }
        ("channel-group" | "lacp" | "mlag" | "bond-master" | "bond-slaves", _) => Aspect::Lag,
        ("no", _) => line_aspect(&words[1..].join(" "))?,
        _ => return None,
    })
}

/// `interface NAME` (EOS, IOS, NX-OS) or `iface NAME` (ifupdown2) blocks, each sub-command under it.
/// A deeper line (EOS `tx-queue 3` / `random-detect ecn …`) belongs to the sub-command above it.
fn blocks(text: &str) -> Option<Settings> {
    let mut out = Settings::new();
    let mut port: Option<String> = None;
    let mut parent: Option<(usize, String, Option<Aspect>)> = None;
    for raw in text.lines() {
        let line = raw.trim_end();
        let indent = line.len() - line.trim_start().len();
        if line.trim().is_empty() || (indent > 0 && line.trim_start().starts_with('!')) {
            continue;
        }
        if indent == 0 {
            parent = None;
            let mut w = line.split_whitespace();
            port = match (w.next(), w.next(), w.next()) {
                (Some("interface" | "iface"), Some(name), None | Some("inet" | "inet6")) => {
                    Some(name.to_owned())
                }
                _ => None,
            };
            continue;
        }
        let Some(p) = &port else { continue };
        let sub = line.trim();
        let (aspect, text) = match &parent {
            Some((pi, ptext, pa)) if indent > *pi => {
                (pa.or_else(|| line_aspect(sub)), format!("{ptext} / {sub}"))
            }
            _ => {
                let a = line_aspect(sub);
                parent = Some((indent, sub.to_owned(), a));
                (a, sub.to_owned())
            }
        };
        if let Some(a) = aspect {
            out.entry((p.clone(), a)).or_default().insert(text);
        }
    }
    Some(out)
}

fn is_nvue(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with("nv set "))
}

/// Cumulus NVUE `nv set interface PORTS REST` lines (`nv config show -o commands`).
fn nvue(text: &str) -> Option<Settings> {
    let mut out = Settings::new();
    for l in text.lines() {
        let Some(rest) = l.trim().strip_prefix("nv set interface ") else { continue };
        let Some((ports, setting)) = rest.split_once(' ') else { continue };
        let words: Vec<&str> = setting.split_whitespace().collect();
        let aspect = match words.as_slice() {
            ["link", "mtu", ..] => Aspect::Mtu,
            ["link", "flow-control", ..] | ["qos", "pfc", ..] | ["qos", "pfc-watchdog", ..] => Aspect::Pfc,
            ["qos", ..] => Aspect::Qos,
            ["bond", "member", members @ ..] => {
                // `nv set interface bond1 bond member swp1-2`: the members' LAG changes.
                for m in members.iter().flat_map(|m| expand(m)) {
                    out.entry((m, Aspect::Lag)).or_default().insert(format!("member of {ports}"));
                }
                continue;
            }
            _ => continue,
        };
        let line = match aspect {
            Aspect::Mtu => format!("mtu {}", words.get(2).copied().unwrap_or("")),
            _ => setting.trim().to_owned(),
        };
        for p in expand(ports) {
            out.entry((p, aspect)).or_default().insert(line.clone());
        }
    }
    Some(out)
}

/// `swp1-4,swp7` -> swp1, swp2, swp3, swp4, swp7 (NVUE's port ranges; a range over 512 ports is taken as
/// written, not expanded).
fn expand(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    for item in list.split(',').filter(|s| !s.is_empty()) {
        let expanded = item.split_once('-').and_then(|(a, b)| {
            let digits = a.len() - a.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            let (prefix, start) = a.split_at(a.len() - digits);
            let b = b.strip_prefix(prefix).unwrap_or(b);
            let (s, e): (u32, u32) = (start.parse().ok()?, b.parse().ok()?);
            (s <= e && e - s < 512).then(|| (s..=e).map(|n| format!("{prefix}{n}")).collect::<Vec<_>>())
        });
        match expanded {
            Some(v) => out.extend(v),
            None => out.push(item.to_owned()),
        }
    }
    out
}

/// The changes grouped for words: one entry per (aspect, what changed) with every port it applies to.
pub fn summarise(changes: &[PortChange]) -> Vec<(String, Vec<String>)> {
    let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in changes {
        by.entry(c.what()).or_default().push(c.port.clone());
    }
    by.into_iter().collect()
}

/// A backup's change as evidence: the ports it touches and how, in words, with the version before it to
/// restore; `None` when it touches no port's MTU, PFC, QoS or LAG.
pub fn evidence(
    switch: &str,
    platform: Platform,
    (from, old): (u32, &str),
    (to, new): (u32, &str),
    at_ms: i64,
) -> Option<super::PortEvidence> {
    let changes = classify(platform, old, new);
    if changes.is_empty() {
        return None;
    }
    let words: Vec<String> = summarise(&changes)
        .into_iter()
        .map(|(what, ports)| format!("{what} on {}", super::ports_in_words(&ports)))
        .collect();
    let mut ports: Vec<String> = changes.iter().map(|c| c.port.clone()).collect();
    super::sort_ports(&mut ports);
    Some(super::PortEvidence {
        kind: "config-change".into(),
        switch: switch.to_owned(),
        message: format!(
            "{switch} config changed at {} (backup v{from} → v{to}): {}",
            super::clock(at_ms),
            words.join("; ")
        ),
        ports,
        at_ms,
        detail: serde_json::json!({ "source": "backup", "from": from, "to": to, "changes": changes }),
        restore: Some(super::RestoreOffer {
            switch: switch.to_owned(),
            version: from,
            runbook: super::RESTORE_RUNBOOK.to_owned(),
        }),
    })
}

#[cfg(test)]
#[path = "config_diff_tests.rs"]
mod tests;
