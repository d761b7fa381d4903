//! Backup runs: fetch each switch's config, refuse incomplete ones, store a new version only when the
//! normalised config changed.
//!
//! Why this shape: a sweep over hundreds of switches must be bounded (a semaphore), must never let one
//! slow or broken switch stall or fail the others (per-device total timeout, per-device result), and
//! must never record a half-transferred config (validation before anything is written; blobs are
//! written atomically and indexed only afterwards).

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use lifeline_types::{ConfigSource, DeviceName, Fingerprint, Platform};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::blobs::{BlobError, BlobId, BlobStore};
use crate::index::{HostKeyPins, IndexError, RawStore, VersionIndex};
use crate::platform::{Driver, Incomplete, driver_for, driver_with_source, normalise};
use crate::ssh::{AlgorithmProfile, PinPolicy, Session, SshError, SshTarget, Transport};

/// One switch to back up.
#[derive(Debug, Clone)]
pub struct BackupTarget {
    pub ssh: SshTarget,
    pub platform: Platform,
    /// Algorithm profile for the platform (device override is in `ssh.algorithms`).
    pub platform_algorithms: AlgorithmProfile,
    /// Driver override (e.g. SONiC saved config instead of running); `None` = the platform default.
    pub driver: Option<Arc<dyn Driver>>,
}

impl BackupTarget {
    pub fn new(ssh: SshTarget, platform: Platform) -> Self {
        BackupTarget { ssh, platform, platform_algorithms: AlgorithmProfile::MODERN, driver: None }
    }

    /// Reads and restores `source` instead of the platform's default (inventory `config-source`).
    pub fn with_source(mut self, source: ConfigSource) -> Self {
        if source != ConfigSource::allowed(self.platform)[0] {
            self.driver = Some(Arc::from(driver_with_source(self.platform, source)));
        }
        self
    }

    pub fn device(&self) -> &DeviceName {
        &self.ssh.device
    }

    pub fn driver(&self) -> Arc<dyn Driver> {
        self.driver.clone().unwrap_or_else(|| Arc::from(driver_for(self.platform)))
    }
}

/// Where versions go.
#[derive(Clone)]
pub struct BackupContext {
    pub pins: Arc<dyn HostKeyPins>,
    pub index: Arc<dyn VersionIndex>,
    pub blobs: BlobStore,
    /// Sealed raw storage, only when the operator enabled it.
    pub raw: Option<Arc<dyn RawStore>>,
}

impl std::fmt::Debug for BackupContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupContext").field("blobs", &self.blobs).field("raw", &self.raw.is_some()).finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error(transparent)]
    Ssh(#[from] SshError),
    #[error("{device}: fetched config rejected")]
    Incomplete {
        device: DeviceName,
        #[source]
        source: Incomplete,
    },
    #[error("{device}: backup not finished within {}", lifeline_types::Human(*after))]
    TotalTimeout { device: DeviceName, after: Duration },
    #[error("{device}: version index")]
    Index {
        device: DeviceName,
        #[source]
        source: IndexError,
    },
    #[error("{device}: blob store")]
    Blob {
        device: DeviceName,
        #[source]
        source: BlobError,
    },
    #[error("{device}: backup task failed")]
    Task {
        device: DeviceName,
        #[source]
        source: tokio::task::JoinError,
    },
}

