//! The `media` step: insert an image into the target's virtual CD (and boot once from it) or eject,
//! through the engine's audited media operations; the step passes only when the slot reads back as asked.
//! The image is a URL fixed in the runbook, or a served image: a file of `[image-server] images` that this
//! process's image server offers to the target's BMC under a token of its own.

use serde_json::json;

use lifeline_engine::Lifeline;
use lifeline_engine::ops::media::{MediaRequest, MediaUrl};

use crate::steps::StepResult;

/// What an insert mounts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Image<'a> {
    Url(&'a str),
    Served(&'a str),
}

pub(crate) async fn run(
    l: &Lifeline,
    target: &str,
    action: &str,
    image: Option<Image<'_>>,
    boot_once: bool,
) -> StepResult {
    let sel = match l.select_bmcs(&[target.to_owned()], &[], false) {
        Ok(s) => s,
        Err(e) => return StepResult::error(e.chain()),
    };
    let rows = match (action, image) {
        ("insert", Some(Image::Served(name))) => {
            Box::pin(l.media_insert_image(&sel, name, boot_once, true, None)).await
        }
        ("insert", Some(Image::Url(url))) => {
            let image = match MediaUrl::parse(url) {
                Ok(u) => u,
                Err(e) => return StepResult::error(e.to_string()),
            };
            let req = MediaRequest { image, boot_once, write_protected: true, credentials: None };
            Box::pin(l.media_insert(&sel, req)).await
        }
        ("eject", None) => Box::pin(l.media_eject(&sel)).await,
        _ => return StepResult::error(format!("media step: `{action}` with image {image:?}")),
    };
    let acted = match rows.map(|r| r.into_iter().next().map(|r| r.result)) {
        Ok(Some(Ok(a))) => a,
        Ok(Some(Err(e))) | Err(e) => return StepResult::error(e.chain()),
        Ok(None) => return StepResult::error("no BMC"),
    };
    // A served image's URL carries its token (a credential for the image): the journal keeps its id.
    let ev = lifeline_engine::ops::media::redact(serde_json::to_value(&acted).unwrap_or_default());
    let confirmed = acted.fresh().is_none_or(|r| r.confirmed);
    let out = json!({ "confirmed": confirmed, "image": ev.pointer("/now/image").cloned() });
    if confirmed {
        StepResult::ok(format!("media {action} read back"), out, ev)
    } else {
        let why = ev.get("differences").cloned().unwrap_or_default();
        StepResult::failed(format!("media {action} not confirmed: {why}"), out, ev)
    }
}
