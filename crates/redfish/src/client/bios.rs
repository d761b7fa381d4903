//! BIOS settings: the system's `Bios` resource (current), its `@Redfish.Settings` object (pending), and a
//! PATCH of pending attributes there (with `If-Match` when the BMC gives an ETag).

use std::collections::BTreeMap;

use serde_json::Value;

use super::Client;
use crate::bios_model::BiosDoc;
use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model::ComputerSystem;

impl Client {
    /// The system's `Bios` document and, when it names one, its settings object; `Ok(None)`: the system
    /// links no `Bios`.
    pub async fn bios(
        &self,
        system: &ComputerSystem,
    ) -> Result<Option<(BiosDoc, Option<BiosDoc>, Vec<FieldWarning>)>, RedfishError> {
        let (sys, _) = self.get_json(&system.odata_id).await?;
        let Some(link) = sys.pointer("/Bios/@odata.id").and_then(Value::as_str) else { return Ok(None) };
        let (v, mut warnings) = self.get_json(link).await?;
        let current = BiosDoc::from_value(&v, link, &mut warnings);
        let pending = match &current.settings_object {
            Some(s) if s.trim_end_matches('/') != link.trim_end_matches('/') => {
                let (p, notes) = self.get_json(s).await?;
                warnings.extend(notes);
                Some(BiosDoc::from_value(&p, s, &mut warnings))
            }
            _ => None,
        };
        Ok(Some((current, pending, warnings)))
    }

    /// PATCH `{"Attributes": changes}` to `link` (the settings object, or the `Bios` resource of a BMC that
    /// applies directly), with `If-Match` from a fresh read when the BMC gives an ETag.
    pub async fn patch_bios(
        &self,
        link: &str,
        changes: &BTreeMap<String, Value>,
    ) -> Result<(), RedfishError> {
        let (_, etag) = self.get_json_etag(link).await?;
        let body = serde_json::json!({ "Attributes": changes });
        self.patch_json(link, &body, etag.as_deref()).await.map(|_| ())
    }
}
