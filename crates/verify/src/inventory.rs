//! Expectations derived from the fleet inventory (feature `inventory`).
//!
//! The inventory is the source of truth for what a node should have; the agent turns a node's entry into a
//! [`Policy`] so operators do not maintain a second file. Facts the inventory does not record (PCIe
//! generation, NVLink count) stay unset and their checks are skipped, visibly.

use std::net::IpAddr;

use ipnet::{IpNet, Ipv4Net};
use lifeline_inventory::{Inventory, LinkLayer as InvLinkLayer};

use crate::policy::{
    GpuPolicy, HostPolicy, LinkLayer, Policy, RailPolicy, SamplingPolicy, default_critical_xids,
};

/// Why a node's expectations cannot be derived.
#[derive(Debug, thiserror::Error)]
pub enum FromInventoryError {
    #[error("node {node} is not in the inventory")]
    UnknownNode { node: String },
    #[error("node {node} rail {hca}: {problem}")]
    Rail { node: String, hca: String, problem: String },
}

impl Policy {
    /// The expectations for `node` as declared in the inventory. Rails without an MTU expect 9000 (backend
    /// and storage rails are jumbo by design).
    pub fn from_inventory(inv: &Inventory, node: &str) -> Result<Policy, FromInventoryError> {
        let dev =
            inv.device(node).ok_or_else(|| FromInventoryError::UnknownNode { node: node.to_owned() })?;
        let gpus = dev.gpus.as_ref().map(|g| GpuPolicy {
            count: g.count,
            model: g.model.clone(),
            pcie_gen: None,
            pcie_width: None,
            nvlinks: None,
            max_temp_c: 85,
            xid_window_ms: 200,
            critical_xids: default_critical_xids(),
        });
        let mut rails = Vec::new();
        for r in &dev.rails {
            let err = |problem: &str| FromInventoryError::Rail {
                node: node.to_owned(),
                hca: r.hca.clone(),
                problem: problem.to_owned(),
            };
            let netdev = r.netdev.clone().ok_or_else(|| err("no netdev"))?;
            let rate_gbps = r.rate_gbps.ok_or_else(|| err("no rate_gbps"))?;
            let ipv4 = match (r.address, r.subnet) {
                (Some(IpAddr::V4(a)), Some(IpNet::V4(n))) => {
                    Some(Ipv4Net::new(a, n.prefix_len()).map_err(|_| err("bad prefix"))?)
                }
                (Some(IpAddr::V4(a)), _) => Some(Ipv4Net::new(a, 32).map_err(|_| err("bad address"))?),
                _ => None,
            };
            rails.push(RailPolicy {
                hca: r.hca.clone(),
                port: 1,
                netdev,
                ipv4,
                rate_gbps,
                mtu: r.mtu.unwrap_or(9000),
                link_layer: match r.link_layer {
                    InvLinkLayer::Ethernet => LinkLayer::Ethernet,
                    InvLinkLayer::Infiniband => LinkLayer::Infiniband,
                },
            });
        }
        let host = HostPolicy {
            frontend_interface: dev.frontend.as_ref().and_then(|f| f.interface.clone()),
            ..HostPolicy::default()
        };
        Ok(Policy { node: Some(node.to_owned()), gpus, rails, host, sampling: SamplingPolicy::default() })
    }
}
