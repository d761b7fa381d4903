//! Live updates for the web console over Server-Sent Events: the fleet page keeps one `EventSource` open
//! instead of polling. The server looks at its own store as soon as this process writes a change to a
//! device's state (the engine's [`state_changes`](lifeline_engine::Lifeline::state_changes): a fault, a
//! run, a drain), and once a second otherwise (what other replicas and sweeps write); each look is a few
//! indexed reads, the shared snapshots built once for any number of browsers, none of them reaching a BMC.
//! It pushes only what changed: the device list when a row differs from the last one sent, each new event
//! row (SEL entries, sweep changes), and each runbook run whose state or journal moved (`run`, the run as
//! `GET /api/v1/runs/{id}` shows it), so the runbook pages follow a run without polling; and the overview
//! (`summary`, as `GET /api/v1/summary`) and every device's state (`states`, `{name: state}`) when they
//! change, for the overview and the rack grid.

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::http::Method;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::get;
use futures::Stream;

use crate::access::{Route, route, viewer};
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::state::AppState;

/// How often the store is looked at when this process wrote nothing: what other replicas write (and
/// sweeps' observations, which do not wake the stream) waits at most this long.
const TICK: Duration = Duration::from_secs(1);

/// The least time between two looks when woken by changes: a burst (a rack's faults at once) costs a
/// few looks, not one per write, and a stream looks at most four times a second under constant change.
const MIN_GAP: Duration = Duration::from_millis(250);

pub fn routes() -> Vec<Route> {
    vec![route(
        Method::GET,
        "/api/v1/live",
        viewer(),
        "live",
        "Server-Sent Events: `devices` (the fleet list, sent when it changes), `event` (the 50 newest event rows on connecting, then each new one), `run` (a runbook run whose state or journal changed), `summary` (as `GET /api/v1/summary`, when it changes) and `states` (`{device: state}`, when one changes).",
        get(live),
    )
    .returns_text("text/event-stream")]
}

struct Cursor {
    s: AppState,
    /// This stream's place among its user's and source's open streams, given back when it ends.
    _slot: crate::streams::StreamSlot,
    last_devices: String,
    last_summary: String,
    last_states: String,
    after: i64,
    pending: std::collections::VecDeque<Event>,
    first: bool,
    runs: RunWatch,
    /// Wakes the stream when this process writes a state change.
    changes: tokio::sync::watch::Receiver<u64>,
    last_look: tokio::time::Instant,
}

/// What was last seen of each recent run: (state, next step, updated) and its newest journal row.
#[derive(Default)]
struct RunWatch {
    seen: HashMap<String, ((String, i64, i64), i64)>,
}

/// How many of the newest events a new stream starts with.
const HISTORY: usize = 50;

/// How many of the newest runs the stream watches.
const RUNS_WATCHED: i64 = 100;

impl RunWatch {
    /// The runs that changed since the last look (none on the first look: the page reads them itself).
    async fn changed(&mut self, s: &AppState, first: bool) -> Vec<Event> {
        let Ok(rows) = s.base.runs_recent(RUNS_WATCHED).await else { return Vec::new() };
        let mut out = Vec::new();
        for r in rows {
            let key = (r.state.to_string(), r.next_step, r.updated_at_ms);
            let (old_key, old_journal) =
                self.seen.get(&r.id).cloned().unwrap_or(((String::new(), -1, -1), 0));
            let active = r.state.in_progress();
            // Journal rows appear while the state stays `running` (a step's intent): look at active runs.
            let newest = if active || key != old_key || first {
                match s.base.run_journal_since(&r.id, old_journal).await {
                    Ok(j) => j.last().map_or(old_journal, |j| j.id),
                    Err(_) => old_journal,
                }
            } else {
                old_journal
            };
            if !first && (key != old_key || newest != old_journal) {
                let journal = s.base.run_journal(&r.id).await.unwrap_or_default();
                let rb = lifeline_runbook::library::parse_stored(&r.runbook, &r.definition).ok();
                let v = lifeline_runbook::RunView::build(&r, rb.as_ref(), &journal);
                out.push(Event::default().event("run").data(serde_json::to_string(&v).unwrap_or_default()));
            }
            self.seen.insert(r.id.clone(), (key, newest));
        }
        out
    }
}

async fn live(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let slot = crate::streams::open(&s, &caller)?;
    // The stream opens with the newest events (the page's events panel shows recent history at once),
    // then brings what is new.
    let mut after = 0;
    let mut history = std::collections::VecDeque::new();
    while let Ok(rows) = s.base.events_after(after, 10_000).await {
        match rows.last() {
            Some(r) => after = r.id,
            None => break,
        }
        for r in rows {
            history.push_back(r);
            if history.len() > HISTORY {
                history.pop_front();
            }
        }
    }
    let pending = history
        .iter()
        .map(|r| Event::default().event("event").data(serde_json::to_string(r).unwrap_or_default()))
        .collect();
    let mut runs = RunWatch::default();
    runs.changed(&s, true).await;
    let changes = s.base.state_changes().await?;
    let cur = Cursor {
        s,
        _slot: slot,
        last_devices: String::new(),
        last_summary: String::new(),
        last_states: String::new(),
        after,
        pending,
        first: true,
        runs,
        changes,
        last_look: tokio::time::Instant::now(),
    };
    let stream = futures::stream::unfold(cur, |mut c| async move {
        loop {
            if let Some(ev) = c.pending.pop_front() {
                return Some((Ok(ev), c));
            }
            if !c.first {
                let woken = async {
                    if c.changes.changed().await.is_err() {
                        // The store is gone with the server; the tick (or shutdown) ends the wait.
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    _ = tokio::time::sleep(TICK) => {}
                    _ = woken => {
                        tokio::time::sleep_until(c.last_look + MIN_GAP).await;
                    }
                    _ = c.s.shutdown.cancelled() => return None,
                }
            }
            c.first = false;
            c.last_look = tokio::time::Instant::now();
            if let Ok(body) = crate::api::devices::list_json(&c.s).await {
                let text = String::from_utf8_lossy(&body).into_owned();
                if text != c.last_devices {
                    c.pending.push_back(Event::default().event("devices").data(text.clone()));
                    c.last_devices = text;
                }
            }
            if let Ok(snap) = crate::api::overview::snapshot(&c.s).await {
                let states: serde_json::Map<String, serde_json::Value> =
                    snap.rows.iter().map(|r| (r.name.clone(), r.state.as_str().into())).collect();
                let states = serde_json::Value::Object(states).to_string();
                if states != c.last_states {
                    c.pending.push_back(Event::default().event("states").data(states.clone()));
                    c.last_states = states;
                }
                // Sent when anything but its timestamp changed.
                let mut v = serde_json::to_value(&snap.summary).unwrap_or_default();
                let body = v.to_string();
                if let Some(m) = v.as_object_mut() {
                    m.remove("generated_at");
                }
                let key = v.to_string();
                if key != c.last_summary {
                    c.pending.push_back(Event::default().event("summary").data(body));
                    c.last_summary = key;
                }
            }
            if let Ok(rows) = c.s.base.events_after(c.after, 200).await {
                for r in rows {
                    c.after = c.after.max(r.id);
                    let data = serde_json::to_string(&r).unwrap_or_default();
                    c.pending.push_back(Event::default().event("event").data(data));
                }
            }
            let s = c.s.clone();
            c.pending.extend(c.runs.changed(&s, false).await);
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
