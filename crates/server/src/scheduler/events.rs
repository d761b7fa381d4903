//! BMC events into the events table without anyone running `lifeline events --follow`: Redfish SSE streams
//! (`[server] events = "sse"`, reopened when they end; the client's byte and idle limits apply) or
//! EventService subscriptions to the server's own receiver (`events = "push"`, `event-listen = ADDR:PORT`,
//! `event-destination` when the BMCs must reach another address). A pushed delivery is authenticated
//! ([`lifeline_engine::event_gate`]: the device's secret in the URL, the BMC's inventory address, limits)
//! and then only prompts a read of that BMC's own log over the authenticated client; what a stream or
//! that read brings is stored once (deduplicated with what the sweeps' SEL reads store), counted in
//! `lifeline_bmc_events_total`, and a new critical entry opens a `sel-critical` fault like one a sweep
//! finds, so the fault policy sees it at once. A forged or replayed delivery changes nothing.
//!
//! Push subscriptions carry Lifeline's marker and replace Lifeline's earlier ones; they are removed on a
//! clean stop, so no orphan subscription stays on a BMC. Off by default: a stream or a subscription per
//! Redfish BMC is something the operator chooses for a fleet. With several replicas each BMC's events are
//! received by one of them ([`super::event_owner`]), so the setting can be on in every replica; with
//! `push` each replica needs its own `event-listen` (or `event-destination`) reachable from the BMCs.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use lifeline_engine::event_gate::EventGate;
use lifeline_engine::event_listener::{EventListener, Prompt, Received};
use lifeline_engine::{BmcSelection, EngineError};
use lifeline_types::BmcProtocol;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::event_owner::{self, Receive};
use crate::state::AppState;

/// How events reach the server, from `[server] events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Off,
    Sse,
    Push,
}

pub fn mode(s: &AppState) -> Result<Mode, EngineError> {
    match s.base.config.config.server.events.as_deref().unwrap_or("off") {
        "off" => Ok(Mode::Off),
        "sse" => Ok(Mode::Sse),
        "push" => Ok(Mode::Push),
        other => Err(EngineError::bad_argument(format!(
            "[server] events = \"{other}\": expected \"off\", \"sse\" or \"push\""
        ))),
    }
}

/// Starts the receiver or the streams and the task that stores what arrives. A receiver that cannot
/// listen is an error (the caller records it as a problem); a BMC left out is recorded here.
pub async fn start(s: &AppState, jobs: &mut JoinSet<()>) -> Result<(), EngineError> {
    let mode = mode(s)?;
    if mode == Mode::Off {
        return Ok(());
    }
    // The Redfish BMCs (the only ones with an EventService).
    let (sel, problems) =
        super::each_bmc(s, |d| d.bmc.as_ref().is_some_and(|b| b.protocol != BmcProtocol::Ipmi))?;
    if !problems.is_empty() {
        s.problem(
            "BMC events",
            &format!("not received from {} BMC(s): {}", problems.len(), problems.join("; ")),
        );
    }
    if sel.bmcs.is_empty() {
        return Ok(());
    }
    let how = match mode {
        Mode::Push => {
            let listen = s.base.config.config.server.event_listen.clone().ok_or_else(|| {
                EngineError::bad_argument(
                    "[server] events = \"push\" needs event-listen = \"ADDR:PORT\" (where the BMCs post events)",
                )
            })?;
            let addr: SocketAddr = listen.parse().map_err(|e| {
                EngineError::bad_argument(format!("[server] event-listen = \"{listen}\": {e}"))
            })?;
            let (gate, unresolved) = EventGate::for_selection(&sel).await;
            if !unresolved.is_empty() {
                s.problem("BMC event sources", &unresolved.join("; "));
            }
            let server = &s.base.config.config.server;
            let tls = lifeline_engine::event_tls::from_config(
                server.event_tls_cert.as_deref(),
                server.event_tls_key.as_deref(),
            )
            .map_err(|e| EngineError::bad_argument(e.to_string()))?;
            let (mut listener, rx) = EventListener::bind(addr, Arc::new(gate)).await.map_err(|e| {
                EngineError::bad_argument(format!("[server] event-listen = \"{listen}\": cannot listen: {e}"))
            })?;
            if let Some(cfg) = tls {
                listener = listener.with_tls(cfg);
            }
            let url = match &s.base.config.config.server.event_destination {
                Some(d) => d.clone(),
                None => listener.url().map_err(|e| EngineError::internal("event receiver address", e))?,
            };
            let gate = listener.gate();
            let stop = s.shutdown.clone();
            jobs.spawn(async move {
                tokio::select! {
                    _ = listener.run() => {}
                    _ = stop.cancelled() => {}
                }
            });
            tracing::info!(%url, bmcs = sel.bmcs.len(), "BMC events pushed to the server's receiver");
            let st = s.clone();
            let bmcs = sel.clone();
            let seen = Arc::new(super::event_keep::Deliveries::default());
            let seen2 = seen.clone();
            jobs.spawn(async move { read_on_prompt(&st, bmcs, rx, &seen2).await });
            Receive::Push { url, gate, seen, plan: super::event_keep::Schedule::from_config(s) }
        }
        _ => {
            let (tx, rx) = mpsc::channel(1024);
            tracing::info!(bmcs = sel.bmcs.len(), "BMC events read from Redfish SSE streams");
            let st = s.clone();
            let keep = tx.clone();
            jobs.spawn(async move {
                store_all(&st, rx).await;
                drop(keep);
            });
            Receive::Sse(tx)
        }
    };
    // This replica's share of the BMCs (all of them when it is alone), subscribed or streamed.
    jobs.spawn(event_owner::run(s.clone(), sel, how));
    Ok(())
}

