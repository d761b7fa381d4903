//! Redfish EventService subscriptions that Lifeline owns: created with a marker in `Context` so they are
//! found again (listed, replaced, removed) and never left behind as orphans when the listener moves.
//!
//! Why a marker rather than a local record: the BMC is the source of truth for its subscriptions; a store
//! row can be lost or copied elsewhere, a `Context` travels with the subscription and survives restarts.

use lifeline_ipmi::wire::Privilege;
use lifeline_redfish::SubscriptionRequest;
use serde::Serialize;

use crate::conn::{Conn, rf_err};
use crate::error::BmcError;
use crate::pool::Bmc;

/// `Context` prefix of Lifeline's subscriptions: `lifeline:<device>`.
pub const CONTEXT_PREFIX: &str = "lifeline:";

/// The `Context` Lifeline gives a subscription for `device`.
pub fn context_for(device: &str) -> String {
    format!("{CONTEXT_PREFIX}{device}")
}

/// The device a received event's `Context` names, when it is one of Lifeline's.
pub fn device_of(context: &str) -> Option<&str> {
    context.strip_prefix(CONTEXT_PREFIX).filter(|d| !d.is_empty())
}

/// One subscription on a BMC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Subscription {
    pub link: String,
    pub destination: Option<String>,
    pub context: Option<String>,
    /// Created by Lifeline (its marker is in `Context`).
    pub ours: bool,
    /// `HeartbeatIntervalMinutes` when the BMC says it sends this subscription heartbeats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heartbeat_minutes: Option<u64>,
}

/// What a check of Lifeline's subscription on one BMC found and did ([`Bmc::keep_subscription`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SubscriptionCheck {
    pub bmc: String,
    /// The subscription found in place (nothing was done to it).
    pub kept: Option<String>,
    /// The subscription created because none of Lifeline's with this destination was there.
    pub created: Option<String>,
    /// Lifeline's subscriptions of this BMC removed: other destinations (a moved listener, another
    /// replica's), duplicates, or the one whose heartbeats stopped.
    pub removed: Vec<String>,
    /// The heartbeat interval the BMC accepted (minutes), when it sends heartbeats.
    pub heartbeat_minutes: Option<u64>,
    /// Why a subscription was created: `missing` (none in place: a BMC reset or firmware update drops
    /// them) or `heartbeat-lost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Subscriptions of other tools on the BMC (never touched).
    pub others: usize,
}

impl SubscriptionCheck {
    /// Whether the check changed anything on the BMC (and so is an action to audit).
    pub fn acted(&self) -> bool {
        self.created.is_some() || !self.removed.is_empty()
    }
}

/// What to do with the subscriptions listed on a BMC to end with exactly one of Lifeline's, to
/// `destination`: (the one to keep, the ones to remove). Pure, so that "never touch another tool's,
/// never leave two" is tested without a BMC. Only this device's (its `Context`) are considered. `renew`: the one in place is not trusted (its heartbeats
/// stopped), so it is removed too and a new one is made.
pub fn plan_keep<'a>(
    listed: &'a [Subscription],
    bmc: &str,
    destination: &str,
    renew: bool,
) -> (Option<&'a Subscription>, Vec<&'a Subscription>) {
    let context = context_for(bmc);
    let mut keep = None;
    let mut remove = Vec::new();
    // This device's only: a BMC with several systems has one subscription per device behind it.
    for s in listed.iter().filter(|s| s.context.as_deref() == Some(context.as_str())) {
        let same = s.destination.as_deref() == Some(destination);
        if same && keep.is_none() && !renew {
            keep = Some(s);
        } else {
            remove.push(s);
        }
    }
    (keep, remove)
}

/// What a subscribe / unsubscribe did on one BMC.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SubscriptionChange {
    pub bmc: String,
    pub created: Option<String>,
    pub removed: Vec<String>,
    /// `ServerSentEventUri` when the BMC offers a stream (usable instead of push delivery).
    pub sse: Option<String>,
}

fn redfish<'a>(c: &'a mut Conn, bmc: &str) -> Result<&'a mut crate::conn::RedfishConn, BmcError> {
    match c {
        Conn::Redfish(r) => Ok(r),
        Conn::Ipmi(_) => Err(BmcError::Unsupported {
            bmc: bmc.to_owned(),
            protocol: lifeline_types::BmcProtocol::Ipmi,
            what: "event subscriptions",
        }),
    }
}

