//! Webhooks: each notification is POSTed as JSON to every `[[webhook]]` that wants its kind, in the
//! background, with retries and backoff; a delivery that fails every try is counted and logged, never
//! blocking the rule that raised it.

use std::time::Duration;

use crate::state::AppState;

const TRIES: u32 = lifeline_engine::ops::notify::TRIES;

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

/// POSTs with retries (the engine's delivery: 2xx delivered, 4xx other than 429 final, backoff).
pub async fn deliver(url: &str, body: &serde_json::Value) -> Result<(), String> {
    lifeline_engine::ops::notify::deliver(url, body, Duration::from_secs(10), TRIES)
        .await
        .map(drop)
        .map_err(|e| e.chain())
}
