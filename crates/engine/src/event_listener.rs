//! Lifeline's Redfish event receiver: a small HTTP endpoint BMCs POST `Event` documents to (the
//! `Destination` of a subscription made by `lifeline bmc subscribe`). Used by `lifeline events --follow`
//! and meant for the server to run as well.
//!
//! Why hand-rolled and not a web framework: it accepts exactly one thing (a POSTed JSON body), and every
//! limit is explicit: 256 KiB per request, 10 s to read it, one request per connection. What arrives is
//! turned into store events keyed for deduplication (the same SEL record also shows up in SEL polls).

use std::net::SocketAddr;
use std::time::Duration;

use lifeline_store::NewEvent;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const MAX_REQUEST: usize = 256 * 1024;
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

/// A bound receiver; events go to the channel returned by [`EventListener::bind`].
pub struct EventListener {
    listener: TcpListener,
    tx: mpsc::Sender<Received>,
}

impl EventListener {
    pub async fn bind(addr: SocketAddr) -> std::io::Result<(EventListener, mpsc::Receiver<Received>)> {
        let listener = TcpListener::bind(addr).await?;
        let (tx, rx) = mpsc::channel(1024);
        Ok((EventListener { listener, tx }, rx))
    }

    /// The `Destination` to subscribe (`http://ADDR:PORT/events`).
    pub fn url(&self) -> std::io::Result<String> {
        Ok(format!("http://{}/events", self.listener.local_addr()?))
    }

    /// Another way into the same channel (an SSE reader).
    pub fn sender(&self) -> mpsc::Sender<Received> {
        self.tx.clone()
    }

    /// Serves until the receiver is dropped.
    pub async fn run(self) {
        loop {
            let Ok((sock, peer)) = self.listener.accept().await else { continue };
            if self.tx.is_closed() {
                return;
            }
            let tx = self.tx.clone();
            tokio::spawn(async move {
                if let Err(e) = serve(sock, tx).await {
                    tracing::debug!(%peer, error = %e, "event delivery rejected");
                }
            });
        }
    }
}

async fn serve(mut sock: TcpStream, tx: mpsc::Sender<Received>) -> std::io::Result<()> {
    let read = tokio::time::timeout(READ_LIMIT, read_request(&mut sock)).await;
    let (status, events) = match read {
        Ok(Ok(Some(body))) => match serde_json::from_slice::<Value>(&body) {
            Ok(doc) => ("204 No Content", parse_event_document(&doc)),
            Err(_) => ("400 Bad Request", Vec::new()),
        },
        Ok(Ok(None)) => ("405 Method Not Allowed", Vec::new()),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => ("413 Payload Too Large", Vec::new()),
        Ok(Err(e)) => return Err(e),
        Err(_) => ("408 Request Timeout", Vec::new()),
    };
    for e in events {
        let _ = tx.send(e).await;
    }
    let reply = format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    sock.write_all(reply.as_bytes()).await?;
    sock.shutdown().await
}

/// The body of a POST (`None` for another method); bounded by [`MAX_REQUEST`].
async fn read_request(sock: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
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
    if !head.starts_with("POST ") {
        return Ok(None);
    }
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
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[tokio::test]
    async fn receives_a_post_and_refuses_other_methods() {
        let (l, mut rx) = EventListener::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let url = l.url().unwrap();
        let addr = url.trim_start_matches("http://").trim_end_matches("/events").to_owned();
        tokio::spawn(l.run());
        let body =
            json!({ "Context": "lifeline:n1", "Events": [{ "EventId": "1", "Message": "hi" }] }).to_string();
        let mut s = TcpStream::connect(&addr).await.unwrap();
        let req = format!("POST /events HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        s.write_all(req.as_bytes()).await.unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).await.unwrap();
        assert!(reply.starts_with("HTTP/1.1 204"), "{reply}");
        let got = rx.recv().await.unwrap();
        assert_eq!((got.event.device.as_deref(), got.key.as_str()), (Some("n1"), "event:1"));
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"GET /events HTTP/1.1\r\n\r\n").await.unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).await.unwrap();
        assert!(reply.starts_with("HTTP/1.1 405"), "{reply}");
    }
}
