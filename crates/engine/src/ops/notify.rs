//! Notifications: a JSON POST to a webhook (chat, paging), with a deadline. Plain HTTP only for now: the
//! webhook relays operators use on the management network; an `https://` URL is refused rather than sent
//! without verification.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::error::{EngineError, Result};

/// POSTs `body` to `url`; returns the HTTP status. A status outside 2xx is an error.
pub async fn post_json(url: &str, body: &serde_json::Value, timeout: Duration) -> Result<u16> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        EngineError::bad_argument(format!(
            "webhook `{url}`: only http:// URLs are supported (use a relay for https)"
        ))
    })?;
    let (host, path) = match rest.split_once('/') {
        Some((h, p)) => (h, format!("/{p}")),
        None => (rest, "/".to_owned()),
    };
    let addr = if host.contains(':') { host.to_owned() } else { format!("{host}:80") };
    let payload = body.to_string();
    let send = async {
        let mut s = tokio::net::TcpStream::connect(&addr).await?;
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
            payload.len()
        );
        s.write_all(req.as_bytes()).await?;
        let mut head = Vec::new();
        let mut buf = [0u8; 512];
        while !head.windows(2).any(|w| w == b"\r\n") {
            let n = s.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&head).into_owned())
    };
    let head = tokio::time::timeout(timeout, send)
        .await
        .map_err(|_| EngineError::failed(url, format!("no answer within {} s", timeout.as_secs())))?
        .map_err(|e| EngineError::failed_by(url, "webhook", e))?;
    let status =
        head.split_whitespace().nth(1).and_then(|s| s.parse::<u16>().ok()).ok_or_else(|| {
            EngineError::failed(url, format!("not an HTTP answer: {:?}", head.lines().next()))
        })?;
    if !(200..300).contains(&status) {
        return Err(EngineError::failed(url, format!("webhook answered {status}")));
    }
    Ok(status)
}