async fn list(c: &crate::conn::RedfishConn) -> Result<Vec<Subscription>, BmcError> {
    let l = c.client.subscriptions().await.map_err(rf_err(&c.bmc))?;
    Ok(l.items
        .into_iter()
        .filter_map(|d| {
            let link = d.odata_id.clone()?;
            let ours = d.context.as_deref().is_some_and(|x| x.starts_with(CONTEXT_PREFIX));
            let heartbeat_minutes = d.heartbeat_minutes.filter(|_| d.send_heartbeat == Some(true));
            Some(Subscription {
                link,
                destination: d.destination,
                context: d.context,
                ours,
                heartbeat_minutes,
            })
        })
        .collect())
}

impl Bmc {
    /// Every subscription on the BMC (Lifeline's marked `ours`).
    pub async fn subscriptions(&self) -> Result<Vec<Subscription>, BmcError> {
        let limit = self.pool().opts.op_timeout;
        let name = self.name().to_owned();
        let r = self
            .with_conn(Privilege::Administrator, limit, move |c| {
                Box::pin(async move { list(redfish(c, &name)?).await })
            })
            .await?;
        Ok(r.1)
    }

    /// Subscribes `destination` with Lifeline's marker, replacing Lifeline's earlier subscriptions of this
    /// BMC (so moving the listener leaves no orphan); `None` only removes them.
    pub async fn subscribe(&self, destination: Option<&str>) -> Result<SubscriptionChange, BmcError> {
        let limit = self.pool().opts.op_timeout;
        let name = self.name().to_owned();
        let destination = destination.map(str::to_owned);
        let r = self
            .with_conn(Privilege::Administrator, limit, move |c| {
                Box::pin(async move {
                    let c = redfish(c, &name)?;
                    let mut out = SubscriptionChange { bmc: name.clone(), ..Default::default() };
                    for s in list(c).await?.into_iter().filter(|s| s.ours) {
                        c.client.unsubscribe(&s.link).await.map_err(rf_err(&name))?;
                        out.removed.push(s.link);
                    }
                    if let Some(dest) = destination {
                        out.created = Some(create(c, &name, &dest, None).await?.0);
                        out.sse = c.client.event_service().await.ok().flatten().and_then(|e| e.sse_uri);
                    }
                    Ok(out)
                })
            })
            .await?;
        Ok(r.1)
    }
}

/// Creates Lifeline's subscription of `bmc` to `dest`, asking for heartbeats every `heartbeat` minutes
/// where given; a BMC that refuses the heartbeat properties (HTTP 400: a schema older than
/// EventDestination v1_11) is subscribed without them. (link, whether heartbeats were asked for and
/// accepted).
async fn create(
    c: &crate::conn::RedfishConn,
    bmc: &str,
    dest: &str,
    heartbeat: Option<u32>,
) -> Result<(String, bool), BmcError> {
    let mut req = SubscriptionRequest {
        destination: dest.to_owned(),
        context: context_for(bmc),
        event_types: None,
        registry_prefixes: None,
        heartbeat_minutes: heartbeat,
    };
    match c.client.subscribe(&req).await {
        Ok(link) => Ok((link, heartbeat.is_some())),
        Err(e) if heartbeat.is_some() && e.status() == Some(400) => {
            tracing::debug!(%bmc, error = %e, "heartbeat properties refused; subscribing without them");
            req.heartbeat_minutes = None;
            Ok((c.client.subscribe(&req).await.map_err(rf_err(bmc))?, false))
        }
        Err(e) => Err(rf_err(bmc)(e)),
    }
}

