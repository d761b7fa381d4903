//! The store behind the protocol crates' traits: TLS pins, the protocol `auto` chose, switch config
//! versions and SSH host-key pins, console log files. Those crates do not depend on the store (so they stay
//! testable and reusable); the engine joins them. The audit sink lives in `audit.rs`.

use async_trait::async_trait;
use chrono::{TimeZone, Utc};
use std::collections::HashMap;

use lifeline_bmc::{BoxError, Discovery, ProtocolMemory, RedfishDiscovery, RedfishResourcePaths};
use lifeline_console::{ConsoleLogIndex, LogFileEntry};
use lifeline_netcfg::{BlobId, HostKeyPins, IndexError, VersionIndex, VersionRecord};
use lifeline_store::{ConsoleLogRow, DiscoveryRow, PinKind, Store};
use lifeline_types::{BmcProtocol, DeviceName, Fingerprint, Platform};

/// TLS pins (trust on first use) for Redfish BMCs, kept in the store.
#[derive(Debug, Clone)]
pub struct StorePins(pub Store);

#[async_trait]
impl lifeline_redfish::PinStore for StorePins {
    async fn get_pin(&self, bmc: &str) -> Result<Option<Fingerprint>, BoxError> {
        Ok(self.0.pin(PinKind::Tls, bmc).await?)
    }

    async fn set_pin(&self, bmc: &str, pin: Fingerprint) -> Result<(), BoxError> {
        Ok(self.0.set_pin(PinKind::Tls, bmc, pin).await?)
    }
}

/// Which protocol `auto` settled on, per BMC.
#[derive(Debug, Clone)]
pub struct StoreMemory(pub Store);

#[async_trait]
impl ProtocolMemory for StoreMemory {
    async fn recall(&self, bmc: &str) -> Result<Option<BmcProtocol>, BoxError> {
        // An unreadable value (written by a newer version, say) means "probe again", not an error.
        Ok(self.0.remembered_protocol(bmc).await?.and_then(|p| p.parse().ok()))
    }

    async fn remember(&self, bmc: &str, protocol: BmcProtocol) -> Result<(), BoxError> {
        Ok(self.0.remember_protocol(bmc, protocol.as_str()).await?)
    }

    async fn forget(&self, bmc: &str) -> Result<(), BoxError> {
        Ok(self.0.forget_protocol(bmc).await?)
    }

    async fn recall_discoveries(&self) -> Result<HashMap<String, Discovery>, BoxError> {
        let rows = self.0.bmc_discoveries().await?;
        Ok(rows
            .into_iter()
            .map(|r| {
                // An unreadable root (hand-edited, truncated) only means rediscovering that BMC's Redfish.
                let root = r.redfish_root.as_deref().and_then(|t| serde_json::from_str(t).ok());
                let redfish = match (r.redfish_url, root) {
                    (Some(url), Some(root)) => Some(RedfishDiscovery { url, root, system: r.redfish_system }),
                    _ => None,
                };
                let ipmi_suite = r.ipmi_suite.and_then(|s| u8::try_from(s).ok());
                (r.device, Discovery { ipmi_suite, redfish })
            })
            .collect())
    }

    async fn remember_discovery(&self, bmc: &str, d: &Discovery) -> Result<(), BoxError> {
        let row = DiscoveryRow {
            device: bmc.to_owned(),
            ipmi_suite: d.ipmi_suite.map(i64::from),
            redfish_url: d.redfish.as_ref().map(|r| r.url.clone()),
            redfish_root: d.redfish.as_ref().map(|r| r.root.to_string()),
            redfish_system: d.redfish.as_ref().and_then(|r| r.system.clone()),
        };
        Ok(self.0.set_bmc_discovery(&row).await?)
    }

    async fn recall_redfish_resources(&self) -> Result<HashMap<String, RedfishResourcePaths>, BoxError> {
        let rows = self.0.bmc_redfish_paths().await?;
        // An unreadable row (hand-edited, truncated) only means navigating that BMC again.
        Ok(rows.into_iter().filter_map(|(d, json)| Some((d, serde_json::from_str(&json).ok()?))).collect())
    }

    async fn remember_redfish_resources(&self, bmc: &str, p: &RedfishResourcePaths) -> Result<(), BoxError> {
        let json = if p.is_empty() { None } else { Some(serde_json::to_string(p)?) };
        Ok(self.0.set_bmc_redfish_paths(bmc, json.as_deref()).await?)
    }
}

fn ie(what: &'static str) -> impl FnOnce(lifeline_store::StoreError) -> IndexError {
    move |e| IndexError { what, source: Box::new(e) }
}

fn bad(what: &'static str, msg: String) -> IndexError {
    IndexError { what, source: msg.into() }
}

#[derive(Debug, Clone)]
pub struct StoreIndex(pub Store);

