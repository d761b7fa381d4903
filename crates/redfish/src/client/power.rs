//! Power: the state read fresh, the reset types the BMC allows, one reset POST (a lost reply is never
//! resent), and a planned power action with its read-back.

use std::time::Duration;

use reqwest::Method;

use lifeline_types::{PowerAction, PowerState};

use super::transport::is_connect;
use super::{Client, PowerOutcome};
use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model::{self, ComputerSystem};
use crate::power::{ResetPlan, plan_reset};

impl Client {
    /// Current power state, read fresh.
    pub async fn power_state(&self, system: &ComputerSystem) -> Result<PowerState, RedfishError> {
        let s = self.system(&system.odata_id).await?;
        Ok(s.power_state.unwrap_or(PowerState::Unknown))
    }

    /// Reset types the BMC allows: AllowableValues, else the ActionInfo document, else `None` (unknown).
    pub async fn reset_types(
        &self,
        system: &ComputerSystem,
    ) -> Result<(Option<Vec<String>>, Vec<FieldWarning>), RedfishError> {
        let Some(reset) = &system.reset else {
            return Err(RedfishError::Missing {
                bmc: self.bmc().to_owned(),
                url: system.odata_id.clone(),
                what: "#ComputerSystem.Reset action",
            });
        };
        let at = format!("{}/Actions/#ComputerSystem.Reset", system.odata_id);
        Ok(self.allowed_reset_types(reset, Some(&at)).await)
    }

    /// A reset action's types: its AllowableValues, else its ActionInfo document, else `None` (unknown;
    /// with `at`, a warning there that the DMTF base types are assumed). Shared by the system's and the
    /// Manager's reset.
    pub(crate) async fn allowed_reset_types(
        &self,
        reset: &model::ResetAction,
        at: Option<&str>,
    ) -> (Option<Vec<String>>, Vec<FieldWarning>) {
        let mut warnings = Vec::new();
        if let Some(a) = &reset.allowable {
            return (Some(a.clone()), warnings);
        }
        if let Some(info) = &reset.action_info {
            match self.get_json(info).await {
                Ok((v, notes)) => {
                    warnings.extend(notes);
                    let types = model::action_info_reset_types(&v, info, &mut warnings);
                    return (types, warnings);
                }
                Err(e) => warnings
                    .push(FieldWarning { at: info.clone(), problem: format!("ActionInfo unreadable: {e}") }),
            }
        }
        if let Some(at) = at {
            warnings.push(FieldWarning {
                at: at.to_owned(),
                problem: "no AllowableValues; assuming the DMTF base reset types".into(),
            });
        }
        (None, warnings)
    }

    /// POST one reset. A reply lost after the request may have been sent is `ActionOutcomeUnknown` and is
    /// never resent here: the caller must read the power state first.
    pub async fn reset(&self, system: &ComputerSystem, reset_type: &str) -> Result<(), RedfishError> {
        let target =
            system.reset.as_ref().map(|r| r.target.clone()).ok_or_else(|| RedfishError::Missing {
                bmc: self.bmc().to_owned(),
                url: system.odata_id.clone(),
                what: "#ComputerSystem.Reset action",
            })?;
        let body = serde_json::json!({ "ResetType": reset_type });
        match self.send_json(Method::POST, &target, Some(&body)).await {
            Ok(_) => Ok(()),
            Err(e @ (RedfishError::Timeout { .. } | RedfishError::Http { .. })) if !is_connect(&e) => {
                Err(RedfishError::ActionOutcomeUnknown {
                    bmc: self.bmc().to_owned(),
                    url: target,
                    reset_type: reset_type.to_owned(),
                    source: Box::new(e),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Perform a power action: read the state, choose reset type(s) from what the BMC allows minus quirks,
    /// send, read the state back. Already in the requested state: nothing is sent. `cycle`/`reset` of a
    /// host that is off powers it on.
    pub async fn power(
        &self,
        system: &ComputerSystem,
        action: PowerAction,
    ) -> Result<PowerOutcome, RedfishError> {
        let before = self.power_state(system).await?;
        let effective = match (action, before) {
            (PowerAction::On, PowerState::On) | (PowerAction::Off | PowerAction::Soft, PowerState::Off) => {
                return Ok(PowerOutcome { action, plan: None, before, after: before, warnings: Vec::new() });
            }
            (PowerAction::Cycle | PowerAction::Reset, PowerState::Off) => PowerAction::On,
            _ => action,
        };
        let (allowed, warnings) = self.reset_types(system).await?;
        let unsupported = self.inner.profile.unsupported_reset_types();
        let plan = plan_reset(effective, allowed.as_deref(), &unsupported).ok_or_else(|| {
            RedfishError::NoResetType {
                bmc: self.bmc().to_owned(),
                action,
                allowed: allowed.clone().unwrap_or_default(),
                unsupported: unsupported.clone(),
            }
        })?;
        match &plan {
            ResetPlan::Single(t) => self.reset(system, t).await?,
            ResetPlan::OffThenOn { off, on } => {
                self.reset(system, off).await?;
                self.wait_for(system, PowerState::Off, self.inner.opts.power_off_wait).await?;
                self.reset(system, on).await?;
            }
        }
        let after = self.power_state(system).await?;
        Ok(PowerOutcome { action, plan: Some(plan), before, after, warnings })
    }

    /// Poll until the system reports `wanted` or `limit` passes.
    pub async fn wait_for(
        &self,
        system: &ComputerSystem,
        wanted: PowerState,
        limit: Duration,
    ) -> Result<(), RedfishError> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let last = self.power_state(system).await?;
            if last == wanted {
                return Ok(());
            }
            if tokio::time::Instant::now() + self.inner.opts.power_poll_interval > deadline {
                return Err(RedfishError::PowerWait {
                    bmc: self.bmc().to_owned(),
                    wanted,
                    last,
                    after: limit,
                });
            }
            tokio::time::sleep(self.inner.opts.power_poll_interval).await;
        }
    }
}
