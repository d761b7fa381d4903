//! EventService: push subscriptions and the Server-Sent Events stream.
//!
//! Why bounded: an SSE stream is a response that never ends, from a device we do not control. It gets an idle
//! limit (a silent BMC is noticed, not waited on forever), a per-event size limit (enforced by the parser) and
//! an optional total byte limit, and it holds one of the BMC's sessions only for as long as it lives.

use std::collections::VecDeque;
use std::time::Duration;

use reqwest::Method;
use serde::Serialize;
use serde_json::Value;

use crate::client::{Client, Listing};
use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model::{self, Event, EventDestination};
use crate::session::SessionGuard;
use crate::sse::{SseEvent, SseParser};

/// What to subscribe (`EventDestination` create body).
#[derive(Debug, Clone, Serialize)]
pub struct SubscriptionRequest {
    /// Where the BMC POSTs events (Lifeline's receiver URL).
    pub destination: String,
    /// Opaque string echoed in every event: lets the receiver tell subscriptions apart.
    pub context: String,
    /// `None`: all events (Redfish 1.x `EventTypes` is deprecated but older BMCs require it).
    pub event_types: Option<Vec<String>>,
    pub registry_prefixes: Option<Vec<String>>,
    /// Ask for `HeartbeatEvent` messages every this many minutes (`SendHeartbeat` and
    /// `HeartbeatIntervalMinutes`, EventDestination v1_11). A service older than that may refuse the
    /// properties (HTTP 400): the caller then subscribes without them.
    pub heartbeat_minutes: Option<u32>,
}

/// Limits for an SSE stream.
#[derive(Debug, Clone, Copy)]
pub struct SseLimits {
    pub max_event_bytes: usize,
    /// Stop after this many bytes in total (`None`: no limit; the idle limit still applies).
    pub max_total_bytes: Option<usize>,
    /// Give up when nothing (not even a keep-alive comment) arrives for this long.
    pub idle_timeout: Duration,
}

impl Default for SseLimits {
    fn default() -> Self {
        SseLimits {
            max_event_bytes: 256 * 1024,
            max_total_bytes: None,
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// An open `ServerSentEventUri` stream.
pub struct EventStream {
    client: Client,
    url: String,
    resp: reqwest::Response,
    parser: SseParser,
    pending: VecDeque<SseEvent>,
    total: usize,
    limits: SseLimits,
    done: bool,
    _session: Option<SessionGuard>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").field("bmc", &self.client.bmc()).field("url", &self.url).finish()
    }
}

impl EventStream {
    /// Next event; `None` when the BMC ended the stream. After an error the stream is finished.
    pub async fn next(&mut self) -> Option<Result<SseEvent, RedfishError>> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Some(Ok(e));
            }
            if self.done {
                return None;
            }
            let bmc = self.client.bmc().to_owned();
            // The events completed before an oversized one were delivered above; now its error.
            if let Some(source) = self.parser.failure().cloned() {
                self.done = true;
                return Some(Err(RedfishError::Sse { bmc, url: self.url.clone(), source }));
            }
            let chunk = match tokio::time::timeout(self.limits.idle_timeout, self.resp.chunk()).await {
                Err(_) => {
                    self.done = true;
                    return Some(Err(RedfishError::SseIdle {
                        bmc,
                        url: self.url.clone(),
                        after: self.limits.idle_timeout,
                    }));
                }
                Ok(Err(e)) => {
                    self.done = true;
                    let url = reqwest::Url::parse(&self.url).ok();
                    return Some(Err(match url {
                        Some(u) => self.client.transport().map_err(e, "GET", &u),
                        None => RedfishError::Http { bmc, method: "GET", url: self.url.clone(), source: e },
                    }));
                }
                Ok(Ok(None)) => {
                    self.done = true;
                    return None;
                }
                Ok(Ok(Some(c))) => c,
            };
            self.total += chunk.len();
            if let Some(limit) = self.limits.max_total_bytes
                && self.total > limit
            {
                self.done = true;
                return Some(Err(RedfishError::SseByteLimit { bmc, url: self.url.clone(), limit }));
            }
            match self.parser.push(&chunk) {
                Ok(events) => self.pending.extend(events),
                Err(source) => {
                    self.done = true;
                    return Some(Err(RedfishError::Sse { bmc, url: self.url.clone(), source }));
                }
            }
        }
    }

    /// Read an SSE event's data as a Redfish `Event` (leniently; non-JSON data becomes a warning).
    pub fn parse(&self, e: &SseEvent) -> Event {
        parse_event_data(&e.data, &self.url)
    }
}

