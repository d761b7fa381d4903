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
            Some(Subscription { link, destination: d.destination, context: d.context, ours })
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
                        let req = SubscriptionRequest {
                            destination: dest,
                            context: context_for(&name),
                            event_types: None,
                            registry_prefixes: None,
                        };
                        out.created = Some(c.client.subscribe(&req).await.map_err(rf_err(&name))?);
                        out.sse = c.client.event_service().await.ok().flatten().and_then(|e| e.sse_uri);
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

    #[test]
    fn context_marks_and_names_the_device() {
        assert_eq!(device_of(&context_for("gpu-node-05")), Some("gpu-node-05"));
        assert_eq!(device_of("someone-else"), None);
        assert_eq!(device_of("lifeline:"), None);
    }
}
