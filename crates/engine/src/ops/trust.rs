//! Re-pinning a BMC's TLS certificate or a switch's SSH host key after an intended replacement, in two
//! steps. First a look ([`Lifeline::bmc_trust_view`], [`Lifeline::switch_trust_view`]): the fingerprint
//! pinned now and the one presented now, read without sending a credential and without storing anything.
//! Then the re-pin ([`Lifeline::bmc_trust`], [`Lifeline::backup_trust`]) carries the fingerprint the
//! operator was shown, and stores only that one: a certificate or key swapped between the look and the
//! confirmation (someone on the OOB network answering in the BMC's place) is refused with both named.
//! Front ends never re-pin "whatever is there" (CLI: a prompt or `--fingerprint`; API: `expected_fingerprint`).

use std::sync::Arc;

use lifeline_types::{AuditAction, Fingerprint};
use serde::Serialize;

use crate::adapters::{StoreIndex, StorePins};
use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::ops::Row;
use crate::ops::backup::SwitchTrust;
use crate::ops::bmc::Trusted;
use crate::targets::{BmcSelection, SelectedBmc};

/// What a re-pin would change, for the operator to confirm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrustView {
    pub device: String,
    /// `tls-certificate` (a BMC) or `ssh-host-key` (a switch).
    pub kind: &'static str,
    /// Pinned now (`None`: nothing yet, the next connection would pin on first use).
    pub pinned: Option<Fingerprint>,
    /// Presented now; confirm a re-pin by sending exactly this back.
    pub presented: Fingerprint,
    /// A pin written in the inventory (BMCs only); it wins over the store, so a different one must be edited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inventory_pin: Option<Fingerprint>,
    /// Whether confirming would change the stored pin.
    pub changes: bool,
}

impl TrustView {
    fn new(device: &str, kind: &'static str, pinned: Option<Fingerprint>, presented: Fingerprint) -> Self {
        TrustView {
            device: device.to_owned(),
            kind,
            pinned,
            presented,
            inventory_pin: None,
            changes: pinned != Some(presented),
        }
    }
}

fn not_confirmed(
    target: &str,
    expected: Fingerprint,
    presented: Fingerprint,
    pinned: Option<Fingerprint>,
) -> EngineError {
    EngineError::NotConfirmed { target: target.to_owned(), expected, presented, pinned }
}

impl Lifeline {
    /// The pinned and the presented certificate of each Redfish BMC (nothing stored, no credential sent).
    pub async fn bmc_trust_view(&self, sel: &BmcSelection) -> Result<Vec<Row<TrustView>>> {
        let pins = StorePins(self.store().await?.clone());
        let opts = lifeline_redfish::ClientOptions::default();
        let mut rows = Vec::new();
        for b in &sel.bmcs {
            let t = &b.target;
            let rt = lifeline_redfish::BmcTarget::new(t.name.clone(), t.redfish_url());
            let r = lifeline_redfish::presented_certificate(&rt, &pins, &opts)
                .await
                .map(|o| TrustView {
                    inventory_pin: t.tls_pin,
                    ..TrustView::new(&t.name, "tls-certificate", o.previous, o.current)
                })
                .map_err(|e| EngineError::failed_by(&t.name, "reading the presented certificate", e));
            rows.push(Row::new("bmc", t.name.clone(), r));
        }
        Ok(rows)
    }

    /// Re-pins one Redfish BMC's certificate to `expected`, the fingerprint the operator was shown and
    /// confirmed; anything else presented now is refused (conflict) and nothing is stored. Audited.
    pub async fn bmc_trust(&self, b: &SelectedBmc, expected: Fingerprint) -> Result<Trusted> {
        let pins = StorePins(self.store().await?.clone());
        let audit = self.audit().await?;
        let t = &b.target;
        let detail = serde_json::json!({ "url": t.redfish_url(), "expected": expected });
        let intent = audit.intent(AuditAction::BmcTrust, &t.name, None, detail).await?;
        let rt = lifeline_redfish::BmcTarget::new(t.name.clone(), t.redfish_url());
        let opts = lifeline_redfish::ClientOptions::default();
        let res = lifeline_redfish::trust(&rt, &pins, t.tls_pin, expected, &opts).await;
        let r = match res {
            Ok(o) => Ok(Trusted { bmc: t.name.clone(), previous: o.previous, current: o.current }),
            Err(lifeline_redfish::RedfishError::NotConfirmed { expected, presented, .. }) => {
                let pinned = lifeline_redfish::PinStore::get_pin(&pins, &t.name).await.ok().flatten();
                Err(not_confirmed(&t.name, expected, presented, pinned))
            }
            Err(e) => Err(EngineError::failed_by(&t.name, "trust", e)),
        };
        match &r {
            Ok(tr) => audit.outcome(intent, Outcome::Ok, tr).await?,
            Err(err) => {
                let outcome = if matches!(err, EngineError::NotConfirmed { .. }) {
                    Outcome::Refused
                } else {
                    Outcome::Failed
                };
                audit.outcome(intent, outcome, serde_json::json!({ "error": err.chain() })).await?
            }
        }
        r
    }

    /// The pinned and the presented SSH host key of a switch (the handshake ends once the key is seen).
    pub async fn switch_trust_view(&self, switch: &str) -> Result<TrustView> {
        let t = self.switch(switch)?;
        let store = self.store().await?.clone();
        let (pinned, presented) =
            lifeline_netcfg::backup::presented_host_key(&t, Arc::new(StoreIndex(store)))
                .await
                .map_err(|e| EngineError::failed_by(switch, "reading the presented host key", e))?;
        Ok(TrustView::new(switch, "ssh-host-key", pinned, presented))
    }

    /// Re-pins a switch's SSH host key to `expected` (shown by [`Lifeline::switch_trust_view`] and
    /// confirmed); another key presented now is refused (conflict) and nothing is stored. Audited.
    pub async fn backup_trust(&self, switch: &str, expected: Fingerprint) -> Result<SwitchTrust> {
        let t = self.switch(switch)?;
        let store = self.store().await?.clone();
        let audit = self.audit().await?;
        let intent = audit
            .intent(AuditAction::BackupTrust, switch, None, serde_json::json!({ "expected": expected }))
            .await?;
        let index = Arc::new(StoreIndex(store));
        let r = match lifeline_netcfg::backup::trust(&t, index.clone(), expected).await {
            Ok((previous, current)) => Ok(SwitchTrust { switch: switch.into(), previous, current }),
            Err(lifeline_netcfg::backup::BackupError::Ssh(
                lifeline_netcfg::ssh::SshError::HostKeyNotConfirmed { expected, presented, .. },
            )) => {
                let dev = t.device().clone();
                let pinned = lifeline_netcfg::HostKeyPins::get(index.as_ref(), &dev).await.ok().flatten();
                Err(not_confirmed(switch, expected, presented, pinned))
            }
            Err(e) => Err(EngineError::failed_by(switch, "trust", e)),
        };
        match &r {
            Ok(tr) => audit.outcome(intent, Outcome::Ok, tr).await?,
            Err(err) => {
                let outcome = if matches!(err, EngineError::NotConfirmed { .. }) {
                    Outcome::Refused
                } else {
                    Outcome::Failed
                };
                audit.outcome(intent, outcome, serde_json::json!({ "error": err.chain() })).await?
            }
        }
        r
    }
}
