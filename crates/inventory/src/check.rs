//! Turns an inventory file into a validated [`Inventory`], collecting **every** problem with its location.
//!
//! Operators fix inventories in bulk (a new rack, a renumbered OOB subnet); a checker that stops at the first
//! error makes that a loop of edit–run–edit. So parsing is staged: the TOML syntax tree keeps spans, each
//! device is deserialized on its own, unknown keys are collected everywhere, and the semantic checks run over
//! whatever deserialized.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::Path;

use ipnet::IpNet;
use lifeline_types::{
    BmcProtocol, ConfigSource, CredentialRef, CredentialRefError, DeviceName, Fabric, Fingerprint, Platform,
    Role, Tier,
};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::credentials::{self, Resolution};
use crate::location::{Diagnostic, Severity, SourceMap};
use crate::model::*;
use crate::raw::*;

mod diag;
mod topology;
use diag::Cx;

/// The outcome of checking one file: all diagnostics, and the model when there were no errors.
#[derive(Debug)]
pub struct Report {
    pub diagnostics: Vec<Diagnostic>,
    pub inventory: Option<Inventory>,
}

impl Report {
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Error)
    }

    pub fn has_errors(&self) -> bool {
        self.errors().next().is_some()
    }
}

const TOP_LEVEL_KEYS: &[&str] = &["cluster", "defaults", "site", "rack", "device"];

/// Checks inventory text as if read from `file`.
pub fn check_str(file: &Path, text: &str) -> Report {
    let map = SourceMap::new(file, text);
    let mut cx = Cx { map: &map, diags: Vec::new(), checked_credentials: Default::default() };
    let (root, syntax) = DeTable::parse_recoverable(text);
    for e in syntax {
        cx.toml_error(&e, "syntax error");
    }
    let root_span = root.span();
    let mut root = root.into_inner();
    root.make_owned();

    cx.fix_top_level(&mut root, TOP_LEVEL_KEYS);

    // Devices are taken out and deserialized one at a time.
    let devices_value = root.iter().find(|(k, _)| k.get_ref() == "device").map(|(_, v)| v.clone());
    let mut rest = DeTable::default();
    for (k, v) in root.iter() {
        if k.get_ref() != "device" && TOP_LEVEL_KEYS.contains(&k.get_ref().as_ref()) {
            rest.insert(k.clone(), v.clone());
        }
    }
    let rest = Spanned::new(root_span.clone(), rest);
    let raw: RawFile = cx.deserialize(rest, "").unwrap_or_default();

    let mut raw_devices = Vec::new();
    match devices_value {
        None => {}
        Some(v) => match v.get_ref() {
            DeValue::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    match item.get_ref() {
                        DeValue::Table(t) => {
                            let label = match t.get("name").and_then(|n| n.get_ref().as_str()) {
                                Some(name) => format!("device `{name}`"),
                                None => format!("device #{}", i + 1),
                            };
                            let t = Spanned::new(item.span(), t.clone());
                            if let Some(d) = cx.deserialize::<RawDevice>(t, &label) {
                                raw_devices.push(Spanned::new(item.span(), d));
                            }
                        }
                        other => cx.err(
                            item.span().start,
                            format!("each `device` must be a table, found {}", other.type_str()),
                        ),
                    }
                }
            }
            other => cx.err(
                v.span().start,
                format!("`device` must be an array of tables (`[[device]]`), found {}", other.type_str()),
            ),
        },
    }

    let inventory = Validator { cx: &mut cx, file }.validate(raw, raw_devices);
    let mut diagnostics = cx.diags;
    diagnostics.sort_by_key(|a| (a.line, a.col));
    let inventory = if diagnostics.iter().any(|d| d.severity == Severity::Error) { None } else { inventory };
    Report { diagnostics, inventory }
}

struct Validator<'c, 'm> {
    cx: &'c mut Cx<'m>,
    file: &'c Path,
}

