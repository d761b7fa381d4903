//! EventService: subscriptions with push delivery, and the Server-Sent Events stream.
//!
//! Events come from the host (power changes, SEL records) so a fault injected through the control API
//! reaches SSE listeners and subscribers exactly as the SEL shows it. A delivery task exists only while a
//! BMC has subscriptions; plain `http://` destinations only (a listener in a test or a demo).
//!
//! A BMC reset drops every subscription, as iDRAC and iLO do on a reset or a firmware update: a client
//! that wants its events after one has to notice and subscribe again. A subscription made with
//! `SendHeartbeat` (EventDestination v1_11) gets a `HeartbeatEvent.1.0.RedfishServiceFunctional` event every
//! `HeartbeatIntervalMinutes` (scaled by the host's time scale, so a test need not wait minutes).

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use lifeline_types::Health;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio::task::AbortHandle;

use super::resources::subscriptions_lock;
use super::{RedfishBmc, error, json_response, lock};
use crate::host::HostEvent;

const MAX_SUBSCRIPTIONS: usize = 8;
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the delivery task looks for heartbeats due.
const HEARTBEAT_TICK: Duration = Duration::from_millis(100);
/// The `MessageId` of a heartbeat (DMTF `HeartbeatEvent` registry).
pub const HEARTBEAT_MESSAGE: &str = "HeartbeatEvent.1.0.RedfishServiceFunctional";

#[derive(Debug, Clone)]
pub(crate) struct Subscription {
    id: u32,
    destination: String,
    context: String,
    /// `HeartbeatIntervalMinutes` when `SendHeartbeat` was asked for.
    heartbeat: Option<u32>,
    /// When the last heartbeat was sent (or the subscription made).
    beat: Instant,
}

#[derive(Debug, Default)]
pub(crate) struct Subscriptions {
    list: Vec<Subscription>,
    next_id: u32,
    next_event: u64,
    /// The BMC reset generation these subscriptions belong to; a BMC reset drops them all.
    pub(crate) reset_generation: u32,
}

impl Subscriptions {
    /// Drops every subscription when the BMC was reset since they were made.
    pub(crate) fn after_reset(&mut self, generation: u32) {
        if self.reset_generation != generation {
            if !self.list.is_empty() {
                tracing::info!(dropped = self.list.len(), "BMC reset: event subscriptions dropped");
            }
            self.list.clear();
            self.reset_generation = generation;
        }
    }
}

/// Per-BMC event state.
#[derive(Debug, Default)]
pub(crate) struct EventState {
    pub(crate) subs: Mutex<Subscriptions>,
    delivery: Mutex<Option<AbortHandle>>,
}

impl Drop for EventState {
    fn drop(&mut self) {
        if let Some(a) = lock(&self.delivery).take() {
            a.abort();
        }
    }
}

fn health(h: Health) -> &'static str {
    match h {
        Health::Ok | Health::Unknown => "OK",
        Health::Warning => "Warning",
        Health::Critical => "Critical",
    }
}

/// The `Events[]` record of one host event.
fn record(bmc: &RedfishBmc, e: &HostEvent, id: u64) -> Value {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    match e {
        HostEvent::Power(p) => json!({
            "EventType": "StatusChange",
            "EventId": id.to_string(),
            "EventTimestamp": now,
            "Severity": "OK",
            "MessageId": "Lifeline.1.0.PowerStateChanged",
            "Message": format!("The power state of {} changed to {p}.", bmc.host.name()),
            "MessageArgs": [p.to_string()],
            "OriginOfCondition": { "@odata.id": bmc.system_path() },
        }),
        HostEvent::Sel(s) => json!({
            "EventType": "Alert",
            "EventId": id.to_string(),
            "EventTimestamp": s.created(),
            "Severity": health(s.severity),
            "MessageId": s.message_id,
            "Message": s.message,
            "MessageArgs": [],
            "OriginOfCondition": {
                "@odata.id": format!("{}/{}/Entries/{}", bmc.log_services_path(), bmc.flavor.sel_id, s.id)
            },
        }),
        HostEvent::Heartbeat => json!({
            "EventType": "Other",
            "EventId": id.to_string(),
            "EventTimestamp": now,
            "Severity": "OK",
            "MessageId": HEARTBEAT_MESSAGE,
            "Message": "Redfish service is functional.",
            "MessageArgs": [],
        }),
        HostEvent::Message { message_id, message } => json!({
            "EventType": "Alert",
            "EventId": id.to_string(),
            "EventTimestamp": now,
            "Severity": "OK",
            "MessageId": message_id,
            "Message": message,
            "MessageArgs": [],
        }),
    }
}

