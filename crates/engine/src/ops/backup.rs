//! Switch configuration: backup runs (one version per content, sealed raw copy by default), history, diff,
//! git export, restore with a dry-run that fails exactly when the restore would, host-key trust, schedules.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use lifeline_netcfg::show::{HistoryEntry, Which};
use lifeline_netcfg::{BackupContext, BackupOutcome, BackupTarget, BlobStore};
use lifeline_types::{AuditAction, DeviceName, Platform};
use serde::Serialize;

use crate::adapters::StoreIndex;
use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::ops::{Acted, Row};
use crate::seal::SealedFiles;

/// One switch's backup.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct BackupRun {
    pub switch: String,
    pub platform: Platform,
    /// `ok` (new version), `unchanged`.
    pub outcome: &'static str,
    pub detail: BackupDetail,
    pub ms: u64,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct BackupDetail {
    pub version: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<u32>,
    /// A sealed raw copy (with secrets) exists for this version: it can be restored faithfully.
    pub raw_sealed: bool,
}

/// Options of a backup run.
#[derive(Debug, Clone)]
pub struct BackupOptions {
    pub concurrency: usize,
    /// Keep the sealed raw copy (default); without it only the scrubbed copy is stored.
    pub seal_raw: bool,
    /// Overrides the per-device total timeout.
    pub timeout: Option<Duration>,
}

impl Default for BackupOptions {
    fn default() -> Self {
        BackupOptions { concurrency: 16, seal_raw: true, timeout: None }
    }
}

/// `backup diff`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct BackupDiff {
    pub switch: String,
    pub from: u32,
    pub to: u32,
    pub diff: String,
    pub hunks: Vec<lifeline_netcfg::diff::Hunk>,
}

/// `backup restore` (dry run or real).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Restore {
    pub switch: String,
    pub to: String,
    pub version: u32,
    pub dry_run: bool,
    /// Unified diff from the running config to the version.
    pub diff: String,
    /// Whether the faithful (sealed raw) copy is what would be or was pushed.
    pub raw: bool,
    pub applied: bool,
    pub verified: bool,
    pub outcome: &'static str,
    pub steps: Vec<String>,
}

/// `backup show`.
#[derive(Debug, Clone, Serialize)]
pub struct ShownVersion {
    pub switch: String,
    pub version: u32,
    pub platform: Platform,
    /// SHA-256 of the scrubbed copy (the blob's name).
    pub sha256: String,
    /// The sealed raw text (secrets included) rather than the scrubbed copy.
    pub raw: bool,
    pub text: String,
}

/// `backup trust`.
#[derive(Debug, Clone, Serialize)]
pub struct SwitchTrust {
    pub switch: String,
    pub previous: Option<lifeline_types::Fingerprint>,
    pub current: lifeline_types::Fingerprint,
}

/// One switch's next scheduled backup.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ScheduledBackup {
    pub switch: String,
    pub cron: String,
    pub next: chrono::DateTime<chrono::Utc>,
    pub retries: u32,
}

fn device_name(name: &str) -> Result<DeviceName> {
    DeviceName::new(name).map_err(|e| EngineError::bad_argument(format!("`{name}`: {e}")))
}

impl Lifeline {
    /// Where versions, blobs and sealed copies live.
    pub async fn backup_context(&self, seal_raw: bool) -> Result<BackupContext> {
        let store = self.store().await?.clone();
        let index = Arc::new(StoreIndex(store));
        let sealed = SealedFiles::new(&self.paths.data_dir, &self.paths.seal_key);
        // Reading sealed copies is always possible once a key exists; writing them unless told not to.
        let raw: Option<Arc<dyn lifeline_netcfg::RawStore>> =
            if seal_raw || sealed.has_key() { Some(Arc::new(sealed)) } else { None };
        Ok(BackupContext {
            pins: index.clone(),
            index,
            blobs: BlobStore::new(self.paths.data_dir.join("configs")),
            raw,
        })
    }

