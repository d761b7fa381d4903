//! Consoles: the always-on logger's consoles, their logs (every byte, whether or not anyone watched), and
//! WebSocket attach — read-only for viewers, write (or take over the writer) for operators, each write
//! session audited. Viewers hang off the server's one console manager, so each keeps the manager's bounded
//! per-viewer buffer: a slow browser lags (and is told so) instead of stalling the BMC session.

use std::collections::VecDeque;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, State};
use axum::http::Method;
use axum::response::Response;
use axum::routing::get;
use axum::{Extension, Json};
use lifeline_console::{AttachOptions, ViewerEvent, WriteMode};
use lifeline_types::AuditAction;
use serde::{Deserialize, Serialize};

use crate::access::{Route, operator, route, viewer};
use crate::api::answers::ConsoleInfo;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/api/v1/consoles",
            viewer(),
            "consoles",
            "Every console the server logs, with its session state and viewers.",
            get(list),
        )
        .returns_list::<ConsoleInfo>(),
        route(
            Method::GET,
            "/api/v1/consoles/{name}/log",
            viewer(),
            "consoles",
            "The console's log (`?since=RFC3339&limit=N` records, newest kept).",
            get(log),
        )
        .returns::<ConsoleLog>(),
        route(
            Method::GET,
            "/api/v1/consoles/{name}/attach",
            viewer(),
            "consoles",
            "WebSocket: watch the console read-only (binary frames: output; text frames: JSON events).",
            get(attach_read),
        )
        .upgrades("binary frames carry the console's output; text frames are JSON events (`marker`, `status`, `writer`, `lagged`, `closed`)"),
        route(
            Method::GET,
            "/api/v1/consoles/{name}/write",
            operator(),
            "consoles",
            "WebSocket: attach with the write lock (`?take_over=true` takes it from its holder; audited). The text frame `{\"type\":\"break\"}` sends a serial break.",
            get(attach_write),
        )
        .upgrades("as `attach`; binary or text frames sent are typed into the console, `{\"type\":\"break\"}` sends a serial break"),
    ]
}

async fn list(State(s): State<AppState>) -> ApiResult<Json<Vec<ConsoleInfo>>> {
    Ok(Json(s.consoles.list()))
}