fn event_doc(bmc: &RedfishBmc, e: &HostEvent, id: u64, context: &str) -> Value {
    json!({
        "@odata.type": "#Event.v1_7_0.Event",
        "Id": id.to_string(),
        "Name": "Event Log",
        "Context": context,
        "Events": [record(bmc, e, id)],
    })
}

fn sub_doc(s: &Subscription) -> Value {
    let mut v = json!({
        "@odata.id": format!("/redfish/v1/EventService/Subscriptions/{}", s.id),
        "@odata.type": "#EventDestination.v1_13_0.EventDestination",
        "Id": s.id.to_string(),
        "Name": "Event Subscription",
        "Destination": s.destination,
        "Context": s.context,
        "Protocol": "Redfish",
        "SubscriptionType": "RedfishEvent",
        "EventFormatType": "Event",
        "SendHeartbeat": s.heartbeat.is_some(),
    });
    if let Some(m) = s.heartbeat {
        v["HeartbeatIntervalMinutes"] = json!(m);
    }
    v
}

pub(super) async fn route(
    bmc: &Arc<RedfishBmc>,
    method: &Method,
    path: &str,
    tail: &[&str],
    _headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let not_allowed = |allow: &'static str| {
        let mut r = error(
            StatusCode::METHOD_NOT_ALLOWED,
            "OperationNotAllowed",
            "The HTTP method is not allowed on this resource.",
            &[],
        );
        r.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
        r
    };
    match (tail, method) {
        ([], &Method::GET) => json_response(StatusCode::OK, service(bmc)),
        ([], _) => not_allowed("GET"),
        (["Subscriptions"], &Method::GET) => {
            let s = subscriptions_lock(bmc);
            let members: Vec<Value> = s
                .list
                .iter()
                .map(|x| json!({"@odata.id": format!("/redfish/v1/EventService/Subscriptions/{}", x.id)}))
                .collect();
            json_response(
                StatusCode::OK,
                json!({
                    "@odata.id": "/redfish/v1/EventService/Subscriptions",
                    "@odata.type": "#EventDestinationCollection.EventDestinationCollection",
                    "Name": "Event Subscriptions",
                    "Members@odata.count": members.len(),
                    "Members": members,
                }),
            )
        }
        (["Subscriptions"], &Method::POST) => subscribe(bmc, body),
        (["Subscriptions"], _) => not_allowed("GET, POST"),
        (["Subscriptions", id], &Method::GET) => {
            let s = subscriptions_lock(bmc);
            match s.list.iter().find(|x| x.id.to_string() == *id) {
                Some(x) => json_response(StatusCode::OK, sub_doc(x)),
                None => {
                    super::error(StatusCode::NOT_FOUND, "ResourceNotFound", "No such subscription.", &[path])
                }
            }
        }
        (["Subscriptions", id], &Method::DELETE) => {
            let mut s = subscriptions_lock(bmc);
            let before = s.list.len();
            s.list.retain(|x| x.id.to_string() != *id);
            if s.list.len() == before {
                return super::error(
                    StatusCode::NOT_FOUND,
                    "ResourceNotFound",
                    "No such subscription.",
                    &[path],
                );
            }
            if s.list.is_empty()
                && let Some(a) = lock(&bmc.events.delivery).take()
            {
                a.abort();
            }
            StatusCode::NO_CONTENT.into_response()
        }
        (["Subscriptions", _], _) => not_allowed("GET, DELETE"),
        (["SSE"], &Method::GET) => sse(bmc),
        (["SSE"], _) => not_allowed("GET"),
        (["Actions", "EventService.SubmitTestEvent"], &Method::POST) => {
            let m: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let message = m.get("Message").and_then(Value::as_str).unwrap_or("Test event").to_owned();
            let message_id =
                m.get("MessageId").and_then(Value::as_str).unwrap_or("Base.1.15.0.Success").to_owned();
            bmc.host.publish(HostEvent::Message { message_id, message });
            StatusCode::NO_CONTENT.into_response()
        }
        (["Actions", "EventService.SubmitTestEvent"], _) => not_allowed("POST"),
        _ => super::error(StatusCode::NOT_FOUND, "ResourceNotFound", "No such resource.", &[path]),
    }
}

