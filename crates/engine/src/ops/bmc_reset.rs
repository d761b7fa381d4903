//! Resetting a BMC (not its host): IPMI Cold/Warm Reset or Redfish `Manager.Reset` (its type from the
//! Manager's own AllowableValues / ActionInfo), confirmed by the BMC answering again on the protocol used
//! (see `lifeline_bmc::bmc_reset`). The runbook that answers a BMC whose Redfish service stopped answering
//! forces IPMI, the other door; `lifeline bmc reset` uses the BMC's own protocol.

use std::time::Duration;

use lifeline_bmc::BmcResetReport;
use lifeline_types::{AuditAction, BmcProtocol};

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::ops::{Acted, Row};
use crate::targets::{BmcSelection, SelectedBmc};

/// The result of a BMC reset.
pub type BmcReset = BmcResetReport;

/// How to reset.
#[derive(Debug, Clone, Copy)]
pub struct BmcResetArgs {
    /// Warm Reset / `GracefulRestart` instead of Cold Reset / `ForceRestart`.
    pub warm: bool,
    /// Reset over this protocol instead of the BMC's own (`auto` resolves as usual).
    pub protocol: Option<BmcProtocol>,
    /// How long the BMC may take to answer again.
    pub wait: Duration,
}

impl Lifeline {
    /// Cold-resets the BMC over IPMI and waits up to `wait` for it to answer again (the runbook's
    /// `protocol = "ipmi"` step).
    pub async fn bmc_reset(&self, bmc: &SelectedBmc, wait: Duration) -> Result<Acted<BmcReset>> {
        let args = BmcResetArgs { warm: false, protocol: Some(BmcProtocol::Ipmi), wait };
        self.bmc_reset_one(bmc, args).await
    }

    /// Resets one BMC under its lease with the request's idempotency, audited as `bmc.reset`.
    pub async fn bmc_reset_one(&self, bmc: &SelectedBmc, args: BmcResetArgs) -> Result<Acted<BmcReset>> {
        let t = bmc.target.clone();
        let name = t.name.clone();
        let key = name.clone();
        let audit = self.audit().await?;
        let pool = self.bmc_pool().await?;
        self.guarded(&key, AuditAction::BmcReset, |rid| async move {
            let mut h = pool.bmc(t.clone());
            if let Some(p) = args.protocol {
                h = h.over(p);
            }
            let intent = audit
                .intent(
                    AuditAction::BmcReset,
                    &name,
                    Some(&rid),
                    serde_json::json!({
                        "protocol": h.target().protocol, "warm": args.warm, "address": t.address,
                        "wait_s": args.wait.as_secs(),
                    }),
                )
                .await?;
            match h.reset_bmc(args.warm, args.wait).await {
                Ok(r) => {
                    let o = if r.answering { Outcome::Ok } else { Outcome::Unverified };
                    audit.outcome(intent, o, &r).await?;
                    Ok(r)
                }
                Err(source) => {
                    let err = EngineError::Bmc { target: name.clone(), source };
                    audit
                        .outcome(intent, Outcome::Failed, serde_json::json!({ "error": err.chain() }))
                        .await?;
                    Err(err)
                }
            }
        })
        .await
    }

    /// `lifeline bmc reset`: each selected BMC in turn (a reset is rare and deliberate; one at a time keeps
    /// the fleet's management plane mostly up).
    pub async fn bmc_reset_all(
        &self,
        sel: &BmcSelection,
        args: BmcResetArgs,
    ) -> Result<Vec<Row<Acted<BmcReset>>>> {
        let mut rows = Vec::new();
        for b in &sel.bmcs {
            let r = self.bmc_reset_one(b, args).await;
            rows.push(Row::new("bmc", b.target.name.clone(), r));
        }
        Ok(rows)
    }
}
