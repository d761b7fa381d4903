//! The one way from what the operator named (device names, racks, roles, globs, BMC URLs) to endpoints with
//! their credentials resolved: BMC targets, switch SSH targets, SOL consoles. Every credential is resolved
//! before anything is contacted, so a bad reference fails the request instead of locking out half a rack.

use std::net::SocketAddr;

use lifeline_bmc::BmcTarget;
use lifeline_console::SolTransport;
use lifeline_inventory::{Device, Inventory, credentials};
use lifeline_netcfg::{AlgorithmProfile, BackupTarget, SshAuth, SshTarget, Timeouts, Transport};
use lifeline_types::Role;
use serde::Serialize;

use crate::context::Lifeline;
use crate::error::{EngineError, Result};

/// One BMC to act on, with what the confirmation prompt and the guard need to know about it.
#[derive(Debug, Clone)]
pub struct SelectedBmc {
    pub target: BmcTarget,
    /// `None` for a `--bmc URL` outside the inventory.
    pub role: Option<Role>,
    pub rack: Option<String>,
}

impl SelectedBmc {
    pub fn name(&self) -> &str {
        &self.target.name
    }
}

/// The BMCs of a selection.
#[derive(Debug, Clone, Default)]
pub struct BmcSelection {
    pub bmcs: Vec<SelectedBmc>,
    /// Devices selected by a group, rack or role that have no BMC (reported, not fatal).
    pub skipped: Vec<String>,
}

impl BmcSelection {
    pub fn names(&self) -> Vec<&str> {
        self.bmcs.iter().map(SelectedBmc::name).collect()
    }

    /// Grouped by role for a confirmation prompt: `gpu-node: gpu-node-01, gpu-node-02`.
    pub fn by_role(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for b in &self.bmcs {
            let role = b.role.map(|r| r.to_string()).unwrap_or_else(|| "outside the inventory".into());
            match groups.iter_mut().find(|(r, _)| *r == role) {
                Some((_, names)) => names.push(b.name().to_owned()),
                None => groups.push((role, vec![b.name().to_owned()])),
            }
        }
        groups
    }

    /// Whether a role that keeps the cluster running (head nodes, storage, switches) is hit.
    pub fn hits_control_plane(&self) -> bool {
        self.bmcs.iter().any(|b| matches!(b.role, Some(Role::HeadNode | Role::StorageServer | Role::Switch)))
    }
}

/// A BMC named by URL (`ipmi://USER@HOST[:PORT]`, `redfish://…`) with its password from the front end.
#[derive(Debug, Clone)]
pub struct BmcUrl {
    pub url: String,
    pub password: String,
}

pub fn bmc_target(d: &Device, password: String) -> Option<BmcTarget> {
    let b = d.bmc.as_ref()?;
    let mut t =
        BmcTarget::new(d.name.to_string(), b.address.to_string(), b.protocol, b.username.clone(), password);
    if let Some(p) = b.port {
        t = t.with_port(p);
    }
    t.tls_pin = b.tls_fingerprint;
    // Plain-HTTP Redfish only where the inventory says so (`tls = false`); warned and audited as insecure.
    t.redfish_tls = b.tls;
    // What `health` and sweeps compare the BMC's GPU list with (a missing GPU is a fault by itself).
    t.expected_gpus = d.gpus.as_ref().map(|g| g.count);
    Some(t)
}

fn select<'a>(inv: &'a Inventory, names: &[String]) -> Result<Vec<&'a Device>> {
    lifeline_inventory::select(inv, names).map_err(EngineError::Select)
}

impl Lifeline {
    /// BMCs of `names` (or the whole fleet when `default_all` and nothing is named) plus `urls`.
    pub fn select_bmcs(&self, names: &[String], urls: &[BmcUrl], default_all: bool) -> Result<BmcSelection> {
        let mut sel = BmcSelection::default();
        let names: Vec<String> = if names.is_empty() && default_all && urls.is_empty() {
            vec!["all".into()]
        } else {
            names.to_vec()
        };
        if !names.is_empty() {
            let inv = self.inventory()?;
            let mut problems = Vec::new();
            for d in select(&inv, &names)? {
                let Some(b) = &d.bmc else {
                    if names.iter().any(|n| n == d.name.as_str()) {
                        problems.push(format!("`{}` has no BMC in the inventory", d.name));
                    } else {
                        sel.skipped.push(d.name.to_string());
                    }
                    continue;
                };
                match self.resolve_bmc_credential(&b.credential, d.name.as_str()) {
                    Ok(pw) => sel.bmcs.extend(bmc_target(d, pw).map(|target| SelectedBmc {
                        target,
                        role: Some(d.role),
                        rack: Some(d.rack.clone()),
                    })),
                    Err(e) => problems.push(format!("`{}`: credential `{}`: {e}", d.name, b.credential)),
                }
            }
            if !problems.is_empty() {
                return Err(EngineError::Credentials { problems });
            }
        }
        for u in urls {
            let target = BmcTarget::parse_url(&u.url, u.password.clone())
                .map_err(|e| EngineError::bad_argument(format!("--bmc {}: {e}", u.url)))?;
            sel.bmcs.push(SelectedBmc { target, role: None, rack: None });
        }
        if sel.bmcs.is_empty() {
            return Err(EngineError::NoTargets {
                what: "no BMC selected (name devices, racks, roles or globs, or pass --bmc URL)".into(),
            });
        }
        Ok(sel)
    }