impl Bmc {
    /// Makes sure Lifeline has exactly one subscription on this BMC, to `destination`: lists the BMC's
    /// subscriptions (the BMC is the truth: a reset or a firmware update drops them without telling
    /// anyone), keeps the one in place, removes Lifeline's others, and creates it when it is missing
    /// (`reason: missing`) or when `renew` (its heartbeats stopped: `heartbeat-lost`). Other tools'
    /// subscriptions are never touched. `heartbeat`: minutes between heartbeat events to ask for where
    /// the BMC offers them.
    pub async fn keep_subscription(
        &self,
        destination: &str,
        heartbeat: Option<u32>,
        renew: bool,
    ) -> Result<SubscriptionCheck, BmcError> {
        let limit = self.pool().opts.op_timeout;
        let name = self.name().to_owned();
        let destination = destination.to_owned();
        let r = self
            .with_conn(Privilege::Administrator, limit, move |c| {
                Box::pin(async move {
                    let c = redfish(c, &name)?;
                    let listed = list(c).await?;
                    let (keep, remove) = plan_keep(&listed, &name, &destination, renew);
                    let mut out = SubscriptionCheck {
                        bmc: name.clone(),
                        kept: keep.map(|s| s.link.clone()),
                        heartbeat_minutes: keep.and_then(|s| s.heartbeat_minutes),
                        others: listed.iter().filter(|s| !s.ours).count(),
                        ..Default::default()
                    };
                    for s in remove {
                        c.client.unsubscribe(&s.link).await.map_err(rf_err(&name))?;
                        out.removed.push(s.link.clone());
                    }
                    if keep.is_none() {
                        let had = listed.iter().any(|s| {
                            s.context.as_deref() == Some(context_for(&name).as_str())
                                && s.destination.as_deref() == Some(destination.as_str())
                        });
                        let (link, asked) = create(c, &name, &destination, heartbeat).await?;
                        out.reason = Some(if renew && had { "heartbeat-lost" } else { "missing" }.into());
                        // What the BMC accepted, read back (it may ignore or change the interval).
                        out.heartbeat_minutes = match asked {
                            true => list(c)
                                .await?
                                .into_iter()
                                .find(|s| s.link == link)
                                .and_then(|s| s.heartbeat_minutes),
                            false => None,
                        };
                        out.created = Some(link);
                    }
                    Ok(out)
                })
            })
            .await?;
        Ok(r.1)
    }
}

impl Bmc {
    /// Opens the BMC's `ServerSentEventUri` stream (Redfish only): the alternative to push delivery where
    /// Lifeline's receiver is not reachable from the BMC. The stream holds one session while it lives.
    pub async fn event_stream(&self) -> Result<lifeline_redfish::EventStream, BmcError> {
        let limit = self.pool().opts.op_timeout;
        let o = self.open_conn(Privilege::User, limit).await?;
        match o.conn {
            Conn::Redfish(c) => c
                .client
                .event_stream(None, lifeline_redfish::SseLimits::default())
                .await
                .map_err(rf_err(&c.bmc)),
            Conn::Ipmi(c) => {
                let _ = c.session.close().await;
                Err(BmcError::Unsupported {
                    bmc: self.name().to_owned(),
                    protocol: lifeline_types::BmcProtocol::Ipmi,
                    what: "event streams",
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(link: &str, dest: &str, context: &str) -> Subscription {
        Subscription {
            link: link.into(),
            destination: Some(dest.into()),
            context: Some(context.into()),
            ours: context.starts_with(CONTEXT_PREFIX),
            heartbeat_minutes: None,
        }
    }

    #[test]
    fn exactly_one_of_ours_is_kept_and_no_other_tools_is_touched() {
        let d = "http://10.0.0.1:9000/events/n1/secret";
        let listed = vec![
            sub("/s/1", "http://monitor.example/hook", "prometheus-redfish"),
            sub("/s/2", d, "lifeline:n1"),
            sub("/s/3", d, "lifeline:n1"),
            sub("/s/4", "http://10.0.0.2:9000/events/n1/old", "lifeline:n1"),
            sub("/s/5", d, "someone-else"),
            sub("/s/6", d, "lifeline:n1/Node1"),
        ];
        let (keep, remove) = plan_keep(&listed, "n1", d, false);
        assert_eq!(keep.map(|s| s.link.as_str()), Some("/s/2"));
        let gone: Vec<&str> = remove.iter().map(|s| s.link.as_str()).collect();
        assert_eq!(gone, ["/s/3", "/s/4"], "the duplicate and the stale destination; never another tool's");
        let (keep, remove) = plan_keep(&listed, "n1", d, true);
        assert!(keep.is_none());
        assert_eq!(remove.len(), 3, "renewing removes ours, still none of theirs");
        let (keep, remove) = plan_keep(&listed[..1], "n1", d, false);
        assert!(keep.is_none() && remove.is_empty(), "missing: only a create is needed");
    }

    #[test]
    fn context_marks_and_names_the_device() {
        assert_eq!(device_of(&context_for("gpu-node-05")), Some("gpu-node-05"));
        assert_eq!(device_of("someone-else"), None);
        assert_eq!(device_of("lifeline:"), None);
    }
}
