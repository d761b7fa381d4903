//! Reads (and one action) the web console's pages need beyond the rest of the API: the whole inventory
//! with sites, fabrics and rails in one request (fleet grouping, fabrics page), a node's recorded
//! evidence in one request (certificate pin, latest agent report, verification and scheduler
//! observations), and running the BMC hygiene audit (whose per-BMC verdicts land in the audit log, which is
//! where the hygiene page reads the latest report from).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method};
use axum::routing::{get, post};
use axum::{Extension, Json};

use crate::access::{Route, admin, route, viewer};
use crate::api::answers::{HygieneRow, InventoryDevice};
use crate::api::devices::TargetsRequest;
use crate::api::engine;
use crate::api::model::{Evidence, Observed};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Default-credential attempts per BMC in one hygiene run (BMCs lock accounts after a few failures).
const HYGIENE_MAX_ATTEMPTS: usize = 3;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/api/v1/inventory",
            viewer(),
            "devices",
            "Every inventory device with all its fields (site, rack, fabrics, rails), as `lifeline inventory show`.",
            get(inventory),
        )
        .returns_list::<InventoryDevice>(),
        route(
            Method::GET,
            "/api/v1/devices/{name}/evidence",
            viewer(),
            "devices",
            "What the server has recorded about a device: BMC certificate pin, latest agent report, verification and scheduler observations.",
            get(evidence),
        )
        .returns::<Evidence>(),
        route(
            Method::POST,
            "/api/v1/bmc/hygiene",
            admin(),
            "devices",
            "Run the BMC hygiene audit (default credentials, IPMI cipher 0 / anonymous, certificates) on `targets`; one `audit.bmc` audit row per BMC.",
            post(hygiene),
        )
        .body("TargetsRequest")
        .returns_list::<HygieneRow>(),
    ]
}

async fn inventory(State(s): State<AppState>) -> ApiResult<Json<Vec<InventoryDevice>>> {
    let inv = s.base.inventory()?;
    Ok(Json(inv.devices.iter().map(InventoryDevice::of).collect()))
}

async fn evidence(State(s): State<AppState>, Path(name): Path<String>) -> ApiResult<Json<Evidence>> {
    let inv = s.base.inventory()?;
    let d = inv.devices.iter().find(|d| d.name.as_str() == name).ok_or_else(|| {
        ApiError::Engine(lifeline_engine::EngineError::UnknownDevice { name: name.clone() })
    })?;
    // The Redfish client pins by the BMC's name as the engine knows it; the address too.
    let address = d.bmc.as_ref().map(|b| b.address.to_string());
    let pin = s.base.bmc_tls_pin(&name, address.as_deref()).await?;
    let mut observations = std::collections::BTreeMap::new();
    for kind in ["agent", "verify", "scheduler", "drain"] {
        if let Some(o) = s.base.latest_observation(&name, kind).await? {
            let observed_at = chrono::DateTime::from_timestamp_millis(o.observed_at_ms);
            observations.insert(kind.to_owned(), Observed { observed_at, value: o.value });
        }
    }
    Ok(Json(Evidence {
        protocol: d.bmc.as_ref().map(|b| b.protocol.to_string()),
        tls_pin: pin.map(|p| p.to_string()),
        observations,
        name,
    }))
}

async fn hygiene(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Option<Json<TargetsRequest>>,
) -> ApiResult<Json<Vec<HygieneRow>>> {
    let req = body.map(|b| b.0).unwrap_or_default();
    let l = engine(&s, &caller, &headers)?;
    let sel = l.select_bmcs(&req.targets, &[], true)?;
    let rows = l.bmc_hygiene(&sel, HYGIENE_MAX_ATTEMPTS).await?;
    Ok(Json(rows))
}
