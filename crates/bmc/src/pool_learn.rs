//! What a pool learns about each BMC on the way (its IPMI cipher suite, its Redfish service root, system and
//! the resource paths a visit used) and shares with the pool's next connection and, through the protocol
//! memory, with the next process: so a later first contact skips rediscovery. Split from `pool` (the fleet
//! handle and its operations) because it is its own concern: what to keep, when it is stale, what to write.

use std::collections::HashMap;
use std::sync::Arc;

use crate::conn::{self, Conn};
use crate::memory::{Discovery, RedfishDiscovery, RedfishResourcePaths};
use crate::pool::{PoolInner, lock};

/// A BMC's discovery as last written to the memory (the root shared with `redfish_paths`, compared by
/// pointer first).
#[derive(Clone, Default)]
pub(crate) struct Persisted {
    suite: Option<u8>,
    redfish: Option<conn::RedfishPaths>,
}

impl Persisted {
    /// The resource paths part (written on its own: see [`ProtocolMemory::remember_redfish_resources`]).
    fn resources(&self) -> RedfishResourcePaths {
        self.redfish.as_ref().map(|r| (*r.resources).clone()).unwrap_or_default()
    }
}

impl Persisted {
    fn same(&self, other: &Persisted) -> bool {
        self.suite == other.suite
            && match (&self.redfish, &other.redfish) {
                (None, None) => true,
                (Some(a), Some(b)) => {
                    a.url == b.url
                        && a.system == b.system
                        && (Arc::ptr_eq(&a.root, &b.root) || a.root == b.root)
                }
                _ => false,
            }
    }

    fn discovery(&self) -> Discovery {
        Discovery {
            ipmi_suite: self.suite,
            redfish: self.redfish.as_ref().map(|r| RedfishDiscovery {
                url: r.url.clone(),
                root: serde_json::from_str(&r.root).unwrap_or_default(),
                system: r.system.clone(),
            }),
        }
    }
}

impl PoolInner {
    pub(crate) fn redfish_paths(&self, bmc: &str) -> Option<conn::RedfishPaths> {
        lock(&self.redfish_paths).get(bmc).cloned()
    }

    /// Remember what this connection discovered (root document, the system it used, the logs and chassis
    /// it read). Resource paths of a previous connection are kept only while the service root is the same
    /// document (a firmware update may move them).
    pub(crate) fn learn(&self, bmc: &str, url: String, c: &Conn) {
        if let Conn::Redfish(rc) = c {
            let system = rc.system.as_ref().map(|s| s.odata_id.clone());
            let text = rc.client.service_root_document().to_string();
            let mut map = lock(&self.redfish_paths);
            let prev = map.get(bmc).filter(|k| k.url == url);
            let keep = prev.and_then(|k| k.system.clone());
            let same_root = prev.is_some_and(|k| *k.root == *text);
            // The same document keeps the same allocation (and compares by pointer when persisting).
            let root = match prev {
                Some(k) if same_root => k.root.clone(),
                _ => Arc::from(text),
            };
            let mut resources = match prev {
                Some(k) if same_root => (*k.resources).clone(),
                _ => RedfishResourcePaths::default(),
            };
            if let Some(l) = &rc.used_logs {
                resources.logs = l.clone();
            }
            if let Some(c) = &rc.used_chassis {
                resources.chassis = c.clone();
            }
            resources.url = if resources.is_empty() { String::new() } else { url.clone() };
            let resources = match prev {
                Some(k) if *k.resources == resources => k.resources.clone(),
                _ => Arc::new(resources),
            };
            let paths = conn::RedfishPaths { url, root, system: system.or(keep), resources };
            map.insert(bmc.to_owned(), paths);
        }
    }

    /// Forget a BMC's Redfish discovery (after a failure that may come from a stale cache).
    pub(crate) fn unlearn(&self, bmc: &str) {
        lock(&self.redfish_paths).remove(bmc);
    }

    /// Loads what earlier processes discovered (once per pool, one query); a memory that cannot be read
    /// only costs rediscovery.
    pub(crate) async fn load_discoveries(&self) {
        self.discovery_loaded
            .get_or_init(|| async {
                let all = match self.memory.recall_discoveries().await {
                    Ok(all) => all,
                    Err(e) => {
                        tracing::warn!(error = %e, "BMC discovery memory unreadable; discovering afresh");
                        return;
                    }
                };
                let mut resources = self.memory.recall_redfish_resources().await.unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "Redfish resource paths unreadable; navigating afresh");
                    HashMap::new()
                });
                let mut paths = lock(&self.redfish_paths);
                let mut persisted = lock(&self.persisted);
                for (bmc, d) in all {
                    let suite = d.ipmi_suite.and_then(lifeline_ipmi::CipherSuite::from_id);
                    if let Some(s) = suite
                        && self.suites.get(&bmc).is_none()
                    {
                        self.suites.set(&bmc, s);
                    }
                    let redfish = d.redfish.map(|r| {
                        let res = resources.remove(&bmc).filter(|p| p.url == r.url).unwrap_or_default();
                        conn::RedfishPaths {
                            url: r.url,
                            root: Arc::from(r.root.to_string()),
                            system: r.system,
                            resources: Arc::new(res),
                        }
                    });
                    if let Some(r) = &redfish {
                        paths.entry(bmc.clone()).or_insert_with(|| r.clone());
                    }
                    persisted.insert(bmc, Persisted { suite: suite.map(|s| s.id()), redfish });
                }
            })
            .await;
    }

    /// Writes `bmc`'s discovery to the memory if it changed since last written.
    pub(crate) async fn persist(&self, bmc: &str) {
        let now = Persisted {
            suite: self.suites.get(bmc).map(|s| s.id()),
            redfish: lock(&self.redfish_paths).get(bmc).cloned(),
        };
        let (discovery_changed, resources_changed) = {
            let mut p = lock(&self.persisted);
            let before = p.get(bmc).cloned().unwrap_or_default();
            let changed = (!before.same(&now), before.resources() != now.resources());
            if changed != (false, false) {
                p.insert(bmc.to_owned(), now.clone());
            }
            changed
        };
        if discovery_changed && let Err(e) = self.memory.remember_discovery(bmc, &now.discovery()).await {
            tracing::warn!(%bmc, error = %e, "BMC discovery not remembered");
        }
        if resources_changed
            && let Err(e) = self.memory.remember_redfish_resources(bmc, &now.resources()).await
        {
            tracing::warn!(%bmc, error = %e, "Redfish resource paths not remembered");
        }
    }
}
