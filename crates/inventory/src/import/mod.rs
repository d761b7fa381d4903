//! `lifeline inventory import`: devices from a source the operator already has (a CSV of BMC addresses,
//! slurm.conf) merged into an inventory file for review.
//!
//! The inventory is the source of truth, so an import never writes it: it prints the merged file (or a
//! diff against the current one). The merge edits the current file's TOML in place (`toml_edit`), so what
//! the source does not know — credential references, rails, comments, local groups — stays as written,
//! and a value is only rewritten when the source says something different: importing the same source
//! twice changes nothing. The result is checked with the inventory checker before it is shown.

pub mod csv;
pub mod hostlist;
pub mod netbox;
pub mod slurm;

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::Path;

use ipnet::IpNet;
use lifeline_types::{BmcProtocol, Role};
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, TableLike, Value};

use crate::location::Diagnostic;

/// One device as a source describes it; `None` and empty fields are what the source does not know.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Imported {
    pub name: String,
    pub role: Option<Role>,
    pub rack: Option<String>,
    pub site: Option<String>,
    pub bmc: Option<BmcAddr>,
    pub protocol: Option<BmcProtocol>,
    pub model: Option<String>,
    pub gpus: Option<u32>,
    pub gpu_model: Option<String>,
    pub groups: Vec<String>,
    pub description: Option<String>,
    /// The in-band (frontend) address, e.g. slurm.conf's `NodeAddr`.
    pub frontend: Option<String>,
    /// Where in the source it came from (1-based line).
    pub line: usize,
}

/// `HOST[:PORT]`, `[V6]:PORT` or a bare IPv6 address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BmcAddr {
    pub host: String,
    pub port: Option<u16>,
}

impl BmcAddr {
    pub fn parse(s: &str) -> Result<BmcAddr, String> {
        let s = s.trim();
        let bad_port = |p: &str| format!("`{s}`: port `{p}` is not 1-65535");
        let port = |p: &str| p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| bad_port(p));
        if let Some(rest) = s.strip_prefix('[') {
            let (host, tail) = rest.split_once(']').ok_or_else(|| format!("`{s}`: `[` without `]`"))?;
            host.parse::<std::net::Ipv6Addr>().map_err(|_| format!("`{host}` is not an IPv6 address"))?;
            let port = match tail.strip_prefix(':') {
                Some(p) => Some(port(p)?),
                None if tail.is_empty() => None,
                None => return Err(format!("`{s}`: expected `[V6]:PORT`")),
            };
            return Ok(BmcAddr { host: host.to_owned(), port });
        }
        if s.parse::<std::net::Ipv6Addr>().is_ok() {
            return Ok(BmcAddr { host: s.to_owned(), port: None });
        }
        let (host, port) = match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(port(p)?)),
            None => (s, None),
        };
        if host.is_empty() {
            return Err(format!("`{s}`: no host"));
        }
        Ok(BmcAddr { host: host.to_owned(), port })
    }
}

/// A problem in the source, at a line of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportProblem {
    pub line: usize,
    pub message: String,
}

/// What the importer fills in that the source does not say.
#[derive(Debug, Clone)]
pub struct Options {
    /// `[cluster] name` of a new inventory.
    pub cluster: String,
    /// The site of racks the inventory does not have yet.
    pub site: String,
    /// The rack of new devices whose source names none (slurm.conf).
    pub rack: String,
    /// The BMC address of new devices whose source names none, `{name}` replaced by the device name.
    pub bmc_host: Option<String>,
    /// `[defaults.bmc]` of a new inventory.
    pub bmc_username: String,
    pub bmc_credential: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cluster: "imported".into(),
            site: "site1".into(),
            rack: "unracked".into(),
            bmc_host: None,
            bmc_username: "admin".into(),
            bmc_credential: "env:LIFELINE_BMC_PASSWORD".into(),
        }
    }
}