fn record(r: lifeline_store::ConfigVersionRow) -> Result<VersionRecord, IndexError> {
    Ok(VersionRecord {
        device: DeviceName::new(r.device.clone()).map_err(|e| bad("config version device", e.to_string()))?,
        version: u32::try_from(r.version).map_err(|_| bad("config version number", r.version.to_string()))?,
        platform: r
            .platform
            .parse::<Platform>()
            .map_err(|e| bad("config version platform", e.to_string()))?,
        blob: BlobId::parse(&r.blob_sha256)
            .ok_or_else(|| bad("config version blob", r.blob_sha256.clone()))?,
        size: u64::try_from(r.size).unwrap_or(0),
        taken_at: Utc.timestamp_millis_opt(r.fetched_at_ms).single().unwrap_or_default(),
        raw_sealed: r.raw_sealed,
    })
}

#[async_trait]
impl VersionIndex for StoreIndex {
    async fn record(
        &self,
        device: &DeviceName,
        platform: Platform,
        blob: &BlobId,
        size: u64,
        taken_at: chrono::DateTime<Utc>,
        raw_sealed: bool,
    ) -> Result<VersionRecord, IndexError> {
        // Under the action's lease (a backup run): recorded only while that lease is still ours.
        let fence = crate::lease::current_fence();
        let row = self
            .0
            .record_config_version_fenced(
                device.as_str(),
                platform.as_str(),
                blob.as_str(),
                i64::try_from(size).unwrap_or(i64::MAX),
                taken_at.timestamp_millis(),
                raw_sealed,
                fence.as_ref().map(|f| (f.target.as_str(), f.holder.as_str(), f.fence)),
            )
            .await
            .map_err(ie("recording a config version"))?;
        record(row)
    }

    async fn list(&self, device: &DeviceName) -> Result<Vec<VersionRecord>, IndexError> {
        let rows = self.0.config_versions(device.as_str()).await.map_err(ie("listing config versions"))?;
        rows.into_iter().map(record).collect()
    }

    async fn get(&self, device: &DeviceName, version: u32) -> Result<Option<VersionRecord>, IndexError> {
        Ok(self.list(device).await?.into_iter().find(|r| r.version == version))
    }

    async fn mark_sealed(&self, device: &DeviceName, version: u32) -> Result<(), IndexError> {
        self.0
            .mark_config_sealed(device.as_str(), i64::from(version))
            .await
            .map_err(ie("marking a version sealed"))
    }

    async fn devices(&self) -> Result<Vec<DeviceName>, IndexError> {
        let names = self.0.config_devices().await.map_err(ie("listing devices with configs"))?;
        names.into_iter().map(|n| DeviceName::new(n).map_err(|e| bad("device name", e.to_string()))).collect()
    }
}

#[async_trait]
impl HostKeyPins for StoreIndex {
    async fn get(&self, device: &DeviceName) -> Result<Option<Fingerprint>, IndexError> {
        self.0.pin(PinKind::SshHostKey, device.as_str()).await.map_err(ie("reading an SSH host-key pin"))
    }

    async fn set(&self, device: &DeviceName, fingerprint: Fingerprint) -> Result<(), IndexError> {
        self.0
            .set_pin(PinKind::SshHostKey, device.as_str(), fingerprint)
            .await
            .map_err(ie("pinning an SSH host key"))
    }
}

/// Console log files indexed in the store (the bytes stay under the data directory).
#[derive(Debug, Clone)]
pub struct StoreLogIndex(pub Store);

fn row(e: &LogFileEntry) -> ConsoleLogRow {
    ConsoleLogRow {
        console: e.console.clone(),
        seq: i64::try_from(e.seq).unwrap_or(i64::MAX),
        path: e.path.display().to_string(),
        first_ms: e.first_ts.timestamp_millis(),
        last_ms: e.last_ts.map(|t| t.timestamp_millis()),
        bytes: i64::try_from(e.bytes).unwrap_or(i64::MAX),
        closed: e.closed,
    }
}

#[async_trait]
impl ConsoleLogIndex for StoreLogIndex {
    async fn file_opened(&self, entry: &LogFileEntry) -> Result<(), lifeline_console::log::IndexError> {
        Ok(self.0.console_log_upsert(&row(entry)).await?)
    }
    async fn file_closed(&self, entry: &LogFileEntry) -> Result<(), lifeline_console::log::IndexError> {
        Ok(self.0.console_log_upsert(&row(entry)).await?)
    }
    async fn file_removed(&self, console: &str, seq: u64) -> Result<(), lifeline_console::log::IndexError> {
        Ok(self.0.console_log_removed(console, i64::try_from(seq).unwrap_or(i64::MAX)).await?)
    }
    async fn files(&self, console: &str) -> Result<Vec<LogFileEntry>, lifeline_console::log::IndexError> {
        let rows = self.0.console_logs(console).await?;
        Ok(rows
            .into_iter()
            .map(|r| LogFileEntry {
                console: r.console,
                seq: u64::try_from(r.seq).unwrap_or(0),
                path: r.path.into(),
                first_ts: Utc.timestamp_millis_opt(r.first_ms).single().unwrap_or_default(),
                last_ts: r.last_ms.and_then(|m| Utc.timestamp_millis_opt(m).single()),
                bytes: u64::try_from(r.bytes).unwrap_or(0),
                closed: r.closed,
            })
            .collect())
    }
}
