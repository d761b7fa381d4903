//! A node's agent token (`lifeline token create --user U --agent NODE`): it delivers that node's reports
//! and nothing else. A report it sends for another node is refused and changes nothing; it reads nothing
//! and acts on nothing; its reports are audited as `agent:<node>`; it dies with its user.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;

fn report(token: &str, node: &str, passed: bool) -> Request<Body> {
    let body = serde_json::json!({ "node": node, "passed": passed, "report": { "checks": [] } });
    Request::post("/api/v1/agent/reports")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test]
async fn an_agent_token_speaks_for_its_node_only() {
    let f = common::fixture().await;
    let app = lifeline_server::serve::app(f.state.clone());
    let audit = f.state.audit_as("test").await.unwrap();
    let agent = lifeline_server::accounts::agent_token_create(
        &f.state.base,
        &audit,
        "operator-user",
        "gpu-node-01",
        None,
    )
    .await
    .unwrap();
    assert_eq!(agent.node.as_deref(), Some("gpu-node-01"));

    // Its own node's failing report is taken, as `agent:gpu-node-01`.
    let resp = app.clone().oneshot(report(&agent.token, "gpu-node-01", false)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let obs = f.state.base.latest_observation("gpu-node-01", "agent").await.unwrap().expect("stored");
    assert_eq!(obs.value["from"], "agent:gpu-node-01");

    // Speaking for another node: refused, nothing stored, no fault.
    let faults_before = f.state.base.faults(None, 1000).await.unwrap().len();
    let resp = app.clone().oneshot(report(&agent.token, "gpu-node-02", false)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert!(f.state.base.latest_observation("gpu-node-02", "agent").await.unwrap().is_none());
    assert_eq!(f.state.base.faults(None, 1000).await.unwrap().len(), faults_before);

    // Nothing else: no reads, no power.
    for (method, uri) in [("GET", "/api/v1/devices"), ("POST", "/api/v1/devices/gpu-node-01/power")] {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", format!("Bearer {}", agent.token))
            .header("content-type", "application/json")
            .body(Body::from(r#"{"action":"cycle"}"#))
            .unwrap();
        assert_eq!(app.clone().oneshot(req).await.unwrap().status(), StatusCode::FORBIDDEN, "{method} {uri}");
    }

    // A viewer cannot own one; a demoted or disabled user's agent token stops working.
    let e = lifeline_server::accounts::agent_token_create(
        &f.state.base,
        &audit,
        "viewer-user",
        "gpu-node-01",
        None,
    )
    .await;
    assert!(e.is_err(), "a viewer got an agent token");
    lifeline_server::accounts::user_disable(&f.state.base, &audit, "operator-user", true).await.unwrap();
    let resp = app.clone().oneshot(report(&agent.token, "gpu-node-01", true)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
}
