//! Kubernetes adapter against RECORDED API exchanges, not a real API server.
//!
//! GAP (named): no kube-apiserver could be run here (Debian 12 ships etcd and kubectl but no apiserver;
//! prebuilt binaries cannot be downloaded). This in-test HTTP server replays a real-shaped Node object
//! (tests/fixtures/node-gpu-node-01.json, the shape a kubelet registers) and implements exactly what the
//! API server does for these two calls: GET, and PATCH with `application/merge-patch+json` (RFC 7386) with
//! optimistic concurrency on `metadata.resourceVersion` (409 Conflict Status when stale) and a 404 Status
//! for unknown nodes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use lifeline_readmit::kube::{ANN_CORDONED, ANN_DIGEST, Kube, TAINT_KEY, marks};
use lifeline_readmit::{Justification, Outcome};
use serde_json::{Value, json};

#[derive(Default)]
struct Server {
    node: Value,
    /// (method, content-type, body) of every request.
    log: Vec<(String, String, Value)>,
    /// Bump resourceVersion right before the next PATCH (someone else wrote the node meanwhile).
    interfere_once: bool,
}

type Shared = Arc<Mutex<Server>>;

fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = json!({});
            }
            let t = target.as_object_mut().unwrap();
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

fn status(code: u16, reason: &str, message: String) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "details": {"name": "x", "kind": "nodes"}, "code": code});
    (StatusCode::from_u16(code).unwrap(), axum::Json(body)).into_response()
}

fn bump(node: &mut Value) {
    let rv: u64 = node["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    node["metadata"]["resourceVersion"] = json!((rv + 1).to_string());
}

async fn get_node(State(s): State<Shared>, Path(name): Path<String>) -> Response {
    let mut s = s.lock().unwrap();
    s.log.push(("GET".into(), String::new(), Value::Null));
    if s.node["metadata"]["name"] != name.as_str() {
        return status(404, "NotFound", format!("nodes \"{name}\" not found"));
    }
    axum::Json(s.node.clone()).into_response()
}

async fn patch_node(
    State(s): State<Shared>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let mut s = s.lock().unwrap();
    let ct = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let patch: Value = serde_json::from_str(&body).unwrap();
    s.log.push(("PATCH".into(), ct.clone(), patch.clone()));
    if ct != "application/merge-patch+json" {
        return status(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unknown format: {ct}"),
        );
    }
    if s.node["metadata"]["name"] != name.as_str() {
        return status(404, "NotFound", format!("nodes \"{name}\" not found"));
    }
    if std::mem::take(&mut s.interfere_once) {
        bump(&mut s.node);
    }
    if let Some(rv) = patch["metadata"]["resourceVersion"].as_str()
        && s.node["metadata"]["resourceVersion"] != rv
    {
        return status(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on nodes \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
            ),
        );
    }
    let mut patch = patch;
    if let Some(m) = patch["metadata"].as_object_mut() {
        m.remove("resourceVersion");
    }
    merge(&mut s.node, &patch);
    bump(&mut s.node);
    axum::Json(s.node.clone()).into_response()
}

