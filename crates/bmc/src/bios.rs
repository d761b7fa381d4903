//! BIOS settings: show the attributes in force and those pending, stage changes in the settings object
//! (applied by the BMC at the host's next reset) and read them back. IPMI has no standard BIOS settings:
//! over IPMI this says so in words.
//!
//! Why stage and not apply: a Redfish BIOS applies pending settings at POST; whether they took is only
//! known from the `Bios` resource after the reset, which the caller (the engine's `bios apply`) reads.

use std::collections::BTreeMap;

use lifeline_ipmi::wire::Privilege;
pub use lifeline_redfish::bios_model::{Drift, drift, same_value};
use lifeline_types::BmcProtocol;
use serde::Serialize;
use serde_json::Value;

use crate::conn::{RedfishConn, rf_err};
use crate::error::BmcError;
use crate::pool::Bmc;

/// `bios show`.
#[derive(Debug, Clone, Serialize)]
pub struct BiosShow {
    pub bmc: String,
    pub protocol: BmcProtocol,
    /// In force now.
    pub attributes: BTreeMap<String, Value>,
    /// Pending (applied at the next reset): only values that differ from those in force.
    pub pending: BTreeMap<String, Value>,
    /// Where changes are PATCHed (the settings object, else the `Bios` resource itself).
    pub settings: String,
    pub warnings: Vec<String>,
}

/// Changes staged and read back from the settings object.
#[derive(Debug, Clone, Serialize)]
pub struct BiosStaged {
    pub bmc: String,
    pub sent: String,
    /// Every change reads back (pending, or already in force).
    pub staged: bool,
    pub differences: Vec<String>,
    pub after: BiosShow,
}

fn unsupported(bmc: &str) -> BmcError {
    BmcError::NotOffered {
        bmc: bmc.to_owned(),
        what: "BIOS settings are not supported over IPMI (IPMI has no standard BIOS settings; the BMC must \
               offer a Redfish Bios resource)"
            .into(),
    }
}

impl RedfishConn {
    async fn bios_read(&mut self) -> Result<BiosShow, BmcError> {
        let sys = self.system().await?;
        let (current, pending, warnings) =
            self.client.bios(&sys).await.map_err(rf_err(&self.bmc))?.ok_or_else(|| BmcError::NotOffered {
                bmc: self.bmc.clone(),
                what: format!(
                    "BIOS settings are not supported: system {} links no Bios resource",
                    sys.odata_id
                ),
            })?;
        let pending_attrs = pending
            .map(|p| p.attributes)
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, v)| current.attributes.get(k).is_none_or(|c| !same_value(c, v)))
            .collect();
        Ok(BiosShow {
            bmc: self.bmc.clone(),
            protocol: BmcProtocol::Redfish,
            settings: current.settings_object.clone().unwrap_or(current.odata_id.clone()),
            attributes: current.attributes,
            pending: pending_attrs,
            warnings: warnings.iter().map(|w| format!("{}: {}", w.at, w.problem)).collect(),
        })
    }

    async fn bios_stage(&mut self, changes: &BTreeMap<String, Value>) -> Result<BiosStaged, BmcError> {
        let before = self.bios_read().await?;
        let unknown: Vec<&str> =
            changes.keys().filter(|k| !before.attributes.contains_key(*k)).map(String::as_str).collect();
        if !unknown.is_empty() {
            return Err(BmcError::NotOffered {
                bmc: self.bmc.clone(),
                what: format!("the BIOS has no attribute {} (nothing was sent)", unknown.join(", ")),
            });
        }
        self.client.patch_bios(&before.settings, changes).await.map_err(rf_err(&self.bmc))?;
        let sent = format!("PATCH {} {}", before.settings, serde_json::json!({ "Attributes": changes }));
        let after = self.bios_read().await?;
        let differences: Vec<String> = changes
            .iter()
            .filter(|(k, v)| {
                let seen = after.pending.get(*k).or(after.attributes.get(*k));
                !seen.is_some_and(|s| same_value(s, v))
            })
            .map(|(k, v)| format!("{k}: asked for {v}, the BMC shows neither it pending nor in force"))
            .collect();
        Ok(BiosStaged { bmc: self.bmc.clone(), sent, staged: differences.is_empty(), differences, after })
    }
}

impl Bmc {
    /// The BIOS attributes in force and pending.
    pub async fn bios_show(&self) -> Result<BiosShow, BmcError> {
        Ok(self.redfish_only(Privilege::Operator, unsupported, |c| Box::pin(c.bios_read())).await?.1)
    }

    /// Stages `changes` in the settings object (applied at the next reset) and reads them back.
    pub async fn bios_stage(&self, changes: BTreeMap<String, Value>) -> Result<BiosStaged, BmcError> {
        let f = self.redfish_only(Privilege::Administrator, unsupported, move |c| {
            Box::pin(async move { c.bios_stage(&changes).await })
        });
        Ok(f.await?.1)
    }
}
