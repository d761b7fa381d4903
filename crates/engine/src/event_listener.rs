//! Lifeline's Redfish event receiver: a small HTTP endpoint BMCs POST `Event` documents to (the
//! `Destination` of a subscription made by `lifeline bmc subscribe` or the server). Used by `lifeline events
//! --follow` and by the server's `events = "push"`.
//!
//! Why hand-rolled and not a web framework: it accepts exactly one thing (a POSTed JSON body), and every
//! limit is explicit: 64 KiB per request, 10 s to read it, one request per connection, 64 connections at
//! once, and the per-source limits of [`crate::event_gate`]. A delivery passes the gate (device, secret,
//! source) or changes nothing; one that passes is only a [`Prompt`] to read that BMC's own log over the
//! authenticated client: what the BMC says there, not the pushed body, is what gets stored.
//!
//! With a certificate and key configured (`[server] event-tls-cert`/`event-tls-key`) the receiver speaks
//! TLS only ([`EventListener::with_tls`]): the subscription secret in the path then never crosses the OOB
//! network in clear, and a plain-HTTP delivery fails its handshake and changes nothing.
//!
//! [`parse_event_document`] turns an event document into store events; the SSE reader uses it, since an
//! SSE stream is read over the authenticated client from the BMC itself.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use lifeline_store::NewEvent;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc};

use crate::event_gate::EventGate;

const MAX_REQUEST: usize = 64 * 1024;
/// Connections served at once, all sources together.
const MAX_OPEN: usize = 64;
const READ_LIMIT: Duration = Duration::from_secs(10);

/// One event as received, ready for [`lifeline_store::Store::record_event_once`].
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub event: NewEvent,
    pub key: String,
}

/// The dedup key of a Redfish event record: `sel:<entry id>` when it points at a log entry (the SEL poll
/// uses the same key), else `event:<EventId>`, else the message and time.
pub fn event_key(record: &Value) -> String {
    let s = |k: &str| record.get(k).and_then(Value::as_str).unwrap_or_default();
    let origin = record.pointer("/OriginOfCondition/@odata.id").and_then(Value::as_str).unwrap_or_default();
    if let Some((_, id)) = origin.rsplit_once("/Entries/") {
        return format!("sel:{id}");
    }
    if !s("EventId").is_empty() {
        return format!("event:{}", s("EventId"));
    }
    format!("event:{}:{}:{}", s("MessageId"), s("EventTimestamp"), s("Message"))
}

/// The events of one POSTed `Event` document (lenient: missing fields become empty).
pub fn parse_event_document(doc: &Value) -> Vec<Received> {
    let device = doc
        .get("Context")
        .and_then(Value::as_str)
        .and_then(lifeline_bmc::subscribe::device_of)
        .map(str::to_owned);
    let records = doc.get("Events").and_then(Value::as_array).cloned().unwrap_or_default();
    records
        .iter()
        .map(|r| {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            let severity = match s("Severity").to_ascii_lowercase().as_str() {
                "critical" => "critical",
                "warning" => "warning",
                _ => "ok",
            };
            Received {
                event: NewEvent {
                    device: device.clone(),
                    source: "redfish-event".into(),
                    severity: severity.into(),
                    message: s("Message"),
                    data: r.clone(),
                },
                key: event_key(r),
            }
        })
        .collect()
}

/// A bound receiver; authenticated deliveries go to the channel returned by [`EventListener::bind`].
pub struct EventListener {
    listener: TcpListener,
    gate: Arc<EventGate>,
    tx: mpsc::Sender<Prompt>,
    open: Arc<Semaphore>,
    tls: Option<tokio_rustls::TlsAcceptor>,
}

/// An authenticated delivery: `device`'s BMC says something happened; read its log to learn what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub device: String,
    pub peer: IpAddr,
    /// How many records the delivery carried (for the log line only: the records themselves are not used).
    pub records: usize,
}

impl EventListener {
    pub async fn bind(
        addr: SocketAddr,
        gate: Arc<EventGate>,
    ) -> std::io::Result<(EventListener, mpsc::Receiver<Prompt>)> {
        let listener = TcpListener::bind(addr).await?;
        let (tx, rx) = mpsc::channel(1024);
        Ok((EventListener { listener, gate, tx, open: Arc::new(Semaphore::new(MAX_OPEN)), tls: None }, rx))
    }