/// An SSE event's data read as a Redfish `Event` document fetched from `url` (what [`EventStream::parse`]
/// does; a free function so that it can be fuzzed without a stream).
pub fn parse_event_data(data: &str, url: &str) -> Event {
    match serde_json::from_str::<Value>(data) {
        Ok(v) => Event::from_value(&v, url),
        Err(err) => Event {
            warnings: vec![FieldWarning {
                at: url.to_owned(),
                problem: format!("event data is not JSON: {err}"),
            }],
            ..Event::default()
        },
    }
}

impl Client {
    fn event_service_link(&self) -> Result<String, RedfishError> {
        self.service_root().event_service.clone().ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: "/redfish/v1/".into(),
            what: "EventService link",
        })
    }

    async fn subscriptions_link(&self) -> Result<String, RedfishError> {
        let link = self.event_service_link()?;
        let es = self.event_service().await?.unwrap_or_default();
        Ok(es.subscriptions.unwrap_or_else(|| format!("{}/Subscriptions", link.trim_end_matches('/'))))
    }

    pub async fn subscriptions(&self) -> Result<Listing<EventDestination>, RedfishError> {
        let link = self.subscriptions_link().await?;
        let l = self.members(&link).await?;
        let mut warnings = l.warnings;
        let items =
            l.items.iter().map(|(id, v)| model::event_destination_from_value(v, id, &mut warnings)).collect();
        Ok(Listing { items, warnings })
    }

    /// Create a push subscription; returns its URI (from `Location`, else the reply's `@odata.id`).
    pub async fn subscribe(&self, req: &SubscriptionRequest) -> Result<String, RedfishError> {
        let link = self.subscriptions_link().await?;
        let mut body = serde_json::json!({
            "Destination": req.destination,
            "Context": req.context,
            "Protocol": "Redfish",
        });
        if let Some(t) = &req.event_types {
            body["EventTypes"] = serde_json::json!(t);
        }
        if let Some(p) = &req.registry_prefixes {
            body["RegistryPrefixes"] = serde_json::json!(p);
        }
        if let Some(m) = req.heartbeat_minutes {
            body["SendHeartbeat"] = serde_json::json!(true);
            body["HeartbeatIntervalMinutes"] = serde_json::json!(m);
        }
        let reply = self.request(Method::POST, &link, Some(&body)).await?;
        let status = reply.resp.status();
        let url = reply.url.to_string();
        let location = reply.resp.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let t = self.transport();
        let bytes = tokio::time::timeout(t.timeout, reply.resp.bytes())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        if !status.is_success() {
            return Err(RedfishError::Status {
                bmc: self.bmc().to_owned(),
                method: "POST",
                url,
                status: status.as_u16(),
                message: serde_json::from_slice::<Value>(&bytes)
                    .ok()
                    .and_then(|v| v.pointer("/error/message").and_then(Value::as_str).map(str::to_owned)),
            });
        }
        let from_body = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v.get("@odata.id").and_then(Value::as_str).map(str::to_owned));
        location.or(from_body).map(|l| t.url(&l).map(|u| u.path().to_owned())).transpose()?.ok_or(
            RedfishError::Missing {
                bmc: self.bmc().to_owned(),
                url,
                what: "Location of the new subscription",
            },
        )
    }

    pub async fn unsubscribe(&self, link: &str) -> Result<(), RedfishError> {
        self.send_json(Method::DELETE, link, None).await.map(|_| ())
    }

    /// Open the EventService's SSE stream (optionally with an OData `$filter`, e.g. `EventType eq 'Alert'`).
    pub async fn event_stream(
        &self,
        filter: Option<&str>,
        limits: SseLimits,
    ) -> Result<EventStream, RedfishError> {
        let es = self.event_service().await?.ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: "/redfish/v1/".into(),
            what: "EventService link",
        })?;
        let sse = es.sse_uri.ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: self.event_service_link().unwrap_or_default(),
            what: "ServerSentEventUri",
        })?;
        let link = match filter {
            Some(f) => {
                let mut u = self.transport().url(&sse)?;
                u.query_pairs_mut().append_pair("$filter", f);
                u.to_string()
            }
            None => sse,
        };
        let reply = self.request_stream(&link).await?;
        let status = reply.resp.status();
        if !status.is_success() {
            return Err(RedfishError::Status {
                bmc: self.bmc().to_owned(),
                method: "GET",
                url: reply.url.to_string(),
                status: status.as_u16(),
                message: None,
            });
        }
        let crate::client::Reply { resp, url, guard, .. } = reply;
        Ok(EventStream {
            client: self.clone(),
            url: url.to_string(),
            resp,
            parser: SseParser::new(limits.max_event_bytes),
            pending: VecDeque::new(),
            total: 0,
            limits,
            done: false,
            _session: guard,
        })
    }
}
