//! Restore a stored version to a device (the original or a spare), then re-fetch and verify.
//!
//! Why preview + verify: an operator at 3 a.m. must see what will change before it changes (the diff
//! of the running config against the version), and must not be told "restored" unless the device
//! now really runs that config (the re-fetched, normalised config equals the version).

use std::sync::Arc;
use std::time::Duration;

use lifeline_types::DeviceName;

use crate::backup::{BackupContext, BackupError, BackupTarget, fetch, ready_shell};
use crate::blobs::BlobError;
use crate::diff;
use crate::index::{IndexError, VersionRecord};
use crate::platform::{Step, cli_error, normalise};
use crate::scrub::TagKey;
use crate::ssh::{PinPolicy, Session, SshError};

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("{device} has no version {version}")]
    NoSuchVersion { device: DeviceName, version: u32 },
    #[error("{device} has no versions")]
    NoVersions { device: DeviceName },
    #[error(
        "{device} v{version}: no sealed raw config (secrets were scrubbed); enable sealed raw storage or allow pushing the scrubbed config"
    )]
    NoRaw { device: DeviceName, version: u32 },
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
    #[error("{device}: reading the running config")]
    Fetch {
        device: DeviceName,
        #[source]
        source: BackupError,
    },
    #[error(transparent)]
    Ssh(#[from] SshError),
    #[error("{device}: restore step `{step}` failed: {message}")]
    Step { device: DeviceName, step: String, message: String },
    #[error("{device}: after restore the running config differs from the version:\n{diff}")]
    VerifyMismatch { device: DeviceName, diff: String },
    #[error("{device}: restore not finished within {}", lifeline_types::Human(*after))]
    Timeout { device: DeviceName, after: Duration },
}

/// A version loaded for restore.
#[derive(Debug, Clone)]
pub struct LoadedVersion {
    pub record: VersionRecord,
    /// The normalised, scrubbed config (what is compared).
    pub normalised: String,
    /// The raw config (with secrets) if it was sealed.
    pub raw: Option<String>,
}

/// Load `version` (or the latest) of `device`.
pub async fn load_version(
    ctx: &BackupContext,
    device: &DeviceName,
    version: Option<u32>,
) -> Result<LoadedVersion, RestoreError> {
    let ie = |source| RestoreError::Index { device: device.clone(), source };
    let record = match version {
        Some(v) => ctx
            .index
            .get(device, v)
            .await
            .map_err(ie)?
            .ok_or(RestoreError::NoSuchVersion { device: device.clone(), version: v })?,
        None => ctx
            .index
            .latest(device)
            .await
            .map_err(ie)?
            .ok_or(RestoreError::NoVersions { device: device.clone() })?,
    };
    let bytes = ctx
        .blobs
        .get(&record.blob)
        .await
        .map_err(|source| RestoreError::Blob { device: device.clone(), source })?;
    let raw = match (&ctx.raw, record.raw_sealed) {
        (Some(r), true) => r.unseal(device, &record.blob).await.map_err(ie)?,
        _ => None,
    };
    Ok(LoadedVersion { record, normalised: String::from_utf8_lossy(&bytes).into_owned(), raw })
}

#[derive(Debug, Clone, Copy, Default)]
pub struct RestoreOptions {
    /// Show the diff only; change nothing.
    pub dry_run: bool,
    /// Push the scrubbed config when no sealed raw copy exists (secrets become `<removed>`).
    pub allow_scrubbed: bool,
    /// How long to keep re-fetching after a reboot-style restore.
    pub verify_within: Option<Duration>,
}

#[derive(Debug, Clone)]
pub struct RestoreReport {
    pub device: DeviceName,
    pub version: u32,
    /// Unified diff from the running config (before) to the version; empty when equal.
    pub diff_before: String,
    pub applied: bool,
    pub verified: bool,
    /// Every command sent and its (scrubbed-free: commands only) outcome, for the audit log.
    pub steps: Vec<String>,
}

fn tag_key(ctx: &BackupContext, device: &DeviceName) -> Result<TagKey, RestoreError> {
    ctx.blobs.tag_key().map_err(|source| RestoreError::Blob { device: device.clone(), source })
}

/// What the device must run once `version` is restored, as the running config normalises now: the
/// sealed raw copy normalised with today's rules (so a version stored before a scrub rule changed
/// still verifies), else the stored scrubbed copy.
fn expected(driver: &dyn crate::platform::Driver, version: &LoadedVersion, key: &TagKey) -> String {
    match &version.raw {
        Some(raw) => normalise(driver, raw, key),
        None => version.normalised.clone(),
    }
}