    /// Serve TLS only, with this configuration ([`crate::event_tls::server_config`]).
    pub fn with_tls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(tokio_rustls::TlsAcceptor::from(config));
        self
    }

    /// The receiver's URL (`http://ADDR:PORT/events`, `https://` with TLS); each BMC is subscribed to it
    /// followed by its secret ([`EventGate::destination`]).
    pub fn url(&self) -> std::io::Result<String> {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        Ok(format!("{scheme}://{}/events", self.listener.local_addr()?))
    }

    pub fn gate(&self) -> Arc<EventGate> {
        self.gate.clone()
    }

    /// Serves until the receiver is dropped.
    pub async fn run(self) {
        loop {
            let Ok((sock, peer)) = self.listener.accept().await else { continue };
            if self.tx.is_closed() {
                return;
            }
            // Over the limit: the connection is closed unread (the BMC retries its delivery later).
            let Ok(permit) = self.open.clone().try_acquire_owned() else {
                tracing::debug!(%peer, "event receiver busy: connection closed");
                continue;
            };
            let (tx, gate, tls) = (self.tx.clone(), self.gate.clone(), self.tls.clone());
            tokio::spawn(async move {
                let served = match tls {
                    None => serve(sock, peer.ip(), &gate, tx).await,
                    // The handshake counts against the same time limit as reading the request.
                    Some(acceptor) => match tokio::time::timeout(READ_LIMIT, acceptor.accept(sock)).await {
                        Ok(Ok(stream)) => serve(stream, peer.ip(), &gate, tx).await,
                        Ok(Err(e)) => Err(e),
                        Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "TLS handshake")),
                    },
                };
                if let Err(e) = served {
                    tracing::debug!(%peer, error = %e, "event delivery not read");
                }
                drop(permit);
            });
        }
    }
}

/// What one connection gets: the status line, and the prompt when the delivery passed the gate.
async fn answer<S: AsyncRead + Unpin>(
    sock: &mut S,
    peer: IpAddr,
    gate: &EventGate,
) -> std::io::Result<(&'static str, Option<Prompt>)> {
    let admitted = match gate.admit(peer) {
        Ok(a) => a,
        Err(r) => return Ok((r.status(), None)),
    };
    let read = tokio::time::timeout(READ_LIMIT, read_request(sock)).await;
    let (secret, body) = match read {
        Ok(Ok(Some(req))) => req,
        Ok(Ok(None)) => return Ok(("405 Method Not Allowed", None)),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Ok(("413 Payload Too Large", None));
        }
        Ok(Err(e)) => return Err(e),
        Err(_) => return Ok(("408 Request Timeout", None)),
    };
    drop(admitted);
    let Ok(doc) = serde_json::from_slice::<Value>(&body) else { return Ok(("400 Bad Request", None)) };
    let device = doc.get("Context").and_then(Value::as_str).and_then(lifeline_bmc::subscribe::device_of);
    match gate.check(device, secret.as_deref(), peer) {
        Ok(device) => {
            let records = doc.get("Events").and_then(Value::as_array).map_or(0, Vec::len);
            Ok(("204 No Content", Some(Prompt { device, peer, records })))
        }
        Err(r) => {
            tracing::debug!(%peer, device = device.unwrap_or(""), "event delivery refused: {r}");
            Ok((r.status(), None))
        }
    }
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut sock: S,
    peer: IpAddr,
    gate: &EventGate,
    tx: mpsc::Sender<Prompt>,
) -> std::io::Result<()> {
    let (status, prompt) = answer(&mut sock, peer, gate).await?;
    if let Some(p) = prompt {
        // Full: prompts for this BMC are already waiting, and one read answers them all.
        let _ = tx.try_send(p);
    }
    let reply = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    sock.write_all(reply.as_bytes()).await?;
    sock.shutdown().await
}