#[derive(Debug, Deserialize)]
pub struct LogQuery {
    pub since: Option<String>,
    pub limit: Option<usize>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LogLine {
    pub ts: chrono::DateTime<chrono::Utc>,
    /// `output` or `marker`.
    pub kind: String,
    pub data: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ConsoleLog {
    pub console: String,
    pub records: Vec<LogLine>,
    /// The records as `lifeline console log` prints them.
    pub text: String,
}

async fn log(
    State(s): State<AppState>,
    Path(name): Path<String>,
    Query(q): Query<LogQuery>,
) -> ApiResult<Json<ConsoleLog>> {
    let since = q
        .since
        .as_deref()
        .map(|t| chrono::DateTime::parse_from_rfc3339(t).map(|t| t.with_timezone(&chrono::Utc)))
        .transpose()
        .map_err(|e| ApiError::bad_request(format!("since: {e} (RFC 3339, e.g. 2026-01-02T03:04:05Z)")))?;
    // Logs written by this process are flushed first, so what the API shows is what was seen.
    s.consoles.flush_logs().await;
    let limit = q.limit.unwrap_or(2000).clamp(1, 100_000);
    let mut reader = s.base.console_log(&name, since, false).await?;
    let mut recs = VecDeque::new();
    while let Some(r) = reader.next().await {
        let r =
            r.map_err(|e| lifeline_engine::EngineError::failed_by(&name, "reading the console log", e))?;
        if recs.len() == limit {
            recs.pop_front();
        }
        recs.push_back(r);
    }
    let text: Vec<u8> = recs.iter().flat_map(|r| r.render()).collect();
    let records = recs
        .into_iter()
        .map(|r| LogLine {
            ts: r.ts,
            kind: format!("{:?}", r.kind).to_lowercase(),
            data: String::from_utf8_lossy(&r.data).into_owned(),
        })
        .collect();
    Ok(Json(ConsoleLog { console: name, records, text: String::from_utf8_lossy(&text).into_owned() }))
}

async fn attach_read(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    headers: axum::http::HeaderMap,
    ws: WebSocketUpgrade,
) -> ApiResult<Response> {
    attach(s, caller, name, WriteMode::ReadOnly, &headers, ws).await
}

#[derive(Debug, Deserialize)]
pub struct WriteQuery {
    #[serde(default)]
    pub take_over: bool,
}

async fn attach_write(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
    Query(q): Query<WriteQuery>,
    headers: axum::http::HeaderMap,
    ws: WebSocketUpgrade,
) -> ApiResult<Response> {
    let mode = if q.take_over { WriteMode::TakeOver } else { WriteMode::Write };
    attach(s, caller, name, mode, &headers, ws).await
}

async fn attach(
    s: AppState,
    caller: Caller,
    name: String,
    mode: WriteMode,
    headers: &axum::http::HeaderMap,
    ws: WebSocketUpgrade,
) -> ApiResult<Response> {
    if let Err(origin) = crate::origin::same_origin(headers) {
        return Err(ApiError::Forbidden {
            role: caller.role.as_str(),
            what: format!("open a console from another origin ({origin})"),
        });
    }
    let slot = crate::streams::open(&s, &caller)?;
    let audit = s.audit_as(&caller.actor()).await?;
    let opts = AttachOptions { who: caller.actor(), mode, steal: false };
    let (viewer, _) = s.consoles.attach(&name, opts).await.map_err(|e| match e {
        lifeline_console::ConsoleError::UnknownConsole { .. } => {
            ApiError::NotFound { what: "console", name: name.clone() }
        }
        e => ApiError::Engine(lifeline_engine::EngineError::failed_by(&name, "console", e)),
    })?;
    let mode_word = match mode {
        WriteMode::ReadOnly => "read-only",
        WriteMode::Write => "write",
        WriteMode::TakeOver => "take-over",
    };
    let action =
        if mode == WriteMode::TakeOver { AuditAction::ConsoleTakeover } else { AuditAction::ConsoleAttach };
    let detail = serde_json::json!({ "mode": mode_word, "from": caller.addr, "via": "websocket" });
    audit.record(action, &name, lifeline_engine::Outcome::Ok, None, detail).await?;
    Ok(ws.on_upgrade(move |socket| async move {
        s.metrics.console_viewers.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let how = pump(socket, viewer, s.shutdown.clone()).await;
        s.metrics.console_viewers.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        let _ = audit
            .record(
                AuditAction::ConsoleDetach,
                &name,
                lifeline_engine::Outcome::Ok,
                None,
                serde_json::json!({ "how": how, "mode": mode_word }),
            )
            .await;
        drop(slot);
    }))
}

fn event_json(ev: &ViewerEvent) -> Option<String> {
    let v = match ev {
        ViewerEvent::Data(_) => return None,
        ViewerEvent::Marker(t) => serde_json::json!({ "type": "marker", "text": t }),
        ViewerEvent::Status(st) => serde_json::json!({ "type": "status", "status": st }),
        ViewerEvent::WriterChanged { writer } => serde_json::json!({ "type": "writer", "writer": writer }),
        ViewerEvent::Lagged { missed } => serde_json::json!({ "type": "lagged", "missed": missed }),
        ViewerEvent::Closed => serde_json::json!({ "type": "closed" }),
    };
    Some(v.to_string())
}

/// The one text frame that is a command rather than input: send a serial break (writers only).
pub const BREAK_FRAME: &str = r#"{"type":"break"}"#;

/// Console → socket and socket → console until either side ends; returns how it ended, for the audit row.
async fn pump(
    mut socket: WebSocket,
    mut viewer: lifeline_console::Viewer,
    shutdown: tokio_util::sync::CancellationToken,
) -> &'static str {
    loop {
        tokio::select! {
            ev = viewer.recv() => {
                let msg = match &ev {
                    ViewerEvent::Data(b) => Message::Binary(b.clone()),
                    other => Message::Text(event_json(other).unwrap_or_default().into()),
                };
                if socket.send(msg).await.is_err() {
                    return "socket closed";
                }
                if matches!(ev, ViewerEvent::Closed) {
                    return "console closed";
                }
            }
            msg = socket.recv() => match msg {
                Some(Ok(Message::Binary(b))) => {
                    if viewer.is_writer() && viewer.write(&b).await.is_err() {
                        return "console write failed";
                    }
                }
                Some(Ok(Message::Text(t))) if t.as_str() == BREAK_FRAME => {
                    // The web console's "send break" (a serial break is not a byte, so it cannot be typed).
                    if viewer.is_writer() && viewer.send_break().await.is_err() {
                        return "console break failed";
                    }
                }
                Some(Ok(Message::Text(t))) => {
                    if viewer.is_writer() && viewer.write(t.as_bytes()).await.is_err() {
                        return "console write failed";
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return "socket closed",
                Some(Ok(_)) => {}
            },
            _ = shutdown.cancelled() => {
                let _ = socket.send(Message::Close(None)).await;
                return "server shutting down";
            }
        }
    }
}
