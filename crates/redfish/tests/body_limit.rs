//! A reply larger than `MAX_BODY_BYTES` (a BMC streaming without end, or a log far beyond any real one) is
//! an error naming the limit, whether the BMC announced its length or streamed it in chunks; a large reply
//! within the limit is read whole.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use axum::routing::get;
use lifeline_redfish::*;
use lifeline_test_utils::unique_loopback;

const LIMIT: usize = 32 << 20;

fn root() -> Response {
    let v = serde_json::json!({"@odata.id": "/redfish/v1", "Systems": {"@odata.id": "/redfish/v1/Systems"},
        "Chassis": {"@odata.id": "/redfish/v1/Chassis"}, "Managers": {"@odata.id": "/redfish/v1/Managers"}});
    Response::builder().header("content-type", "application/json").body(Body::from(v.to_string())).unwrap()
}

/// A collection document of about `bytes` bytes, sent in 64 KiB chunks without a length.
fn chunked(bytes: usize) -> Response {
    let pad = "x".repeat(bytes);
    let doc = format!(r#"{{"Members": [], "Pad": "{pad}"}}"#).into_bytes();
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = doc.chunks(64 << 10).map(|c| Ok(c.to_vec())).collect();
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from_stream(futures::stream::iter(chunks)))
        .unwrap()
}

async fn serve() -> String {
    let app = Router::new()
        .route("/redfish/v1/", get(|| async { root() }))
        .route("/redfish/v1", get(|| async { root() }))
        // Announced length over the limit.
        .route("/redfish/v1/Systems", get(|| async { Response::new(Body::from(vec![b' '; LIMIT + 1])) }))
        // Streamed over the limit.
        .route("/redfish/v1/Chassis", get(|| async { chunked(LIMIT + (1 << 20)) }))
        // Streamed, large, within it.
        .route("/redfish/v1/Managers", get(|| async { chunked(LIMIT / 2) }));
    let listener = tokio::net::TcpListener::bind((unique_loopback(), 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

#[tokio::test]
async fn replies_over_the_limit_are_refused_and_large_ones_within_it_read() {
    let url = serve().await;
    let opts = ClientOptions {
        auth: AuthMode::Basic,
        speculative_login: false,
        first_contact_reads: &[],
        ..ClientOptions::default()
    };
    let c = Client::connect(
        BmcTarget::new("big", url),
        Credentials::new("u", "p"),
        TlsTrust::Pin { store: Arc::new(MemoryPinStore::new()), explicit: None },
        opts,
    )
    .await
    .unwrap();
    for link in ["/redfish/v1/Systems", "/redfish/v1/Chassis"] {
        match c.get_json(link).await {
            Err(RedfishError::BodyTooLarge { limit, .. }) => assert_eq!(limit, LIMIT, "{link}"),
            other => panic!("{link}: {:?}", other.map(|(v, _)| v.to_string().len())),
        }
    }
    let (v, _) = c.get_json("/redfish/v1/Managers").await.unwrap();
    assert_eq!(v["Pad"].as_str().map(str::len), Some(LIMIT / 2));
}