/// The last segment of the request path (the subscription's secret) and the body of a POST (`None` for
/// another method); bounded by [`MAX_REQUEST`].
async fn read_request<S: AsyncRead + Unpin>(
    sock: &mut S,
) -> std::io::Result<Option<(Option<String>, Vec<u8>)>> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed before the headers"));
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > MAX_REQUEST {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "request too large"));
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let Some(target) = head.strip_prefix("POST ").and_then(|r| r.split(' ').next()) else {
        return Ok(None);
    };
    let secret = target.split('?').next().and_then(|p| p.rsplit('/').next()).filter(|s| !s.is_empty());
    let secret = secret.map(str::to_owned);
    let len = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim().eq_ignore_ascii_case("content-length")))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    if len > MAX_REQUEST {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "request too large"));
    }
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(len);
    Ok(Some((secret, body)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::net::TcpStream;

    #[test]
    fn keys_match_the_sel_poll_and_devices_come_from_the_context() {
        let doc = json!({
            "Context": "lifeline:gpu-node-05",
            "Events": [
                { "EventId": "9", "Severity": "Critical", "Message": "GPU6 XID 79",
                  "OriginOfCondition": { "@odata.id": "/redfish/v1/Managers/1/LogServices/SEL/Entries/42" } },
                { "EventId": "10", "Severity": "OK", "Message": "power on" },
                { "Message": "no id" }
            ]
        });
        let r = parse_event_document(&doc);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].key, "sel:42");
        assert_eq!(r[0].event.device.as_deref(), Some("gpu-node-05"));
        assert_eq!(r[0].event.severity, "critical");
        assert_eq!(r[1].key, "event:10");
        assert!(r[2].key.starts_with("event:"));
        assert!(parse_event_document(&json!({"Context": "other"})).is_empty());
    }

    /// Sends `body` to `path` on `addr` and returns the status line's code.
    async fn post(addr: &str, path: &str, body: &str) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let req = format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        let _ = s.write_all(req.as_bytes()).await;
        let mut reply = String::new();
        let _ = s.read_to_string(&mut reply).await;
        reply.split(' ').nth(1).unwrap_or("").to_owned()
    }

    fn gate() -> Arc<EventGate> {
        let mut s = std::collections::HashMap::new();
        s.insert("n1".to_owned(), vec!["127.0.0.1".parse().unwrap()]);
        s.insert("far".to_owned(), vec!["192.0.2.10".parse().unwrap()]);
        Arc::new(EventGate::new(s))
    }

    #[tokio::test]
    async fn only_an_authenticated_delivery_prompts_and_nothing_of_its_body_is_kept() {
        let (l, mut rx) = EventListener::bind("127.0.0.1:0".parse().unwrap(), gate()).await.unwrap();
        let url = l.url().unwrap();
        let g = l.gate();
        let addr = url.trim_start_matches("http://").trim_end_matches("/events").to_owned();
        tokio::spawn(l.run());
        let forged = |ctx: &str| {
            json!({ "Context": ctx, "Events": [{ "EventId": "1", "Severity": "Critical", "Message": "forged" }] })
                .to_string()
        };
        let path = |dev: &str| g.destination("/events", dev);
        // No secret, a wrong one, another device's, a device the gate does not know, the wrong source.
        assert_eq!(post(&addr, "/events", &forged("lifeline:n1")).await, "401");
        assert_eq!(post(&addr, "/events/00ff", &forged("lifeline:n1")).await, "401");
        assert_eq!(post(&addr, &path("far"), &forged("lifeline:n1")).await, "401");
        assert_eq!(post(&addr, &path("n1"), &forged("lifeline:nope")).await, "404");
        assert_eq!(post(&addr, &path("n1"), &forged("someone-else")).await, "404");
        assert_eq!(post(&addr, &path("far"), &forged("lifeline:far")).await, "403");
        assert_eq!(post(&addr, &path("n1"), "not json").await, "400");
        let big = format!("{{\"Context\":\"lifeline:n1\",\"x\":\"{}\"}}", "a".repeat(MAX_REQUEST));
        assert_eq!(post(&addr, &path("n1"), &big).await, "413");
        assert!(rx.try_recv().is_err(), "nothing refused reached the channel");
        assert_eq!(post(&addr, &path("n1"), &forged("lifeline:n1")).await, "204");
        let p = rx.recv().await.unwrap();
        assert_eq!((p.device.as_str(), p.records), ("n1", 1));
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"GET /events HTTP/1.1\r\n\r\n").await.unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).await.unwrap();
        assert!(reply.starts_with("HTTP/1.1 405"), "{reply}");
    }

    #[tokio::test]
    async fn a_flood_from_one_source_is_refused_after_its_burst() {
        let (l, mut rx) = EventListener::bind("127.0.0.1:0".parse().unwrap(), gate()).await.unwrap();
        let addr = l.url().unwrap().trim_start_matches("http://").trim_end_matches("/events").to_owned();
        let path = l.gate().destination("/events", "n1");
        tokio::spawn(l.run());
        let body = json!({ "Context": "lifeline:n1", "Events": [] }).to_string();
        let mut codes = Vec::new();
        for _ in 0..200 {
            codes.push(post(&addr, &path, &body).await);
        }
        let ok = codes.iter().filter(|c| *c == "204").count();
        let limited = codes.iter().filter(|c| *c == "429").count();
        assert_eq!(ok + limited, 200, "{codes:?}");
        assert!(ok < 60, "{ok} of 200 accepted");
        let mut prompts = 0;
        while rx.try_recv().is_ok() {
            prompts += 1;
        }
        assert_eq!(prompts, ok);
    }
}
