//! Devices: the inventory with the last observed power, health and reachability; per-BMC health, SEL,
//! power status and actions (audited as the web user), BMC certificate trust; fleet sweeps and events.
//!
//! A route under `/devices/{name}` acts on exactly that one device: a rack, role, glob or `all` there is
//! refused (it powered a whole rack, control plane included, past the confirmation the web console and
//! the CLI ask for). Group power has its own route, `/power`, which needs the number of devices it hits
//! sent back as `confirm`, as the CLI asks the operator to type it.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Extension, Json};
use lifeline_engine::ops::fleet_view::FleetObservations;
use lifeline_types::PowerAction;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::access::{Route, operator, route, viewer};
use crate::api::answers::{
    DeviceDetail, EventLog, HealthRow, HealthSummary, PowerAnswer, PowerRow, PowerStatus, PowerStatusRow,
    Sweep, view,
};
use crate::api::engine;
use crate::api::model::Event;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(Method::GET, "/api/v1/devices", viewer(), "devices", "Every inventory device with its last observed power, health and reachability.", get(list)).returns_list::<DeviceSummary>(),
        route(Method::GET, "/api/v1/devices/{name}", viewer(), "devices", "One device: inventory fields and last observations.", get(show)).returns::<DeviceDetail>(),
        route(Method::GET, "/api/v1/devices/{name}/health", viewer(), "devices", "Read the BMC's sensors and health rollup now.", get(health)).returns::<HealthSummary>(),
        route(Method::GET, "/api/v1/devices/{name}/sel", viewer(), "devices", "The newest entries of the BMC's event log (`?newest=N`).", get(sel)).returns::<EventLog>(),
        route(Method::GET, "/api/v1/devices/{name}/power", viewer(), "devices", "Read the power state now.", get(power_status)).returns::<PowerStatus>(),
        route(Method::POST, "/api/v1/devices/{name}/power", operator(), "devices", "Power action (`on`, `off`, `cycle`, `reset`, `soft`), audited as the web user; `Idempotency-Key` makes retries safe.", post(power)).body("PowerRequest").returns::<PowerAnswer>(),
        route(Method::GET, "/api/v1/power", viewer(), "devices", "Read the power state of several devices now (`?targets=a,r02,gpu-*`).", get(group_power_status)).returns_list::<PowerStatusRow>(),
        route(Method::POST, "/api/v1/power", operator(), "devices", "Power action on a group (names, racks, roles, globs): refused with the device list unless `confirm` is their number; audited per device as the web user.", post(group_power)).body("GroupPowerRequest").returns_list::<PowerRow>(),
        route(Method::GET, "/api/v1/health", viewer(), "devices", "Health of every BMC (or `?targets=a,b`).", get(fleet_health)).returns_list::<HealthRow>(),
        route(Method::POST, "/api/v1/sweep", operator(), "devices", "Sweep the fleet (or `targets`) now: power, health, newest SEL entries.", post(sweep)).body("TargetsRequest").returns::<Sweep>(),
        route(Method::GET, "/api/v1/events", viewer(), "devices", "Events after an id (`?after=ID&limit=N`): SEL entries, sweep changes.", get(events)).returns_list::<Event>(),
    ]
}

/// One row of `GET /api/v1/devices`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DeviceSummary {
    pub name: String,
    pub role: String,
    pub rack: String,
    pub bmc: Option<String>,
    pub protocol: Option<String>,
    /// Last observed power state (`on`, `off`, …), `null` when never observed.
    pub power: Option<String>,
    /// Last observed health rollup (`ok`, `warning`, `critical`, `unknown`).
    pub health: Option<String>,
    /// Whether the BMC answered in the last sweep.
    pub reachable: Option<bool>,
    pub observed_at: Option<chrono::DateTime<chrono::Utc>>,
    pub open_faults: usize,
}

fn ms(v: i64) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::from_timestamp_millis(v)
}

