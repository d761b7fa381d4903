//! Virtual media of each selected BMC: show the slots, insert an image (and boot once from it), eject.
//! Inserts and ejects run under the target's lease and are audited as `media.insert` / `media.eject`
//! (the image server's password never in the record); see `lifeline_bmc::media` for the read-back.

pub use lifeline_bmc::media::{MediaUrl, MediaUrlError};
use lifeline_bmc::{Bmc, BmcError, MediaReport, MediaShow};
pub use lifeline_bmc::{ImageCredentials, MediaRequest};

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::ops::{Acted, Row};
use crate::targets::BmcSelection;

impl Lifeline {
    /// The virtual media slots as each BMC reports them.
    pub async fn media_show(&self, sel: &BmcSelection) -> Result<Vec<Row<MediaShow>>> {
        self.each_bmc(sel, |bmc| async move { bmc.media_show().await }).await
    }

    /// Inserts `req.image` on each BMC (one-time boot from it when asked), read back.
    pub async fn media_insert(
        &self,
        sel: &BmcSelection,
        req: MediaRequest,
    ) -> Result<Vec<Row<Acted<MediaReport>>>> {
        let intent = serde_json::json!({
            "image": req.image.url, "boot_once": req.boot_once, "write_protected": req.write_protected,
            "image_user": req.credentials.as_ref().map(|c| c.username.clone()),
        });
        self.media_act(sel, "media.insert", intent, move |bmc| {
            let req = req.clone();
            async move { bmc.media_insert(req).await }
        })
        .await
    }

    /// Ejects whatever media each BMC holds, read back.
    pub async fn media_eject(&self, sel: &BmcSelection) -> Result<Vec<Row<Acted<MediaReport>>>> {
        self.media_act(
            sel,
            "media.eject",
            serde_json::json!({}),
            |bmc| async move { bmc.media_eject().await },
        )
        .await
    }

    async fn media_act<F, Fut>(
        &self,
        sel: &BmcSelection,
        action: &'static str,
        intent_body: serde_json::Value,
        f: F,
    ) -> Result<Vec<Row<Acted<MediaReport>>>>
    where
        F: Fn(Bmc) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<MediaReport, BmcError>>,
    {
        let pool = self.bmc_pool().await?;
        let audit = self.audit().await?;
        let mut rows = Vec::new();
        for b in &sel.bmcs {
            let bmc = pool.bmc(b.target.clone());
            let name = bmc.name().to_owned();
            let (audit, who, body, f) = (audit.clone(), name.clone(), intent_body.clone(), &f);
            let r = self
                .guarded(&name, action, |rid| async move {
                    let intent = audit.intent(action, &who, Some(&rid), body).await?;
                    match f(bmc).await {
                        Ok(r) => {
                            let o = if r.confirmed { Outcome::Ok } else { Outcome::Failed };
                            audit.outcome(intent, o, &r).await?;
                            Ok(r)
                        }
                        Err(source) => {
                            let err = EngineError::Bmc { target: who.clone(), source };
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
