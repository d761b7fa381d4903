//! Firmware updates of one BMC: what its UpdateService offers and the components it reports, a push
//! (`SimpleUpdate` for an image URL the BMC pulls, the multipart push for a file streamed from here), one
//! poll of the task it returned, and a fresh read of a component's version.
//!
//! Why no verdict here: an accepted push and a `Completed` task both happen on BMCs that then keep the old
//! image (a signature check at activation, a staged image never activated); only the version read back
//! after the apply time counts, and the engine's rollout decides that. IPMI has no standard firmware
//! update: over IPMI this says so in words.

use std::path::PathBuf;
use std::time::Duration;

use lifeline_ipmi::wire::Privilege;
pub use lifeline_redfish::update_model::{
    Component, FirmwareSlot, TaskDoc, TaskEnd, UpdateServiceDoc, version_cmp,
};
pub use lifeline_redfish::{TaskPoll, UpdateAccepted};
use lifeline_types::BmcProtocol;
use serde::Serialize;
use serde_json::{Value, json};

use crate::conn::{Conn, RedfishConn, rf_err};
use crate::error::BmcError;
use crate::pool::Bmc;

/// `firmware` read of one BMC.
#[derive(Debug, Clone, Serialize)]
pub struct FirmwareShow {
    pub bmc: String,
    pub protocol: BmcProtocol,
    pub service: UpdateServiceDoc,
    pub components: Vec<FirmwareSlot>,
    pub warnings: Vec<String>,
}

/// Where the image comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FirmwareImage {
    /// The BMC pulls it (`SimpleUpdate`).
    Url(String),
    /// Streamed from this file (multipart push).
    File(PathBuf),
}

/// One push.
#[derive(Debug, Clone)]
pub struct FirmwarePush {
    /// The component's `SoftwareInventory` link (the update's `Targets`).
    pub target: String,
    pub image: FirmwareImage,
    /// How long an upload may take.
    pub within: Duration,
}

/// What was sent and how the BMC took it.
#[derive(Debug, Clone, Serialize)]
pub struct PushReport {
    /// `SimpleUpdate` or `multipart`.
    pub method: &'static str,
    pub sent: String,
    /// The apply time asked for (`None`: the BMC lists none, nothing was sent).
    pub apply_time: Option<String>,
    pub accepted: UpdateAccepted,
}

fn unsupported(bmc: &str) -> BmcError {
    BmcError::NotOffered {
        bmc: bmc.to_owned(),
        what:
            "firmware update is not supported over IPMI (IPMI has no standard firmware update; the BMC must \
               offer a Redfish UpdateService)"
                .into(),
    }
}

impl RedfishConn {
    async fn update_service(&mut self) -> Result<UpdateServiceDoc, BmcError> {
        self.client.update_service().await.map_err(rf_err(&self.bmc))?.ok_or_else(|| BmcError::NotOffered {
            bmc: self.bmc.clone(),
            what: "firmware update is not supported: the service root links no UpdateService".into(),
        })
    }

    async fn firmware_show(
        &mut self,
    ) -> Result<(UpdateServiceDoc, Vec<FirmwareSlot>, Vec<String>), BmcError> {
        let service = self.update_service().await?;
        let Some(link) = service.firmware_inventory.clone() else {
            return Ok((service, Vec::new(), vec!["the UpdateService links no FirmwareInventory".into()]));
        };
        let l = self.client.firmware_slots(&link).await.map_err(rf_err(&self.bmc))?;
        let warnings = l.warnings.iter().map(|w| format!("{}: {}", w.at, w.problem)).collect();
        Ok((service, l.items, warnings))
    }

