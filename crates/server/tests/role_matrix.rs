//! Every route of the router × {anonymous, viewer, operator, admin}: the allowed set is asserted against
//! the expectation written here, so a route added without a rule (or without updating this list) fails.

mod common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::routing::{MethodFilter, on};
use lifeline_server::Role;
use lifeline_server::access::{self, Access, Route};
use tower::ServiceExt;

/// The expected least role per route: `None` = public.
const EXPECTED: &[(&str, &str, Option<Role>)] = &[
    ("GET", "/healthz", None),
    ("GET", "/readyz", None),
    ("GET", "/metrics", None),
    ("GET", "/api/v1/openapi.json", None),
    ("POST", "/api/v1/login", None),
    ("POST", "/api/v1/logout", Some(Role::Viewer)),
    ("GET", "/api/v1/me", Some(Role::Viewer)),
    ("GET", "/api/v1/devices", Some(Role::Viewer)),
    ("GET", "/api/v1/devices/{name}", Some(Role::Viewer)),
    ("GET", "/api/v1/devices/{name}/health", Some(Role::Viewer)),
    ("GET", "/api/v1/devices/{name}/sel", Some(Role::Viewer)),
    ("GET", "/api/v1/devices/{name}/power", Some(Role::Viewer)),
    ("POST", "/api/v1/devices/{name}/power", Some(Role::Operator)),
    ("POST", "/api/v1/devices/{name}/trust", Some(Role::Admin)),
    ("GET", "/api/v1/health", Some(Role::Viewer)),
    ("POST", "/api/v1/sweep", Some(Role::Operator)),
    ("GET", "/api/v1/events", Some(Role::Viewer)),
    ("GET", "/api/v1/backups/schedule", Some(Role::Viewer)),
    ("POST", "/api/v1/backups/run", Some(Role::Operator)),
    ("GET", "/api/v1/backups/{switch}", Some(Role::Viewer)),
    ("GET", "/api/v1/backups/{switch}/diff", Some(Role::Viewer)),
    ("POST", "/api/v1/backups/{switch}/restore", Some(Role::Operator)),
    ("POST", "/api/v1/backups/{switch}/trust", Some(Role::Admin)),
    ("GET", "/api/v1/consoles", Some(Role::Viewer)),
    ("GET", "/api/v1/consoles/{name}/log", Some(Role::Viewer)),
    ("GET", "/api/v1/consoles/{name}/attach", Some(Role::Viewer)),
    ("GET", "/api/v1/consoles/{name}/write", Some(Role::Operator)),
    ("GET", "/api/v1/faults", Some(Role::Viewer)),
    ("GET", "/api/v1/faults/{id}", Some(Role::Viewer)),
    ("POST", "/api/v1/faults/{id}/ack", Some(Role::Operator)),
    ("POST", "/api/v1/agent/reports", Some(Role::Operator)),
    ("GET", "/api/v1/runbooks", Some(Role::Viewer)),
    ("GET", "/api/v1/runbooks/{name}", Some(Role::Viewer)),
    ("POST", "/api/v1/runbooks/{name}/plan", Some(Role::Viewer)),
    ("POST", "/api/v1/runbooks/{name}/runs", Some(Role::Operator)),
    ("GET", "/api/v1/runs", Some(Role::Viewer)),
    ("GET", "/api/v1/runs/{id}", Some(Role::Viewer)),
    ("GET", "/api/v1/runs/{id}/journal", Some(Role::Viewer)),
    ("POST", "/api/v1/runs/{id}/approve", Some(Role::Operator)),
    ("POST", "/api/v1/runs/{id}/abort", Some(Role::Operator)),
    ("GET", "/api/v1/audit", Some(Role::Viewer)),
    ("GET", "/api/v1/audit/export", Some(Role::Viewer)),
    ("GET", "/api/v1/users", Some(Role::Admin)),
    ("POST", "/api/v1/users", Some(Role::Admin)),
    ("POST", "/api/v1/users/{name}/password", Some(Role::Admin)),
    ("POST", "/api/v1/users/{name}/disable", Some(Role::Admin)),
    ("GET", "/api/v1/tokens", Some(Role::Admin)),
    ("POST", "/api/v1/tokens", Some(Role::Admin)),
    ("DELETE", "/api/v1/tokens/{id}", Some(Role::Admin)),
    ("GET", "/api/v1/inventory", Some(Role::Viewer)),
    ("GET", "/api/v1/devices/{name}/evidence", Some(Role::Viewer)),
    ("POST", "/api/v1/bmc/hygiene", Some(Role::Admin)),
    ("GET", "/api/v1/live", Some(Role::Viewer)),
    ("GET", "/", None),
    ("GET", "/ui/{page}", None),
    ("GET", "/ui/{page}/{name}", None),
    ("GET", "/assets/{file}", None),
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
    let declared: Vec<(String, String, Option<Role>)> = routes
        .iter()
        .map(|r| {
            let min = match r.access {
                Access::Public => None,
                Access::AtLeast(role) => Some(role),
            };
            (r.method.to_string(), r.path.to_owned(), min)
        })
        .collect();
    let expected: Vec<(String, String, Option<Role>)> =
        EXPECTED.iter().map(|(m, p, r)| ((*m).to_owned(), (*p).to_owned(), *r)).collect();
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
    for (m, p, min) in &expected {
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
    let audit = lifeline_engine::AuditService::new(f.state.store.clone(), "test");
    lifeline_server::accounts::user_disable(&f.state.store, &audit, "operator-user", true).await.unwrap();
    let op = &f.tokens.iter().find(|(r, _)| *r == Role::Operator).unwrap().1;
    let req = Request::get("/api/v1/me")
        .header("authorization", format!("Bearer {op}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.clone().oneshot(req).await.unwrap().status(), StatusCode::UNAUTHORIZED);
    // A viewer cannot get an admin token.
    let e = lifeline_server::accounts::token_create(
        &f.state.store,
        &audit,
        "viewer-user",
        Some(Role::Admin),
        None,
    )
    .await;
    assert!(e.is_err());
}
