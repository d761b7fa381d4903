//! Certificate trust outside normal requests: re-pinning after an intended replacement (`lifeline bmc
//! trust`) and reading the certificate a BMC presents now (for the hygiene audit).

use std::sync::Arc;

use lifeline_types::Fingerprint;

use super::transport::{Transport, parse_base, tls_config};
use super::{BmcTarget, ClientOptions, TrustOutcome};
use crate::error::RedfishError;
use crate::tls::{PinStore, TlsTrust, lock};

/// Re-pin a BMC after an intended certificate replacement (`lifeline bmc trust`): connect accepting whatever
/// certificate is presented (the handshake signature is still checked), then store its fingerprint — only
/// when it is `expected`, the fingerprint the operator was shown ([`presented_certificate`]) and confirmed.
/// Anything else stores nothing: a certificate swapped between the look and the confirmation is refused
/// with both fingerprints named. If the inventory pins a different certificate, nothing is stored either:
/// the inventory wins and must be edited.
pub async fn trust(
    target: &BmcTarget,
    store: &dyn PinStore,
    inventory_pin: Option<Fingerprint>,
    expected: Fingerprint,
    opts: &ClientOptions,
) -> Result<TrustOutcome, RedfishError> {
    let bmc = target.name.clone();
    let presented = probe_certificate(target, opts).await?.0;
    if let Some(inv) = inventory_pin
        && inv != presented
    {
        return Err(RedfishError::InventoryPinMismatch { bmc, inventory: inv, presented });
    }
    if presented != expected {
        return Err(RedfishError::NotConfirmed { bmc, expected, presented });
    }
    let previous =
        store.get_pin(&bmc).await.map_err(|source| RedfishError::PinStore { bmc: bmc.clone(), source })?;
    store
        .set_pin(&bmc, presented)
        .await
        .map_err(|source| RedfishError::PinStore { bmc: bmc.clone(), source })?;
    tracing::info!(bmc = %bmc, previous = ?previous, current = %presented, "re-pinned TLS certificate");
    Ok(TrustOutcome { previous, current: presented })
}

/// What a re-pin would change: the pin stored now and the certificate presented now (no credential sent,
/// nothing stored), for the operator to look at before confirming.
pub async fn presented_certificate(
    target: &BmcTarget,
    store: &dyn PinStore,
    opts: &ClientOptions,
) -> Result<TrustOutcome, RedfishError> {
    let bmc = target.name.clone();
    let previous =
        store.get_pin(&bmc).await.map_err(|source| RedfishError::PinStore { bmc: bmc.clone(), source })?;
    let current = probe_certificate(target, opts).await?.0;
    Ok(TrustOutcome { previous, current })
}

/// Fingerprint and DER of the certificate a BMC presents now (no pin enforced, nothing stored).
pub async fn probe_certificate(
    target: &BmcTarget,
    opts: &ClientOptions,
) -> Result<(Fingerprint, Vec<u8>), RedfishError> {
    let bmc = target.name.clone();
    let base = parse_base(target)?;
    if base.scheme() != "https" {
        return Err(RedfishError::NoCertificate { bmc, url: base.to_string() });
    }
    let store: Arc<dyn PinStore> = Arc::new(crate::tls::MemoryPinStore::new());
    // No resumption: a resumed handshake would not show the certificate.
    let (cfg, state) =
        tls_config(&bmc, &TlsTrust::Pin { store, explicit: None }, None, crate::tls::Resume::Off).await?;
    let up = super::connected::Connected::new();
    let http = Transport::build(&bmc, &base, Some(cfg), opts, &up)?;
    let t = Transport {
        bmc: bmc.clone(),
        base,
        http,
        pin: Some(state.clone()),
        timeout: opts.request_timeout,
        connected: up.subscribe(),
    };
    let url = t.url("/redfish/v1/")?;
    // Any HTTP status will do: the handshake completed, so the signature matched the presented key.
    let _ = t.send(t.http.get(url.clone()).timeout(t.timeout), "GET", &url).await?;
    let seen = lock(&state).last_seen.clone();
    seen.ok_or(RedfishError::NoCertificate { bmc, url: url.to_string() })
}
