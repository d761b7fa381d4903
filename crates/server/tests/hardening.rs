//! What an attacker probing `lifeline serve` found, each as a regression test: failed logins bounded in
//! the store and locked out per (user, source); single-device routes that act on exactly one device and a
//! group route that needs the confirmation count; idempotency keys scoped per caller; HSTS and `no-store`
//! headers; a BMC credential that does not resolve and an event receiver that cannot listen fail
//! `/readyz` instead of being silent.

mod common;

use std::net::SocketAddr;
use std::path::Path;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode, header};
use lifeline_server::access::Peer;
use tower::ServiceExt;

fn login_from(user: &str, pw: &str, from: &str) -> Request<Body> {
    let mut r = Request::post("/api/v1/login")
        .header("content-type", "application/json")
        .body(Body::from(serde_json::json!({ "username": user, "password": pw }).to_string()))
        .unwrap();
    let addr: SocketAddr = format!("{from}:40000").parse().unwrap();
    r.extensions_mut().insert(ConnectInfo(Peer(addr)));
    r
}

/// Bytes of the SQLite store (database and write-ahead log).
fn store_bytes(data: &Path) -> u64 {
    ["lifeline.db", "lifeline.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(data.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

#[tokio::test]
async fn failed_logins_are_bounded_in_size_and_in_the_store() {
    let f = common::fixture().await;
    let app = lifeline_server::serve::app(f.state.clone());
    // A 1 MiB user name is refused before it is read, let alone stored.
    let huge = "u".repeat(1 << 20);
    let r = app.clone().oneshot(login_from(&huge, "pw", "192.0.2.1")).await.unwrap();
    assert!(r.status().is_client_error(), "{}", r.status());
    let rows = f.state.base.audit_log(None, 1000).await.unwrap();
    assert!(rows.iter().all(|r| serde_json::to_string(r).unwrap().len() < 4096), "a huge row was written");

    // 100 failed logins with names just under the body limit: the store grows by less than 100 KB.
    let data = f._dir.path().join("data");
    let before = store_bytes(&data);
    for i in 0..100 {
        let name = format!("{i}{}", "n".repeat(3000));
        let r = app.clone().oneshot(login_from(&name, "wrong password", "192.0.2.2")).await.unwrap();
        assert!(
            matches!(r.status(), StatusCode::UNAUTHORIZED | StatusCode::TOO_MANY_REQUESTS),
            "{}",
            r.status()
        );
    }
    let grown = store_bytes(&data).saturating_sub(before);
    assert!(grown < 100_000, "100 failed logins grew the store by {grown} bytes");
    let refused: Vec<_> = f
        .state
        .base
        .audit_log(Some("server"), 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.entry.action == "login" && r.entry.outcome == "refused")
        .collect();
    assert!(refused.len() <= 2, "{} refused-login rows for one source", refused.len());
    // The rest of the window is one summary row with the count, written when the window ends.
    lifeline_server::api::session::audit_refused(&f.state, f.state.refused_logins.due(true)).await;
    let summary = f.state.base.audit_log(Some("server"), 10).await.unwrap();
    let counted: i64 = summary
        .iter()
        .filter(|r| r.entry.action == "login" && r.entry.outcome == "refused")
        .filter_map(|r| r.entry.detail["count"].as_i64())
        .sum();
    assert_eq!(counted, 100, "every refusal of this source counted: {summary:#?}");
}

#[tokio::test]
async fn the_right_password_works_for_a_user_attacked_from_another_address() {
    let f = common::fixture().await;
    let app = lifeline_server::serve::app(f.state.clone());
    for _ in 0..8 {
        let r = app.clone().oneshot(login_from("operator-user", "guess", "192.0.2.66")).await.unwrap();
        assert!(matches!(r.status(), StatusCode::UNAUTHORIZED | StatusCode::TOO_MANY_REQUESTS));
    }
    let r = app
        .clone()
        .oneshot(login_from("operator-user", "correct horse battery", "192.0.2.66"))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS, "the attacking address backs off");
    assert!(r.headers().get(header::RETRY_AFTER).is_some());
    let r =
        app.clone().oneshot(login_from("operator-user", "correct horse battery", "192.0.2.7")).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK, "the operator's own address is not locked out");
    // Another user behind the attacked address (everyone behind `ssh -L` is 127.0.0.1) still logs in.
    let r =
        app.clone().oneshot(login_from("viewer-user", "correct horse battery", "192.0.2.66")).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

fn as_token(req: axum::http::request::Builder, token: &str) -> axum::http::request::Builder {
    req.header(header::AUTHORIZATION, format!("Bearer {token}"))
}

#[tokio::test]
async fn single_device_routes_refuse_groups_and_group_power_needs_the_count() {
    // Every credential resolves, so a group that got through would be acted on (audited `power.*`).
    let dir = tempfile::tempdir().unwrap();
    let st = state_with("[server]\nsweep-interval = \"0s\"\n", dir.path(), false).await;
    let audit = st.audit_as("test").await.unwrap();
    let role = lifeline_server::Role::Admin;
    lifeline_server::accounts::user_add(&st.base, &audit, "ada", role, "correct horse battery")
        .await
        .unwrap();
    let admin =
        &lifeline_server::accounts::token_create(&st.base, &audit, "ada", None, None).await.unwrap().token;
    let app = lifeline_server::serve::app(st.clone());
    let send = |req: Request<Body>| {
        let app = app.clone();
        async move {
            let r = app.oneshot(req).await.unwrap();
            let status = r.status();
            let b = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
            (status, serde_json::from_slice::<serde_json::Value>(&b).unwrap_or_default())
        }
    };
    let power = serde_json::json!({ "action": "on" }).to_string();
    for group in ["r02", "all", "gpu-node-0%5B5-8%5D", "gpu-node-*", "gpu-node"] {
        let req = as_token(Request::post(format!("/api/v1/devices/{group}/power")), admin)
            .header("content-type", "application/json")
            .body(Body::from(power.clone()))
            .unwrap();
        let (st, body) = send(req).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "POST power on {group}: {body}");
        let confirmed = serde_json::json!({ "expected_fingerprint": format!("sha256:{}", "ab".repeat(32)) });
        let req = as_token(Request::post(format!("/api/v1/devices/{group}/trust")), admin)
            .header("content-type", "application/json")
            .body(Body::from(confirmed.to_string()))
            .unwrap();
        let (st, body) = send(req).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "trust {group}: {body}");
        assert!(body["message"].as_str().unwrap_or("").contains("one device"), "trust {group}: {body}");
        for read in ["health", "sel", "power", "trust"] {
            let req = as_token(Request::get(format!("/api/v1/devices/{group}/{read}")), admin)
                .body(Body::empty())
                .unwrap();
            assert_eq!(send(req).await.0, StatusCode::BAD_REQUEST, "{read} of {group}");
        }
    }
    let req =
        as_token(Request::get("/api/v1/devices/no-such-node/health"), admin).body(Body::empty()).unwrap();
    assert_eq!(send(req).await.0, StatusCode::NOT_FOUND);
    // The group route lists what it would hit and acts only on the matching count.
    for confirm in [None, Some(1), Some(100)] {
        let body = serde_json::json!({ "targets": ["r02"], "action": "on", "confirm": confirm }).to_string();
        let req = as_token(Request::post("/api/v1/power"), admin)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
        let (st, v) = send(req).await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
        assert_eq!(v["class"], "unconfirmed", "{v}");
        let n = v["confirm"].as_u64().unwrap();
        assert!(n > 1 && v["devices"].as_array().unwrap().len() as u64 == n, "{v}");
    }
    let audit = st.base.audit_log(None, 1000).await.unwrap();
    assert!(!audit.iter().any(|r| r.entry.action.starts_with("power.")), "something was powered: {audit:#?}");
}

