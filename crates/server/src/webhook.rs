//! Webhooks: each notification is POSTed as JSON to every `[[webhook]]` that wants its kind, in the
//! background, with retries and backoff; a delivery that fails every try is counted and logged, never
//! blocking the rule that raised it.

use std::time::Duration;

use crate::state::AppState;

const TRIES: u32 = 4;

pub fn notify(s: &AppState, kind: &str, body: serde_json::Value) {
    let hooks: Vec<String> = s
        .base
        .config
        .config
        .webhook
        .iter()
        .filter(|w| w.events.is_empty() || w.events.iter().any(|e| e == kind))
        .map(|w| w.url.clone())
        .collect();
    for url in hooks {
        let s = s.clone();
        let body = body.clone();
        tokio::spawn(async move {
            if let Err(e) = deliver(&url, &body).await {
                s.metrics.webhook_failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::warn!(%url, "webhook not delivered: {e}");
            }
        });
    }
}

/// POSTs with retries; 2xx is delivered, 4xx other than 429 is final.
pub async fn deliver(url: &str, body: &serde_json::Value) -> Result<(), String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .connect_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| e.to_string())?;
    let mut last = String::new();
    for attempt in 0..TRIES {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(500 << attempt)).await;
        }
        match client.post(url).json(body).send().await {
            Ok(r) if r.status().is_success() => return Ok(()),
            Ok(r) if r.status().is_client_error() && r.status().as_u16() != 429 => {
                return Err(format!("refused with {}", r.status()));
            }
            Ok(r) => last = format!("status {}", r.status()),
            Err(e) => last = lifeline_engine::error_chain(&e),
        }
    }
    Err(format!("{TRIES} tries: {last}"))
}
