//! BMC events: Lifeline's EventService subscriptions (`bmc subscribe`), what arrived at the listener, and
//! what SEL polls found, in one deduplicated store table (`events`, keyed per device).

use lifeline_bmc::subscribe::{Subscription, SubscriptionChange, SubscriptionCheck};
use lifeline_store::{EventRow, NewEvent};
use lifeline_types::AuditAction;
use serde::Serialize;

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::event_listener::Received;
use crate::ops::Row;
use crate::targets::BmcSelection;

/// Event sources `lifeline events` shows.
pub const SOURCES: [&str; 2] = ["redfish-event", "sel"];

/// One BMC's subscriptions.
#[derive(Debug, Clone, Serialize)]
pub struct Subscriptions {
    pub bmc: String,
    pub subscriptions: Vec<Subscription>,
}

impl Lifeline {
    /// Lifeline's subscriptions and everyone else's, per BMC.
    pub async fn bmc_subscriptions(&self, sel: &BmcSelection) -> Result<Vec<Row<Subscriptions>>> {
        self.each_bmc(sel, |bmc| async move {
            let subscriptions = bmc.subscriptions().await?;
            Ok(Subscriptions { bmc: bmc.name().to_owned(), subscriptions })
        })
        .await
    }

    /// Subscribes each BMC to `destination` (replacing Lifeline's earlier subscriptions there), or with
    /// `None` removes Lifeline's subscriptions; audited as `bmc.subscribe` / `bmc.unsubscribe`.
    pub async fn bmc_subscribe(
        &self,
        sel: &BmcSelection,
        destination: Option<&str>,
    ) -> Result<Vec<Row<SubscriptionChange>>> {
        let audit = self.audit().await?;
        let action =
            if destination.is_some() { AuditAction::BmcSubscribe } else { AuditAction::BmcUnsubscribe };
        let audit = &audit;
        self.each_bmc(sel, |bmc| async move {
            let r = bmc.subscribe(destination).await;
            let (o, detail) = match &r {
                Ok(c) => (Outcome::Ok, serde_json::json!(c)),
                Err(e) => (Outcome::Failed, serde_json::json!({ "error": lifeline_bmc::error_chain(e) })),
            };
            if let Err(e) = audit.record(action, bmc.name(), o, None, detail).await {
                tracing::error!(bmc = %bmc.name(), "audit row not written: {e}");
            }
            r
        })
        .await
    }

    /// Makes sure each BMC has exactly one of Lifeline's subscriptions, to `destination` (listing them on the
    /// BMC, re-creating it when a reset dropped it, or when `renew` because its heartbeats stopped; see
    /// [`lifeline_bmc::Bmc::keep_subscription`]). `first`: the server's first subscription of the BMC,
    /// audited as `bmc.subscribe` whatever it found; later, a check that changes something is audited as
    /// `bmc.resubscribe` with what it found and why, and a check that finds it in place is not an action.
    pub async fn bmc_keep_subscription(
        &self,
        sel: &BmcSelection,
        destination: &str,
        heartbeat: Option<u32>,
        renew: bool,
        first: bool,
    ) -> Result<Vec<Row<SubscriptionCheck>>> {
        let audit = self.audit().await?;
        let audit = &audit;
        let action = if first { AuditAction::BmcSubscribe } else { AuditAction::BmcResubscribe };
        self.each_bmc(sel, |bmc| async move {
            let r = bmc.keep_subscription(destination, heartbeat, renew).await;
            let row = match &r {
                Ok(c) if c.acted() || first => Some((Outcome::Ok, serde_json::json!(c))),
                Ok(_) => None,
                // Unreachable while it restarts: not an action, the next check retries.
                Err(e) if !renew && !first => {
                    tracing::debug!(bmc = %bmc.name(), "subscription check: {}", lifeline_bmc::error_chain(e));
                    None
                }
                Err(e) => Some((
                    Outcome::Failed,
                    serde_json::json!({
                        "reason": if renew { "heartbeat-lost" } else { "start" },
                        "error": lifeline_bmc::error_chain(e),
                    }),
                )),
            };
            if let Some((o, detail)) = row
                && let Err(e) = audit.record(action, bmc.name(), o, None, detail).await
            {
                tracing::error!(bmc = %bmc.name(), "audit row not written: {e}");
            }
            r
        })
        .await
    }