pub(crate) fn summary(d: &lifeline_inventory::Device, seen: &FleetObservations) -> DeviceSummary {
    let name = d.name.to_string();
    let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let (mut power, mut h, mut reachable, mut at) = (None, None, None, None);
    if let Some(o) = seen.sweep.get(&name) {
        power = str_of(&o.value, "power");
        h = str_of(&o.value, "health");
        reachable = Some(o.value.get("errors").and_then(Value::as_array).is_none_or(|e| e.is_empty()));
        at = Some(o.observed_at_ms);
    }
    if let Some(o) = seen.health.get(&name)
        && at.is_none_or(|t| o.observed_at_ms > t)
    {
        h = str_of(&o.value, "health").or(h);
        at = Some(o.observed_at_ms);
    }
    DeviceSummary {
        role: d.role.to_string(),
        rack: d.rack.clone(),
        bmc: d.bmc.as_ref().map(|b| b.address.to_string()),
        protocol: d.bmc.as_ref().map(|b| b.protocol.to_string()),
        power,
        health: h,
        reachable,
        observed_at: at.and_then(ms),
        open_faults: seen.open_faults.get(&name).copied().unwrap_or(0),
        name,
    }
}

/// The serialized fleet list, shared by every caller for [`FleetCache::TTL`]: at 10,000 devices one
/// list is about 2 MiB of JSON and 30 ms of CPU, so 100 dashboards polling at once must not each build
/// their own. Concurrent callers wait for the one build in progress (single flight).
#[derive(Debug, Default)]
pub struct FleetCache(tokio::sync::Mutex<Option<(std::time::Instant, u64, bytes::Bytes)>>);

impl FleetCache {
    /// How stale the list may be; observations change once per sweep (a minute) anyway, and a fault
    /// this process writes makes the list stale at once (its
    /// [`state_generation`](lifeline_engine::Lifeline::state_generation)).
    pub const TTL: std::time::Duration = std::time::Duration::from_secs(1);
}

