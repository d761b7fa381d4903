//! Virtual media: the `VirtualMedia` collection of a system (its own link, else its Managers'), and the
//! `InsertMedia` / `EjectMedia` actions. What was inserted is judged by reading the slot back (`bmc::media`).

use reqwest::Method;
use serde_json::Value;

use super::{Client, Listing};
use crate::error::RedfishError;
use crate::media_model::VirtualMediaDoc;
use crate::model::ComputerSystem;

/// Where a system's virtual media collection was found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MediaCollection {
    /// The collection's link.
    pub link: String,
    /// `system` or `manager`: whose link it was.
    pub owner: &'static str,
}

impl Client {
    /// The system's `VirtualMedia` link, else that of a Manager managing it (its `ManagedBy`, else any
    /// Manager listing it among `ManagerForServers`, else the only Manager). `Ok(None)`: none has one.
    pub async fn media_collection(
        &self,
        system: &ComputerSystem,
    ) -> Result<Option<MediaCollection>, RedfishError> {
        let (doc, _) = self.get_json(&system.odata_id).await?;
        if let Some(link) = doc.pointer("/VirtualMedia/@odata.id").and_then(Value::as_str) {
            return Ok(Some(MediaCollection { link: link.to_owned(), owner: "system" }));
        }
        let managed_by: Vec<String> = doc
            .pointer("/Links/ManagedBy")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|m| m.get("@odata.id")?.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
        let managers = match self.manager_docs().await {
            Ok(l) => l.items,
            Err(RedfishError::Missing { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let only = managers.len() == 1;
        for m in managers {
            let ours = managed_by.iter().any(|l| same(l, &m.odata_id))
                || m.servers.iter().any(|s| same(s, &system.odata_id))
                || only;
            if !ours {
                continue;
            }
            let (v, _) = self.get_json(&m.odata_id).await?;
            if let Some(link) = v.pointer("/VirtualMedia/@odata.id").and_then(Value::as_str) {
                return Ok(Some(MediaCollection { link: link.to_owned(), owner: "manager" }));
            }
        }
        Ok(None)
    }

    /// Every slot of a `VirtualMedia` collection; a member that cannot be read is a warning.
    pub async fn media_slots(&self, link: &str) -> Result<Listing<VirtualMediaDoc>, RedfishError> {
        let l = self.members(link).await?;
        let mut warnings = l.warnings;
        let items = l.items.iter().map(|(id, v)| VirtualMediaDoc::from_value(v, id, &mut warnings)).collect();
        Ok(Listing { items, warnings })
    }

    /// One slot read fresh.
    pub async fn media_slot(&self, link: &str) -> Result<VirtualMediaDoc, RedfishError> {
        let (v, mut warnings) = self.get_json(link).await?;
        Ok(VirtualMediaDoc::from_value(&v, link, &mut warnings))
    }

    /// POST `InsertMedia` with `body` (see `media_model::insert_body`).
    pub async fn insert_media(&self, slot: &VirtualMediaDoc, body: &Value) -> Result<(), RedfishError> {
        let target = slot.insert_target.clone().ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: slot.odata_id.clone(),
            what: "#VirtualMedia.InsertMedia action",
        })?;
        self.send_json(Method::POST, &target, Some(body)).await.map(|_| ())
    }

    /// POST `EjectMedia` (an empty JSON object: bmcweb refuses a POST without a body).
    pub async fn eject_media(&self, slot: &VirtualMediaDoc) -> Result<(), RedfishError> {
        let target = slot.eject_target.clone().ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: slot.odata_id.clone(),
            what: "#VirtualMedia.EjectMedia action",
        })?;
        self.send_json(Method::POST, &target, Some(&serde_json::json!({}))).await.map(|_| ())
    }
}
