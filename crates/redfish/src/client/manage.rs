//! BMC operations beyond power: the boot override PATCH with `If-Match` when the BMC gives an ETag, the
//! Manager's own reset (its AllowableValues or ActionInfo, never the system's), and the firmware inventory.
//!
//! Why ETags: a BMC that versions a resource (OpenBMC, iDRAC, iLO) may refuse a PATCH without `If-Match`
//! (428) and, with it, refuses one based on a stale read (412) instead of silently overwriting what another
//! client just set.

use reqwest::Method;
use serde_json::Value;

use super::transport::{body_bytes, error_message, is_connect, read_reply};
use super::{Client, Listing};
use crate::bmc_model::{FirmwareItem, ManagerDoc, interface_mac};
use crate::doc::FieldWarning;
use crate::error::RedfishError;

impl Client {
    /// GET a document and its ETag: the `ETag` header, else the document's `@odata.etag`.
    pub async fn get_json_etag(&self, link: &str) -> Result<(Value, Option<String>), RedfishError> {
        let reply = self.request(Method::GET, link, None).await?;
        let header =
            reply.resp.headers().get(reqwest::header::ETAG).and_then(|h| h.to_str().ok()).map(str::to_owned);
        let url = reply.url.clone();
        let mut v = read_reply(&self.inner.t, reply).await?;
        let _ = self.inner.profile.repair(&mut v, url.path());
        let etag = header.or_else(|| v.get("@odata.etag").and_then(Value::as_str).map(str::to_owned));
        Ok((v, etag.filter(|e| !e.is_empty())))
    }

    /// PATCH `body`, with `If-Match: etag` when one is given; returns the reply document if any.
    pub async fn patch_json(
        &self,
        link: &str,
        body: &Value,
        etag: Option<&str>,
    ) -> Result<Option<Value>, RedfishError> {
        let headers: Vec<(&'static str, &str)> = etag.map(|e| ("If-Match", e)).into_iter().collect();
        let reply = self.request_with(Method::PATCH, link, Some(body), &headers).await?;
        let t = &self.inner.t;
        let status = reply.resp.status();
        let (url, m) = (reply.url.clone(), reply.method);
        let bytes = body_bytes(t, reply).await?;
        if !status.is_success() {
            return Err(RedfishError::Status {
                bmc: t.bmc.clone(),
                method: m,
                url: url.to_string(),
                status: status.as_u16(),
                message: error_message(&bytes),
            });
        }
        Ok(serde_json::from_slice(&bytes).ok())
    }

    /// Every Manager document (typed for BMC operations).
    pub async fn manager_docs(&self) -> Result<Listing<ManagerDoc>, RedfishError> {
        let link = self.inner.root.managers.clone().ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: "/redfish/v1/".into(),
            what: "Managers link",
        })?;
        self.typed(&link, ManagerDoc::from_value, |m| &mut m.warnings).await
    }

    /// The reset types the Manager allows: AllowableValues, else its ActionInfo, else `None` (unknown).
    pub async fn manager_reset_types(
        &self,
        m: &ManagerDoc,
    ) -> Result<(Option<Vec<String>>, Vec<FieldWarning>), RedfishError> {
        let Some(reset) = &m.reset else {
            return Err(RedfishError::Missing {
                bmc: self.bmc().to_owned(),
                url: m.odata_id.clone(),
                what: "#Manager.Reset action",
            });
        };
        Ok(self.allowed_reset_types(reset, None).await)
    }

    /// POST the Manager's reset once. A reply lost after sending is `ActionOutcomeUnknown` (a BMC often
    /// drops the connection as it restarts): the caller confirms by the BMC answering again.
    pub async fn manager_reset(&self, m: &ManagerDoc, reset_type: &str) -> Result<(), RedfishError> {
        let target = m.reset.as_ref().map(|r| r.target.clone()).ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: m.odata_id.clone(),
            what: "#Manager.Reset action",
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

    /// `UpdateService/FirmwareInventory` members; `Ok(None)` when the BMC has no update service or
    /// inventory link. A member that cannot be read is a warning.
    pub async fn firmware_inventory(&self) -> Result<Option<Listing<FirmwareItem>>, RedfishError> {
        let Some(us) = self.inner.root.update_service.clone() else { return Ok(None) };
        let (v, _) = self.get_json(&us).await?;
        let Some(link) = v.pointer("/FirmwareInventory/@odata.id").and_then(Value::as_str) else {
            return Ok(None);
        };
        let l = self.members(link).await?;
        let mut warnings = l.warnings;
        let items = l.items.iter().map(|(id, v)| FirmwareItem::from_value(v, id, &mut warnings)).collect();
        Ok(Some(Listing { items, warnings }))
    }

    /// The first MAC address among a Manager's Ethernet interfaces.
    pub async fn manager_mac(&self, m: &ManagerDoc) -> Result<Option<String>, RedfishError> {
        let Some(link) = &m.ethernet_interfaces else { return Ok(None) };
        let l = self.members(link).await?;
        let mut w = Vec::new();
        Ok(l.items.iter().find_map(|(id, v)| interface_mac(v, id, &mut w)))
    }
}