    async fn firmware_push(&mut self, p: &FirmwarePush) -> Result<PushReport, BmcError> {
        let service = self.update_service().await?;
        let apply_time = service.apply_time().map(str::to_owned);
        let not_offered = |what: String| BmcError::NotOffered { bmc: self.bmc.clone(), what };
        match &p.image {
            FirmwareImage::Url(url) => {
                let target = service.simple_update.clone().ok_or_else(|| {
                    not_offered(
                        "the UpdateService offers no #UpdateService.SimpleUpdate action (push a file \
                                 with --image FILE instead)"
                            .into(),
                    )
                })?;
                let mut body = json!({ "ImageURI": url, "Targets": [p.target] });
                let scheme = url.split(':').next().unwrap_or_default().to_ascii_uppercase();
                if !service.transfer_protocols.is_empty() {
                    if !service.transfer_protocols.contains(&scheme) {
                        return Err(not_offered(format!(
                            "SimpleUpdate does not take {scheme} (the BMC lists {})",
                            service.transfer_protocols.join(", ")
                        )));
                    }
                    body["TransferProtocol"] = Value::String(scheme);
                }
                if let Some(t) = &apply_time {
                    body["@Redfish.OperationApplyTime"] = Value::String(t.clone());
                }
                let accepted = self.client.simple_update(&target, &body).await.map_err(rf_err(&self.bmc))?;
                Ok(PushReport {
                    method: "SimpleUpdate",
                    sent: format!("POST {target} {body}"),
                    apply_time,
                    accepted,
                })
            }
            FirmwareImage::File(path) => {
                let uri = service.multipart_push.clone().ok_or_else(|| {
                    not_offered(
                        "the UpdateService offers no MultipartHttpPushUri (give the image as a URL the \
                                 BMC can pull instead)"
                            .into(),
                    )
                })?;
                let mut params = json!({ "Targets": [p.target] });
                if let Some(t) = &apply_time {
                    params["@Redfish.OperationApplyTime"] = Value::String(t.clone());
                }
                let accepted = self
                    .client
                    .multipart_push(&uri, path, &params, p.within)
                    .await
                    .map_err(rf_err(&self.bmc))?;
                let sent =
                    format!("POST {uri} multipart UpdateParameters={params} UpdateFile={}", path.display());
                Ok(PushReport { method: "multipart", sent, apply_time, accepted })
            }
        }
    }
}

impl Bmc {
    async fn redfish_within<T: Send + 'static>(
        &self,
        privilege: Privilege,
        limit: Duration,
        f: impl for<'a> FnOnce(&'a mut RedfishConn) -> futures::future::BoxFuture<'a, Result<T, BmcError>> + Send,
    ) -> Result<T, BmcError> {
        let r = self
            .with_conn(privilege, limit, move |c| match c {
                Conn::Ipmi(c) => {
                    let e = unsupported(&c.bmc);
                    Box::pin(async move { Err(e) })
                }
                Conn::Redfish(c) => f(c),
            })
            .await?;
        Ok(r.1)
    }

    /// The UpdateService and every firmware component with its version.
    pub async fn firmware_show(&self) -> Result<FirmwareShow, BmcError> {
        let limit = self.pool().opts.op_timeout;
        let (service, components, warnings) =
            self.redfish_within(Privilege::Operator, limit, |c| Box::pin(c.firmware_show())).await?;
        Ok(FirmwareShow {
            bmc: self.name().to_owned(),
            protocol: BmcProtocol::Redfish,
            service,
            components,
            warnings,
        })
    }

    /// Pushes an image to one component (SimpleUpdate for a URL, a multipart push for a file).
    pub async fn firmware_push(&self, p: FirmwarePush) -> Result<PushReport, BmcError> {
        let limit = self.pool().opts.op_timeout + p.within;
        self.redfish_within(Privilege::Administrator, limit, move |c| {
            Box::pin(async move { c.firmware_push(&p).await })
        })
        .await
    }

    /// One poll of an update's task monitor.
    pub async fn firmware_task(&self, link: String) -> Result<TaskPoll, BmcError> {
        let limit = self.pool().opts.op_timeout;
        self.redfish_within(Privilege::Operator, limit, move |c| {
            Box::pin(async move { c.client.task_poll(&link).await.map_err(rf_err(&c.bmc)) })
        })
        .await
    }

    /// The BMC's update tasks (started by a request to its UpdateService), with their links: after a
    /// crash between a push and its journal entry, the push's task is found here instead of pushing again.
    pub async fn firmware_tasks(&self) -> Result<Vec<(String, TaskDoc)>, BmcError> {
        let limit = self.pool().opts.op_timeout;
        self.redfish_within(Privilege::Operator, limit, move |c| {
            Box::pin(async move {
                let service = c.update_service().await?;
                let all = c.client.tasks().await.map_err(rf_err(&c.bmc))?;
                Ok(all.into_iter().filter(|(_, t)| service.started(t)).collect())
            })
        })
        .await
    }

    /// One component read fresh (its version after an update).
    pub async fn firmware_read(&self, link: String) -> Result<FirmwareSlot, BmcError> {
        let limit = self.pool().opts.op_timeout;
        self.redfish_within(Privilege::Operator, limit, move |c| {
            Box::pin(async move { c.client.firmware_slot(&link).await.map_err(rf_err(&c.bmc)) })
        })
        .await
    }
}