fn service(_bmc: &RedfishBmc) -> Value {
    json!({
        "@odata.id": "/redfish/v1/EventService",
        "@odata.type": "#EventService.v1_10_0.EventService",
        "Id": "EventService",
        "Name": "Event Service",
        "ServiceEnabled": true,
        "DeliveryRetryAttempts": 3,
        "DeliveryRetryIntervalSeconds": 30,
        "EventFormatTypes": ["Event"],
        "RegistryPrefixes": ["Base", "OpenBMC", "Lifeline"],
        "ServerSentEventUri": "/redfish/v1/EventService/SSE",
        "Status": { "State": "Enabled", "Health": "OK" },
        "Subscriptions": { "@odata.id": "/redfish/v1/EventService/Subscriptions" },
        "Actions": {
            "#EventService.SubmitTestEvent": {
                "target": "/redfish/v1/EventService/Actions/EventService.SubmitTestEvent"
            }
        },
    })
}

fn subscribe(bmc: &Arc<RedfishBmc>, body: &Bytes) -> Response {
    let m: Value = match serde_json::from_slice(body) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "MalformedJSON",
                "The request body was malformed JSON.",
                &[],
            );
        }
    };
    let Some(dest) = m.get("Destination").and_then(Value::as_str) else {
        return error(
            StatusCode::BAD_REQUEST,
            "PropertyMissing",
            "The property Destination is a required property and must be included in the request.",
            &["Destination"],
        );
    };
    if !(dest.starts_with("http://") || dest.starts_with("https://")) || dest.parse::<http::Uri>().is_err() {
        return error(
            StatusCode::BAD_REQUEST,
            "PropertyValueFormatError",
            &format!(
                "The value '{dest}' for the property Destination is of a different format than the property can accept."
            ),
            &[dest, "Destination"],
        );
    }
    if let Some(p) = m.get("Protocol").and_then(Value::as_str)
        && p != "Redfish"
    {
        return error(
            StatusCode::BAD_REQUEST,
            "PropertyValueNotInList",
            &format!("The value '{p}' for the property Protocol is not in the list of acceptable values."),
            &[p, "Protocol"],
        );
    }
    let context = m.get("Context").and_then(Value::as_str).unwrap_or_default().to_owned();
    let heartbeat = match heartbeat_of(&m) {
        Ok(h) => h,
        Err(r) => return r,
    };
    let mut s = subscriptions_lock(bmc);
    if s.list.len() >= MAX_SUBSCRIPTIONS {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "CreateLimitReachedForResource",
            "The create operation failed because the resource has reached the limit of possible resources.",
            &[],
        );
    }
    s.next_id += 1;
    let sub = Subscription {
        id: s.next_id,
        destination: dest.to_owned(),
        context,
        heartbeat,
        beat: Instant::now(),
    };
    let doc = sub_doc(&sub);
    let location = format!("/redfish/v1/EventService/Subscriptions/{}", sub.id);
    s.list.push(sub);
    drop(s);
    ensure_delivery(bmc);
    let mut r = json_response(StatusCode::CREATED, doc);
    if let Ok(l) = HeaderValue::from_str(&location) {
        r.headers_mut().insert(header::LOCATION, l);
    }
    r
}

