//! Re-pinning a BMC's TLS certificate or a switch's SSH host key, in two steps (engine: `ops::trust`).
//! `GET …/trust` shows the fingerprint pinned now and the one presented now (read without a credential,
//! nothing stored); `POST …/trust` re-pins only with `expected_fingerprint` equal to what is presented
//! when it looks again, else 409 with both fingerprints and nothing stored. So a stolen admin session
//! cannot re-pin blind, and a certificate swapped between the look and the click is never trusted.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method};
use axum::routing::{get, post};
use axum::{Extension, Json};
use lifeline_engine::ops::trust::TrustView;
use lifeline_types::Fingerprint;
use serde::{Deserialize, Serialize};

use crate::access::{Route, admin, route};
use crate::api::engine;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/api/v1/devices/{name}/trust",
            admin(),
            "devices",
            "The BMC's pinned certificate fingerprint and the one it presents now (nothing stored); confirm a re-pin by POSTing the presented one.",
            get(bmc_view),
        )
        .returns::<TrustAnswer>(),
        route(
            Method::POST,
            "/api/v1/devices/{name}/trust",
            admin(),
            "devices",
            "Re-pin the BMC's TLS certificate after an intended replacement: only when `expected_fingerprint` is what it presents now (else 409 with both).",
            post(bmc_repin),
        )
        .body("TrustRequest")
        .returns::<Repinned>(),
        route(
            Method::GET,
            "/api/v1/backups/{switch}/trust",
            admin(),
            "backups",
            "The switch's pinned SSH host-key fingerprint and the one it presents now (nothing stored, no credential sent).",
            get(switch_view),
        )
        .returns::<TrustAnswer>(),
        route(
            Method::POST,
            "/api/v1/backups/{switch}/trust",
            admin(),
            "backups",
            "Re-pin the switch's SSH host key after an intended change: only when `expected_fingerprint` is what it presents now (else 409 with both).",
            post(switch_repin),
        )
        .body("TrustRequest")
        .returns::<Repinned>(),
    ]
}

/// `POST …/trust`: the fingerprint shown by `GET …/trust` and confirmed by the operator.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct TrustRequest {
    /// `sha256:` + 64 hex digits (colons allowed), as `GET` shows it.
    pub expected_fingerprint: String,
}

/// `GET …/trust`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TrustAnswer {
    pub device: String,
    /// `tls-certificate` or `ssh-host-key`.
    pub kind: String,
    /// Pinned now; `null` when nothing is (the next connection pins on first use).
    pub pinned: Option<String>,
    /// Presented now: send exactly this back as `expected_fingerprint` to re-pin.
    pub presented: String,
    /// A pin written in the inventory (BMCs); it wins over the store and must be edited there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inventory_pin: Option<String>,
    /// Whether the re-pin would change the stored pin.
    pub changes: bool,
}

impl From<TrustView> for TrustAnswer {
    fn from(v: TrustView) -> Self {
        TrustAnswer {
            device: v.device,
            kind: v.kind.to_owned(),
            pinned: v.pinned.map(|p| p.to_string()),
            presented: v.presented.to_string(),
            inventory_pin: v.inventory_pin.map(|p| p.to_string()),
            changes: v.changes,
        }
    }
}

/// `POST …/trust` done.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Repinned {
    pub device: String,
    pub previous: Option<String>,
    pub current: String,
}

fn expected(body: Option<Json<TrustRequest>>) -> ApiResult<Fingerprint> {
    let Some(Json(req)) = body else {
        return Err(ApiError::bad_request(
            "`expected_fingerprint` is required: GET this URL to see the presented fingerprint, check it out of \
             band, then send it back",
        ));
    };
    req.expected_fingerprint
        .parse()
        .map_err(|e| ApiError::bad_request(format!("`expected_fingerprint`: {e}")))
}

async fn bmc_view(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> ApiResult<Json<TrustAnswer>> {
    let l = engine(&s, &caller, &headers)?;
    let sel = crate::api::devices::one_device(&l, &name)?;
    let v = crate::api::devices::one(l.bmc_trust_view(&sel).await?, &name)?;
    Ok(Json(v.into()))
}

async fn bmc_repin(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Option<Json<TrustRequest>>,
) -> ApiResult<Json<Repinned>> {
    let l = engine(&s, &caller, &headers)?;
    let sel = crate::api::devices::one_device(&l, &name)?;
    let expected = expected(body)?;
    let b = sel.bmcs.first().ok_or_else(|| ApiError::NotFound { what: "BMC", name: name.clone() })?;
    let t = l.bmc_trust(b, expected).await?;
    Ok(Json(Repinned {
        device: t.bmc,
        previous: t.previous.map(|p| p.to_string()),
        current: t.current.to_string(),
    }))
}

async fn switch_view(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Path(switch): Path<String>,
) -> ApiResult<Json<TrustAnswer>> {
    Ok(Json(engine(&s, &caller, &headers)?.switch_trust_view(&switch).await?.into()))
}

async fn switch_repin(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Path(switch): Path<String>,
    body: Option<Json<TrustRequest>>,
) -> ApiResult<Json<Repinned>> {
    let expected = expected(body)?;
    let t = engine(&s, &caller, &headers)?.backup_trust(&switch, expected).await?;
    Ok(Json(Repinned {
        device: t.switch,
        previous: t.previous.map(|p| p.to_string()),
        current: t.current.to_string(),
    }))
}