    /// Backs up every target, each under its lease and audited; `on_done` sees each result.
    pub async fn backup_run(
        &self,
        targets: Vec<BackupTarget>,
        opts: &BackupOptions,
        on_done: impl Fn(&str) + Send + Sync,
    ) -> Result<Vec<Row<Acted<BackupRun>>>> {
        let ctx = self.backup_context(opts.seal_raw).await?;
        // Without sealing, a version must not claim a sealed copy that an earlier key made possible.
        let ctx = if opts.seal_raw { ctx } else { BackupContext { raw: None, ..ctx } };
        let audit = self.audit().await?;
        let names: Vec<String> = targets.iter().map(|t| t.device().to_string()).collect();
        let on_done = &on_done;
        let rows = futures::stream::iter(targets)
            .map(|mut t| {
                let (ctx, audit) = (ctx.clone(), audit.clone());
                if let Some(step) = opts.timeout {
                    t.ssh.timeouts = t.ssh.timeouts.with_step_limit(step);
                }
                async move {
                    let name = t.device().to_string();
                    let key = name.clone();
                    let r = self
                        .guarded(&key, AuditAction::BackupRun, |rid| async move {
                            let intent = audit
                                .intent(
                                    AuditAction::BackupRun,
                                    &name,
                                    Some(&rid),
                                    serde_json::json!({ "platform": t.platform }),
                                )
                                .await?;
                            let start = Instant::now();
                            let res = lifeline_netcfg::backup::backup_one(&ctx, &t).await;
                            let ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
                            match res {
                                Ok(o) => {
                                    let (outcome, version, blob, previous) = match o {
                                        BackupOutcome::Unchanged { version } => {
                                            ("unchanged", version, None, None)
                                        }
                                        BackupOutcome::NewVersion { version, blob, previous } => {
                                            ("ok", version, Some(blob.as_str().to_owned()), previous)
                                        }
                                    };
                                    let raw_sealed = ctx
                                        .index
                                        .get(t.device(), version)
                                        .await
                                        .ok()
                                        .flatten()
                                        .is_some_and(|v| v.raw_sealed);
                                    let run = BackupRun {
                                        switch: name.clone(),
                                        platform: t.platform,
                                        outcome,
                                        detail: BackupDetail { version, blob, previous, raw_sealed },
                                        ms,
                                    };
                                    let o = if outcome == "ok" { Outcome::Ok } else { Outcome::Unchanged };
                                    audit.outcome(intent, o, &run.detail).await?;
                                    Ok(run)
                                }
                                Err(e) => {
                                    let err = EngineError::failed_by(&name, "backup", e);
                                    audit
                                        .outcome(
                                            intent,
                                            Outcome::Failed,
                                            serde_json::json!({ "error": err.chain() }),
                                        )
                                        .await?;
                                    Err(err)
                                }
                            }
                        })
                        .await;
                    on_done(&key);
                    Row::new("switch", key, r)
                }
            })
            .buffer_unordered(opts.concurrency.max(1))
            .collect::<Vec<_>>()
            .await;
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        Ok(crate::ops::power::order(rows, &refs))
    }

    /// Versions of a switch, oldest first, each with its digest, size and time; `NotFound` when none.
    pub async fn backup_history(&self, switch: &str) -> Result<Vec<HistoryEntry>> {
        let store = self.store().await?.clone();
        let dev = device_name(switch)?;
        let versions = lifeline_netcfg::show::history(&StoreIndex(store), &dev)
            .await
            .map_err(|e| EngineError::failed_by(switch, "reading the version index", e))?;
        if versions.is_empty() {
            return Err(EngineError::NotFound {
                target: switch.into(),
                what: format!("backup yet (run `lifeline backup run {switch}`)"),
            });
        }
        Ok(versions)
    }

    /// One version's text: the scrubbed comparison copy, or (`raw`) the sealed copy with its secrets, which
    /// is audited before it is returned.
    pub async fn backup_show(&self, switch: &str, version: Option<u32>, raw: bool) -> Result<ShownVersion> {
        let ctx = self.backup_context(false).await?;
        let dev = device_name(switch)?;
        let which = if raw { Which::Raw } else { Which::Normalised };
        if raw {
            self.audit()
                .await?
                .record(
                    AuditAction::BackupShowRaw,
                    switch,
                    Outcome::Ok,
                    None,
                    serde_json::json!({ "version": version }),
                )
                .await?;
        }
        let (rec, text) =
            lifeline_netcfg::show::show_version(&ctx, &dev, version, which).await.map_err(|e| {
                use lifeline_netcfg::restore::RestoreError;
                use lifeline_netcfg::show::ShowError;
                match e {
                    ShowError::NoRaw { .. } => {
                        EngineError::NotFound { target: switch.into(), what: e.to_string() }
                    }
                    ShowError::Load(RestoreError::NoSuchVersion { .. } | RestoreError::NoVersions { .. }) => {
                        EngineError::NotFound { target: switch.into(), what: e.to_string() }
                    }
                    e => EngineError::failed_by(switch, "loading the version", e),
                }
            })?;
        Ok(ShownVersion {
            switch: switch.into(),
            version: rec.version,
            platform: rec.platform,
            sha256: rec.blob.as_str().to_owned(),
            raw,
            text,
        })
    }

