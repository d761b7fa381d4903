//! Which replica receives a BMC's events: one per BMC, so that `[server] events` can be on in every
//! replica without a stream per replica per BMC (SSE) or subscriptions replacing each other (push).
//!
//! Each Redfish BMC's events are a unit of work `events:NAME` ([`crate::replica`]): its preferred replica
//! (rendezvous over the live set) claims it and opens the stream, or subscribes the BMC to its own
//! receiver. The claims are renewed all at once (one statement per [`HEARTBEAT`], not one per BMC: a
//! fleet may hold thousands). BMC I/O runs in a task per BMC, so a slow or dead BMC never delays the
//! renewals. A replica that dies stops renewing; once its claims and membership expire (at once for a
//! dead process on this host) the BMCs' new preferred replicas claim them and subscribe them to their own
//! receivers, which replaces the dead replica's subscriptions (Lifeline replaces its own). A replica that
//! is no longer preferred (one joined) removes its subscription, then gives the claim back; one that
//! finds a claim lost (it was paused) only stops: the subscription on the BMC is the new holder's.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use lifeline_engine::event_listener::Received;
use lifeline_engine::{BmcSelection, SelectedBmc};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::replica::HEARTBEAT;
use crate::state::AppState;

/// How often the owner looks for BMCs to take or hand over.
pub const EVENTS_TICK: Duration = Duration::from_secs(3);

const PREFIX: &str = "events:";

/// The unit of work of one BMC's events.
pub fn events_key(device: &str) -> String {
    format!("{PREFIX}{device}")
}

/// How this replica receives the events of the BMCs it holds.
#[derive(Debug, Clone)]
pub enum Receive {
    /// Each BMC's SSE stream into the store's channel.
    Sse(mpsc::Sender<Received>),
    /// Each BMC subscribed to this replica's receiver at `url`, followed by the BMC's secret from `gate`;
    /// kept subscribed ([`super::event_keep`]) with the deliveries seen in `seen`.
    Push {
        url: String,
        gate: std::sync::Arc<lifeline_engine::event_gate::EventGate>,
        seen: std::sync::Arc<super::event_keep::Deliveries>,
        plan: super::event_keep::Schedule,
    },
}

/// One BMC held: its claim's fence and the task that streams (SSE) or subscribes and keeps the
/// subscription (push).
struct Held {
    fence: i64,
    task: JoinHandle<()>,
}

/// Holds this replica's share of `sel`'s events until shutdown, then gives it back (push: the
/// subscriptions removed first, so that a clean stop leaves none on the BMCs).
pub async fn run(s: AppState, sel: BmcSelection, how: Receive) {
    let mut held: HashMap<String, Held> = HashMap::new();
    let mut renewed = Instant::now();
    loop {
        if !held.is_empty() && renewed.elapsed() >= HEARTBEAT {
            match s.replica.renew_held(PREFIX).await {
                Ok(ours) => {
                    renewed = Instant::now();
                    held.retain(|name, h| {
                        let keep = ours.get(&events_key(name)) == Some(&h.fence);
                        if !keep {
                            // Taken over while this replica was paused: the BMC is the new holder's.
                            h.task.abort();
                            tracing::warn!(bmc = %name, "BMC events lost to another replica");
                        }
                        keep
                    });
                }
                // Transient: the next tick comes well before the expiry.
                Err(e) => tracing::warn!("renewing BMC event claims: {}", e.chain()),
            }
        }
        for b in &sel.bmcs {
            let name = b.name();
            let key = events_key(name);
            let want = s.replica.prefers(&key);
            if held.contains_key(name) {
                if !want && let Some(h) = held.remove(name) {
                    tracing::info!(bmc = %name, "BMC events handed over");
                    hand_over(&s, b, &how, h);
                }
                continue;
            }
            if !want {
                continue;
            }
            match s.replica.claim_row(&key).await {
                Ok(Some((work, previous))) => {
                    if let Some(p) = previous {
                        tracing::info!(bmc = %name, holder = %p.holder, "taking over BMC events");
                    }
                    let task = tokio::spawn(receive(s.clone(), b.clone(), how.clone()));
                    held.insert(name.to_owned(), Held { fence: work.fence, task });
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(bmc = %name, "cannot claim the BMC's events: {}", e.chain()),
            }
        }
        tokio::select! {
            _ = s.replica.nap(EVENTS_TICK) => {}
            _ = s.shutdown.cancelled() => break,
        }
    }
    // A clean stop: the streams end, the subscriptions are removed (concurrently, within the pool's
    // fan-out), then the claims are given back so that the other replicas take the BMCs at once.
    for h in held.values() {
        h.task.abort();
    }
    if let Receive::Push { .. } = how {
        let bmcs: Vec<SelectedBmc> =
            sel.bmcs.iter().filter(|b| held.contains_key(b.name())).cloned().collect();
        let mine = BmcSelection { bmcs, skipped: Vec::new() };
        match s.engine_as("server").bmc_subscribe(&mine, None).await {
            Ok(rows) => {
                for row in rows {
                    if let Err(e) = row.result {
                        tracing::warn!(bmc = %row.target, "removing the event subscription: {}", e.chain());
                    }
                }
            }
            Err(e) => tracing::warn!("removing event subscriptions: {}", e.chain()),
        }
    }
    for (name, h) in held {
        s.replica.release(&events_key(&name), h.fence).await;
    }
}

/// Stops receiving `b`'s events here (its preferred replica is now another): the stream ends, or the
/// subscription is removed; then the claim is given back. In a task of its own, off the owner's loop.
fn hand_over(s: &AppState, b: &SelectedBmc, how: &Receive, h: Held) {
    h.task.abort();
    let (s, b, push) = (s.clone(), b.clone(), matches!(how, Receive::Push { .. }));
    tokio::spawn(async move {
        if push {
            subscribe(&s, &b, None).await;
        }
        s.replica.release(&events_key(b.name()), h.fence).await;
    });
}

/// Receives `b`'s events for as long as this task runs: its stream (reopened by the engine), or its
/// subscription (retried with backoff until the BMC accepts it, then kept: listed on a schedule and made
/// again when a BMC reset dropped it, see [`super::event_keep`]).
async fn receive(s: AppState, b: SelectedBmc, how: Receive) {
    match how {
        Receive::Sse(tx) => match s.engine_as("server").stream_bmc_events(&b, tx).await {
            Ok(stream) => stream.await,
            Err(e) => tracing::warn!(bmc = %b.name(), "no event stream: {}", e.chain()),
        },
        Receive::Push { url, gate, seen, plan } => {
            let destination = gate.destination(&url, b.name());
            super::event_keep::keep(s, b, destination, seen, plan).await;
        }
    }
}

/// Subscribes `b` to `url` (replacing Lifeline's earlier subscriptions there), or with `None` removes
/// Lifeline's; audited by the engine. Whether it worked.
async fn subscribe(s: &AppState, b: &SelectedBmc, url: Option<&str>) -> bool {
    let one = BmcSelection { bmcs: vec![b.clone()], skipped: Vec::new() };
    let what = if url.is_some() { "event subscription" } else { "removing the event subscription" };
    match s.engine_as("server").bmc_subscribe(&one, url).await {
        Ok(rows) => rows.into_iter().all(|row| match row.result {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(bmc = %row.target, "{what}: {}", e.chain());
                false
            }
        }),
        Err(e) => {
            tracing::warn!(bmc = %b.name(), "{what}: {}", e.chain());
            false
        }
    }
}
