//! Virtual media of each selected BMC: show the slots, insert an image (and boot once from it), eject.
//! Inserts and ejects run under the target's lease and are audited as `media.insert` / `media.eject`
//! (the image server's password never in the record); see `lifeline_bmc::media` for the read-back.

pub use lifeline_bmc::media::{MediaUrl, MediaUrlError};
use lifeline_bmc::{Bmc, BmcError, MediaReport, MediaShow};
pub use lifeline_bmc::{ImageCredentials, MediaRequest};
use lifeline_types::AuditAction;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::image_serve::{ImageInfo, ImageServeError, ImageServer, Images, Served, Settings};
use crate::ops::{Acted, Row};
use crate::targets::BmcSelection;

/// `value` with every image-server token in its strings named instead ([`crate::image_serve::redact`]):
/// neither an insert's URL nor a slot's previous image puts a token into the audit, nor (through the
/// runbook's media step) into a run's journal.
pub fn redact(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(crate::image_serve::redact(&s)),
        Value::Array(a) => Value::Array(a.into_iter().map(redact).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, redact(v))).collect()),
        other => other,
    }
}

/// The addresses a BMC's requests come from: its address, or what its name resolves to (a BMC fetches an
/// image from its own management address; one behind NAT needs an image URL of its own, `media insert URL`).
async fn bmc_sources(address: &str) -> std::io::Result<Vec<std::net::IpAddr>> {
    if let Ok(ip) = address.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
        return Ok(vec![ip]);
    }
    let found =
        tokio::time::timeout(std::time::Duration::from_secs(10), tokio::net::lookup_host((address, 0)))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "name lookup timed out"))??;
    let mut ips: Vec<std::net::IpAddr> = found.map(|a| a.ip()).collect();
    ips.sort();
    ips.dedup();
    Ok(ips)
}