    /// Diff between two versions (default: the last two).
    pub async fn backup_diff(&self, switch: &str, v1: Option<u32>, v2: Option<u32>) -> Result<BackupDiff> {
        let versions = self.backup_history(switch).await?;
        let latest = versions.last().map(|v| v.version).unwrap_or(1);
        let (a, b) = match (v1, v2) {
            (Some(a), Some(b)) => (a, b),
            (Some(a), None) => (a, latest),
            (None, _) => (latest.saturating_sub(1).max(1), latest),
        };
        let ctx = self.backup_context(false).await?;
        let dev = device_name(switch)?;
        let old = load(&ctx, &dev, Some(a)).await?;
        let new = load(&ctx, &dev, Some(b)).await?;
        let diff = lifeline_netcfg::diff::unified(
            &old.normalised,
            &new.normalised,
            &format!("{switch} v{a}"),
            &format!("{switch} v{b}"),
        );
        let hunks = lifeline_netcfg::diff::hunks(&old.normalised, &new.normalised);
        Ok(BackupDiff { switch: switch.into(), from: a, to: b, diff, hunks })
    }

    /// Exports every version into a git repository (one commit per version).
    pub async fn backup_export(&self, dir: &std::path::Path) -> Result<usize> {
        let ctx = self.backup_context(false).await?;
        let audit = self.audit().await?;
        let intent =
            audit.intent(AuditAction::BackupExport, "fleet", None, serde_json::json!({ "dir": dir })).await?;
        match lifeline_netcfg::git_export::export_git(dir, ctx.index.as_ref(), &ctx.blobs).await {
            Ok(n) => {
                audit.outcome(intent, Outcome::Ok, serde_json::json!({ "dir": dir, "commits": n })).await?;
                Ok(n)
            }
            Err(e) => {
                let err = EngineError::failed_by("export", dir.display().to_string(), e);
                audit.outcome(intent, Outcome::Failed, serde_json::json!({ "error": err.chain() })).await?;
                Err(err)
            }
        }
    }

    /// Restores `version` (default: latest) of `switch` onto `to` (default: itself). A dry run checks
    /// everything the restore would (the version, the raw copy or `allow_scrubbed`, the switch answering)
    /// and shows the diff; it fails exactly when the restore would fail before applying.
    pub async fn backup_restore(
        &self,
        switch: &str,
        version: Option<u32>,
        to: Option<&str>,
        dry_run: bool,
        allow_scrubbed: bool,
    ) -> Result<Acted<Restore>> {
        let dest_name = to.unwrap_or(switch).to_owned();
        let dest = self.switch(&dest_name)?;
        let ctx = self.backup_context(false).await?;
        let dev = device_name(switch)?;
        let v = load(&ctx, &dev, version).await?;
        if v.raw.is_none() && !allow_scrubbed {
            let why = if v.record.raw_sealed {
                "its sealed raw copy cannot be read (is the seal key in place?)"
            } else {
                "it has no sealed raw copy (taken with --no-raw?)"
            };
            return Err(EngineError::Refused {
                target: dest_name,
                reason: format!(
                    "{switch} v{} cannot be restored faithfully: {why}; pass --allow-scrubbed to push the scrubbed copy (secrets become `<removed>`)",
                    v.record.version
                ),
            });
        }
        let preview = lifeline_netcfg::restore::preview(&ctx, &dest, &v)
            .await
            .map_err(|e| EngineError::failed_by(&dest_name, "reading the running config", e))?;
        let mut report = Restore {
            switch: switch.into(),
            to: dest_name.clone(),
            version: v.record.version,
            dry_run,
            diff: preview,
            raw: v.raw.is_some(),
            applied: false,
            verified: false,
            outcome: "dry-run",
            steps: Vec::new(),
        };
        if dry_run {
            return Ok(Acted::Fresh(report));
        }
        let audit = self.audit().await?;
        let from = switch.to_owned();
        let key = dest_name.clone();
        self.guarded(&key, AuditAction::BackupRestore, |rid| async move {
            let intent = audit
                .intent(AuditAction::BackupRestore, &dest_name, Some(&rid), serde_json::json!({ "from": from, "version": v.record.version }))
                .await?;
            let opts = lifeline_netcfg::restore::RestoreOptions {
                dry_run: false,
                allow_scrubbed,
                verify_within: Some(Duration::from_secs(120)),
            };
            match lifeline_netcfg::restore::restore(&ctx, &dest, &v, opts).await {
                Ok(r) => {
                    report.applied = r.applied;
                    report.verified = r.verified;
                    report.steps = r.steps;
                    report.outcome = if r.verified { "ok" } else { "unverified" };
                    let o = if r.verified { Outcome::Ok } else { Outcome::Unverified };
                    audit
                        .outcome(intent, o, serde_json::json!({ "from": from, "version": r.version, "applied": r.applied, "verified": r.verified, "steps": report.steps }))
                        .await?;
                    Ok(report)
                }
                Err(e) => {
                    let err = EngineError::failed_by(&dest_name, "restore", e);
                    audit.outcome(intent, Outcome::Failed, serde_json::json!({ "from": from, "error": err.chain() })).await?;
                    Err(err)
                }
            }
        })
        .await
    }