/// Why the current inventory could not be merged into.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("the current inventory is not TOML: {0}")]
    Toml(#[from] toml_edit::TomlError),
    #[error("the current inventory's `{0}` is not an array of tables (`[[{0}]]`)")]
    NotArrayOfTables(&'static str),
}

/// The merged inventory and what changed.
#[derive(Debug, Default)]
pub struct Merged {
    pub text: String,
    pub added: Vec<String>,
    pub updated: Vec<String>,
    pub unchanged: usize,
    /// Devices of the inventory the source does not list: kept as they are.
    pub not_in_source: Vec<String>,
    pub racks_added: Vec<String>,
    /// The inventory checker's findings on the merged text.
    pub diagnostics: Vec<Diagnostic>,
}

/// Merges `devices` into `current` (or into a new inventory).
pub fn merge(current: Option<&str>, devices: &[Imported], opts: &Options) -> Result<Merged, ImportError> {
    let mut doc: DocumentMut = match current {
        Some(text) => text.parse()?,
        None => skeleton(devices, opts).parse()?,
    };
    let mut out = Merged::default();

    let sites: BTreeSet<String> = names_of(&doc, "site")?;
    let racks: BTreeSet<String> = names_of(&doc, "rack")?;
    let mut new_racks: BTreeMap<String, String> = BTreeMap::new();
    for d in devices {
        let rack = d.rack.clone().unwrap_or_else(|| opts.rack.clone());
        if !racks.contains(&rack) {
            new_racks.entry(rack).or_insert_with(|| d.site.clone().unwrap_or_else(|| opts.site.clone()));
        }
    }
    for site in new_racks.values().collect::<BTreeSet<_>>() {
        if !sites.contains(site) {
            let mut t = Table::new();
            t.insert("name", toml_edit::value(site.as_str()));
            array_of_tables(&mut doc, "site")?.push(t);
        }
    }
    for (rack, site) in &new_racks {
        let mut t = Table::new();
        t.insert("name", toml_edit::value(rack.as_str()));
        t.insert("site", toml_edit::value(site.as_str()));
        array_of_tables(&mut doc, "rack")?.push(t);
        out.racks_added.push(rack.clone());
    }

    let devs = array_of_tables(&mut doc, "device")?;
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for (i, t) in devs.iter().enumerate() {
        if let Some(n) = t.get("name").and_then(|n| n.as_str()) {
            index.insert(n.to_owned(), i);
        }
    }
    let listed: BTreeSet<&str> = devices.iter().map(|d| d.name.as_str()).collect();
    out.not_in_source = index.keys().filter(|n| !listed.contains(n.as_str())).cloned().collect();
    for d in devices {
        match index.get(&d.name) {
            Some(&i) => {
                let t = devs.get_mut(i).expect("indexed above");
                if update(t, d) {
                    out.updated.push(d.name.clone());
                } else {
                    out.unchanged += 1;
                }
            }
            None => {
                devs.push(new_device(d, opts));
                index.insert(d.name.clone(), devs.len() - 1);
                out.added.push(d.name.clone());
            }
        }
    }
    out.text = doc.to_string();
    out.diagnostics = crate::check_str(Path::new("(imported)"), &out.text).diagnostics;
    Ok(out)
}

/// A unified diff of the current inventory and the merged one (empty when nothing changed).
pub fn diff(old: &str, new: &str, name: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(name, &format!("{name} (imported)"))
        .to_string()
}

fn names_of(doc: &DocumentMut, key: &'static str) -> Result<BTreeSet<String>, ImportError> {
    match doc.get(key) {
        None => Ok(BTreeSet::new()),
        Some(item) => Ok(item
            .as_array_of_tables()
            .ok_or(ImportError::NotArrayOfTables(key))?
            .iter()
            .filter_map(|t| t.get("name").and_then(|n| n.as_str()).map(str::to_owned))
            .collect()),
    }
}

fn array_of_tables<'d>(
    doc: &'d mut DocumentMut,
    key: &'static str,
) -> Result<&'d mut ArrayOfTables, ImportError> {
    doc.entry(key)
        .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
        .as_array_of_tables_mut()
        .ok_or(ImportError::NotArrayOfTables(key))
}

/// A new inventory: the cluster, OOB subnets covering the imported BMC addresses, BMC defaults to review.
fn skeleton(devices: &[Imported], opts: &Options) -> String {
    let nets: Vec<IpNet> = devices
        .iter()
        .filter_map(|d| d.bmc.as_ref()?.host.parse::<IpAddr>().ok())
        .map(|ip| match ip {
            IpAddr::V4(v4) => IpNet::new(IpAddr::V4(v4), 24).expect("24 fits").trunc(),
            IpAddr::V6(v6) => IpNet::new(IpAddr::V6(v6), 64).expect("64 fits").trunc(),
        })
        .collect();
    let subnets: Vec<String> = IpNet::aggregate(&nets).iter().map(|n| format!("\"{n}\"")).collect();
    let mut cluster = Table::new();
    cluster.insert("name", toml_edit::value(opts.cluster.as_str()));
    let mut bmc = Table::new();
    bmc.insert("username", toml_edit::value(opts.bmc_username.as_str()));
    bmc.insert("credential", toml_edit::value(opts.bmc_credential.as_str()));
    format!(
        "# Written by `lifeline inventory import`: review it (OOB subnets, BMC username and credential\n\
         # reference), then check it with `lifeline inventory check`.\n\n\
         [cluster]\n{}oob-subnets = [{}]\n\n[defaults.bmc]\n{}",
        cluster,
        subnets.join(", "),
        bmc
    )
}

