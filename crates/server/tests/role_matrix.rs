//! Every route of the router × {anonymous, viewer, operator, admin, a node's agent token, automated
//! cause}: the allowed set is asserted against the expectation written here, so a route added without a
//! rule (or without updating this list) fails. The "automated cause" column marks the intakes — what can open a fault or start
//! recovery without a person deciding (agent reports; pushed BMC events reach their own receiver, checked
//! below): each must be authenticated, so a new intake without authentication fails the build.

mod common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::routing::{MethodFilter, on};
use lifeline_server::Role;
use lifeline_server::access::{self, Access, Route};
use tower::ServiceExt;

/// Whether a route is an intake of automated causes.
const INTAKE: bool = true;
const PERSON: bool = false;

/// The expected least role per route (`None` = public), and whether it is an intake.
const EXPECTED: &[(&str, &str, Option<Role>, bool)] = &[
    ("GET", "/healthz", None, PERSON),
    ("GET", "/readyz", None, PERSON),
    ("GET", "/metrics", None, PERSON),
    ("GET", "/api/v1/openapi.json", None, PERSON),
    ("POST", "/api/v1/login", None, PERSON),
    ("POST", "/api/v1/logout", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/me", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/devices", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/devices/{name}", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/devices/{name}/health", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/devices/{name}/sel", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/devices/{name}/power", Some(Role::Viewer), PERSON),
    ("POST", "/api/v1/devices/{name}/power", Some(Role::Operator), PERSON),
    ("GET", "/api/v1/devices/{name}/trust", Some(Role::Admin), PERSON),
    ("POST", "/api/v1/devices/{name}/trust", Some(Role::Admin), PERSON),
    ("GET", "/api/v1/power", Some(Role::Viewer), PERSON),
    ("POST", "/api/v1/power", Some(Role::Operator), PERSON),
    ("GET", "/api/v1/health", Some(Role::Viewer), PERSON),
    ("POST", "/api/v1/sweep", Some(Role::Operator), PERSON),
    ("GET", "/api/v1/events", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/summary", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/fleet", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/devices/{name}/timeline", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/backups/schedule", Some(Role::Viewer), PERSON),
    ("POST", "/api/v1/backups/run", Some(Role::Operator), PERSON),
    ("GET", "/api/v1/backups/{switch}", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/backups/{switch}/diff", Some(Role::Viewer), PERSON),
    ("POST", "/api/v1/backups/{switch}/restore", Some(Role::Operator), PERSON),
    ("GET", "/api/v1/backups/{switch}/trust", Some(Role::Admin), PERSON),
    ("POST", "/api/v1/backups/{switch}/trust", Some(Role::Admin), PERSON),
    ("GET", "/api/v1/bios/drift", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/media/images", Some(Role::Viewer), PERSON),
    ("POST", "/api/v1/devices/{name}/media", Some(Role::Operator), PERSON),
    ("POST", "/api/v1/devices/{name}/media/eject", Some(Role::Operator), PERSON),
    ("GET", "/api/v1/consoles", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/consoles/{name}/log", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/consoles/{name}/attach", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/consoles/{name}/write", Some(Role::Operator), PERSON),
    ("GET", "/api/v1/faults", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/faults/{id}", Some(Role::Viewer), PERSON),
    ("POST", "/api/v1/faults/{id}/ack", Some(Role::Operator), PERSON),
    ("GET", "/api/v1/incidents/{fault_id}", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/lemons", Some(Role::Viewer), PERSON),
    ("POST", "/api/v1/agent/reports", Some(Role::Operator), INTAKE),
    ("GET", "/api/v1/runbooks", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/runbooks/{name}", Some(Role::Viewer), PERSON),
    ("POST", "/api/v1/runbooks/{name}/plan", Some(Role::Viewer), PERSON),
    ("POST", "/api/v1/runbooks/{name}/runs", Some(Role::Operator), PERSON),
    ("GET", "/api/v1/runs", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/runs/{id}", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/runs/{id}/journal", Some(Role::Viewer), PERSON),
    ("POST", "/api/v1/runs/{id}/approve", Some(Role::Operator), PERSON),
    ("POST", "/api/v1/runs/{id}/abort", Some(Role::Operator), PERSON),
    ("GET", "/api/v1/audit", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/audit/export", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/users", Some(Role::Admin), PERSON),
    ("POST", "/api/v1/users", Some(Role::Admin), PERSON),
    ("POST", "/api/v1/users/{name}/password", Some(Role::Admin), PERSON),
    ("POST", "/api/v1/users/{name}/disable", Some(Role::Admin), PERSON),
    ("GET", "/api/v1/tokens", Some(Role::Admin), PERSON),
    ("POST", "/api/v1/tokens", Some(Role::Admin), PERSON),
    ("DELETE", "/api/v1/tokens/{id}", Some(Role::Admin), PERSON),
    ("GET", "/api/v1/inventory", Some(Role::Viewer), PERSON),
    ("GET", "/api/v1/devices/{name}/evidence", Some(Role::Viewer), PERSON),
    ("POST", "/api/v1/bmc/hygiene", Some(Role::Admin), PERSON),
    ("GET", "/api/v1/live", Some(Role::Viewer), PERSON),
    ("GET", "/", None, PERSON),
    ("GET", "/ui/{page}", None, PERSON),
    ("GET", "/ui/{page}/{name}", None, PERSON),
    ("GET", "/assets/{file}", None, PERSON),
];

fn concrete(path: &str) -> String {
    path.split('/')
        .map(|s| if s.starts_with('{') { if s == "{id}" { "1" } else { "x" } } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test]
async fn every_route_times_every_role() {
    let f = common::fixture().await;
    let routes = lifeline_server::api::routes();
    let declared: Vec<(String, String, Option<Role>, bool)> = routes
        .iter()
        .map(|r| {
            let min = match r.access {
                Access::Public => None,
                Access::AtLeast(role) => Some(role),
            };
            (r.method.to_string(), r.path.to_owned(), min, r.intake)
        })
        .collect();
    let expected: Vec<(String, String, Option<Role>, bool)> =
        EXPECTED.iter().map(|(m, p, r, i)| ((*m).to_owned(), (*p).to_owned(), *r, *i)).collect();
    for (m, p, min, intake) in &declared {
        assert!(!intake || min.is_some(), "{m} {p} is an intake of automated causes without authentication");
    }
    for d in &declared {
        assert!(
            expected.contains(d),
            "route {d:?} has no expectation in the role matrix (or a different rule)"
        );
    }
    for e in &expected {
        assert!(declared.contains(e), "expected route {e:?} is not in the router");
    }
    // The same table with stub handlers: only the access layer decides.
    let stubbed: Vec<Route> = routes
        .into_iter()
        .map(|r| {
            let filter = MethodFilter::try_from(r.method.clone()).unwrap();
            Route { handler: on(filter, || async { "stub" }), ..r }
        })
        .collect();
    let app = access::router(f.state.clone(), stubbed);
    let callers: Vec<(Option<Role>, Option<&str>)> = std::iter::once((None, None))
        .chain(f.tokens.iter().map(|(r, t)| (Some(*r), Some(t.as_str()))))
        .collect();
    let mut checked = 0;
    for (m, p, min, _) in &expected {
        for (role, token) in &callers {
            let mut req =
                Request::builder().method(Method::from_bytes(m.as_bytes()).unwrap()).uri(concrete(p));
            if let Some(t) = token {
                req = req.header("authorization", format!("Bearer {t}"));
            }
            let resp = app.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
            let want = match (min, role) {
                (None, _) => StatusCode::OK,
                (Some(_), None) => StatusCode::UNAUTHORIZED,
                (Some(min), Some(r)) if r < min => StatusCode::FORBIDDEN,
                _ => StatusCode::OK,
            };
            assert_eq!(resp.status(), want, "{m} {p} as {role:?}");
            checked += 1;
        }
    }
    assert_eq!(checked, EXPECTED.len() * 4);

    // A node's agent token: the intakes and the public routes, nothing else.
    let audit = f.state.audit_as("test").await.unwrap();
    let agent = lifeline_server::accounts::agent_token_create(
        &f.state.base,
        &audit,
        "operator-user",
        "gpu-node-01",
        None,
    )
    .await
    .unwrap()
    .token;
    for (m, p, min, intake) in &expected {
        let req = Request::builder()
            .method(Method::from_bytes(m.as_bytes()).unwrap())
            .uri(concrete(p))
            .header("authorization", format!("Bearer {agent}"));
        let resp = app.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
        let want = if min.is_none() || *intake { StatusCode::OK } else { StatusCode::FORBIDDEN };
        assert_eq!(resp.status(), want, "{m} {p} with gpu-node-01's agent token");
    }
}

/// The intake outside the router: the BMC event receiver. A delivery with no secret, a wrong one, or for
/// a device it does not know is refused and prompts nothing; only the BMC's own secret does.
#[tokio::test]
async fn the_event_receiver_is_an_authenticated_intake() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sources = std::collections::HashMap::new();
    sources.insert("gpu-node-04".to_owned(), vec!["127.0.0.1".parse().unwrap()]);
    let gate = std::sync::Arc::new(lifeline_engine::event_gate::EventGate::new(sources));
    let (l, mut rx) =
        lifeline_engine::event_listener::EventListener::bind("127.0.0.1:0".parse().unwrap(), gate.clone())
            .await
            .unwrap();
    let addr = l.url().unwrap().trim_start_matches("http://").trim_end_matches("/events").to_owned();
    tokio::spawn(l.run());
    let body = serde_json::json!({ "Context": "lifeline:gpu-node-04",
        "Events": [{ "Severity": "Critical", "Message": "forged" }] })
    .to_string();
    let post = |path: String| {
        let (addr, body) = (addr.clone(), body.clone());
        async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            let req = format!("POST {path} HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}", body.len());
            s.write_all(req.as_bytes()).await.unwrap();
            let mut reply = String::new();
            let _ = s.read_to_string(&mut reply).await;
            reply.split(' ').nth(1).unwrap_or("").to_owned()
        }
    };
    assert_eq!(post("/events".into()).await, "401", "anonymous");
    assert_eq!(post(format!("/events/{}", "ab".repeat(32))).await, "401", "a guessed secret");
    assert!(rx.try_recv().is_err());
    assert_eq!(post(gate.destination("/events", "gpu-node-04")).await, "204", "the BMC's own secret");
    assert_eq!(rx.recv().await.unwrap().device, "gpu-node-04");
}

#[tokio::test]
async fn bad_tokens_are_401_and_token_role_is_capped_by_its_user() {
    let f = common::fixture().await;
    let app = lifeline_server::serve::app(f.state.clone());
    for bad in ["Bearer nope", "Bearer llt_0000000000_xyz", "Basic abc"] {
        let req = Request::get("/api/v1/me").header("authorization", bad).body(Body::empty()).unwrap();
        assert_eq!(app.clone().oneshot(req).await.unwrap().status(), StatusCode::UNAUTHORIZED, "{bad}");
    }
    // Disabling the operator revokes their token.
    let audit = f.state.audit_as("test").await.unwrap();
    lifeline_server::accounts::user_disable(&f.state.base, &audit, "operator-user", true).await.unwrap();
    let op = &f.tokens.iter().find(|(r, _)| *r == Role::Operator).unwrap().1;
    let req = Request::get("/api/v1/me")
        .header("authorization", format!("Bearer {op}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.clone().oneshot(req).await.unwrap().status(), StatusCode::UNAUTHORIZED);
    // A viewer cannot get an admin token.
    let e = lifeline_server::accounts::token_create(
        &f.state.base,
        &audit,
        "viewer-user",
        Some(Role::Admin),
        None,
    )
    .await;
    assert!(e.is_err());
}