    /// Every `[[backup-schedule]]` entry checked (all problems at once, FILE:LINE:COL) and each switch's next
    /// run after `now`.
    pub fn backup_schedule(&self, now: chrono::DateTime<chrono::Utc>) -> Result<Vec<ScheduledBackup>> {
        let cfg = &self.config;
        if cfg.path.is_none() {
            return Err(EngineError::bad_argument(
                "no server config: pass --config FILE (with [[backup-schedule]] entries)",
            ));
        }
        let inv = self.inventory()?;
        let path = cfg.display_path();
        let mut problems = Vec::new();
        let mut rows = Vec::new();
        // Whole seconds, so the same question always gets the same answer.
        let now = chrono::DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now);
        for entry in &cfg.config.backup_schedule {
            let (line, col) = cfg.line_col(entry.span().start);
            let at = format!("{path}:{line}:{col}");
            let e = entry.get_ref();
            let jitter = match e.jitter.as_deref().map(humantime::parse_duration).transpose() {
                Ok(j) => j.unwrap_or_default(),
                Err(err) => {
                    problems.push(format!("{at}: jitter `{}`: {err}", e.jitter.as_deref().unwrap_or("")));
                    Duration::ZERO
                }
            };
            let sched = match lifeline_netcfg::schedule::Schedule::parse(&e.cron, jitter) {
                Ok(s) => s,
                Err(err) => {
                    problems.push(format!("{at}: {err}"));
                    continue;
                }
            };
            let devices = match lifeline_inventory::select(&inv, &e.targets) {
                Ok(d) => d,
                Err(err) => {
                    problems.push(format!("{at}: {err}"));
                    continue;
                }
            };
            for d in devices.into_iter().filter(|d| d.switch.is_some()) {
                match sched.next_run(now, d.name.as_str()) {
                    Ok(next) => rows.push(ScheduledBackup {
                        switch: d.name.to_string(),
                        cron: e.cron.clone(),
                        next,
                        retries: e.retries,
                    }),
                    Err(err) => problems.push(format!("{at}: {err}")),
                }
            }
        }
        if !problems.is_empty() {
            return Err(EngineError::bad_argument(problems.join("\n")));
        }
        Ok(rows)
    }
}

async fn load(
    ctx: &BackupContext,
    dev: &DeviceName,
    version: Option<u32>,
) -> Result<lifeline_netcfg::restore::LoadedVersion> {
    use lifeline_netcfg::restore::RestoreError;
    lifeline_netcfg::restore::load_version(ctx, dev, version).await.map_err(|e| match e {
        RestoreError::NoSuchVersion { .. } | RestoreError::NoVersions { .. } => {
            EngineError::NotFound { target: dev.to_string(), what: e.to_string() }
        }
        e => EngineError::failed_by(dev.as_str(), "loading the version", e),
    })
}