/// An image-server refusal as the engine's error: a bad or unknown name is the caller's mistake (usage), a
/// missing directory or server the configuration's.
fn image_err(e: ImageServeError) -> EngineError {
    match e {
        ImageServeError::NotServed { .. } => EngineError::BadArgument { message: e.to_string() },
        other => EngineError::Refused { target: "image server".into(), reason: other.to_string() },
    }
}

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
        self.media_act(
            sel,
            AuditAction::MediaInsert,
            |_| intent.clone(),
            move |bmc| {
                let req = req.clone();
                async move { bmc.media_insert(req).await }
            },
        )
        .await
    }

    /// Inserts `file` served by `server` on each BMC, under a token of its own (one image per token,
    /// expiring with the server's `token-ttl`). The audit names the file, the server, the token's id and
    /// expiry; the token itself never (`token:ID` in every string recorded).
    pub async fn media_insert_served(
        &self,
        sel: &BmcSelection,
        server: &ImageServer,
        file: &Path,
        template: MediaRequest,
    ) -> Result<Vec<Row<Acted<MediaReport>>>> {
        let mut per_bmc = HashMap::new();
        for b in &sel.bmcs {
            let from = bmc_sources(&b.target.address).await.map_err(|e| EngineError::Failed {
                target: b.target.name.clone(),
                what: format!("cannot tie the image's token to the BMC's address `{}`", b.target.address),
                source: Some(Box::new(e)),
            })?;
            let (url, offer) =
                server.offer(file, &b.target.name, &from).map_err(|e| EngineError::Failed {
                    target: b.target.name.clone(),
                    what: "cannot serve the image".into(),
                    source: Some(Box::new(e)),
                })?;
            let image = MediaUrl::parse(&url).map_err(|e| EngineError::Internal {
                what: format!("the image server's URL is refused: {e}"),
                source: None,
            })?;
            let intent = serde_json::json!({
                "image": url, "boot_once": template.boot_once,
                "write_protected": template.write_protected,
                "served": {
                    "file": file, "server": server.addr().to_string(), "tls_sha256": server.fingerprint(),
                    "token": offer.id, "expires": offer.expires, "from": offer.from,
                },
            });
            let req = MediaRequest { image, ..template.clone() };
            per_bmc.insert(b.target.name.clone(), (req, intent));
        }
        let per_bmc = &per_bmc;
        let rows = self
            .media_act(
                sel,
                AuditAction::MediaInsert,
                |name| per_bmc.get(name).map(|(_, i)| i.clone()).unwrap_or_default(),
                move |bmc| {
                    let req = per_bmc.get(bmc.name()).map(|(r, _)| r.clone());
                    async move {
                        match req {
                            Some(r) => bmc.media_insert(r).await,
                            None => Err(BmcError::Unsupported {
                                bmc: bmc.name().to_owned(),
                                protocol: bmc.target().protocol,
                                what: "an insert without an offered image",
                            }),
                        }
                    }
                },
            )
            .await?;
        // A BMC that did not take the image has no use for its URL.
        for r in rows.iter().filter(|r| r.result.is_err()) {
            server.revoke(&r.target);
        }
        Ok(rows)
    }

    /// `[image-server] images` (relative to the configuration file's directory).
    pub fn images(&self) -> Result<Images> {
        let dir = self
            .config
            .config
            .image_server
            .images
            .as_ref()
            .ok_or_else(|| image_err(ImageServeError::NoImages))?;
        let base = self.config.path.as_deref().and_then(Path::parent).unwrap_or(Path::new("."));
        Ok(Images::new(base.join(dir)))
    }

    /// The images served by name, from `[image-server] images`.
    pub fn served_images(&self) -> Result<Vec<ImageInfo>> {
        self.images()?.list().map_err(image_err)
    }

    /// The file the served image `name` is: a regular file directly in the images directory, else an
    /// error naming it.
    pub fn served_image_path(&self, name: &str) -> Result<PathBuf> {
        self.images()?.resolve(name).map_err(image_err)
    }

    /// Starts the image server of `[image-server]` when `listen` is set (`lifeline serve`), for the life of
    /// this context and those derived from it: served images are then inserted by name.
    pub async fn start_image_server(self) -> Result<Lifeline> {
        let c = &self.config.config.image_server;
        if c.listen.is_none() {
            return Ok(self);
        }
        let settings = Settings::from_config(c).map_err(image_err)?;
        let server = ImageServer::start(&settings).await.map_err(image_err)?;
        tracing::info!(
            addr = %server.addr(), tls_sha256 = server.fingerprint(),
            images = ?c.images, "image server listening"
        );
        Ok(self.with_image_server(Arc::new(server)))
    }

    /// Inserts the served image `name` (a file of `[image-server] images`) on each BMC, offered by this
    /// process's image server under a token per BMC (see [`Lifeline::media_insert_served`]); the token ends
    /// at the BMC's eject, its run's end, or its expiry.
    pub async fn media_insert_image(
        &self,
        sel: &BmcSelection,
        name: &str,
        boot_once: bool,
        write_protected: bool,
        credentials: Option<ImageCredentials>,
    ) -> Result<Vec<Row<Acted<MediaReport>>>> {
        let file = self.served_image_path(name)?;
        let server = self.image_server().cloned().ok_or_else(|| image_err(ImageServeError::NotRunning))?;
        // A placeholder the engine replaces per BMC with its own token's URL.
        let image = MediaUrl::parse(&format!("https://{}/", server.addr()))
            .map_err(|e| EngineError::internal("the image server's address as a URL", e))?;
        let template = MediaRequest { image, boot_once, write_protected, credentials };
        self.media_insert_served(sel, &server, &file, template).await
    }

    /// Ends the image-server tokens made for the BMC `target` (its media ejected, its run ended), auditing
    /// what they served as `media.serve`; nothing when this process serves no images or `target` has none.
    pub async fn media_revoke(&self, target: &str) -> Result<Vec<Served>> {
        let Some(server) = self.image_server() else { return Ok(Vec::new()) };
        let served = server.revoke(target);
        if !served.is_empty() {
            let audit = self.audit().await?;
            let detail =
                serde_json::json!({ "server": server.addr().to_string(), "served": served, "revoked": true });
            audit.record(AuditAction::MediaServe, target, Outcome::Ok, None, detail).await?;
        }
        Ok(served)
    }

    /// Stops `server` (every token revoked) and audits what it served as `media.serve`.
    pub async fn media_serve_end(&self, server: ImageServer, file: &Path) -> Result<(Vec<Served>, u64)> {
        let addr = server.addr().to_string();
        let (served, refused) = server.stop();
        let audit = self.audit().await?;
        let detail = serde_json::json!({ "server": addr, "served": served, "refused": refused });
        audit.record(AuditAction::MediaServe, &file.display().to_string(), Outcome::Ok, None, detail).await?;
        Ok((served, refused))
    }

    /// Ejects whatever media each BMC holds, read back; the image-server tokens made for each BMC end
    /// with it (an ejected image is not read again).
    pub async fn media_eject(&self, sel: &BmcSelection) -> Result<Vec<Row<Acted<MediaReport>>>> {
        let rows = self
            .media_act(
                sel,
                AuditAction::MediaEject,
                |_| serde_json::json!({}),
                |bmc| async move { bmc.media_eject().await },
            )
            .await?;
        for r in &rows {
            if r.result.is_ok() {
                self.media_revoke(&r.target).await?;
            }
        }
        Ok(rows)
    }

    /// `intent_of(bmc)`: the intent's body. Everything recorded has its image-server tokens named instead.
    async fn media_act<I, F, Fut>(
        &self,
        sel: &BmcSelection,
        action: AuditAction,
        intent_of: I,
        f: F,
    ) -> Result<Vec<Row<Acted<MediaReport>>>>
    where
        I: Fn(&str) -> serde_json::Value,
        F: Fn(Bmc) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<MediaReport, BmcError>>,
    {
        let pool = self.bmc_pool().await?;
        let audit = self.audit().await?;
        let mut rows = Vec::new();
        for b in &sel.bmcs {
            let bmc = pool.bmc(b.target.clone());
            let name = bmc.name().to_owned();
            let body = redact(intent_of(&name));
            let (audit, who, f) = (audit.clone(), name.clone(), &f);
            let r = self
                .guarded(&name, action, |rid| async move {
                    let intent = audit.intent(action, &who, Some(&rid), body).await?;
                    match f(bmc).await {
                        Ok(r) => {
                            let o = if r.confirmed { Outcome::Ok } else { Outcome::Failed };
                            let detail = redact(serde_json::to_value(&r).unwrap_or_default());
                            audit.outcome(intent, o, detail).await?;
                            Ok(r)
                        }
                        Err(source) => {
                            let err = EngineError::Bmc { target: who.clone(), source };
                            let detail = redact(serde_json::json!({ "error": err.chain() }));
                            audit.outcome(intent, Outcome::Failed, detail).await?;
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