/// Three queries whatever the fleet's size: the newest sweep and health observation of every device, and
/// the open faults; the result is shared for a second (see [`FleetCache`]).
async fn list(State(s): State<AppState>) -> ApiResult<axum::response::Response> {
    let body = list_json(&s).await?;
    Ok(([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// The fleet list as JSON, from the shared cache (the API route and the live SSE stream both read it).
pub(crate) async fn list_json(s: &AppState) -> ApiResult<bytes::Bytes> {
    let mut cached = s.fleet_list.0.lock().await;
    let generation = s.base.state_generation().await?;
    let body = match cached.as_ref() {
        Some((at, built_at, body)) if at.elapsed() < FleetCache::TTL && *built_at == generation => {
            body.clone()
        }
        _ => {
            let inv = s.base.inventory()?;
            let seen = s.base.fleet_observations().await?;
            let rows: Vec<DeviceSummary> = inv.devices.iter().map(|d| summary(d, &seen)).collect();
            // Strings, numbers and timestamps only: serialising cannot fail.
            let body = bytes::Bytes::from(serde_json::to_vec(&rows).unwrap_or_default());
            *cached = Some((std::time::Instant::now(), generation, body.clone()));
            body
        }
    };
    drop(cached);
    Ok(body)
}

fn device<'a>(
    inv: &'a lifeline_inventory::Inventory,
    name: &str,
) -> ApiResult<&'a lifeline_inventory::Device> {
    inv.devices
        .iter()
        .find(|d| d.name.as_str() == name)
        .ok_or_else(|| ApiError::Engine(lifeline_engine::EngineError::UnknownDevice { name: name.into() }))
}

async fn show(State(s): State<AppState>, Path(name): Path<String>) -> ApiResult<Json<DeviceDetail>> {
    let inv = s.base.inventory()?;
    let d = device(&inv, &name)?;
    let name = d.name.to_string();
    let seen = s.base.device_observations(&name).await?;
    let device = crate::api::answers::InventoryDevice::of(d);
    Ok(Json(DeviceDetail { device, observed: summary(d, &seen) }))
}

/// The BMC of exactly the device `name`: a group, rack, role, glob or `all` is refused (400), an unknown
/// name is 404.
pub(crate) fn one_device(
    l: &lifeline_engine::Lifeline,
    name: &str,
) -> ApiResult<lifeline_engine::BmcSelection> {
    let inv = l.inventory()?;
    if !inv.devices.iter().any(|d| d.name.as_str() == name) {
        if lifeline_inventory::select(&inv, &[name.to_owned()]).is_ok_and(|d| !d.is_empty()) {
            return Err(ApiError::bad_request(format!(
                "`{name}` names a group, not one device: this route acts on exactly one device \
                 (group power: POST /api/v1/power with the confirmation count)"
            )));
        }
        return Err(lifeline_engine::EngineError::UnknownDevice { name: name.into() }.into());
    }
    let sel = l.select_bmcs(&[name.to_owned()], &[], false)?;
    if sel.bmcs.len() != 1 {
        return Err(ApiError::bad_request(format!("`{name}` does not resolve to exactly one BMC")));
    }
    Ok(sel)
}

/// The one row of a single-target engine result, or its error.
pub(crate) fn one<T>(rows: Vec<lifeline_engine::Row<T>>, name: &str) -> ApiResult<T> {
    let row = rows.into_iter().next().ok_or_else(|| ApiError::NotFound { what: "BMC", name: name.into() })?;
    Ok(row.result?)
}

async fn health(State(s): State<AppState>, Path(name): Path<String>) -> ApiResult<Json<HealthSummary>> {
    let sel = one_device(&s.base, &name)?;
    Ok(Json(one(s.base.health(&sel).await?, &name)?))
}

#[derive(Debug, Deserialize)]
pub struct SelQuery {
    pub newest: Option<usize>,
}

async fn sel(
    State(s): State<AppState>,
    Path(name): Path<String>,
    Query(q): Query<SelQuery>,
) -> ApiResult<Json<EventLog>> {
    let sel = one_device(&s.base, &name)?;
    Ok(Json(one(s.base.sel(&sel, q.newest.unwrap_or(20).min(1000)).await?, &name)?))
}

async fn power_status(State(s): State<AppState>, Path(name): Path<String>) -> ApiResult<Json<PowerStatus>> {
    let sel = one_device(&s.base, &name)?;
    Ok(Json(one(s.base.power_status(&sel).await?, &name)?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct PowerRequest {
    /// `on`, `off`, `cycle`, `reset`, `soft`.
    pub action: String,
}

async fn power(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Path(name): Path<String>,
    Json(req): Json<PowerRequest>,
) -> ApiResult<Json<PowerAnswer>> {
    let action = power_action(&req.action)?;
    let l = engine(&s, &caller, &headers)?;
    let sel = one_device(&l, &name)?;
    let res = l.power(&sel, action).await.and_then(|rows| {
        rows.into_iter()
            .next()
            .map(|r| r.result)
            .unwrap_or_else(|| Err(lifeline_engine::EngineError::UnknownDevice { name: name.clone() }))
    });
    let result = match &res {
        Ok(o) if o.confirmed() => "ok",
        Ok(_) => "unconfirmed",
        Err(_) => "failed",
    };
    s.metrics.power_actions.inc(&[("action", action.as_str()), ("result", result)]);
    Ok(Json(view("power", &res?)?))
}

fn power_action(action: &str) -> ApiResult<PowerAction> {
    action.parse().map_err(|_| {
        ApiError::bad_request(format!("unknown power action `{action}` (on, off, cycle, reset, soft)"))
    })
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct GroupPowerRequest {
    /// Selectors (names, racks, roles, globs, `all`); at least one.
    pub targets: Vec<String>,
    /// `on`, `off`, `cycle`, `reset`, `soft`.
    pub action: String,
    /// The number of devices the targets resolve to, as the refusal without it listed them.
    pub confirm: Option<usize>,
}

async fn group_power(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Json(req): Json<GroupPowerRequest>,
) -> ApiResult<Json<Vec<PowerRow>>> {
    let action = power_action(&req.action)?;
    if req.targets.is_empty() {
        return Err(ApiError::bad_request("`targets` names no device (use `all` for the whole fleet)"));
    }
    let l = engine(&s, &caller, &headers)?;
    // What the targets hit, from the inventory alone: the list to confirm needs no credential.
    let inv = l.inventory()?;
    let hit: Vec<String> = lifeline_inventory::select(&inv, &req.targets)
        .map_err(lifeline_engine::EngineError::Select)?
        .into_iter()
        .filter(|d| d.bmc.is_some())
        .map(|d| d.name.to_string())
        .collect();
    if req.confirm != Some(hit.len()) {
        return Err(ApiError::Unconfirmed { what: format!("power {}", action.as_str()), devices: hit });
    }
    let sel = l.select_bmcs(&req.targets, &[], false)?;
    if sel.bmcs.len() != hit.len() {
        return Err(ApiError::Unconfirmed {
            what: format!("power {}", action.as_str()),
            devices: sel.names().into_iter().map(str::to_owned).collect(),
        });
    }
    let rows = l.power(&sel, action).await?;
    for r in &rows {
        let result = match &r.result {
            Ok(o) if o.confirmed() => "ok",
            Ok(_) => "unconfirmed",
            Err(_) => "failed",
        };
        s.metrics.power_actions.inc(&[("action", action.as_str()), ("result", result)]);
    }
    Ok(Json(view("power", &rows)?))
}

async fn group_power_status(
    State(s): State<AppState>,
    Query(q): Query<TargetsQuery>,
) -> ApiResult<Json<Vec<PowerStatusRow>>> {
    let targets = selectors(q.targets.as_deref());
    if targets.is_empty() {
        return Err(ApiError::bad_request("`targets` names no device (use `all` for the whole fleet)"));
    }
    let sel = s.base.select_bmcs(&targets, &[], false)?;
    Ok(Json(view("power status", &s.base.power_status(&sel).await?)?))
}

#[derive(Debug, Deserialize)]
pub struct TargetsQuery {
    /// Comma-separated selectors (names, racks, roles, globs); default: the whole fleet.
    pub targets: Option<String>,
}

fn selectors(t: Option<&str>) -> Vec<String> {
    t.map(|t| t.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
        .unwrap_or_default()
}

async fn fleet_health(
    State(s): State<AppState>,
    Query(q): Query<TargetsQuery>,
) -> ApiResult<Json<Vec<HealthRow>>> {
    let sel = s.base.select_bmcs(&selectors(q.targets.as_deref()), &[], true)?;
    Ok(Json(view("health", &s.base.health(&sel).await?)?))
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct TargetsRequest {
    /// Selectors (names, racks, roles, globs); empty: the whole fleet.
    #[serde(default)]
    pub targets: Vec<String>,
}

async fn sweep(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Option<Json<TargetsRequest>>,
) -> ApiResult<Json<Sweep>> {
    let req = body.map(|b| b.0).unwrap_or_default();
    let l = engine(&s, &caller, &headers)?;
    let sel = l.select_bmcs(&req.targets, &[], true)?;
    let sweep = l.sweep(&sel, &lifeline_bmc::SweepOptions::default(), |_, _| {}).await?;
    Ok(Json(sweep))
}

#[derive(Debug, Deserialize)]
pub struct EventsQuery {
    pub after: Option<i64>,
    pub limit: Option<i64>,
}

async fn events(State(s): State<AppState>, Query(q): Query<EventsQuery>) -> ApiResult<Json<Vec<Event>>> {
    let rows = s.base.events_after(q.after.unwrap_or(0), q.limit.unwrap_or(500).clamp(1, 10_000)).await?;
    Ok(Json(rows.into_iter().map(Event::from).collect()))
}
