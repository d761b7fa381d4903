//! The JSON API under `/api/v1`, one module per concern. Each module contributes its rows to the route
//! table ([`routes`]); handlers are thin: read the request, call the engine as the caller, return its
//! `Serialize` result.

pub mod admin;
pub mod answers;
pub mod audit;
pub mod backups;
pub mod bios;
pub mod consoles;
pub mod devices;
pub mod faults;
pub mod fleet_filter;
pub mod incidents;
pub mod lemons;
pub mod media;
pub mod model;
pub mod overview;
pub mod runbooks;
pub mod session;
pub mod system;
pub mod timeline;
pub mod trust;
pub mod views;

use axum::http::HeaderMap;

use crate::access::Route;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Every route of the server (health probes, the API), in documentation order.
pub fn routes() -> Vec<Route> {
    let mut r = Vec::new();
    r.extend(system::routes());
    r.extend(session::routes());
    r.extend(devices::routes());
    r.extend(overview::routes());
    r.extend(timeline::routes());
    r.extend(backups::routes());
    r.extend(bios::routes());
    r.extend(media::routes());
    r.extend(trust::routes());
    r.extend(consoles::routes());
    r.extend(faults::routes());
    r.extend(incidents::routes());
    r.extend(lemons::routes());
    r.extend(runbooks::routes());
    r.extend(audit::routes());
    r.extend(admin::routes());
    r.extend(views::routes());
    r.extend(crate::live::routes());
    r.extend(crate::web::routes());
    r
}

/// The `Idempotency-Key` header: the engine's request id, so a retried POST returns the first outcome.
pub fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<String>> {
    match headers.get("idempotency-key") {
        None => Ok(None),
        Some(v) => {
            let s = v.to_str().map_err(|_| ApiError::bad_request("Idempotency-Key must be visible ASCII"))?;
            if s.is_empty() || s.len() > 200 {
                return Err(ApiError::bad_request("Idempotency-Key must be 1 to 200 characters"));
            }
            Ok(Some(s.to_owned()))
        }
    }
}

/// The engine context for this request. A request without an `Idempotency-Key` is given a fresh one, so
/// that the key its answer names (a "recording delayed" warning's retry hint) is one a retry sends as its
/// `Idempotency-Key` and is found under: the id is scoped to the caller either way (`ACTOR/KEY/TARGET`).
pub fn engine(
    state: &AppState,
    caller: &Caller,
    headers: &HeaderMap,
) -> ApiResult<lifeline_engine::Lifeline> {
    let key = idempotency_key(headers)?.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    Ok(state.engine_for(caller, Some(key)))
}