/// How many of a BMC's newest log entries a prompted read looks at.
const PROMPTED_READ: usize = 50;

/// Reads a BMC's own log each time an authenticated delivery prompts it (never acting on the pushed
/// body): new entries are stored once (deduplicated with the sweeps' reads) and a new critical one opens
/// a `sel-critical` fault. Prompts for a BMC whose read is in flight are folded into one more read.
async fn read_on_prompt(
    s: &AppState,
    sel: BmcSelection,
    mut rx: mpsc::Receiver<Prompt>,
    seen: &super::event_keep::Deliveries,
) {
    let busy: Arc<Mutex<HashMap<String, bool>>> = Arc::default();
    loop {
        let p = tokio::select! {
            p = rx.recv() => match p { Some(p) => p, None => return },
            _ = s.shutdown.cancelled() => return,
        };
        let Some(b) = sel.bmcs.iter().find(|b| b.name() == p.device) else { continue };
        // An authenticated delivery (an event or a heartbeat) says the subscription still works.
        seen.seen(&p.device);
        {
            let mut m = busy.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(again) = m.get_mut(&p.device) {
                *again = true;
                continue;
            }
            m.insert(p.device.clone(), false);
        }
        tracing::debug!(bmc = %p.device, peer = %p.peer, records = p.records, "event delivery: reading the BMC's log");
        let (s, one, busy) =
            (s.clone(), BmcSelection { bmcs: vec![b.clone()], skipped: Vec::new() }, busy.clone());
        tokio::spawn(async move {
            loop {
                read_log(&s, &one).await;
                let mut m = busy.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let name = one.bmcs[0].name();
                if m.get(name) == Some(&true) {
                    m.insert(name.to_owned(), false);
                } else {
                    m.remove(name);
                    return;
                }
            }
        });
    }
}

/// One prompted read of `one`'s log; new critical entries open faults.
async fn read_log(s: &AppState, one: &BmcSelection) {
    let rows = match s.engine_as("server").read_new_log_entries(one, PROMPTED_READ).await {
        Ok(rows) => rows,
        Err(e) => return tracing::warn!("reading a BMC's log after an event: {}", e.chain()),
    };
    for row in rows {
        let new = match row.result {
            Ok(new) => new,
            Err(e) => {
                tracing::warn!(bmc = %row.target, "reading the BMC's log after an event: {}", e.chain());
                continue;
            }
        };
        for (_, ev) in new {
            s.metrics.bmc_events.inc(&[("source", ev.source.as_str()), ("severity", ev.severity.as_str())]);
            if ev.severity == "critical"
                && let Err(e) = crate::faults::raise(
                    s,
                    "sel-critical",
                    &row.target,
                    "critical",
                    &ev.message,
                    serde_json::json!({ "source": "sel", "prompted_by": "redfish-event", "entry": ev.data }),
                )
                .await
            {
                tracing::warn!(bmc = %row.target, "fault from the BMC's log: {}", e.chain());
            }
        }
    }
}

/// Stores every event read from the BMCs' own SSE streams until shutdown; new critical ones open faults.
async fn store_all(s: &AppState, mut rx: mpsc::Receiver<Received>) {
    let l = s.engine_as("server");
    loop {
        let r = tokio::select! {
            r = rx.recv() => match r { Some(r) => r, None => return },
            _ = s.shutdown.cancelled() => return,
        };
        match l.record_received(&r).await {
            Ok(Some(_)) => {
                s.metrics
                    .bmc_events
                    .inc(&[("source", r.event.source.as_str()), ("severity", r.event.severity.as_str())]);
                if r.event.severity.eq_ignore_ascii_case("critical")
                    && let Some(device) = r.event.device.as_deref()
                    && let Err(e) = crate::faults::raise(
                        s,
                        "sel-critical",
                        device,
                        "critical",
                        &r.event.message,
                        serde_json::json!({ "source": r.event.source, "event": r.event.data }),
                    )
                    .await
                {
                    tracing::warn!(%device, "fault from an event: {}", e.chain());
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("event not stored: {}", e.chain()),
        }
    }
}
