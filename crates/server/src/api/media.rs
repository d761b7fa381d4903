//! Virtual media from the API: the images `lifeline serve` serves by name (`[image-server] images`), and an
//! insert (a URL, or a served image by name, which the engine offers to the device's BMC under a token
//! tied to its address) or eject on one device, audited as the web user.
//!
//! Why a name and not a path or a URL of our own making: nothing from a request reaches the file system
//! beyond the images directory (the engine resolves the name there or refuses it, naming it), and the URL
//! a BMC gets for a served image is the image server's own, never built from the request.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method};
use axum::routing::{get, post};
use axum::{Extension, Json};
use lifeline_engine::ops::media::{MediaRequest, MediaUrl};
use lifeline_engine::ops::{Acted, Row};
use serde::{Deserialize, Serialize};

use crate::access::{Route, operator, route, viewer};
use crate::api::answers::Provenance;
use crate::api::devices::one_device;
use crate::api::engine;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/api/v1/media/images",
            viewer(),
            "devices",
            "The images `lifeline serve` serves by name (the files of `[image-server] images`): name, size, modification time, and whether the image server runs.",
            get(images),
        )
        .returns::<ServedImages>(),
        route(
            Method::POST,
            "/api/v1/devices/{name}/media",
            operator(),
            "devices",
            "Insert an image on the device's virtual CD: `url` (the BMC fetches it) or `served_image` (a file of `[image-server] images`, served by this server under a token for this BMC's address only); `boot_once` sets a one-time boot from it. Read back; audited as the web user; `Idempotency-Key` makes retries safe.",
            post(insert),
        )
        .body("MediaInsertRequest")
        .returns::<MediaAnswer>(),
        route(
            Method::POST,
            "/api/v1/devices/{name}/media/eject",
            operator(),
            "devices",
            "Eject the device's virtual media, read back; the image-server tokens made for its BMC end with it.",
            post(eject),
        )
        .returns::<MediaAnswer>(),
    ]
}

/// One served image.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ServedImage {
    /// The file name: what `served_image` takes.
    pub name: String,
    pub size: u64,
    /// Last modified (RFC 3339).
    pub modified: Option<String>,
}

/// `GET /api/v1/media/images`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ServedImages {
    /// The image server listens (an insert of a served image can be made).
    pub serving: bool,
    /// Where the image server listens (`ADDR:PORT`).
    pub listen: Option<String>,
    /// SHA-256 of the image server's certificate (hex).
    pub tls_sha256: Option<String>,
    pub images: Vec<ServedImage>,
}

/// `POST /api/v1/devices/{name}/media`: exactly one of `url` and `served_image`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MediaInsertRequest {
    /// An `http(s)://` URL of an image the BMC fetches.
    pub url: Option<String>,
    /// The name of a file of `[image-server] images` (its name alone: no `/`, no `..`).
    pub served_image: Option<String>,
    /// Boot the host once from the inserted image (the next boot only).
    #[serde(default)]
    pub boot_once: bool,
}

/// An insert or eject and its read-back (an image-server URL's token named as `token:ID`, never given).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct MediaAnswer {
    pub device: String,
    /// `insert` or `eject`.
    pub action: String,
    /// The slot reads back as asked (and the one-time boot took, when asked for).
    pub confirmed: bool,
    /// The slot acted on.
    pub slot: Option<String>,
    /// The image the slot names now.
    pub image: Option<String>,
    pub inserted: Option<bool>,
    /// Why it is not confirmed.
    pub differences: Vec<String>,
    /// The one-time boot from the CD was asked for and took.
    pub boot_once: Option<bool>,
    /// A replay's outcome as recorded (the fields above are then empty).
    pub recorded: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    #[serde(flatten)]
    pub provenance: Provenance,
}

