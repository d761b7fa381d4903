//! What a Redfish service says before anyone logs in: the service root (always readable, DSP0266) and,
//! where the BMC allows it, the first system and manager. Discovery uses it to find and identify BMCs on an
//! address range without sending a credential anywhere.
//!
//! No credential is sent, so no certificate needs trusting: the one presented is recorded (its fingerprint
//! is returned, to pin later) and accepted for this read only. Every read is bounded by the client's
//! request timeout and by [`PROBE_BODY_LIMIT`].

use std::sync::Arc;

use lifeline_types::Fingerprint;
use serde_json::Value;

use super::transport::{Transport, parse_base, tls_config};
use super::{BmcTarget, ClientOptions};
use crate::error::RedfishError;
use crate::tls::{PinStore, TlsTrust, lock};

/// A probe reads documents of a few KiB; anything larger is not a service root.
pub const PROBE_BODY_LIMIT: usize = 1 << 20;

/// The documents a BMC gave without credentials.
#[derive(Debug, Clone, Default)]
pub struct Probe {
    pub root: Value,
    /// The first member of `Systems`, when readable without credentials.
    pub system: Option<Value>,
    /// The first member of `Managers`, when readable without credentials.
    pub manager: Option<Value>,
    /// The leaf certificate presented (HTTPS only).
    pub certificate: Option<Fingerprint>,
}

/// Reads the service root (an error when there is none: not a Redfish service), then tries the first
/// system and manager, which many BMCs refuse without credentials (that is not an error).
pub async fn probe_service_root(target: &BmcTarget, opts: &ClientOptions) -> Result<Probe, RedfishError> {
    let bmc = target.name.clone();
    let base = parse_base(target)?;
    let store: Arc<dyn PinStore> = Arc::new(crate::tls::MemoryPinStore::new());
    let (tls, state) = if base.scheme() == "https" {
        let (cfg, state) =
            tls_config(&bmc, &TlsTrust::Pin { store, explicit: None }, None, crate::tls::Resume::Off).await?;
        (Some(cfg), Some(state))
    } else {
        (None, None)
    };
    let up = super::connected::Connected::new();
    let http = Transport::build(&bmc, &base, tls, opts, &up)?;
    let t = Transport {
        bmc: bmc.clone(),
        base,
        http,
        pin: state.clone(),
        timeout: opts.request_timeout,
        connected: up.subscribe(),
    };
    let not_redfish = || RedfishError::Missing {
        bmc: bmc.clone(),
        url: "/redfish/v1/".into(),
        what: "a Redfish service root",
    };
    let root = get(&t, "/redfish/v1/").await?.ok_or_else(not_redfish)?;
    if root.get("RedfishVersion").is_none() && root.get("@odata.id").is_none() {
        return Err(not_redfish());
    }
    let system = first_member(&t, &root, "Systems").await;
    let manager = first_member(&t, &root, "Managers").await;
    let certificate = state.and_then(|s| lock(&s).last_seen.as_ref().map(|(f, _)| *f));
    Ok(Probe { root, system, manager, certificate })
}

async fn first_member(t: &Transport, root: &Value, collection: &str) -> Option<Value> {
    let link = root.get(collection)?.get("@odata.id")?.as_str()?;
    let coll = get(t, link).await.ok()??;
    let first = coll.get("Members")?.as_array()?.first()?.get("@odata.id")?.as_str()?.to_owned();
    get(t, &first).await.ok()?
}

/// GET a JSON document; `None` for a refusal (401/403/404), an error for the transport failing.
async fn get(t: &Transport, link: &str) -> Result<Option<Value>, RedfishError> {
    let url = t.url(link)?;
    let mut resp = t.send(t.http.get(url.clone()).timeout(t.timeout), "GET", &url).await?;
    if !resp.status().is_success() {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| t.map_err(e, "GET", &url))? {
        if body.len() + chunk.len() > PROBE_BODY_LIMIT {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(serde_json::from_slice(&body).ok())
}
