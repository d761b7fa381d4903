//! The next boot device of each selected BMC's host: read (`boot show`) and set (`boot pxe …`), each
//! change read back (see `lifeline_bmc::boot`) and audited as `boot.set` under the target's lease.

use lifeline_bmc::{BootReport, BootRequest, BootShow};
use lifeline_types::AuditAction;

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::ops::{Acted, Row};
use crate::targets::BmcSelection;

impl Lifeline {
    /// The boot override as each BMC reports it.
    pub async fn boot_show(&self, sel: &BmcSelection) -> Result<Vec<Row<BootShow>>> {
        self.each_bmc(sel, |bmc| async move { bmc.boot_show().await }).await
    }

    /// Sets the boot device on each BMC and reads it back.
    pub async fn boot_set(
        &self,
        sel: &BmcSelection,
        req: BootRequest,
    ) -> Result<Vec<Row<Acted<BootReport>>>> {
        let pool = self.bmc_pool().await?;
        let audit = self.audit().await?;
        let mut rows = Vec::new();
        for b in &sel.bmcs {
            let bmc = pool.bmc(b.target.clone());
            let name = bmc.name().to_owned();
            let audit = audit.clone();
            let (bmc, who) = (&bmc, name.clone());
            let r = self
                .guarded(&name, AuditAction::BootSet, |rid| async move {
                    let name = who;
                    let intent = audit
                        .intent(
                            AuditAction::BootSet,
                            &name,
                            Some(&rid),
                            serde_json::to_value(req).unwrap_or_default(),
                        )
                        .await?;
                    match bmc.boot_set(req).await {
                        Ok(r) => {
                            let o = if r.applied() { Outcome::Ok } else { Outcome::Failed };
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
                .await;
            rows.push(Row::new("bmc", name, r));
        }
        Ok(rows)
    }
}
