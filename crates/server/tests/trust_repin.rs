//! Trust on first use and re-pinning through the API, against a real Redfish server (sushy-static, HTTPS)
//! that replaces its certificate: `GET /devices/{name}/trust` shows the pinned and the presented
//! fingerprint and stores nothing; `POST` re-pins only with `expected_fingerprint` equal to what is
//! presented now — the old pin, a stale look or a missing field change nothing (409 with both / 400).

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use lifeline_engine::{Identity, Lifeline};
use lifeline_test_utils::TlsStatic;
use serde_json::{Value, json};
use tower::ServiceExt;

async fn call(
    app: &axum::Router,
    token: &str,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req =
        Request::builder().method(method).uri(uri).header(header::AUTHORIZATION, format!("Bearer {token}"));
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let req = req.body(body.map_or_else(Body::empty, |b| Body::from(b.to_string()))).unwrap();
    let r = app.clone().oneshot(req).await.unwrap();
    let status = r.status();
    let b = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
    (status, serde_json::from_slice(&b).unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_certificate_is_shown_and_repinned_only_as_confirmed() {
    let Some(mut bmc) = TlsStatic::start() else { return };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("{{ address = \"{}\", port = {}, protocol = \"redfish\" }}", bmc.ip, bmc.port);
    let config = "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\n";
    let settings = common::one_bmc_settings(dir.path(), "node", &spec, Some(config));
    let base = Lifeline::new(&settings, Identity::new("server")).unwrap();
    let state = lifeline_server::serve::state(base, std::sync::Arc::new(lifeline_server::SystemClock), false)
        .await
        .unwrap();
    let audit = state.audit_as("test").await.unwrap();
    lifeline_server::accounts::user_add(
        &state.base,
        &audit,
        "ada",
        lifeline_server::Role::Admin,
        "correct horse battery",
    )
    .await
    .unwrap();
    let admin =
        lifeline_server::accounts::token_create(&state.base, &audit, "ada", None, None).await.unwrap().token;
    lifeline_server::accounts::user_add(
        &state.base,
        &audit,
        "olga",
        lifeline_server::Role::Operator,
        "correct horse battery",
    )
    .await
    .unwrap();
    let operator =
        lifeline_server::accounts::token_create(&state.base, &audit, "olga", None, None).await.unwrap().token;
    let app = lifeline_server::serve::app(state.clone());
    let pin = || async { state.base.bmc_tls_pin("node", None).await.unwrap().map(|p| p.to_string()) };
    let first = bmc.fingerprint.clone();

    // First use: nothing pinned, the presented certificate is OpenSSL's fingerprint of the served one.
    let (st, v) = call(&app, &admin, "GET", "/api/v1/devices/node/trust", None).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        (v["pinned"].clone(), v["presented"].as_str(), v["changes"].as_bool()),
        (Value::Null, Some(&*first), Some(true)),
        "{v}"
    );
    assert_eq!(pin().await, None, "a look stores nothing");
    let (st, v) = call(
        &app,
        &admin,
        "POST",
        "/api/v1/devices/node/trust",
        Some(json!({ "expected_fingerprint": first })),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(pin().await.as_deref(), Some(&*first));
    // Only an admin looks or re-pins.
    let (st, _) = call(&app, &operator, "GET", "/api/v1/devices/node/trust", None).await;
    assert_eq!(st, StatusCode::FORBIDDEN);

    // The BMC now presents another certificate.
    bmc.restart_with_new_certificate();
    let second = bmc.fingerprint.clone();
    assert_ne!(first, second);
    let (st, v) = call(&app, &admin, "GET", "/api/v1/devices/node/trust", None).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        (v["pinned"].as_str(), v["presented"].as_str(), v["changes"].as_bool()),
        (Some(&*first), Some(&*second), Some(true)),
        "{v}"
    );

    // No confirmation, a malformed one, or the old pin confirmed: nothing stored.
    let (st, v) = call(&app, &admin, "POST", "/api/v1/devices/node/trust", None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    let (st, v) = call(
        &app,
        &admin,
        "POST",
        "/api/v1/devices/node/trust",
        Some(json!({ "expected_fingerprint": "yes" })),
    )
    .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    let (st, v) = call(
        &app,
        &admin,
        "POST",
        "/api/v1/devices/node/trust",
        Some(json!({ "expected_fingerprint": first })),
    )
    .await;
    assert_eq!(st, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["fingerprints"], json!({ "presented": second, "pinned": first, "expected": first }), "{v}");
    let msg = v["message"].as_str().unwrap();
    assert!(msg.contains(&first) && msg.contains(&second), "{msg}");
    assert_eq!(pin().await.as_deref(), Some(&*first), "a refused re-pin stores nothing");

    // A look, then the certificate changes again before the confirmation: the stale confirmation is refused.
    bmc.restart_with_new_certificate();
    let third = bmc.fingerprint.clone();
    let (st, v) = call(
        &app,
        &admin,
        "POST",
        "/api/v1/devices/node/trust",
        Some(json!({ "expected_fingerprint": second })),
    )
    .await;
    assert_eq!(st, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["fingerprints"]["presented"], json!(third), "{v}");
    assert_eq!(pin().await.as_deref(), Some(&*first));

    // Confirmed with what is presented now: re-pinned, the answer names both.
    let (st, v) = call(
        &app,
        &admin,
        "POST",
        "/api/v1/devices/node/trust",
        Some(json!({ "expected_fingerprint": third })),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!((v["previous"].as_str(), v["current"].as_str()), (Some(&*first), Some(&*third)), "{v}");
    assert_eq!(pin().await.as_deref(), Some(&*third));

    // Audited: the confirmed re-pins ok, the mismatches refused.
    let rows = state.base.audit_log(Some("node"), 100).await.unwrap();
    let outcomes: Vec<String> =
        rows.iter().filter(|r| r.entry.action == "bmc.trust").map(|r| r.entry.outcome.clone()).collect();
    assert_eq!(outcomes.iter().filter(|o| *o == "ok").count(), 2, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|o| *o == "refused").count(), 2, "{outcomes:?}");
}