#[tokio::test]
async fn idempotency_keys_are_scoped_to_the_caller() {
    let f = common::fixture().await;
    let caller = |user: &str| lifeline_server::auth::Caller {
        user: user.into(),
        role: lifeline_server::Role::Operator,
        via: lifeline_server::auth::Via::Token { id: user.into() },
        addr: None,
        node: None,
    };
    let a = f.state.engine_for(&caller("alice"), Some("cycle-42".into()));
    let b = f.state.engine_for(&caller("bob"), Some("cycle-42".into()));
    let a2 = f.state.engine_for(&caller("alice"), Some("cycle-42".into()));
    assert_ne!(a.request_id_for("gpu-node-01"), b.request_id_for("gpu-node-01"), "shared across users");
    assert_eq!(
        a.request_id_for("gpu-node-01"),
        a2.request_id_for("gpu-node-01"),
        "a retry is the same request"
    );
}

#[tokio::test]
async fn api_answers_are_not_stored_and_carry_hsts() {
    let f = common::fixture().await;
    let app = lifeline_server::serve::app(f.state.clone());
    let admin = &f.tokens.iter().find(|(r, _)| *r == lifeline_server::Role::Admin).unwrap().1;
    let req = as_token(Request::post("/api/v1/tokens"), admin)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::json!({ "user": "viewer-user" }).to_string()))
        .unwrap();
    let r = app.clone().oneshot(req).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()[header::CACHE_CONTROL], "no-store", "the answer carries a secret");
    assert!(r.headers()[header::STRICT_TRANSPORT_SECURITY].to_str().unwrap().starts_with("max-age="));
    let r = app.clone().oneshot(Request::get("/api/v1/me").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(r.headers()[header::CACHE_CONTROL], "no-store");
    let r = app.clone().oneshot(Request::get("/ui/fleet").body(Body::empty()).unwrap()).await.unwrap();
    assert!(r.headers().get(header::STRICT_TRANSPORT_SECURITY).is_some());
}