/// Which table a network endpoint was declared in, for duplicate messages.
struct AddrUse {
    device: String,
    what: &'static str,
    line: usize,
}

impl Validator<'_, '_> {
    fn line(&self, offset: usize) -> usize {
        self.cx.map.line_col(offset).0
    }

    fn parse_word<T: std::str::FromStr>(&mut self, v: &Spanned<String>, what: &str) -> Option<T>
    where
        T::Err: std::fmt::Display,
    {
        match v.get_ref().parse::<T>() {
            Ok(t) => Some(t),
            Err(e) => {
                self.cx.err(v.span().start, format!("{what}: {e}"));
                None
            }
        }
    }

    fn validate(mut self, raw: RawFile, devices: Vec<Spanned<RawDevice>>) -> Option<Inventory> {
        let cluster = match &raw.cluster {
            Some(c) => {
                let c = c.get_ref();
                let mut subnets = Vec::new();
                for s in &c.oob_subnets {
                    match s.get_ref().parse::<IpNet>() {
                        Ok(n) => subnets.push(n),
                        Err(_) => self.cx.err(
                            s.span().start,
                            format!(
                                "invalid CIDR `{}` in cluster.oob-subnets (expected e.g. `10.0.0.0/16`)",
                                s.get_ref()
                            ),
                        ),
                    }
                }
                if c.oob_subnets.is_empty() {
                    self.cx.warn(
                        c.name.span().start,
                        "cluster.oob-subnets is empty: BMC and management addresses cannot be checked",
                    );
                }
                Some(Cluster {
                    name: c.name.get_ref().clone(),
                    description: c.description.clone(),
                    oob_subnets: subnets,
                })
            }
            None => {
                self.cx.err(0, "missing [cluster] table (name and oob-subnets)");
                None
            }
        };
        let subnets = cluster.as_ref().map(|c| c.oob_subnets.clone()).unwrap_or_default();

        let defaults = raw.defaults.unwrap_or_default();
        let bmc_defaults = defaults.bmc.unwrap_or_default();
        let mgmt_defaults = defaults.management.unwrap_or_default();

        let mut sites = Vec::new();
        let mut site_lines: HashMap<String, usize> = HashMap::new();
        for s in &raw.site {
            let name = &s.get_ref().name;
            if let Some(first) = site_lines.get(name.get_ref()) {
                self.cx.err(
                    name.span().start,
                    format!("duplicate site name `{}` (first defined at line {first})", name.get_ref()),
                );
                continue;
            }
            site_lines.insert(name.get_ref().clone(), self.line(name.span().start));
            let s = s.get_ref();
            sites.push(Site {
                name: name.get_ref().clone(),
                description: s.description.clone(),
                location: s.location.clone(),
            });
        }

        let mut racks = Vec::new();
        let mut rack_site: HashMap<String, (String, usize)> = HashMap::new();
        for r in &raw.rack {
            let rr = r.get_ref();
            if let Some((_, first)) = rack_site.get(rr.name.get_ref()) {
                self.cx.err(
                    rr.name.span().start,
                    format!("duplicate rack name `{}` (first defined at line {first})", rr.name.get_ref()),
                );
                continue;
            }
            if !site_lines.contains_key(rr.site.get_ref()) {
                self.cx.err(
                    rr.site.span().start,
                    format!("rack `{}` names unknown site `{}`", rr.name.get_ref(), rr.site.get_ref()),
                );
            }
            rack_site.insert(
                rr.name.get_ref().clone(),
                (rr.site.get_ref().clone(), self.line(rr.name.span().start)),
            );
            racks.push(Rack {
                name: rr.name.get_ref().clone(),
                site: rr.site.get_ref().clone(),
                row: rr.row.clone(),
                description: rr.description.clone(),
            });
        }

        let mut out = Vec::new();
        let mut names: HashMap<String, usize> = HashMap::new();
        let mut addrs: BTreeMap<(String, Option<u16>), AddrUse> = BTreeMap::new();
        for d in &devices {
            let dev_line = self.line(d.span().start);
            let d = d.get_ref();
            let name_text = d.name.get_ref();
            let name = match DeviceName::new(name_text.clone()) {
                Ok(n) => Some(n),
                Err(e) => {
                    self.cx.err(d.name.span().start, format!("invalid device name: {e}"));
                    None
                }
            };
            if let Some(first) = names.get(name_text) {
                self.cx.err(
                    d.name.span().start,
                    format!("duplicate device name `{name_text}` (first defined at line {first})"),
                );
            } else {
                names.insert(name_text.clone(), self.line(d.name.span().start));
            }
            let role: Option<Role> = self.parse_word(&d.role, "role");
            let site = match rack_site.get(d.rack.get_ref()) {
                Some((site, _)) => Some(site.clone()),
                None => {
                    self.cx.err(
                        d.rack.span().start,
                        format!("device `{name_text}` names unknown rack `{}`", d.rack.get_ref()),
                    );
                    None
                }
            };
            let groups: Vec<String> = d
                .groups
                .iter()
                .filter_map(|g| match DeviceName::new(g.get_ref().clone()) {
                    Ok(_) => Some(g.get_ref().clone()),
                    Err(e) => {
                        self.cx.err(g.span().start, format!("invalid group name: {e}"));
                        None
                    }
                })
                .collect();

            let switch = self.switch_info(d, role);
            let bmc =
                d.bmc.as_ref().and_then(|b| self.bmc(name_text, b, &bmc_defaults, &subnets, &mut addrs));
            let management = d
                .management
                .as_ref()
                .and_then(|m| self.management(name_text, m, &mgmt_defaults, &subnets, &mut addrs));
            if let Some(role) = role {
                if role.is_server() && d.bmc.is_none() {
                    self.cx.err(
                        d.name.span().start,
                        format!("{role} `{name_text}` has no [device.bmc]: every server needs its BMC"),
                    );
                }
                if role == Role::Switch && d.management.is_none() {
                    self.cx.err(
                        d.name.span().start,
                        format!("switch `{name_text}` has no [device.management] address"),
                    );
                }
            }
            let frontend = d.frontend.as_ref().map(|f| {
                let f = f.get_ref();
                Frontend {
                    address: f.address.as_ref().and_then(|a| self.host(a, "frontend.address")),
                    interface: f.interface.as_ref().map(|i| i.get_ref().clone()),
                    ssh_user: f.ssh_user.clone(),
                }
            });
            let gpus = d.gpus.as_ref().map(|g| {
                let gg = g.get_ref();
                if *gg.count.get_ref() == 0 {
                    self.cx.err(
                        gg.count.span().start,
                        "gpus.count must be at least 1 (omit [device.gpus] for a node without GPUs)",
                    );
                }
                Gpus { count: *gg.count.get_ref(), model: gg.model.clone() }
            });
            let rails = self.rails(name_text, &d.rail);
            if let (Some(role), Some(g)) = (role, &d.gpus)
                && role != Role::GpuNode
            {
                self.cx.warn(
                    g.span().start,
                    format!(
                        "{role} `{name_text}` declares GPUs; only gpu-node devices are verified for them"
                    ),
                );
            }
            if role == Some(Role::GpuNode) && d.gpus.is_none() {
                self.cx.warn(d.name.span().start, format!("gpu-node `{name_text}` declares no [device.gpus]; the agent cannot check the GPU count"));
            }
            if let Some(g) = &d.gpus {
                let backend = rails.iter().filter(|r| r.fabric == Fabric::Backend).count();
                let count = *g.get_ref().count.get_ref() as usize;
                if backend > 0 && backend != count {
                    self.cx.err(
                        g.get_ref().count.span().start,
                        format!("`{name_text}` declares {count} GPUs but {backend} backend rails (one rail per GPU expected)"),
                    );
                }
            }
            if let (Some(name), Some(role), Some(site)) = (name, role, site) {
                out.push(Device {
                    name,
                    role,
                    rack: d.rack.get_ref().clone(),
                    site,
                    model: d.model.clone(),
                    description: d.description.clone(),
                    groups,
                    switch,
                    bmc,
                    management,
                    frontend,
                    gpus,
                    rails,
                    pdus: d.pdus.iter().map(|p| p.get_ref().clone()).collect(),
                    nvlink_domain: d.nvlink_domain.as_ref().map(|x| x.get_ref().clone()),
                    oob_switch: d.oob_switch.as_ref().map(|x| x.get_ref().clone()),
                    oob_port: d.oob_port.as_ref().map(|x| x.get_ref().clone()),
                    line: dev_line,
                });
            }
        }
        topology::check(self.cx, &devices);
        let _ = self.file;
        Some(Inventory { source: self.file.to_path_buf(), cluster: cluster?, sites, racks, devices: out })
    }