impl BackupError {
    /// The error and its causes on one line (for result tables).
    pub fn chain(&self) -> String {
        lifeline_types::error_chain(self)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackupOutcome {
    /// The normalised config equals the latest version.
    Unchanged { version: u32 },
    /// A new version was recorded.
    NewVersion { version: u32, blob: BlobId, previous: Option<u32> },
}

#[derive(Debug)]
pub struct DeviceResult {
    pub device: DeviceName,
    pub platform: Platform,
    pub outcome: Result<BackupOutcome, BackupError>,
    pub elapsed: Duration,
}

/// A config as fetched from a device.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The command output with line endings normalised (secrets still in it).
    pub raw: String,
    pub host_key: Fingerprint,
}

/// Fetch the config from one device over the transport its driver and target allow, and check it is
/// complete.
pub async fn fetch(target: &BackupTarget, pins: Arc<dyn HostKeyPins>) -> Result<Fetched, BackupError> {
    let driver = target.driver();
    let use_exec = match target.ssh.transport {
        Transport::Exec => true,
        Transport::Shell => false,
        Transport::Auto => driver.exec_supported(),
    };
    let fetched = if use_exec {
        match fetch_exec(target, driver.as_ref(), pins.clone()).await {
            Err(SshError::ExecRefused { .. }) if target.ssh.transport == Transport::Auto => {
                // The first channel was spent on the refused exec (some CLIs serve only one): reconnect.
                fetch_shell(target, driver.as_ref(), pins).await?
            }
            other => other?,
        }
    } else {
        fetch_shell(target, driver.as_ref(), pins).await?
    };
    driver
        .validate(&fetched.raw)
        .map_err(|source| BackupError::Incomplete { device: target.device().clone(), source })?;
    Ok(fetched)
}

async fn connect(target: &BackupTarget, pins: Arc<dyn HostKeyPins>) -> Result<Session, SshError> {
    Session::connect(&target.ssh, target.platform_algorithms, pins, PinPolicy::TrustOnFirstUse).await
}

async fn fetch_exec(
    target: &BackupTarget,
    driver: &dyn Driver,
    pins: Arc<dyn HostKeyPins>,
) -> Result<Fetched, SshError> {
    let session = connect(target, pins).await?;
    let cmd = driver.fetch_command();
    let res = session.exec(cmd, None).await;
    let host_key = session.host_key;
    session.close().await;
    let out = res?;
    if out.status != 0 {
        return Err(SshError::ExitStatus {
            device: target.device().clone(),
            command: cmd.to_owned(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    let raw = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    Ok(Fetched { raw, host_key })
}

/// Open a shell ready for commands: privileged, paging off.
pub(crate) async fn ready_shell(
    session: &Session,
    driver: &dyn Driver,
) -> Result<crate::ssh::Shell, SshError> {
    let mut sh = session.shell(driver.prompt(), driver.platform()).await?;
    if driver.needs_enable() && !sh.privileged() {
        let t = session.target();
        let pw = match (&t.enable_password, &t.auth) {
            (Some(p), _) => p.clone(),
            (None, crate::ssh::SshAuth::Password(p) | crate::ssh::SshAuth::KeyboardInteractive(p)) => {
                p.clone()
            }
            (None, crate::ssh::SshAuth::PublicKey(_)) => String::new(),
        };
        sh.enable(&pw).await?;
    }
    for cmd in driver.shell_setup() {
        sh.run(cmd).await?;
    }
    Ok(sh)
}

async fn fetch_shell(
    target: &BackupTarget,
    driver: &dyn Driver,
    pins: Arc<dyn HostKeyPins>,
) -> Result<Fetched, SshError> {
    let session = connect(target, pins).await?;
    let res = async {
        let mut sh = ready_shell(&session, driver).await?;
        let out = sh.run(driver.fetch_command()).await?;
        sh.exit().await;
        Ok(out)
    }
    .await;
    let host_key = session.host_key;
    session.close().await;
    Ok(Fetched { raw: res?, host_key })
}

/// Back up one device: fetch, validate, normalise, store if changed.
pub async fn backup_one(ctx: &BackupContext, target: &BackupTarget) -> Result<BackupOutcome, BackupError> {
    let device = target.device().clone();
    let after = target.ssh.timeouts.total;
    tokio::time::timeout(after, backup_inner(ctx, target))
        .await
        .map_err(|_| BackupError::TotalTimeout { device, after })?
}

async fn backup_inner(ctx: &BackupContext, target: &BackupTarget) -> Result<BackupOutcome, BackupError> {
    let device = target.device().clone();
    let driver = target.driver();
    let fetched = fetch(target, ctx.pins.clone()).await?;
    let key = ctx.blobs.tag_key().map_err(|source| BackupError::Blob { device: device.clone(), source })?;
    let normalised = normalise(driver.as_ref(), &fetched.raw, &key);
    let id = BlobId::of(normalised.as_bytes());
    let index_err = |source| BackupError::Index { device: device.clone(), source };
    let latest = ctx.index.latest(&device).await.map_err(index_err)?;
    if let Some(l) = &latest
        && l.blob == id
    {
        // An unchanged config whose version has no sealed raw copy yet gets one now, so that a version
        // taken before sealing was enabled (or by a run that did not seal) becomes restorable.
        if !l.raw_sealed
            && let Some(raw) = &ctx.raw
        {
            raw.seal(&device, &id, &fetched.raw).await.map_err(index_err)?;
            ctx.index.mark_sealed(&device, l.version).await.map_err(index_err)?;
        }
        return Ok(BackupOutcome::Unchanged { version: l.version });
    }
    let size = normalised.len() as u64;
    let id = ctx
        .blobs
        .put(normalised.into_bytes())
        .await
        .map_err(|source| BackupError::Blob { device: device.clone(), source })?;
    let mut sealed = false;
    if let Some(raw) = &ctx.raw {
        raw.seal(&device, &id, &fetched.raw).await.map_err(index_err)?;
        sealed = true;
    }
    let rec =
        ctx.index.record(&device, target.platform, &id, size, Utc::now(), sealed).await.map_err(index_err)?;
    Ok(BackupOutcome::NewVersion { version: rec.version, blob: id, previous: latest.map(|l| l.version) })
}

/// Back up many devices, at most `concurrency` at once; `progress` is called as each finishes.
/// Results come back in the order of `targets`.
pub async fn backup_all<F>(
    ctx: &BackupContext,
    targets: Vec<BackupTarget>,
    concurrency: usize,
    progress: F,
) -> Vec<DeviceResult>
where
    F: Fn(&DeviceResult) + Send + Sync + 'static,
{
    let sem = Arc::new(Semaphore::new(concurrency.max(1)));
    let progress = Arc::new(progress);
    let mut set = JoinSet::new();
    let n = targets.len();
    let mut meta = Vec::with_capacity(n);
    let mut ids = std::collections::HashMap::new();
    for (i, target) in targets.into_iter().enumerate() {
        meta.push((target.device().clone(), target.platform));
        let (ctx, sem, progress) = (ctx.clone(), sem.clone(), progress.clone());
        let handle = set.spawn(async move {
            let _permit = sem.acquire_owned().await.expect("semaphore never closed");
            let start = Instant::now();
            let outcome = backup_one(&ctx, &target).await;
            let r = DeviceResult {
                device: target.device().clone(),
                platform: target.platform,
                outcome,
                elapsed: start.elapsed(),
            };
            progress(&r);
            (i, r)
        });
        ids.insert(handle.id(), i);
    }
    let mut results: Vec<Option<DeviceResult>> = (0..n).map(|_| None).collect();
    while let Some(joined) = set.join_next_with_id().await {
        match joined {
            Ok((_, (i, r))) => results[i] = Some(r),
            Err(e) => {
                // A panicking device task is reported as that device's failure, not lost.
                if let Some(&i) = ids.get(&e.id()) {
                    let (device, platform) = meta[i].clone();
                    results[i] = Some(DeviceResult {
                        device: device.clone(),
                        platform,
                        outcome: Err(BackupError::Task { device, source: e }),
                        elapsed: Duration::ZERO,
                    });
                }
            }
        }
    }
    results
        .into_iter()
        .zip(meta)
        .map(|(r, (device, platform))| {
            r.unwrap_or_else(|| DeviceResult {
                device: device.clone(),
                platform,
                outcome: Err(BackupError::TotalTimeout { device, after: Duration::ZERO }),
                elapsed: Duration::ZERO,
            })
        })
        .collect()
}

/// What a re-pin would change: (pin stored now, host key presented now). The handshake ends once the key
/// is seen: no credential is sent, nothing is stored.
pub async fn presented_host_key(
    target: &BackupTarget,
    pins: Arc<dyn HostKeyPins>,
) -> Result<(Option<Fingerprint>, Fingerprint), BackupError> {
    let device = target.device().clone();
    let previous = pins.get(&device).await.map_err(|source| BackupError::Index { device, source })?;
    let now = Session::presented_host_key(&target.ssh, target.platform_algorithms, pins).await?;
    Ok((previous, now))
}

/// Re-pin a device's host key on purpose (`lifeline backup trust SWITCH --fingerprint FP`): connects and
/// stores the presented key only when it is `expected` (what the operator was shown by
/// [`presented_host_key`] and confirmed), then authenticates. Returns (previous pin, new pin).
pub async fn trust(
    target: &BackupTarget,
    pins: Arc<dyn HostKeyPins>,
    expected: Fingerprint,
) -> Result<(Option<Fingerprint>, Fingerprint), BackupError> {
    let device = target.device().clone();
    let previous = pins.get(&device).await.map_err(|source| BackupError::Index { device, source })?;
    let policy = PinPolicy::Repin(expected);
    let session = Session::connect(&target.ssh, target.platform_algorithms, pins, policy).await?;
    let now = session.host_key;
    session.close().await;
    Ok((previous, now))
}