async fn start() -> (Kube, Shared) {
    let node: Value = serde_json::from_str(include_str!("fixtures/node-gpu-node-01.json")).unwrap();
    let shared: Shared = Arc::new(Mutex::new(Server { node, ..Server::default() }));
    let app = Router::new()
        .route("/api/v1/nodes/{name}", get(get_node).patch(patch_node))
        .with_state(shared.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (Kube::from_url(&format!("http://{addr}"), Duration::from_secs(5)).unwrap(), shared)
}

fn node_of(s: &Shared) -> k8s_openapi::api::core::v1::Node {
    serde_json::from_value(s.lock().unwrap().node.clone()).unwrap()
}

fn just(passed: bool) -> Justification {
    Justification { report_digest: format!("sha256:{}", "c".repeat(64)), passed, summary: "x".into() }
}

#[tokio::test]
async fn quarantine_then_release_only_our_marks() {
    let (kube, s) = start().await;
    let d = kube.quarantine("gpu-node-01", "rail mlx5_3 down", "sha256:bad").await.unwrap();
    assert_eq!(d.outcome, Outcome::Done, "{d:?}");
    assert_eq!(d.report_digest, "sha256:bad");
    let n = s.lock().unwrap().node.clone();
    assert_eq!(n["spec"]["unschedulable"], true);
    assert_eq!(n["metadata"]["annotations"][ANN_DIGEST], "sha256:bad");
    assert_eq!(n["metadata"]["annotations"][ANN_CORDONED], "true");
    assert_eq!(
        n["metadata"]["annotations"]["ops.example.com/owner"], "team-train",
        "others' annotations kept"
    );
    let taints = n["spec"]["taints"].as_array().unwrap();
    assert_eq!(taints.len(), 2, "the GPU operator's taint is kept: {taints:?}");
    assert!(taints.iter().any(|t| t["key"] == TAINT_KEY && t["effect"] == "NoSchedule"));
    {
        let log = &s.lock().unwrap().log;
        let (m, ct, body) = log.last().unwrap();
        assert_eq!((m.as_str(), ct.as_str()), ("PATCH", "application/merge-patch+json"));
        assert_eq!(body["metadata"]["resourceVersion"], "918273", "patch is conditional on what was read");
    }

    // Again: nothing changes.
    let before = s.lock().unwrap().node.clone();
    let d = kube.quarantine("gpu-node-01", "other", "sha256:other").await.unwrap();
    assert_eq!(d.outcome, Outcome::AlreadyDone);
    assert_eq!(s.lock().unwrap().node, before);

    // A failing report never releases.
    let d = kube.release("gpu-node-01", &just(false)).await.unwrap();
    assert_eq!(d.outcome, Outcome::RefusedReportNotPassing);
    assert!(marks(&node_of(&s)).our_taint);

    // Release after a passing report, with someone else writing the node in between (409 then retry).
    s.lock().unwrap().interfere_once = true;
    let d = kube.release("gpu-node-01", &just(true)).await.unwrap();
    assert_eq!(d.outcome, Outcome::Done, "{d:?}");
    let n = s.lock().unwrap().node.clone();
    assert_eq!(n["spec"]["unschedulable"], false);
    assert_eq!(
        n["spec"]["taints"],
        json!([{ "key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule" }])
    );
    let ann = n["metadata"]["annotations"].as_object().unwrap();
    assert!(!ann.keys().any(|k| k.starts_with("lifeline.io/")), "{ann:?}");
    let patches = s.lock().unwrap().log.iter().filter(|(m, _, _)| m == "PATCH").count();
    assert_eq!(patches, 3, "quarantine + conflicting release + retried release");

    // Nothing of ours left: a second release is refused.
    assert_eq!(kube.release("gpu-node-01", &just(true)).await.unwrap().outcome, Outcome::RefusedNotOurs);
}

#[tokio::test]
async fn admin_cordon_is_never_undone() {
    let (kube, s) = start().await;
    s.lock().unwrap().node["spec"]["unschedulable"] = json!(true);
    let d = kube.quarantine("gpu-node-01", "xid 79", "sha256:bad").await.unwrap();
    assert_eq!(d.outcome, Outcome::Done);
    assert!(d.message.contains("already cordoned"), "{}", d.message);
    assert!(s.lock().unwrap().node["metadata"]["annotations"].get(ANN_CORDONED).is_none());
    let d = kube.release("gpu-node-01", &just(true)).await.unwrap();
    assert_eq!(d.outcome, Outcome::Done);
    let n = node_of(&s);
    let m = marks(&n);
    assert!(m.unschedulable && !m.our_taint, "admin's cordon stays: {m:?}");

    // A node only an admin cordoned (no Lifeline mark at all) is not released.
    let d = kube.release("gpu-node-01", &just(true)).await.unwrap();
    assert_eq!(d.outcome, Outcome::RefusedNotOurs);
    assert!(marks(&node_of(&s)).unschedulable);
}

#[tokio::test]
async fn unknown_node_is_an_api_error() {
    let (kube, _s) = start().await;
    let err = kube.quarantine("gpu-node-99", "x", "d").await.unwrap_err();
    let text = format!("{err}: {:?}", std::error::Error::source(&err));
    assert!(text.contains("gpu-node-99") && text.contains("not found"), "{text}");
}
