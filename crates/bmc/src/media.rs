//! Virtual media: show the slots, insert an image (ejecting a different one first), eject, and boot the
//! host once from the CD through the boot override (`boot`), each change read back from the slot.
//!
//! Why read back: BMCs accept an `InsertMedia` and fail to mount later (an image server that refuses the
//! BMC, a protocol it does not speak), and some keep `Inserted` false while the image is fetched. The report
//! says what the slot now shows, and an insert is confirmed only when the slot names the image and does not
//! say it is out. IPMI has no standard virtual media: over IPMI this says so in words.

use lifeline_ipmi::wire::Privilege;
use lifeline_redfish::MediaCollection;
pub use lifeline_redfish::media_model::{MediaUrl, MediaUrlError};
use lifeline_redfish::media_model::{VirtualMediaDoc, cd_slot, insert_body};
use lifeline_types::BmcProtocol;
use serde::Serialize;

use crate::boot::{BootReport, BootRequest, BootTarget};
use futures::future::BoxFuture;

use crate::conn::{Conn, RedfishConn, rf_err};
use crate::error::BmcError;
use crate::pool::Bmc;

/// One virtual media slot as the BMC reports it (its insert and eject targets say what it offers).
pub type MediaSlot = VirtualMediaDoc;

/// `media show`.
#[derive(Debug, Clone, Serialize)]
pub struct MediaShow {
    pub bmc: String,
    pub protocol: BmcProtocol,
    /// Where the collection is (the System's or the Manager's).
    pub collection: MediaCollection,
    pub slots: Vec<MediaSlot>,
    pub warnings: Vec<String>,
}

/// The image server's credentials (sent in the insert body, never logged or audited).
#[derive(Clone, Serialize)]
pub struct ImageCredentials {
    pub username: String,
    #[serde(skip)]
    pub password: String,
}

impl std::fmt::Debug for ImageCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageCredentials")
            .field("username", &self.username)
            .field("password", &"***")
            .finish()
    }
}

/// What to insert.
#[derive(Debug, Clone, Serialize)]
pub struct MediaRequest {
    pub image: MediaUrl,
    /// Then set the boot override to the CD for the next boot only.
    pub boot_once: bool,
    pub write_protected: bool,
    pub credentials: Option<ImageCredentials>,
}

/// An insert or eject and its read-back.
#[derive(Debug, Clone, Serialize)]
pub struct MediaReport {
    pub bmc: String,
    pub protocol: BmcProtocol,
    /// `insert` or `eject`.
    pub action: &'static str,
    /// The slot acted on; `None` for an eject when no slot held media.
    pub slot: Option<String>,
    pub before: Option<MediaSlot>,
    pub now: Option<MediaSlot>,
    /// What went on the wire, in words (passwords never).
    pub sent: Vec<String>,
    /// The slot reads back as asked (and the boot override took, when asked for).
    pub confirmed: bool,
    pub differences: Vec<String>,
    /// The one-time boot from the CD, when asked for.
    pub boot: Option<BootReport>,
}

/// Compares an inserted slot with the request.
fn judge_insert(url: &MediaUrl, now: &VirtualMediaDoc) -> Vec<String> {
    let mut d = Vec::new();
    match &now.image {
        Some(i) if i == &url.url => {}
        Some(i) => d.push(format!("the slot names image `{i}`, not `{}`", url.url)),
        None => d.push("the slot names no image".to_owned()),
    }
    if now.inserted == Some(false) {
        d.push("the slot reports Inserted: false".to_owned());
    }
    d
}

fn judge_eject(now: &VirtualMediaDoc) -> Vec<String> {
    if now.has_media() {
        vec![format!("the slot still holds `{}`", now.image.as_deref().unwrap_or("media"))]
    } else {
        Vec::new()
    }
}