/// A server state over the example inventory, the BMC credentials from a 0600 file (gpu-node-02's
/// unresolvable when `broken`), and `config` as its configuration file.
async fn state_with(config: &str, dir: &Path, broken: bool) -> lifeline_server::AppState {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let pw = dir.join("bmc.pw");
    std::fs::write(&pw, "pw\n").unwrap();
    std::fs::set_permissions(&pw, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let inv = std::fs::read_to_string(common::example_inventory()).unwrap().replace(
        "credential = \"env:LIFELINE_BMC_PASSWORD\"",
        &format!("credential = \"file:{}\"", pw.display()),
    );
    let inv = if !broken {
        inv
    } else {
        inv.replace(
            "bmc = { address = \"127.10.1.2\", protocol = \"redfish\", flavor = \"idrac-like\" }",
            "bmc = { address = \"127.10.1.2\", protocol = \"redfish\", flavor = \"idrac-like\", credential = \"env:LIFELINE_TEST_NEVER_SET_32\" }",
        )
    };
    assert_eq!(inv.contains("LIFELINE_TEST_NEVER_SET_32"), broken, "the example inventory changed");
    std::fs::write(dir.join("inventory.toml"), inv).unwrap();
    std::fs::write(dir.join("lifeline.toml"), config).unwrap();
    let settings = lifeline_engine::Settings {
        config: Some(dir.join("lifeline.toml")),
        inventory: Some(dir.join("inventory.toml")),
        data_dir: Some(dir.join("data")),
        ..Default::default()
    };
    let base = lifeline_engine::Lifeline::new(&settings, lifeline_engine::Identity::new("server")).unwrap();
    let st = lifeline_server::serve::state(base, std::sync::Arc::new(lifeline_server::SystemClock), false)
        .await
        .unwrap();
    st.ready.store(true, std::sync::atomic::Ordering::Relaxed);
    st
}

async fn readyz(st: &lifeline_server::AppState) -> (StatusCode, String) {
    let app = lifeline_server::serve::app(st.clone());
    let r = app.oneshot(Request::get("/readyz").body(Body::empty()).unwrap()).await.unwrap();
    let status = r.status();
    let b = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
    (status, String::from_utf8_lossy(&b).into_owned())
}

#[tokio::test]
async fn an_event_intake_that_does_not_work_fails_readyz() {
    // One BMC whose credential does not resolve: the others' events are still received, and it is said.
    let dir = tempfile::tempdir().unwrap();
    let st = state_with(
        "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\nevents = \"push\"\nevent-listen = \"127.0.0.1:0\"\n",
        dir.path(),
        true,
    )
    .await;
    let mut jobs = tokio::task::JoinSet::new();
    lifeline_server::scheduler::events::start(&st, &mut jobs).await.unwrap();
    let (status, body) = readyz(&st).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("gpu-node-02") && body.contains("LIFELINE_TEST_NEVER_SET_32"), "{body}");
    st.shutdown.cancel();
    jobs.abort_all();

    // A receiver that cannot listen (its port taken).
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let st = state_with(
        &format!(
            "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\nevents = \"push\"\nevent-listen = \"{}\"\n",
            taken.local_addr().unwrap()
        ),
        dir.path(),
        false,
    )
    .await;
    let mut jobs = tokio::task::JoinSet::new();
    lifeline_server::scheduler::start(&st, &mut jobs).await;
    let (status, body) = readyz(&st).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("cannot listen"), "{body}");
    st.shutdown.cancel();
    jobs.abort_all();
}

#[tokio::test]
async fn open_streams_are_limited_per_user() {
    let f = common::fixture().await;
    let app = lifeline_server::serve::app(f.state.clone());
    let viewer = &f.tokens.iter().find(|(r, _)| *r == lifeline_server::Role::Viewer).unwrap().1;
    let admin = &f.tokens.iter().find(|(r, _)| *r == lifeline_server::Role::Admin).unwrap().1;
    let live = |t: &str| as_token(Request::get("/api/v1/live"), t).body(Body::empty()).unwrap();
    // Held open: each response's body is the stream.
    let mut held = Vec::new();
    for _ in 0..lifeline_server::streams::PER_USER {
        let r = app.clone().oneshot(live(viewer)).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        held.push(r);
    }
    let r = app.clone().oneshot(live(viewer)).await.unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS, "one more stream than a user may hold");
    assert_eq!(app.clone().oneshot(live(admin)).await.unwrap().status(), StatusCode::OK, "another user");
    // A stream that ends gives its place back.
    held.pop();
    assert_eq!(app.clone().oneshot(live(viewer)).await.unwrap().status(), StatusCode::OK);
}
