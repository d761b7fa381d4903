//! Probes and documents: `/healthz` (the process answers), `/readyz` (store and inventory usable, actions
//! recordable (one committed write; no outcome waiting for the store), no
//! recorded problem such as an event receiver that could not start),
//! `/metrics` (Prometheus), `/api/v1/openapi.json`.

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, http::Method};

use crate::access::{Access, Route, route};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/healthz",
            Access::Public,
            "system",
            "The process is up (no authentication).",
            get(healthz),
        )
        .returns_text("text/plain"),
        route(
            Method::GET,
            "/readyz",
            Access::Public,
            "system",
            "The store and the inventory answer, and every configured listener and intake runs.",
            get(readyz),
        )
        .returns_text("text/plain"),
        route(
            Method::GET,
            "/metrics",
            Access::Public,
            "system",
            "Prometheus metrics (`lifeline_*`).",
            get(metrics),
        )
        .returns_text("text/plain; version=0.0.4"),
        route(
            Method::GET,
            "/api/v1/openapi.json",
            Access::Public,
            "system",
            "This API's OpenAPI document.",
            get(openapi),
        )
        .returns::<crate::api::model::OpenApiDocument>(),
    ]
}

async fn healthz() -> &'static str {
    "ok\n"
}

async fn readyz(State(s): State<AppState>) -> impl IntoResponse {
    if !s.ready.load(Ordering::Relaxed) {
        return (StatusCode::SERVICE_UNAVAILABLE, "starting\n".to_owned());
    }
    // One indexed read: the store answers.
    if let Err(e) = s.base.user_record("").await {
        return (StatusCode::SERVICE_UNAVAILABLE, format!("store: {}\n", e.chain()));
    }
    if let Err(e) = s.base.inventory() {
        return (StatusCode::SERVICE_UNAVAILABLE, format!("inventory: {}\n", e.chain()));
    }
    // Reads working is not enough: a full disk refuses every action's audit rows.
    if let Some(why) = s.base.recording_problem().await {
        return (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n"));
    }
    let problems = s.problems();
    if !problems.is_empty() {
        return (StatusCode::SERVICE_UNAVAILABLE, format!("{}\n", problems.join("\n")));
    }
    (StatusCode::OK, "ready\n".to_owned())
}

async fn metrics(State(s): State<AppState>) -> impl IntoResponse {
    let n = s
        .consoles
        .list()
        .iter()
        .filter(|c| matches!(c.status, lifeline_console::ConsoleStatus::Connected { .. }))
        .count();
    s.metrics.console_sessions.store(n as u64, Ordering::Relaxed);
    let mut text = s.metrics.render();
    // A sweep counts for coverage while it is at most three intervals old (one missed sweep is not an alert).
    let window = crate::scheduler::sweeps::interval(&s).unwrap_or(std::time::Duration::from_secs(60)) * 3;
    match s.base.operator_gauges(window).await {
        Ok(g) => crate::metrics::render_operator(&mut text, &g, lifeline_engine::ops::runs::now_ms()),
        // The in-memory figures still go out; the store's absence shows on /readyz.
        Err(e) => tracing::warn!("/metrics: fleet gauges: {}", e.chain()),
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(crate::openapi::document())
}
