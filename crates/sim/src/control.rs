//! The sim's own control plane: fault injection and inspection over plain HTTP on loopback.
//!
//! This is not a BMC protocol: it is how operators (`lifeline sim fault`), demos and tests change the
//! simulated world. The server side routes to [`crate::fleet::Devices`]; [`Client`] is the tiny client the
//! CLI calls.
//!
//! | method | path | body | reply |
//! |---|---|---|---|
//! | GET | `/devices` | | `[DeviceInfo]` |
//! | GET | `/devices/{name}` | | `DeviceInfo` |
//! | GET | `/devices/{name}/console` | | last few KiB of the serial console (text) |
//! | GET | `/devices/{name}/actions` | | `[Action]`: executed power/BMC/config actions, oldest first |
//! | POST | `/faults/{name}` | `{"fault": "rail-down=mlx5_3"}` | `DeviceInfo` (200), 400 bad fault, 404, 422 not applicable |
//! | DELETE | `/faults/{name}` | | `DeviceInfo` with no faults |
//! | POST | `/power/{name}` | `{"action": "on"\|"off"\|"cycle"\|"reset"\|"soft"}` | `DeviceInfo` |
//!
//! `GET /devices/{name}/actions` answers, per executed action (see [`crate::actions`] for what counts):
//! ```json
//! [{"seq": 1, "time": "2025-03-03T02:11:09.123456Z", "protocol": "ipmi", "action": "power-cycle",
//!   "origin": "admin@127.0.0.1:40312", "noop": false}]
//! ```
//! `protocol` is `redfish`, `ipmi`, `ssh` or `control`; `action` one of `power-on`, `power-off`,
//! `power-cycle`, `hard-reset`, `soft-off`, `graceful-restart`, `nmi`, `bmc-reset`, `sel-clear`,
//! `config-apply`, `config-reload`; `origin` is `user@addr:port` when the user is known (Redfish session
//! or Basic user, IPMI username, SSH login), else `addr:port`; `noop` is true when the command was
//! accepted but changed nothing (`On` while on). Refused commands and deduplicated IPMI retransmissions
//! are not listed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::StatusCode;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::actions::Origin;
pub use crate::actions::{Action, ActionKind, Protocol};
use crate::fault::Fault;
use crate::fleet::{DeviceError, Devices};

/// What the control API says about a device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub name: String,
    /// `server` or `switch`.
    pub kind: String,
    /// Power state of the host (servers) or of the switch behind its BMC; `on` for a switch without BMC.
    pub power: String,
    /// `off`, `post`, `bootloader`, `kernel`, `os-up`, `shutting-down`, `halted`.
    pub phase: String,
    /// Active faults in their kebab-case spelling.
    pub faults: Vec<String>,
    /// Redfish flavor of the BMC, if any.
    #[serde(default)]
    pub flavor: Option<String>,
    /// Switch platform (`sonic`, `eos`, ...), if a switch.
    #[serde(default)]
    pub platform: Option<String>,
}

#[derive(Debug, Deserialize)]
struct FaultBody {
    fault: String,
}

#[derive(Debug, Deserialize)]
struct PowerBody {
    action: String,
}

fn err(status: StatusCode, msg: impl std::fmt::Display) -> Response {
    (status, Json(serde_json::json!({ "error": msg.to_string() }))).into_response()
}

fn device_error(e: DeviceError) -> Response {
    let status = match e {
        DeviceError::UnknownDevice { .. } => StatusCode::NOT_FOUND,
        DeviceError::Host(_) | DeviceError::NotSupported { .. } => StatusCode::UNPROCESSABLE_ENTITY,
    };
    err(status, e)
}

/// Serves the control API until `cancel` fires.
pub async fn serve(listener: TcpListener, devices: Arc<Devices>, cancel: CancellationToken) {
    let app = axum::Router::new()
        .route("/devices", get(list))
        .route("/devices/{name}", get(show))
        .route("/devices/{name}/console", get(console))
        .route("/devices/{name}/actions", get(actions))
        .route("/faults/{name}", post(inject).delete(clear))
        .route("/power/{name}", post(power))
        .with_state(devices);
    let _ = axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(cancel.cancelled_owned())
        .await;
}

async fn list(State(d): State<Arc<Devices>>) -> Json<Vec<DeviceInfo>> {
    Json(d.infos())
}

async fn show(State(d): State<Arc<Devices>>, Path(name): Path<String>) -> Response {
    match d.info(&name) {
        Ok(i) => Json(i).into_response(),
        Err(e) => device_error(e),
    }
}

async fn console(State(d): State<Arc<Devices>>, Path(name): Path<String>) -> Response {
    match d.console_history(&name) {
        Ok(text) => text.into_response(),
        Err(e) => device_error(e),
    }
}

async fn actions(State(d): State<Arc<Devices>>, Path(name): Path<String>) -> Response {
    match d.actions(&name) {
        Ok(a) => Json(a).into_response(),
        Err(e) => device_error(e),
    }
}