/// The heartbeat interval asked for: `SendHeartbeat` true with `HeartbeatIntervalMinutes` 1..=65535
/// (the schema's range; 10 when left out, its default).
fn heartbeat_of(m: &Value) -> Result<Option<u32>, Response> {
    let type_error = |p: &str, v: &Value| {
        error(
            StatusCode::BAD_REQUEST,
            "PropertyValueTypeError",
            &format!(
                "The value '{v}' for the property {p} is of a different type than the property can accept."
            ),
            &[&v.to_string(), p],
        )
    };
    let send = match m.get("SendHeartbeat") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => return Err(type_error("SendHeartbeat", v)),
    };
    let minutes = match m.get("HeartbeatIntervalMinutes") {
        None | Some(Value::Null) => 10,
        Some(v) => match v.as_u64().filter(|n| (1..=65535).contains(n)) {
            Some(n) => n as u32,
            None => return Err(type_error("HeartbeatIntervalMinutes", v)),
        },
    };
    Ok(send.then_some(minutes))
}

fn ensure_delivery(bmc: &Arc<RedfishBmc>) {
    let mut d = lock(&bmc.events.delivery);
    if d.as_ref().is_some_and(|a| !a.is_finished()) {
        return;
    }
    let rx = bmc.host.subscribe_events();
    let weak = Arc::downgrade(bmc);
    *d = Some(tokio::spawn(deliver(weak, rx)).abort_handle());
}

async fn deliver(weak: Weak<RedfishBmc>, mut rx: broadcast::Receiver<HostEvent>) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
    let mut tick = tokio::time::interval(HEARTBEAT_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let ev = tokio::select! {
            r = rx.recv() => match r {
                Ok(ev) => Some(ev),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = tick.tick() => None,
        };
        let Some(bmc) = weak.upgrade() else { return };
        let (targets, id, ev) = {
            let mut s = subscriptions_lock(&bmc);
            let targets: Vec<Subscription> = match &ev {
                Some(_) => s.list.clone(),
                // Heartbeats: the subscriptions whose interval has passed.
                None => {
                    let due = |x: &Subscription| {
                        x.heartbeat.is_some_and(|m| {
                            x.beat.elapsed() >= bmc.host.scaled(Duration::from_secs(60 * u64::from(m)))
                        })
                    };
                    let mut out = Vec::new();
                    for x in s.list.iter_mut().filter(|x| due(x)) {
                        x.beat = Instant::now();
                        out.push(x.clone());
                    }
                    out
                }
            };
            if targets.is_empty() {
                continue;
            }
            s.next_event += 1;
            (targets, s.next_event, ev.unwrap_or(HostEvent::Heartbeat))
        };
        for t in targets {
            if !t.destination.starts_with("http://") {
                continue;
            }
            let body = event_doc(&bmc, &ev, id, &t.context).to_string();
            let req = http::Request::post(&t.destination)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body));
            let Ok(req) = req else { continue };
            match tokio::time::timeout(DELIVERY_TIMEOUT, client.request(req)).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::debug!(dest = t.destination, error = %e, "event delivery failed"),
                Err(_) => tracing::debug!(dest = t.destination, "event delivery timed out"),
            }
        }
    }
}

fn sse(bmc: &Arc<RedfishBmc>) -> Response {
    let rx = bmc.host.subscribe_events();
    let weak = Arc::downgrade(bmc);
    let stream = futures::stream::unfold((rx, weak, 0u64), |(mut rx, weak, mut n)| async move {
        loop {
            match rx.recv().await {
                Ok(ev) => {
                    let bmc = weak.upgrade()?;
                    n += 1;
                    let doc = event_doc(&bmc, &ev, n, "");
                    let item = SseEvent::default().id(n.to_string()).data(doc.to_string());
                    return Some((Ok::<_, std::convert::Infallible>(item), (rx, weak, n)));
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response()
}
