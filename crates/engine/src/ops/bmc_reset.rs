//! Resetting a BMC (not its host): IPMI Cold Reset (NetFn App 0x06, command 0x02), confirmed by the BMC
//! answering again. For the runbook that answers a BMC whose Redfish service stopped answering: IPMI is the
//! other door, and a cold reset restarts the management controller without touching the host's power.
//! Redfish `Manager.Reset` is not offered yet: the Redfish client does not expose a POST to callers.

use std::time::{Duration, Instant};

use lifeline_ipmi::{ClientConfig, Privilege, Session};
use serde::Serialize;

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result, error_chain};
use crate::ops::Acted;
use crate::targets::SelectedBmc;

/// A BMC reset's result.
#[derive(Debug, Clone, Serialize)]
pub struct BmcReset {
    pub bmc: String,
    pub protocol: &'static str,
    /// The reset command was acknowledged (a BMC may reset before its reply leaves: not required).
    pub acknowledged: bool,
    /// The BMC answered again afterwards (read its power state), and after how long.
    pub answering: bool,
    pub answered_after_ms: Option<u64>,
    pub last_error: Option<String>,
}

impl Lifeline {
    /// Cold-resets the BMC over IPMI and waits up to `wait` for it to answer again; under the target's lease
    /// with the request's idempotency, audited as `bmc.reset`.
    pub async fn bmc_reset(&self, bmc: &SelectedBmc, wait: Duration) -> Result<Acted<BmcReset>> {
        let t = bmc.target.clone();
        let name = t.name.clone();
        let key = name.clone();
        let audit = self.audit().await?;
        let pool = self.bmc_pool().await?;
        self.guarded(&key, "bmc.reset", |rid| async move {
            let intent = audit
                .intent(
                    "bmc.reset",
                    &name,
                    Some(&rid),
                    serde_json::json!({ "protocol": "ipmi", "address": t.address, "port": t.ipmi_port }),
                )
                .await?;
            let sent = cold_reset(&t).await;
            let acknowledged = match &sent {
                Ok(ack) => *ack,
                Err(e) => {
                    let err = EngineError::failed(&name, format!("IPMI cold reset: {e}"));
                    audit
                        .outcome(intent, Outcome::Failed, serde_json::json!({ "error": err.chain() }))
                        .await?;
                    return Err(err);
                }
            };
            // The BMC goes away for a while; it has come back when it answers a power-state read.
            let start = Instant::now();
            tokio::time::sleep(Duration::from_secs(1).min(wait)).await;
            // Asked over IPMI, the protocol the reset went over (Redfish may be what is broken).
            let mut over_ipmi = t.clone();
            over_ipmi.protocol = lifeline_types::BmcProtocol::Ipmi;
            let h = pool.bmc(over_ipmi);
            let mut last_error = None;
            let mut answered_after_ms = None;
            while start.elapsed() < wait {
                match h.power_state().await {
                    Ok(_) => {
                        answered_after_ms =
                            Some(u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX));
                        break;
                    }
                    Err(e) => last_error = Some(error_chain(&e)),
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            let r = BmcReset {
                bmc: name.clone(),
                protocol: "ipmi",
                acknowledged,
                answering: answered_after_ms.is_some(),
                answered_after_ms,
                last_error,
            };
            let o = if r.answering { Outcome::Ok } else { Outcome::Unverified };
            audit.outcome(intent, o, &r).await?;
            Ok(r)
        })
        .await
    }
}

/// Sends Cold Reset; `Ok(false)` when it went out but no reply came (the BMC reset first).
async fn cold_reset(t: &lifeline_bmc::BmcTarget) -> std::result::Result<bool, String> {
    let addr = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::net::lookup_host((t.address.as_str(), t.ipmi_port)),
    )
    .await
    .map_err(|_| format!("resolving {} timed out", t.address))?
    .map_err(|e| format!("resolving {}: {e}", t.address))?
    .next()
    .ok_or_else(|| format!("{} has no address", t.address))?;
    let mut cfg = ClientConfig::new(t.username.clone(), t.password.clone());
    cfg.privilege = Privilege::Administrator;
    let session = tokio::time::timeout(Duration::from_secs(20), Session::open(addr, &cfg))
        .await
        .map_err(|_| format!("no IPMI session with {addr} within 20 s"))?
        .map_err(|e| format!("IPMI session with {addr}: {}", error_chain(&e)))?;
    let ack = matches!(
        tokio::time::timeout(Duration::from_secs(5), session.raw(0x06, 0x02, Vec::new())).await,
        Ok(Ok(_))
    );
    // The session died with the BMC; closing is a courtesy.
    let _ = tokio::time::timeout(Duration::from_secs(2), session.close()).await;
    Ok(ack)
}