/// Diff of the device's running config (normalised) against the version.
pub async fn preview(
    ctx: &BackupContext,
    target: &BackupTarget,
    version: &LoadedVersion,
) -> Result<String, RestoreError> {
    let driver = target.driver();
    let running = fetch(target, ctx.pins.clone())
        .await
        .map_err(|source| RestoreError::Fetch { device: target.device().clone(), source })?;
    let key = tag_key(ctx, target.device())?;
    let running = normalise(driver.as_ref(), &running.raw, &key);
    Ok(diff::unified(
        &running,
        &expected(driver.as_ref(), version, &key),
        &format!("{} running", target.device()),
        &format!("{} v{}", version.record.device, version.record.version),
    ))
}

/// Push `version` to `target` with the platform's native mechanism, then verify.
pub async fn restore(
    ctx: &BackupContext,
    target: &BackupTarget,
    version: &LoadedVersion,
    opts: RestoreOptions,
) -> Result<RestoreReport, RestoreError> {
    let device = target.device().clone();
    let after = target.ssh.timeouts.total + opts.verify_within.unwrap_or_default();
    tokio::time::timeout(after, restore_inner(ctx, target, version, opts))
        .await
        .map_err(|_| RestoreError::Timeout { device, after })?
}

async fn restore_inner(
    ctx: &BackupContext,
    target: &BackupTarget,
    version: &LoadedVersion,
    opts: RestoreOptions,
) -> Result<RestoreReport, RestoreError> {
    let device = target.device().clone();
    let driver = target.driver();
    let diff_before = preview(ctx, target, version).await?;
    let mut report = RestoreReport {
        device: device.clone(),
        version: version.record.version,
        diff_before,
        applied: false,
        verified: false,
        steps: Vec::new(),
    };
    if opts.dry_run {
        return Ok(report);
    }
    let content = match (&version.raw, opts.allow_scrubbed) {
        (Some(raw), _) => driver.restorable(raw),
        (None, true) => version.normalised.clone(),
        (None, false) => {
            return Err(RestoreError::NoRaw { device, version: version.record.version });
        }
    };

    let session = Session::connect(
        &target.ssh,
        target.platform_algorithms,
        ctx.pins.clone(),
        PinPolicy::TrustOnFirstUse,
    )
    .await?;
    let mut rebooted = false;
    let run = async {
        let mut sh = ready_shell(&session, driver.as_ref()).await?;
        let steps = driver.restore_steps(&content);
        for (i, step) in steps.iter().cloned().enumerate() {
            let reboots_next = matches!(steps.get(i + 1), Some(Step::Reboot { .. }));
            match step {
                Step::Command { line, answers } => {
                    let out = match sh.run_answering(&line, &answers).await {
                        // The command that reboots the device ends the connection: that is success.
                        Err(SshError::ClosedEarly { .. }) if reboots_next => String::new(),
                        other => other?,
                    };
                    report.steps.push(line.clone());
                    if let Some(message) = cli_error(&out) {
                        return Err(RestoreError::Step { device: device.clone(), step: line, message });
                    }
                }
                Step::Block { intro, body, end } => {
                    let out = sh.block(&intro, &body, &end).await?;
                    report.steps.push(format!("{intro} ({} lines)", body.lines().count()));
                    if let Some(message) = cli_error(&out) {
                        return Err(RestoreError::Step { device: device.clone(), step: intro, message });
                    }
                }
                Step::Reboot { after } => {
                    report.steps.push("(device reloads)".into());
                    rebooted = true;
                    tokio::time::sleep(after).await;
                    return Ok(());
                }
            }
        }
        sh.exit().await;
        Ok(())
    };
    let res = run.await;
    session.close().await;
    res?;
    report.applied = true;

    // Verify: re-fetch (retrying while a rebooting device comes back) and compare.
    let deadline = tokio::time::Instant::now() + opts.verify_within.unwrap_or(Duration::from_secs(60));
    let fetched = loop {
        match fetch(target, ctx.pins.clone()).await {
            Ok(f) => break f,
            Err(e) if rebooted && tokio::time::Instant::now() < deadline => {
                tracing::debug!(device = %device, error = %e.chain(), "waiting for the device to come back");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(source) => return Err(RestoreError::Fetch { device, source }),
        }
    };
    let key = tag_key(ctx, &device)?;
    let now = normalise(driver.as_ref(), &fetched.raw, &key);
    let want = expected(driver.as_ref(), version, &key);
    if now != want {
        return Err(RestoreError::VerifyMismatch {
            device,
            diff: diff::unified(&want, &now, "version", "running after restore"),
        });
    }
    report.verified = true;
    Ok(report)
}

/// Convenience for callers holding an `Arc<BackupContext>`.
pub async fn restore_arc(
    ctx: Arc<BackupContext>,
    target: BackupTarget,
    version: LoadedVersion,
    opts: RestoreOptions,
) -> Result<RestoreReport, RestoreError> {
    restore(&ctx, &target, &version, opts).await
}
