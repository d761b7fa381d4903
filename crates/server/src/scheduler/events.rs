//! BMC events into the events table without anyone running `lifeline events --follow`: Redfish SSE streams
//! (`[server] events = "sse"`, reopened when they end; the client's byte and idle limits apply) or
//! EventService subscriptions to the server's own receiver (`events = "push"`, `event-listen = ADDR:PORT`,
//! `event-destination` when the BMCs must reach another address). What arrives is stored once (deduplicated
//! with what the sweeps' SEL reads store), counted in `lifeline_bmc_events_total`, and a critical event
//! opens a `sel-critical` fault like one a sweep finds, so the fault policy sees it at once.
//!
//! Push subscriptions carry Lifeline's marker and replace Lifeline's earlier ones; they are removed on a
//! clean stop, so no orphan subscription stays on a BMC. Off by default: a stream or a subscription per
//! Redfish BMC is something the operator chooses for a fleet. With several replicas each BMC's events are
//! received by one of them ([`super::event_owner`]), so the setting can be on in every replica; with
//! `push` each replica needs its own `event-listen` (or `event-destination`) reachable from the BMCs.

use std::net::SocketAddr;

use lifeline_engine::event_listener::{EventListener, Received};
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

/// The Redfish BMCs of the inventory (the only ones with an EventService).
fn redfish_bmcs(s: &AppState) -> Result<BmcSelection, EngineError> {
    let mut sel = s.base.select_bmcs(&[], &[], true)?;
    sel.bmcs.retain(|b| matches!(b.target.protocol, BmcProtocol::Redfish | BmcProtocol::Auto));
    Ok(sel)
}

/// Starts the receiver or the streams and the task that stores what arrives.
pub async fn start(s: &AppState, jobs: &mut JoinSet<()>) -> Result<(), EngineError> {
    let mode = mode(s)?;
    if mode == Mode::Off {
        return Ok(());
    }
    let sel = match redfish_bmcs(s) {
        Ok(sel) if !sel.bmcs.is_empty() => sel,
        Ok(_) => return Ok(()),
        Err(e) if e.class() == lifeline_engine::ErrorClass::Usage => return Ok(()),
        Err(e) => return Err(e),
    };
    let (tx, rx, how) = match mode {
        Mode::Push => {
            let listen = s.base.config.config.server.event_listen.clone().ok_or_else(|| {
                EngineError::bad_argument(
                    "[server] events = \"push\" needs event-listen = \"ADDR:PORT\" (where the BMCs post events)",
                )
            })?;
            let addr: SocketAddr = listen.parse().map_err(|e| {
                EngineError::bad_argument(format!("[server] event-listen = \"{listen}\": {e}"))
            })?;
            let (listener, rx) = EventListener::bind(addr).await.map_err(|e| {
                EngineError::bad_argument(format!("[server] event-listen = \"{listen}\": cannot listen: {e}"))
            })?;
            let url = match &s.base.config.config.server.event_destination {
                Some(d) => d.clone(),
                None => listener.url().map_err(|e| EngineError::internal("event receiver address", e))?,
            };
            let tx = listener.sender();
            let stop = s.shutdown.clone();
            jobs.spawn(async move {
                tokio::select! {
                    _ = listener.run() => {}
                    _ = stop.cancelled() => {}
                }
            });
            tracing::info!(%url, bmcs = sel.bmcs.len(), "BMC events pushed to the server's receiver");
            (tx, rx, Receive::Push(url))
        }
        _ => {
            let (tx, rx) = mpsc::channel(1024);
            tracing::info!(bmcs = sel.bmcs.len(), "BMC events read from Redfish SSE streams");
            (tx.clone(), rx, Receive::Sse(tx))
        }
    };
    let st = s.clone();
    jobs.spawn(async move {
        store_all(&st, rx).await;
        drop(tx);
    });
    // This replica's share of the BMCs (all of them when it is alone), subscribed or streamed.
    jobs.spawn(event_owner::run(s.clone(), sel, how));
    Ok(())
}

/// Stores every event until shutdown; new critical ones open faults.
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