impl RedfishConn {
    async fn media_list(&mut self) -> Result<(MediaCollection, Vec<VirtualMediaDoc>, Vec<String>), BmcError> {
        let sys = self.system().await?;
        let coll = self.client.media_collection(&sys).await.map_err(rf_err(&self.bmc))?.ok_or_else(|| {
            BmcError::NotOffered {
                bmc: self.bmc.clone(),
                what: format!(
                    "virtual media is not supported: neither system {} nor its Manager lists a VirtualMedia \
                     collection",
                    sys.odata_id
                ),
            }
        })?;
        let l = self.client.media_slots(&coll.link).await.map_err(rf_err(&self.bmc))?;
        let warnings = l.warnings.iter().map(|w| format!("{}: {}", w.at, w.problem)).collect();
        Ok((coll, l.items, warnings))
    }

    async fn media_show(&mut self) -> Result<(MediaCollection, Vec<MediaSlot>, Vec<String>), BmcError> {
        let (c, slots, w) = self.media_list().await?;
        Ok((c, slots, w))
    }

    async fn media_insert(&mut self, req: &MediaRequest) -> Result<MediaReport, BmcError> {
        let (_, slots, _) = self.media_list().await?;
        let ids = || slots.iter().map(|s| s.id.as_str()).collect::<Vec<_>>().join(", ");
        let slot = cd_slot(&slots).cloned().ok_or_else(|| BmcError::NotOffered {
            bmc: self.bmc.clone(),
            what: format!("no CD/DVD virtual media slot (slots: {})", ids()),
        })?;
        if slot.insert_target.is_none() {
            return Err(BmcError::NotOffered {
                bmc: self.bmc.clone(),
                what: format!(
                    "virtual media slot {} offers no #VirtualMedia.InsertMedia action",
                    slot.odata_id
                ),
            });
        }
        let mut sent = Vec::new();
        let already = slot.has_media() && slot.image.as_deref() == Some(req.image.url.as_str());
        if slot.has_media() && !already {
            // A BMC refuses an insert into an occupied slot (iDRAC 400, bmcweb 409): eject the other first.
            self.client.eject_media(&slot).await.map_err(rf_err(&self.bmc))?;
            sent.push(format!(
                "POST {} (ejects `{}`)",
                slot.eject_target.as_deref().unwrap_or("-"),
                slot.image.as_deref().unwrap_or("-")
            ));
        }
        if !already {
            let creds = req.credentials.as_ref().map(|c| (c.username.as_str(), c.password.as_str()));
            let mut body = insert_body(&slot, &req.image, req.write_protected, creds);
            self.client.insert_media(&slot, &body).await.map_err(rf_err(&self.bmc))?;
            if let Some(p) = body.get_mut("Password") {
                *p = "***".into();
            }
            sent.push(format!("POST {} {body}", slot.insert_target.as_deref().unwrap_or("-")));
        }
        let now = self.client.media_slot(&slot.odata_id).await.map_err(rf_err(&self.bmc))?;
        let mut differences = judge_insert(&req.image, &now);
        let mut boot = None;
        if req.boot_once && differences.is_empty() {
            let b = self
                .boot_set(&BootRequest { target: BootTarget::Cdrom, persistent: false, mode: None })
                .await?;
            if !b.applied() {
                differences.push("the one-time boot from the CD did not take".to_owned());
            }
            differences.extend(b.differences.iter().map(|d| format!("boot override: {d}")));
            boot = Some(b);
        }
        let confirmed =
            judge_insert(&req.image, &now).is_empty() && boot.as_ref().is_none_or(BootReport::applied);
        Ok(MediaReport {
            bmc: self.bmc.clone(),
            protocol: BmcProtocol::Redfish,
            action: "insert",
            slot: Some(slot.id.clone()),
            before: Some(slot.clone()),
            now: Some(now.clone()),
            sent,
            confirmed,
            differences,
            boot,
        })
    }

