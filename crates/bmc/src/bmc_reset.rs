//! Resetting the management controller itself (not the host): IPMI Cold/Warm Reset or Redfish
//! `Manager.Reset`, with the reset type taken from the Manager's own AllowableValues / ActionInfo (never
//! the system's), confirmed by the BMC answering again on the protocol used within a deadline.
//!
//! What "answering again" means: a power-state read over the same protocol succeeds, with a fresh
//! connection. Before polling, the pool forgets what it learnt about the BMC (Redfish paths, the IPMI
//! cipher suite), so the next connection is built from scratch against the restarted controller.

use std::time::{Duration, Instant};

use lifeline_ipmi::wire::Privilege;
use lifeline_ipmi::wire::boot::BmcResetKind;
use lifeline_redfish::RedfishError;
use lifeline_redfish::bmc_model::{ManagerDoc, plan_manager_reset};
use lifeline_types::BmcProtocol;
use serde::Serialize;

use crate::conn::{Conn, RedfishConn, ipmi_err, rf_err};
use crate::error::{BmcError, error_chain};
use crate::pool::Bmc;

/// How long one "is it back?" read may take before it counts as not answering.
const POLL_LIMIT: Duration = Duration::from_millis(1500);
const POLL_PAUSE: Duration = Duration::from_millis(500);

/// A BMC reset and whether the BMC came back.
#[derive(Debug, Clone, Serialize)]
pub struct BmcResetReport {
    pub bmc: String,
    pub protocol: BmcProtocol,
    /// `cold` or `warm`.
    pub kind: &'static str,
    /// What was sent, in words (`Cold Reset (App 0x02)`, `Manager.Reset ForceRestart`).
    pub sent: String,
    /// The command was acknowledged (a BMC may restart before its reply leaves: not required).
    pub acknowledged: bool,
    /// A read failed after the reset (the controller was seen going away).
    pub went_away: bool,
    /// The BMC answered again within the deadline, and after how long.
    pub answering: bool,
    pub answered_after_ms: Option<u64>,
    pub last_error: Option<String>,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl RedfishConn {
    /// The Manager of the system this target names (its `ManagedBy`), else the first `BMC` manager, else the
    /// first one.
    async fn own_manager(&mut self) -> Result<ManagerDoc, BmcError> {
        let managed_by = match self.system().await {
            Ok(s) => s.managed_by,
            Err(_) => Vec::new(),
        };
        let list = self.client.manager_docs().await.map_err(rf_err(&self.bmc))?.items;
        let pick = list
            .iter()
            .position(|m| {
                managed_by.iter().any(|l| l.trim_end_matches('/') == m.odata_id.trim_end_matches('/'))
            })
            .or_else(|| list.iter().position(|m| m.manager_type.as_deref() == Some("BMC")))
            .or(if list.is_empty() { None } else { Some(0) });
        match pick {
            Some(i) => Ok(list.into_iter().nth(i).unwrap_or_default()),
            None => {
                Err(BmcError::NotOffered { bmc: self.bmc.clone(), what: "the BMC lists no Manager".into() })
            }
        }
    }

    async fn reset_manager(&mut self, warm: bool) -> Result<(String, bool), BmcError> {
        let m = self.own_manager().await?;
        if m.reset.is_none() {
            return Err(BmcError::NotOffered {
                bmc: self.bmc.clone(),
                what: format!("Manager {} offers no #Manager.Reset action", m.odata_id),
            });
        }
        let (allowed, _) = self.client.manager_reset_types(&m).await.map_err(rf_err(&self.bmc))?;
        let t = plan_manager_reset(warm, allowed.as_deref()).ok_or_else(|| BmcError::NotOffered {
            bmc: self.bmc.clone(),
            what: format!(
                "Manager {} allows no {} reset type (it allows: {})",
                m.odata_id,
                if warm { "warm (GracefulRestart)" } else { "cold (ForceRestart, GracefulRestart)" },
                allowed.unwrap_or_default().join(", ")
            ),
        })?;
        let sent = format!("Manager.Reset {t} ({})", m.odata_id);
        match self.client.manager_reset(&m, &t).await {
            Ok(()) => Ok((sent, true)),
            Err(RedfishError::ActionOutcomeUnknown { .. }) => Ok((sent, false)),
            Err(e) => Err(rf_err(&self.bmc)(e)),
        }
    }
}

impl Bmc {
    /// Resets the BMC over its protocol (the caller audits), then waits up to `wait` for it to answer again.
    pub async fn reset_bmc(&self, warm: bool, wait: Duration) -> Result<BmcResetReport, BmcError> {
        let pool = self.pool().clone();
        let _permit = pool.permit().await;
        let opened = self.open_conn(Privilege::Administrator, pool.opts.op_timeout).await?;
        let protocol = opened.protocol;
        let mut conn = opened.conn;
        let kind = if warm { BmcResetKind::Warm } else { BmcResetKind::Cold };
        let sent = match &mut conn {
            Conn::Ipmi(c) => {
                let what = match kind {
                    BmcResetKind::Cold => "Cold Reset (App 0x02)",
                    BmcResetKind::Warm => "Warm Reset (App 0x03)",
                };
                c.session.bmc_reset(kind).await.map(|ack| (what.to_owned(), ack)).map_err(ipmi_err(&c.bmc))
            }
            Conn::Redfish(c) => c.reset_manager(warm).await,
        };
        // The downtime counts from the reset, not from our clean-up.
        let start = Instant::now();
        // The session died with the controller (unless the reset was refused): closing is a courtesy, brief.
        let close = if sent.is_ok() { Duration::from_millis(300) } else { Duration::from_secs(2) };
        let _ = tokio::time::timeout(close, conn.close()).await;
        let (sent, acknowledged) = sent?;
        // Sessions, paths and the cipher suite are rebuilt against the restarted controller.
        pool.unlearn(self.name());
        pool.suites.forget(self.name());
        drop(_permit);

        tokio::time::sleep(Duration::from_secs(1).min(wait)).await;
        let probe = self.over(protocol);
        let mut went_away = false;
        let mut last_error = None;
        let mut answered_after_ms = None;
        while start.elapsed() < wait {
            match tokio::time::timeout(POLL_LIMIT, probe.power_state()).await {
                Ok(Ok(_)) => {
                    answered_after_ms = Some(ms(start.elapsed()));
                    break;
                }
                Ok(Err(e)) => {
                    went_away = true;
                    last_error = Some(error_chain(&e));
                }
                Err(_) => {
                    went_away = true;
                    last_error = Some(format!("no answer within {} ms", POLL_LIMIT.as_millis()));
                }
            }
            pool.unlearn(self.name());
            tokio::time::sleep(POLL_PAUSE).await;
        }
        Ok(BmcResetReport {
            bmc: self.name().to_owned(),
            protocol,
            kind: if warm { "warm" } else { "cold" },
            sent,
            acknowledged,
            went_away,
            answering: answered_after_ms.is_some(),
            answered_after_ms,
            last_error: if answered_after_ms.is_some() && !went_away { None } else { last_error },
        })
    }
}