async fn inject(State(d): State<Arc<Devices>>, Path(name): Path<String>, body: Json<FaultBody>) -> Response {
    let fault: Fault = match body.fault.parse() {
        Ok(f) => f,
        Err(e) => return err(StatusCode::BAD_REQUEST, e),
    };
    match d.inject(&name, &fault).await {
        Ok(i) => Json(i).into_response(),
        Err(e) => device_error(e),
    }
}

async fn clear(State(d): State<Arc<Devices>>, Path(name): Path<String>) -> Response {
    match d.clear(&name).await {
        Ok(i) => Json(i).into_response(),
        Err(e) => device_error(e),
    }
}

async fn power(
    State(d): State<Arc<Devices>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(name): Path<String>,
    body: Json<PowerBody>,
) -> Response {
    let action = match body.action.parse::<lifeline_types::PowerAction>() {
        Ok(a) => a,
        Err(e) => return err(StatusCode::BAD_REQUEST, e),
    };
    match d.power(&name, action, &Origin::new(Protocol::Control, Some(peer), None)) {
        Ok(i) => Json(i).into_response(),
        Err(e) => device_error(e),
    }
}

/// Why a control request failed.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("bad control URL `{url}`")]
    BadUrl { url: String },
    #[error("control API at {url} did not answer within {after:?}")]
    Timeout { url: String, after: Duration },
    #[error("control API at {url} is unreachable")]
    Unreachable {
        url: String,
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    #[error("control API refused: {status} {message}")]
    Refused { status: u16, message: String },
    #[error("control API at {url} sent a reply that is not the expected JSON")]
    BadReply {
        url: String,
        #[source]
        source: serde_json::Error,
    },
}

/// Client of the control API (what `lifeline sim fault` calls).
#[derive(Debug, Clone, Copy)]
pub struct Client;

const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

impl Client {
    /// Injects `fault` (kebab-case, e.g. `rail-down=mlx5_3`) into `device`; `clear` clears all its faults.
    /// Returns the device's state afterwards.
    pub async fn inject(url: &str, device: &str, fault: &str) -> Result<DeviceInfo, ControlError> {
        if fault == "clear" {
            return Self::clear(url, device).await;
        }
        let body = serde_json::json!({ "fault": fault }).to_string();
        request(url, http::Method::POST, &format!("/faults/{device}"), Some(body)).await
    }

    /// Clears every fault of `device`.
    pub async fn clear(url: &str, device: &str) -> Result<DeviceInfo, ControlError> {
        request(url, http::Method::DELETE, &format!("/faults/{device}"), None).await
    }

    /// Every simulated device.
    pub async fn devices(url: &str) -> Result<Vec<DeviceInfo>, ControlError> {
        request(url, http::Method::GET, "/devices", None).await
    }

    /// What `device` was made to do: executed power, BMC and config actions, oldest first.
    pub async fn actions(url: &str, device: &str) -> Result<Vec<Action>, ControlError> {
        request(url, http::Method::GET, &format!("/devices/{device}/actions"), None).await
    }

    /// Power action on a device through the sim (not through its BMC): `on`, `off`, `cycle`, `reset`, `soft`.
    pub async fn power(url: &str, device: &str, action: &str) -> Result<DeviceInfo, ControlError> {
        let body = serde_json::json!({ "action": action }).to_string();
        request(url, http::Method::POST, &format!("/power/{device}"), Some(body)).await
    }
}

async fn request<T: serde::de::DeserializeOwned>(
    url: &str,
    method: http::Method,
    path: &str,
    body: Option<String>,
) -> Result<T, ControlError> {
    let full = format!("{}{path}", url.trim_end_matches('/'));
    let uri: http::Uri = full.parse().map_err(|_| ControlError::BadUrl { url: url.to_owned() })?;
    if uri.scheme_str() != Some("http") {
        return Err(ControlError::BadUrl { url: url.to_owned() });
    }
    let req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body.map(Body::from).unwrap_or_else(Body::empty))
        .map_err(|_| ControlError::BadUrl { url: url.to_owned() })?;
    let client = HyperClient::builder(TokioExecutor::new()).build_http::<Body>();
    let fut = async {
        let resp = client
            .request(req)
            .await
            .map_err(|source| ControlError::Unreachable { url: url.to_owned(), source })?;
        let status = resp.status();
        let bytes = axum::body::to_bytes(Body::new(resp.into_body()), 4 << 20).await.unwrap_or_default();
        Ok::<_, ControlError>((status, bytes))
    };
    let (status, bytes) = tokio::time::timeout(CLIENT_TIMEOUT, fut)
        .await
        .map_err(|_| ControlError::Timeout { url: url.to_owned(), after: CLIENT_TIMEOUT })??;
    if !status.is_success() {
        let message = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
        return Err(ControlError::Refused { status: status.as_u16(), message });
    }
    serde_json::from_slice(&bytes).map_err(|source| ControlError::BadReply { url: url.to_owned(), source })
}