fn new_device(d: &Imported, opts: &Options) -> Table {
    let mut t = Table::new();
    t.insert("name", toml_edit::value(d.name.as_str()));
    if let Some(r) = d.role {
        t.insert("role", toml_edit::value(r.as_str()));
    }
    t.insert("rack", toml_edit::value(d.rack.as_deref().unwrap_or(&opts.rack)));
    update(&mut t, d);
    let needs_bmc = d.role.is_none_or(|r| r.is_server());
    if t.get("bmc").is_none()
        && needs_bmc
        && let Some(template) = &opts.bmc_host
    {
        let mut b = InlineTable::new();
        b.insert("address", template.replace("{name}", &d.name).into());
        t.insert("bmc", toml_edit::value(b));
    }
    t
}

/// Writes what the source knows into a device table; true when anything changed.
fn update(t: &mut Table, d: &Imported) -> bool {
    let mut changed = false;
    if let Some(r) = d.role {
        changed |= set(t, "role", r.as_str().into());
    }
    if let Some(r) = &d.rack {
        changed |= set(t, "rack", r.as_str().into());
    }
    if let Some(m) = &d.model {
        changed |= set(t, "model", m.as_str().into());
    }
    if !d.groups.is_empty() {
        // A union: groups the operator added locally (`training`, `pod-1`) are not the source's to drop.
        let mut groups: Vec<String> = t
            .get("groups")
            .and_then(|g| g.as_array())
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let before = groups.len();
        for g in &d.groups {
            if !groups.contains(g) {
                groups.push(g.clone());
            }
        }
        if groups.len() != before || t.get("groups").is_none() {
            t.insert("groups", toml_edit::value(groups.iter().map(String::as_str).collect::<Array>()));
            changed = true;
        }
    }
    if let Some(b) = &d.bmc {
        let bmc = sub_table(t, "bmc");
        changed |= set(bmc, "address", b.host.as_str().into());
        if let Some(p) = b.port {
            changed |= set(bmc, "port", i64::from(p).into());
        }
    }
    if let Some(p) = d.protocol {
        changed |= set(sub_table(t, "bmc"), "protocol", p.to_string().into());
    }
    if let Some(a) = &d.frontend {
        changed |= set(sub_table(t, "frontend"), "address", a.as_str().into());
    }
    if let Some(n) = d.gpus {
        let g = sub_table(t, "gpus");
        changed |= set(g, "count", i64::from(n).into());
        // The more specific name stays: slurm's `h100` does not replace "NVIDIA H100 80GB HBM3".
        let current = g.get("model").and_then(|m| m.as_str()).map(str::to_ascii_lowercase);
        if let Some(m) = &d.gpu_model
            && !current.is_some_and(|c| c.contains(&m.to_ascii_lowercase()))
        {
            changed |= set(g, "model", m.as_str().into());
        }
    }
    if let Some(desc) = &d.description {
        changed |= set(t, "description", desc.as_str().into());
    }
    changed
}

/// The device's `key` table (inline, as the example inventory writes them, when it is new).
fn sub_table<'t>(t: &'t mut Table, key: &str) -> &'t mut dyn TableLike {
    if t.get(key).and_then(|i| i.as_table_like()).is_none() {
        t.insert(key, toml_edit::value(InlineTable::new()));
    }
    t.get_mut(key).and_then(|i| i.as_table_like_mut()).expect("inserted above")
}

/// Sets `key` when its value differs (keeping the file's formatting where nothing changes).
fn set(t: &mut dyn TableLike, key: &str, v: Value) -> bool {
    let same = t.get(key).and_then(|i| i.as_value()).is_some_and(|old| match (old, &v) {
        (Value::String(a), Value::String(b)) => a.value() == b.value(),
        (Value::Integer(a), Value::Integer(b)) => a.value() == b.value(),
        _ => false,
    });
    if same {
        return false;
    }
    let decor = t.get(key).and_then(|i| i.as_value()).map(|old| old.decor().clone());
    let mut v = v;
    if let Some(d) = decor {
        *v.decor_mut() = d;
    }
    t.insert(key, Item::Value(v));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bmc_addresses() {
        let p = |s| BmcAddr::parse(s);
        assert_eq!(p("10.0.0.1"), Ok(BmcAddr { host: "10.0.0.1".into(), port: None }));
        assert_eq!(p("bmc01.oob:623"), Ok(BmcAddr { host: "bmc01.oob".into(), port: Some(623) }));
        assert_eq!(p("[fd00::1]:443"), Ok(BmcAddr { host: "fd00::1".into(), port: Some(443) }));
        assert_eq!(p("fd00::1"), Ok(BmcAddr { host: "fd00::1".into(), port: None }));
        assert!(p("10.0.0.1:0").is_err());
        assert!(p("10.0.0.1:70000").is_err());
        assert!(p("[fd00::1").is_err());
        assert!(p(":623").is_err());
    }
}