    /// Switches of `names` (every switch when empty), SSH credentials resolved.
    pub fn select_switches(&self, names: &[String]) -> Result<Vec<BackupTarget>> {
        let inv = self.inventory()?;
        let names = if names.is_empty() { vec!["switch".to_owned()] } else { names.to_vec() };
        let mut problems = Vec::new();
        let mut out = Vec::new();
        for d in select(&inv, &names)?.into_iter().filter(|d| d.switch.is_some()) {
            match switch_target(d) {
                Ok(t) => out.push(t),
                Err(e) => problems.push(e),
            }
        }
        if !problems.is_empty() {
            return Err(EngineError::Credentials { problems });
        }
        if out.is_empty() {
            return Err(EngineError::NoTargets { what: "no switch among the targets".into() });
        }
        Ok(out)
    }

    /// One switch by name.
    pub fn switch(&self, name: &str) -> Result<BackupTarget> {
        let inv = self.inventory()?;
        let d = inv.device(name).ok_or_else(|| EngineError::UnknownDevice { name: name.into() })?;
        switch_target(d).map_err(|e| EngineError::Credentials { problems: vec![e] })
    }

    /// The SOL endpoint of a device's BMC (IPMI port: the inventory's when the BMC speaks IPMI, else 623).
    pub async fn sol_transport(&self, name: &str) -> Result<SolTransport> {
        let inv = self.inventory()?;
        let d = inv.device(name).ok_or_else(|| EngineError::UnknownDevice { name: name.into() })?;
        let b = d.bmc.as_ref().ok_or_else(|| EngineError::NoTargets {
            what: format!("`{}` has no BMC: no serial-over-LAN console", d.name),
        })?;
        let password = self.resolve_bmc_credential(&b.credential, d.name.as_str()).map_err(|e| {
            EngineError::Credentials {
                problems: vec![format!("`{}`: credential `{}`: {e}", d.name, b.credential)],
            }
        })?;
        let port = match b.protocol {
            lifeline_types::BmcProtocol::Ipmi => b.port.unwrap_or(623),
            _ => 623,
        };
        let host = b.address.to_string();
        let addr: SocketAddr = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            tokio::net::lookup_host((host.as_str(), port)),
        )
        .await
        .ok()
        .and_then(|r| r.ok())
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            EngineError::bad_argument(format!("cannot resolve BMC address `{host}` of `{}`", d.name))
        })?;
        let mut cfg = lifeline_ipmi::ClientConfig::new(b.username.clone(), password.clone());
        // The console's session is written down while open (its process may be killed with it), and what
        // dead processes of ours left on this BMC is closed first: a killed console's SOL payload would
        // otherwise answer "already active" until the BMC times its session out.
        if let Ok(pool) = self.bmc_pool().await {
            cfg.record = pool.ipmi_recorder(d.name.as_str());
            if let Some(t) = bmc_target(d, password) {
                pool.bmc(t).close_dead_owners_ipmi().await;
            }
        }
        Ok(SolTransport::new(d.name.to_string(), addr, cfg))
    }

    /// GPU nodes among the selection (verify, drain, readmit act on those only).
    pub fn select_gpu_nodes(&self, names: &[String]) -> Result<Vec<Device>> {
        let inv = self.inventory()?;
        let nodes: Vec<Device> =
            select(&inv, names)?.into_iter().filter(|d| d.role == Role::GpuNode).cloned().collect();
        if nodes.is_empty() {
            return Err(EngineError::NoTargets { what: "no GPU node among the targets".into() });
        }
        Ok(nodes)
    }
}

/// The SSH side of a switch from the inventory, with its password resolved.
fn switch_target(d: &Device) -> std::result::Result<BackupTarget, String> {
    let sw = d.switch.as_ref().ok_or_else(|| format!("`{}` is not a switch", d.name))?;
    let m = d.management.as_ref().ok_or_else(|| format!("`{}` has no management address", d.name))?;
    let password = credentials::resolve(&m.credential)
        .map_err(|e| format!("`{}`: credential `{}`: {e}", d.name, m.credential))?;
    let ssh = SshTarget {
        device: d.name.clone(),
        host: m.address.to_string(),
        port: m.port.unwrap_or(22),
        username: m.username.clone(),
        auth: SshAuth::Password(password),
        enable_password: None,
        algorithms: m.legacy_ssh.then_some(AlgorithmProfile::LEGACY),
        transport: Transport::Auto,
        timeouts: Timeouts::resolve(&overrides(&m.timeouts), None),
    };
    Ok(BackupTarget::new(ssh, sw.platform).with_source(sw.config_source))
}

/// The inventory's per-switch SSH limits as netcfg's overrides.
fn overrides(t: &lifeline_inventory::SshTimeouts) -> lifeline_netcfg::TimeoutOverrides {
    lifeline_netcfg::TimeoutOverrides {
        connect: t.connect,
        auth: t.auth,
        prompt: t.prompt,
        command: t.command,
        total: t.total,
    }
}

/// A device's place, for result rows.
#[derive(Debug, Clone, Serialize)]
pub struct Placement {
    pub name: String,
    pub role: Option<Role>,
    pub rack: Option<String>,
}
