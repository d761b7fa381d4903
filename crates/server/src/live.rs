//! Live updates for the web console over Server-Sent Events: the fleet page keeps one `EventSource` open
//! instead of polling. The server looks at its own store once a second (a few indexed reads, the same for
//! any number of browsers, none of them reaching a BMC) and pushes only what changed: the device list when
//! a row differs from the last one sent, and each new event row (SEL entries, sweep changes).

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::Method;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::get;
use futures::Stream;

use crate::access::{Route, route, viewer};
use crate::state::AppState;

/// How often the store is looked at for changes.
const TICK: Duration = Duration::from_secs(1);

pub fn routes() -> Vec<Route> {
    vec![route(
        Method::GET,
        "/api/v1/live",
        viewer(),
        "live",
        "Server-Sent Events: `devices` (the fleet list, sent when it changes) and `event` (each new event row).",
        get(live),
    )]
}

struct Cursor {
    s: AppState,
    last_devices: String,
    after: i64,
    pending: std::collections::VecDeque<Event>,
    first: bool,
}

async fn live(State(s): State<AppState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    // Start after the newest event: the page reads the history itself; the stream brings what is new.
    let mut after = 0;
    while let Ok(rows) = s.store.events_after(after, 10_000).await {
        match rows.last() {
            Some(r) => after = r.id,
            None => break,
        }
    }
    let cur = Cursor { s, last_devices: String::new(), after, pending: Default::default(), first: true };
    let stream = futures::stream::unfold(cur, |mut c| async move {
        loop {
            if let Some(ev) = c.pending.pop_front() {
                return Some((Ok(ev), c));
            }
            if !c.first {
                tokio::select! {
                    _ = tokio::time::sleep(TICK) => {}
                    _ = c.s.shutdown.cancelled() => return None,
                }
            }
            c.first = false;
            if let Ok(body) = crate::api::devices::list_json(&c.s).await {
                let text = String::from_utf8_lossy(&body).into_owned();
                if text != c.last_devices {
                    c.pending.push_back(Event::default().event("devices").data(text.clone()));
                    c.last_devices = text;
                }
            }
            if let Ok(rows) = c.s.store.events_after(c.after, 200).await {
                for r in rows {
                    c.after = c.after.max(r.id);
                    let data = serde_json::to_string(&r).unwrap_or_default();
                    c.pending.push_back(Event::default().event("event").data(data));
                }
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
