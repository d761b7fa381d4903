//! Login sets an HttpOnly SameSite=Strict session cookie; a cookie-authenticated mutating request needs
//! the double-submit CSRF header; failed logins are rate-limited.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use tower::ServiceExt;

async fn body_json(r: axum::response::Response) -> serde_json::Value {
    let b = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
    serde_json::from_slice(&b).unwrap_or(serde_json::Value::Null)
}

fn login_req(user: &str, pw: &str) -> Request<Body> {
    Request::post("/api/v1/login")
        .header("content-type", "application/json")
        .body(Body::from(serde_json::json!({ "username": user, "password": pw }).to_string()))
        .unwrap()
}

#[tokio::test]
async fn login_cookie_csrf_and_rate_limit() {
    let f = common::fixture().await;
    let app = lifeline_server::serve::app(f.state.clone());
    let resp = app.clone().oneshot(login_req("operator-user", "correct horse battery")).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let cookies: Vec<String> =
        resp.headers().get_all(header::SET_COOKIE).iter().map(|v| v.to_str().unwrap().to_owned()).collect();
    let session = cookies.iter().find(|c| c.starts_with("lifeline_session=")).unwrap();
    assert!(session.contains("HttpOnly") && session.contains("SameSite=Strict"), "{session}");
    let csrf = body_json(resp).await["csrf_token"].as_str().unwrap().to_owned();
    let jar = cookies.iter().map(|c| c.split(';').next().unwrap().to_owned()).collect::<Vec<_>>().join("; ");

    let me = Request::get("/api/v1/me").header(header::COOKIE, &jar).body(Body::empty()).unwrap();
    let resp = app.clone().oneshot(me).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(body_json(resp).await["user"], "operator-user");

    let ack = |h: Option<&str>| {
        let mut r = Request::post("/api/v1/faults/999/ack").header(header::COOKIE, &jar);
        if let Some(h) = h {
            r = r.header("x-csrf-token", h);
        }
        r.body(Body::empty()).unwrap()
    };
    assert_eq!(
        app.clone().oneshot(ack(None)).await.unwrap().status(),
        StatusCode::FORBIDDEN,
        "no CSRF header"
    );
    assert_eq!(app.clone().oneshot(ack(Some("wrong"))).await.unwrap().status(), StatusCode::FORBIDDEN);
    assert_eq!(
        app.clone().oneshot(ack(Some(&csrf))).await.unwrap().status(),
        StatusCode::NOT_FOUND,
        "past CSRF: no such fault"
    );

    // Five failures lock the user out (429), even with the right password afterwards.
    for _ in 0..5 {
        let r = app.clone().oneshot(login_req("viewer-user", "wrong password")).await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    let r = app.clone().oneshot(login_req("viewer-user", "correct horse battery")).await.unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers().get(header::RETRY_AFTER).is_some());
    // Audited.
    let rows = f.state.base.audit_log(Some("server"), 50).await.unwrap();
    assert!(rows.iter().any(|r| r.entry.action == "login"
        && r.entry.actor == "web:operator-user"
        && r.entry.outcome == "ok"));
}