    /// A switch's `config-source`: one its platform has (the platform's default when not given).
    fn config_source(&mut self, d: &RawDevice, platform: Platform) -> Option<ConfigSource> {
        let allowed = ConfigSource::allowed(platform);
        let Some(v) = &d.config_source else { return Some(allowed[0]) };
        let source: ConfigSource = self.parse_word(v, "config-source")?;
        if allowed.contains(&source) {
            return Some(source);
        }
        let names: Vec<&str> = allowed.iter().map(|s| s.as_str()).collect();
        self.cx.err(
            v.span().start,
            format!(
                "config-source `{source}` does not apply to {platform} switch `{}` (expected one of: {})",
                d.name.get_ref(),
                names.join(", ")
            ),
        );
        None
    }

    fn switch_info(&mut self, d: &RawDevice, role: Option<Role>) -> Option<SwitchInfo> {
        let platform: Option<Platform> = d.platform.as_ref().and_then(|p| self.parse_word(p, "platform"));
        let fabric: Option<Fabric> = d.fabric.as_ref().and_then(|f| self.parse_word(f, "fabric"));
        let tier: Option<Tier> = d.tier.as_ref().and_then(|t| self.parse_word(t, "tier"));
        let name = d.name.get_ref();
        match role {
            Some(Role::Switch) => {
                if d.platform.is_none() {
                    self.cx.err(
                        d.name.span().start,
                        format!(
                            "switch `{name}` has no platform (expected one of: {})",
                            Platform::expected()
                        ),
                    );
                }
                if d.fabric.is_none() {
                    self.cx.err(
                        d.name.span().start,
                        format!("switch `{name}` has no fabric (expected one of: {})", Fabric::expected()),
                    );
                }
                let platform = platform?;
                let config_source = self.config_source(d, platform);
                Some(SwitchInfo { fabric: fabric?, tier, platform, config_source: config_source? })
            }
            Some(role) => {
                for (k, v) in [
                    ("platform", &d.platform),
                    ("fabric", &d.fabric),
                    ("tier", &d.tier),
                    ("config-source", &d.config_source),
                ] {
                    if let Some(v) = v {
                        self.cx.err(
                            v.span().start,
                            format!("`{k}` applies to switches only, but `{name}` is a {role}"),
                        );
                    }
                }
                None
            }
            None => None,
        }
    }

