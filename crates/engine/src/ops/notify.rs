//! Notifications: a JSON POST to a webhook (chat, paging, a relay), over HTTP or HTTPS (the system's trust
//! roots), with a deadline per try and retries with backoff: a 2xx is delivered, a 4xx other than 429 is
//! final (retrying a refused payload only repeats the refusal). One implementation for the runbook
//! `notify` step and the server's `[[webhook]]` deliveries.

use std::time::Duration;

use crate::error::{EngineError, Result};

/// How many times a delivery is tried.
pub const TRIES: u32 = 4;

/// POSTs `body` to `url` once; returns the HTTP status. A status outside 2xx is an error.
pub async fn post_json(url: &str, body: &serde_json::Value, timeout: Duration) -> Result<u16> {
    deliver(url, body, timeout, 1).await
}

/// POSTs `body` to `url`, up to `tries` times (backoff 1 s, 2 s, 4 s …) while the failure may pass.
pub async fn deliver(url: &str, body: &serde_json::Value, timeout: Duration, tries: u32) -> Result<u16> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| EngineError::bad_argument(format!("webhook `{url}` is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(EngineError::bad_argument(format!(
            "webhook `{url}`: expected an http:// or https:// URL"
        )));
    }
    // reqwest is built without a default crypto provider (ring is the workspace's); a no-op when installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .build()
        .map_err(|e| EngineError::failed_by(url, "webhook client", e))?;
    let mut last = String::new();
    for attempt in 0..tries.max(1) {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(500 << attempt)).await;
        }
        match client.post(parsed.clone()).json(body).send().await {
            Ok(r) if r.status().is_success() => return Ok(r.status().as_u16()),
            Ok(r) if r.status().is_client_error() && r.status().as_u16() != 429 => {
                return Err(EngineError::failed(url, format!("webhook refused the message: {}", r.status())));
            }
            Ok(r) => last = format!("webhook answered {}", r.status()),
            Err(e) => last = crate::error::error_chain(&e),
        }
    }
    Err(EngineError::failed(url, if tries > 1 { format!("{tries} tries: {last}") } else { last }))
}