    /// Reads the newest `newest` entries of each BMC's event log into the store, once per entry; returns
    /// the rows that were new.
    pub async fn poll_sel_events(&self, sel: &BmcSelection, newest: usize) -> Result<Vec<Row<Vec<i64>>>> {
        let rows = self.read_new_log_entries(sel, newest).await?;
        Ok(rows
            .into_iter()
            .map(|r| Row {
                key: r.key,
                target: r.target,
                result: r.result.map(|v| v.into_iter().map(|(id, _)| id).collect()),
            })
            .collect())
    }

    /// Reads the newest `newest` entries of each BMC's event log (over the authenticated client) into the
    /// store, once per entry; returns the entries that were new with their rows. This is what a pushed
    /// event prompts: a fault is raised from what the BMC's own log says, never from a pushed body.
    pub async fn read_new_log_entries(
        &self,
        sel: &BmcSelection,
        newest: usize,
    ) -> Result<Vec<Row<Vec<(i64, NewEvent)>>>> {
        let store = self.store().await?.clone();
        let store = &store;
        self.each_bmc(sel, |bmc| async move {
            let log = bmc.events(newest).await?;
            let mut new = Vec::new();
            for e in &log.entries {
                let ev = NewEvent {
                    device: Some(bmc.name().to_owned()),
                    source: "sel".into(),
                    severity: format!("{}", e.severity).to_lowercase(),
                    message: e.message.clone(),
                    data: serde_json::json!(e),
                };
                match store.record_event_once(&ev, &format!("sel:{}", e.id)).await {
                    Ok(Some(id)) => new.push((id, ev)),
                    Ok(None) => {}
                    Err(err) => tracing::warn!(bmc = %bmc.name(), "event not stored: {err}"),
                }
            }
            Ok(new)
        })
        .await
    }

    /// Reads each Redfish BMC's SSE stream (reopened after 5 s when it ends) into `tx`, until `tx` closes.
    pub async fn stream_events(
        &self,
        sel: &BmcSelection,
        tx: tokio::sync::mpsc::Sender<Received>,
    ) -> Result<()> {
        for b in &sel.bmcs {
            let stream = self.stream_bmc_events(b, tx.clone()).await?;
            tokio::spawn(stream);
        }
        Ok(())
    }

    /// One Redfish BMC's SSE stream into `tx`, reopened after 5 s when it ends, for as long as the returned
    /// future runs and `tx` is open. The caller owns it (a server replica aborts it when another replica
    /// takes the BMC's events over).
    pub async fn stream_bmc_events(
        &self,
        b: &crate::targets::SelectedBmc,
        tx: tokio::sync::mpsc::Sender<Received>,
    ) -> Result<impl std::future::Future<Output = ()> + Send + 'static> {
        let bmc = self.bmc_pool().await?.bmc(b.target.clone());
        Ok(async move {
            while !tx.is_closed() {
                match bmc.event_stream().await {
                    Ok(mut s) => {
                        while let Some(Ok(e)) = s.next().await {
                            let Ok(doc) = serde_json::from_str::<serde_json::Value>(&e.data) else {
                                continue;
                            };
                            for mut r in crate::event_listener::parse_event_document(&doc) {
                                r.event.device = Some(bmc.name().to_owned());
                                if tx.send(r).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                    Err(e) => {
                        tracing::warn!(bmc = %bmc.name(), "no event stream: {}", lifeline_bmc::error_chain(&e))
                    }
                }
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            }
        })
    }

    /// Stores one received event unless it is already known; the stored row when new.
    pub async fn record_received(&self, r: &Received) -> Result<Option<i64>> {
        Ok(self.store().await?.record_event_once(&r.event, &r.key).await?)
    }

    /// Stored BMC events (pushed and polled) after row `after`, oldest first.
    pub async fn bmc_events(&self, after: i64, limit: i64) -> Result<Vec<EventRow>> {
        let rows = self.store().await?.events_after(after, limit).await.map_err(EngineError::from)?;
        Ok(rows.into_iter().filter(|r| SOURCES.contains(&r.event.source.as_str())).collect())
    }
}