    fn host(&mut self, v: &Spanned<String>, what: &str) -> Option<Host> {
        let s = v.get_ref().trim();
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Some(Host::Ip(ip));
        }
        let looks_numeric = s.chars().all(|c| c.is_ascii_digit() || c == '.');
        let valid_name = !s.is_empty()
            && s.len() <= 253
            && s.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            });
        if looks_numeric || !valid_name {
            self.cx.err(
                v.span().start,
                format!(
                    "invalid address `{}` in {what} (expected an IP address or a host name)",
                    v.get_ref()
                ),
            );
            return None;
        }
        Some(Host::Name(s.to_owned()))
    }

    fn check_oob(&mut self, host: &Host, v: &Spanned<String>, subnets: &[IpNet], what: &str) {
        if let Host::Ip(ip) = host
            && !subnets.is_empty()
            && !subnets.iter().any(|n| n.contains(ip))
        {
            let list: Vec<String> = subnets.iter().map(|n| n.to_string()).collect();
            self.cx.err(
                v.span().start,
                format!("{what} {ip} is outside the declared OOB subnets ({})", list.join(", ")),
            );
        }
    }

    fn check_dup(
        &mut self,
        addrs: &mut BTreeMap<(String, Option<u16>), AddrUse>,
        host: &Host,
        port: Option<u16>,
        at: usize,
        device: &str,
        what: &'static str,
    ) {
        let key = (host.to_string(), port);
        let line = self.line(at);
        if let Some(first) = addrs.get(&key) {
            let port_txt = port.map(|p| format!(":{p}")).unwrap_or_default();
            self.cx.err(
                at,
                format!(
                    "duplicate address {host}{port_txt}: {what} of `{device}` is also the {} of `{}` (line {})",
                    first.what, first.device, first.line
                ),
            );
        } else {
            addrs.insert(key, AddrUse { device: device.to_owned(), what, line });
        }
    }

    fn credential(
        &mut self,
        device: &str,
        own: Option<&Spanned<String>>,
        default: Option<&Spanned<String>>,
        password: Option<&Spanned<String>>,
        table: &str,
        at: usize,
    ) -> Option<CredentialRef> {
        if let Some(p) = password {
            self.cx.err(
                p.span().start,
                format!("plaintext password in [{table}] of `{device}`: use `credential = \"env:NAME\"` or `\"file:PATH\"` instead"),
            );
        }
        let Some(c) = own.or(default) else {
            if password.is_none() {
                self.cx.err(
                    at,
                    format!(
                        "[{table}] of `{device}` has no credential and [defaults.{}] gives none",
                        table.trim_start_matches("device.")
                    ),
                );
            }
            return None;
        };
        match c.get_ref().parse::<CredentialRef>() {
            Ok(r) => {
                if self.cx.checked_credentials.insert((r.to_string(), c.span().start)) {
                    match credentials::check(&r) {
                        Resolution::Ok => {}
                        Resolution::Warning(w) => {
                            self.cx.warn(c.span().start, format!("credential `{r}`: {w}"))
                        }
                        Resolution::Error(e) => self.cx.err(
                            c.span().start,
                            format!("credential `{r}` (used by `{device}`) cannot be resolved: {e}"),
                        ),
                    }
                }
                Some(r)
            }
            Err(CredentialRefError::Plaintext) => {
                self.cx.err(
                    c.span().start,
                    format!(
                        "plaintext credential in [{table}] of `{device}`: {}",
                        CredentialRefError::Plaintext
                    ),
                );
                None
            }
            Err(e) => {
                self.cx.err(c.span().start, format!("invalid credential reference for `{device}`: {e}"));
                None
            }
        }
    }

    fn fingerprint(&mut self, v: Option<&Spanned<String>>, what: &str) -> Option<Fingerprint> {
        let v = v?;
        match v.get_ref().parse::<Fingerprint>() {
            Ok(f) => Some(f),
            Err(e) => {
                self.cx.err(v.span().start, format!("invalid {what}: {e}"));
                None
            }
        }
    }

    fn port(&mut self, p: Option<&Spanned<u16>>, what: &str) -> Option<u16> {
        let p = p?;
        if *p.get_ref() == 0 {
            self.cx.err(p.span().start, format!("{what} port 0 is not a valid port"));
            return None;
        }
        Some(*p.get_ref())
    }

    fn bmc(
        &mut self,
        device: &str,
        b: &Spanned<RawBmc>,
        defaults: &RawBmcDefaults,
        subnets: &[IpNet],
        addrs: &mut BTreeMap<(String, Option<u16>), AddrUse>,
    ) -> Option<Bmc> {
        let at = b.span().start;
        let b = b.get_ref();
        let address = self.host(&b.address, "bmc.address");
        let port = self.port(b.port.as_ref(), "bmc");
        if let Some(h) = &address {
            self.check_oob(h, &b.address, subnets, "BMC address");
            self.check_dup(addrs, h, port, b.address.span().start, device, "BMC");
        }
        let protocol = match b.protocol.as_ref().or(defaults.protocol.as_ref()) {
            Some(p) => self.parse_word::<BmcProtocol>(p, "bmc.protocol"),
            None => Some(BmcProtocol::Auto),
        };
        let username = b.username.as_ref().or(defaults.username.as_ref()).map(|u| u.get_ref().clone());
        if username.is_none() {
            self.cx
                .err(at, format!("[device.bmc] of `{device}` has no username and [defaults.bmc] gives none"));
        }
        let credential = self.credential(
            device,
            b.credential.as_ref(),
            defaults.credential.as_ref(),
            b.password.as_ref(),
            "device.bmc",
            at,
        );
        let tls_fingerprint = self.fingerprint(b.tls_fingerprint.as_ref(), "bmc.tls-fingerprint");
        if b.tls_fingerprint.is_some() && tls_fingerprint.is_none() {
            return None;
        }
        let tls = b.tls.as_ref().is_none_or(|t| *t.get_ref());
        if !tls {
            let at = b.tls.as_ref().map_or(at, |t| t.span().start);
            if tls_fingerprint.is_some() {
                self.cx
                    .err(at, format!("[device.bmc] of `{device}`: `tls = false` with a `tls-fingerprint`"));
                return None;
            }
            if protocol == Some(BmcProtocol::Ipmi) {
                self.cx
                    .warn(at, format!("[device.bmc] of `{device}`: `tls = false` has no effect over IPMI"));
            }
        }
        let flavor = b.flavor.as_ref().or(defaults.flavor.as_ref()).map(|f| f.get_ref().clone());
        match (flavor.as_deref() == Some("replay"), &b.tree) {
            (true, None) => self.cx.err(
                at,
                format!("[device.bmc] of `{device}`: `flavor = \"replay\"` needs `tree = PATH` (a captured Redfish tree)"),
            ),
            (false, Some(t)) => self.cx.err(
                t.span().start,
                format!("[device.bmc] of `{device}`: `tree` is only read with `flavor = \"replay\"`"),
            ),
            _ => {}
        }
        Some(Bmc {
            address: address?,
            port,
            protocol: protocol?,
            username: username?,
            credential: credential?,
            tls_fingerprint,
            tls,
            flavor,
            tree: b.tree.as_ref().map(|t| t.get_ref().into()),
        })
    }

    fn management(
        &mut self,
        device: &str,
        m: &Spanned<RawManagement>,
        defaults: &RawMgmtDefaults,
        subnets: &[IpNet],
        addrs: &mut BTreeMap<(String, Option<u16>), AddrUse>,
    ) -> Option<Management> {
        let at = m.span().start;
        let m = m.get_ref();
        let address = self.host(&m.address, "management.address");
        let port = self.port(m.port.as_ref(), "management");
        if let Some(h) = &address {
            self.check_oob(h, &m.address, subnets, "management address");
            self.check_dup(addrs, h, port, m.address.span().start, device, "management address");
        }
        let username = m.username.as_ref().or(defaults.username.as_ref()).map(|u| u.get_ref().clone());
        if username.is_none() {
            self.cx.err(
                at,
                format!(
                    "[device.management] of `{device}` has no username and [defaults.management] gives none"
                ),
            );
        }
        let credential = self.credential(
            device,
            m.credential.as_ref(),
            defaults.credential.as_ref(),
            m.password.as_ref(),
            "device.management",
            at,
        );
        let ssh_host_key = self.fingerprint(m.ssh_host_key.as_ref(), "management.ssh-host-key");
        let (timeouts, problems) = crate::timeouts::check(
            m.timeouts.as_ref().map(|t| t.get_ref()),
            defaults.timeouts.as_ref().map(|t| t.get_ref()),
        );
        for (offset, msg) in problems {
            self.cx.err(offset, format!("[device.management] of `{device}`: {msg}"));
        }
        Some(Management {
            address: address?,
            port,
            username: username?,
            credential: credential?,
            ssh_host_key,
            legacy_ssh: m.legacy_ssh.unwrap_or(false),
            timeouts,
        })
    }

    fn rails(&mut self, device: &str, raw: &[Spanned<RawRail>]) -> Vec<Rail> {
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut out = Vec::new();
        for r in raw {
            let r = r.get_ref();
            let hca = r.hca.get_ref();
            if hca.is_empty() || !hca.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                self.cx.err(
                    r.hca.span().start,
                    format!("invalid HCA name `{hca}` on `{device}` (expected e.g. `mlx5_0`)"),
                );
            }
            if let Some(first) = seen.get(hca) {
                self.cx.err(
                    r.hca.span().start,
                    format!("duplicate rail `{hca}` on `{device}` (first at line {first})"),
                );
            } else {
                seen.insert(hca.clone(), self.line(r.hca.span().start));
            }
            let fabric = match &r.fabric {
                Some(f) => match self.parse_word::<Fabric>(f, "rail.fabric") {
                    Some(Fabric::Backend) => Some(Fabric::Backend),
                    Some(Fabric::Storage) => Some(Fabric::Storage),
                    Some(other) => {
                        self.cx.err(
                            f.span().start,
                            format!("rail.fabric must be `backend` or `storage`, not `{other}`"),
                        );
                        None
                    }
                    None => None,
                },
                None => Some(Fabric::Backend),
            };
            let subnet = r.subnet.as_ref().and_then(|s| match s.get_ref().parse::<IpNet>() {
                Ok(n) => Some(n),
                Err(_) => {
                    self.cx.err(
                        s.span().start,
                        format!("invalid CIDR `{}` in rail.subnet of `{device}`", s.get_ref()),
                    );
                    None
                }
            });
            let address = r.address.as_ref().and_then(|a| {
                let text = a.get_ref();
                let ip = text.parse::<IpAddr>().ok().or_else(|| text.parse::<IpNet>().ok().map(|n| n.addr()));
                match ip {
                    Some(ip) => {
                        if let Some(n) = subnet
                            && !n.contains(&ip)
                        {
                            self.cx.err(
                                a.span().start,
                                format!("rail address {ip} of `{device}` is outside its subnet {n}"),
                            );
                        }
                        Some(ip)
                    }
                    None => {
                        self.cx.err(
                            a.span().start,
                            format!("invalid address `{text}` in rail.address of `{device}`"),
                        );
                        None
                    }
                }
            });
            if let Some(m) = &r.mtu
                && !(576..=9216).contains(m.get_ref())
            {
                self.cx.err(
                    m.span().start,
                    format!("rail MTU {} of `{device}` is outside 576..=9216", m.get_ref()),
                );
            }
            if let Some(rate) = &r.rate_gbps
                && *rate.get_ref() == 0
            {
                self.cx.err(rate.span().start, "rail rate-gbps must be positive");
            }
            let link_layer = match &r.link_layer {
                Some(l) => self.parse_word::<LinkLayer>(l, "rail.link-layer"),
                None => Some(LinkLayer::Ethernet),
            };
            if let (Some(fabric), Some(link_layer)) = (fabric, link_layer) {
                out.push(Rail {
                    hca: hca.clone(),
                    netdev: r.netdev.as_ref().map(|n| n.get_ref().clone()),
                    fabric,
                    subnet,
                    address,
                    rate_gbps: r.rate_gbps.as_ref().map(|x| *x.get_ref()),
                    mtu: r.mtu.as_ref().map(|x| *x.get_ref()),
                    link_layer,
                    leaf: r.leaf.as_ref().map(|x| x.get_ref().clone()),
                    port: r.port.as_ref().map(|x| x.get_ref().clone()),
                });
            }
        }
        out
    }
}
