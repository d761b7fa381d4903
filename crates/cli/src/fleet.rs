//! Inventory → simulated fleet: the simulator never reads inventory files itself (it shares nothing with
//! the inventory crate), so the CLI describes the cluster to it as a `FleetSpec`.

use std::net::IpAddr;

use anyhow::{Context, bail};
use lifeline_inventory::{Host, Inventory, credentials};
use lifeline_sim::{
    BmcSpec, FleetSpec, GpuSpec, LinkLayer, LldpPeer, RailSpec, RedfishFlavor, ServerSpec, SwitchSpec,
};
use lifeline_types::{BmcProtocol, CredentialRef};

/// Password the simulator serves when the inventory's credential reference cannot be resolved here
/// (printed with the endpoints, so the operator can export it for the other commands).
pub const SIM_FALLBACK_PASSWORD: &str = "lifeline-sim";

fn ip(h: &Host, what: &str, device: &str) -> anyhow::Result<IpAddr> {
    match h {
        Host::Ip(ip) => Ok(*ip),
        Host::Name(n) => {
            bail!("{what} of `{device}` is the host name `{n}`; the simulator needs IP addresses")
        }
    }
}

/// Resolves a reference, or falls back to the simulator's default password.
pub fn sim_password(r: &CredentialRef) -> String {
    credentials::resolve(r).unwrap_or_else(|_| SIM_FALLBACK_PASSWORD.to_owned())
}

pub fn spec_from_inventory(inv: &Inventory) -> anyhow::Result<FleetSpec> {
    let mut spec = FleetSpec::default();
    for d in &inv.devices {
        let name = d.name.to_string();
        let bmc = match &d.bmc {
            Some(b) => {
                // The replay flavour serves a captured tree; its IPMI face is the generic one.
                let replay = (b.flavor.as_deref() == Some("replay")).then(|| {
                    let t = b.tree.clone().unwrap_or_default();
                    inv.source.parent().map(|d| d.join(&t)).unwrap_or(t)
                });
                let flavor = match b.flavor.as_deref().filter(|_| replay.is_none()) {
                    Some(f) => f
                        .parse::<RedfishFlavor>()
                        .map_err(anyhow::Error::msg)
                        .with_context(|| format!("{}:{}: device `{name}`", inv.source.display(), d.line))?,
                    None => RedfishFlavor::Generic,
                };
                Some(BmcSpec {
                    address: ip(&b.address, "BMC address", &name)?,
                    redfish_port: if b.protocol == BmcProtocol::Redfish { b.port } else { None },
                    ipmi_port: if b.protocol == BmcProtocol::Ipmi { b.port } else { None },
                    username: b.username.clone(),
                    password: sim_password(&b.credential),
                    flavor,
                    cipher_suites: Vec::new(),
                    session_limit: None,
                    replay,
                })
            }
            None => None,
        };
        match &d.switch {
            Some(sw) => {
                let m = d
                    .management
                    .as_ref()
                    .with_context(|| format!("switch `{name}` has no management port"))?;
                spec.switches.push(SwitchSpec {
                    name,
                    platform: sw.platform,
                    address: ip(&m.address, "management address", d.name.as_str())?,
                    ssh_port: m.port,
                    username: m.username.clone(),
                    password: sim_password(&m.credential),
                    bmc,
                    tier: sw.tier.map(|t| t.to_string()).unwrap_or_else(|| "leaf".into()),
                    lldp: Vec::new(),
                    config_source: Some(sw.config_source),
                });
            }
            None => {
                let Some(bmc) = bmc else { continue };
                let rails = d
                    .rails
                    .iter()
                    .filter_map(|r| {
                        let IpAddr::V4(ipv4) = r.address? else { return None };
                        Some(RailSpec {
                            hca: r.hca.clone(),
                            netdev: r.netdev.clone().unwrap_or_else(|| r.hca.clone()),
                            ipv4,
                            prefix: r.subnet.map(|s| s.prefix_len()).unwrap_or(24),
                            rate_gbps: r.rate_gbps.unwrap_or(400),
                            mtu: r.mtu.unwrap_or(9000),
                            link_layer: match r.link_layer {
                                lifeline_inventory::LinkLayer::Ethernet => LinkLayer::Ethernet,
                                lifeline_inventory::LinkLayer::Infiniband => LinkLayer::Infiniband,
                            },
                        })
                    })
                    .collect();
                let gpus = match &d.gpus {
                    Some(g) => GpuSpec {
                        count: u8::try_from(g.count).unwrap_or(u8::MAX),
                        model: g.model.clone().unwrap_or_else(|| GpuSpec::default().model),
                    },
                    None => GpuSpec { count: 0, model: String::new() },
                };
                spec.servers.push(ServerSpec {
                    name,
                    role: d.role.to_string(),
                    bmc,
                    gpus,
                    rails,
                    powered_on: true,
                });
            }
        }
    }
    // What each leaf's LLDP lists: the rails cabled to it, announced as lldpd on the node does (system
    // name the device, port description the NIC).
    for d in &inv.devices {
        for r in &d.rails {
            let (Some(leaf), Some(port)) = (&r.leaf, &r.port) else { continue };
            if let Some(sw) = spec.switches.iter_mut().find(|s| &s.name == leaf) {
                sw.lldp.push(LldpPeer {
                    port: port.clone(),
                    system_name: d.name.to_string(),
                    port_descr: r.netdev.clone().unwrap_or_else(|| r.hca.clone()),
                });
            }
        }
    }
    Ok(spec)
}