    async fn media_eject(&mut self) -> Result<MediaReport, BmcError> {
        let (_, slots, _) = self.media_list().await?;
        let full: Vec<&VirtualMediaDoc> = slots.iter().filter(|s| s.has_media()).collect();
        let mut report = MediaReport {
            bmc: self.bmc.clone(),
            protocol: BmcProtocol::Redfish,
            action: "eject",
            slot: None,
            before: None,
            now: None,
            sent: Vec::new(),
            confirmed: true,
            differences: Vec::new(),
            boot: None,
        };
        // Nothing inserted: nothing to send (iDRAC answers an eject of an empty slot with 400).
        for slot in full {
            self.client.eject_media(slot).await.map_err(rf_err(&self.bmc))?;
            report.sent.push(format!("POST {}", slot.eject_target.as_deref().unwrap_or("-")));
            let now = self.client.media_slot(&slot.odata_id).await.map_err(rf_err(&self.bmc))?;
            let d = judge_eject(&now);
            report.confirmed &= d.is_empty();
            report.differences.extend(d.into_iter().map(|d| format!("{}: {d}", slot.id)));
            if report.slot.is_none() {
                report.slot = Some(slot.id.clone());
                report.before = Some(slot.clone());
                report.now = Some(now.clone());
            }
        }
        Ok(report)
    }
}

/// Over IPMI, in words: IPMI has no standard virtual media (vendors' OEM commands are not spoken here).
fn unsupported(bmc: &str) -> BmcError {
    BmcError::NotOffered {
        bmc: bmc.to_owned(),
        what: "virtual media is not supported over IPMI (IPMI has no standard virtual media; the BMC must \
               offer Redfish VirtualMedia)"
            .into(),
    }
}

impl Bmc {
    /// Runs `f` on a Redfish connection within the operation limit; over IPMI, `unsupported`'s error (in
    /// words, nothing sent). Shared by virtual media and BIOS settings, which IPMI has no standard for.
    pub(crate) async fn redfish_only<T: Send + 'static>(
        &self,
        privilege: Privilege,
        unsupported: fn(&str) -> BmcError,
        f: impl for<'a> FnOnce(&'a mut RedfishConn) -> BoxFuture<'a, Result<T, BmcError>> + Send,
    ) -> Result<(BmcProtocol, T), BmcError> {
        let limit = self.pool().opts.op_timeout;
        self.with_conn(privilege, limit, move |c| match c {
            Conn::Ipmi(c) => {
                let e = unsupported(&c.bmc);
                Box::pin(async move { Err(e) })
            }
            Conn::Redfish(c) => f(c),
        })
        .await
    }
}

impl Bmc {
    /// The virtual media slots as the BMC reports them.
    pub async fn media_show(&self) -> Result<MediaShow, BmcError> {
        let name = self.name().to_owned();
        let (protocol, (collection, slots, warnings)) =
            self.redfish_only(Privilege::Operator, unsupported, |c| Box::pin(c.media_show())).await?;
        Ok(MediaShow { bmc: name, protocol, collection, slots, warnings })
    }

    /// Inserts an image into the CD slot (and sets a one-time boot from it when asked); reads it back.
    pub async fn media_insert(&self, req: MediaRequest) -> Result<MediaReport, BmcError> {
        let f = self.redfish_only(Privilege::Administrator, unsupported, move |c| {
            Box::pin(async move { c.media_insert(&req).await })
        });
        Ok(f.await?.1)
    }

    /// Ejects whatever media is inserted; reads each slot back.
    pub async fn media_eject(&self) -> Result<MediaReport, BmcError> {
        Ok(self.redfish_only(Privilege::Administrator, unsupported, |c| Box::pin(c.media_eject())).await?.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_judged_by_the_slot() {
        let url = MediaUrl::parse("http://127.0.0.1/x.iso").unwrap();
        let mut now =
            VirtualMediaDoc { image: Some(url.url.clone()), inserted: Some(true), ..Default::default() };
        assert!(judge_insert(&url, &now).is_empty());
        now.inserted = Some(false);
        assert_eq!(judge_insert(&url, &now), ["the slot reports Inserted: false"]);
        now.image = Some("http://other/y.iso".into());
        assert_eq!(judge_insert(&url, &now).len(), 2);
        now.image = None;
        assert!(judge_eject(&now).is_empty());
        now.inserted = None;
        now.image = Some("http://other/y.iso".into());
        assert_eq!(judge_eject(&now), ["the slot still holds `http://other/y.iso`"]);
    }
}