async fn images(State(s): State<AppState>) -> ApiResult<Json<ServedImages>> {
    let images = s
        .base
        .served_images()?
        .into_iter()
        .map(|i| ServedImage { name: i.name, size: i.size, modified: i.modified })
        .collect();
    let server = s.base.image_server();
    Ok(Json(ServedImages {
        serving: server.is_some(),
        listen: server.map(|x| x.addr().to_string()),
        tls_sha256: server.map(|x| x.fingerprint().to_owned()),
        images,
    }))
}

async fn insert(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Path(name): Path<String>,
    Json(req): Json<MediaInsertRequest>,
) -> ApiResult<Json<MediaAnswer>> {
    let l = engine(&s, &caller, &headers)?;
    let sel = one_device(&l, &name)?;
    let rows = match (req.url, req.served_image) {
        (Some(url), None) => {
            let image = MediaUrl::parse(&url).map_err(|e| ApiError::bad_request(format!("`url`: {e}")))?;
            let r =
                MediaRequest { image, boot_once: req.boot_once, write_protected: true, credentials: None };
            l.media_insert(&sel, r).await?
        }
        (None, Some(image)) => l.media_insert_image(&sel, &image, req.boot_once, true, None).await?,
        _ => {
            return Err(ApiError::bad_request(
                "give `url` (a URL the BMC fetches) or `served_image`, one of them",
            ));
        }
    };
    answer(rows, &name)
}

async fn eject(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> ApiResult<Json<MediaAnswer>> {
    let l = engine(&s, &caller, &headers)?;
    let sel = one_device(&l, &name)?;
    answer(l.media_eject(&sel).await?, &name)
}

fn answer(rows: Vec<Row<Acted<lifeline_bmc::MediaReport>>>, name: &str) -> ApiResult<Json<MediaAnswer>> {
    let acted = rows
        .into_iter()
        .next()
        .map(|r| r.result)
        .unwrap_or_else(|| Err(lifeline_engine::EngineError::UnknownDevice { name: name.to_owned() }))?;
    Ok(Json(MediaAnswer::from_acted(name, &acted)))
}

impl MediaAnswer {
    fn from_acted(device: &str, acted: &Acted<lifeline_bmc::MediaReport>) -> MediaAnswer {
        let redact = |s: &str| lifeline_engine::image_serve::redact(s);
        let mut a = MediaAnswer {
            device: device.to_owned(),
            action: String::new(),
            confirmed: false,
            slot: None,
            image: None,
            inserted: None,
            differences: Vec::new(),
            boot_once: None,
            recorded: None,
            provenance: Provenance::default(),
        };
        match acted {
            Acted::Fresh(r) | Acted::Delayed { value: r, .. } => {
                a.action = r.action.to_owned();
                a.confirmed = r.confirmed;
                a.slot = r.slot.clone();
                a.image = r.now.as_ref().and_then(|n| n.image.as_deref()).map(redact);
                a.inserted = r.now.as_ref().and_then(|n| n.inserted);
                a.differences = r.differences.iter().map(|d| redact(d)).collect();
                a.boot_once = r.boot.as_ref().map(|b| b.differences.is_empty() && b.applied());
            }
            Acted::Replayed { outcome, .. } => {
                let v = lifeline_engine::image_serve::redact(&outcome.to_string());
                let v: serde_json::Value = serde_json::from_str(&v).unwrap_or_default();
                a.action = v.get("action").and_then(|x| x.as_str()).unwrap_or_default().to_owned();
                a.confirmed = v.get("confirmed").and_then(|x| x.as_bool()).unwrap_or(false);
                a.recorded = serde_json::from_value(v).ok();
            }
        }
        if let Acted::Delayed { warning, .. } = acted {
            a.provenance.recording = Some("delayed".into());
            a.provenance.warning = Some(warning.clone());
        }
        if let Acted::Replayed { request_id, coalesced, .. } = acted {
            if *coalesced {
                a.provenance.coalesced_with = Some(request_id.clone());
            } else {
                a.provenance.replay_of = Some(request_id.clone());
            }
        }
        a
    }
}
