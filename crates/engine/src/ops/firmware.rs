//! `firmware apply PLAN`: the rollout. Waves in order; in a wave every BMC at once, each under its lease
//! and audited as `firmware.update`: push (SimpleUpdate or multipart), poll the task monitor, reset what
//! an `OnReset` apply needs (the host for BIOS, NIC and GPU firmware, the BMC for its own), then read the
//! version back until it is the plan's or the time is up. Only a version read back counts as success.
//! The first wave with a failure ends the rollout after that wave; later waves are not touched.
//!
//! Journaled (`lifeline_store::firmware`): each BMC's state is written before the step that changes the
//! BMC and after it, so a rollout killed mid-way resumes on `apply` of the same plan: a BMC whose push was
//! sent is read back (and its task polled) before anything is sent again.

use std::time::{Duration, Instant};

use lifeline_bmc::Bmc;
use lifeline_bmc::firmware::{Component, FirmwareImage, FirmwarePush, TaskEnd, version_cmp};
use lifeline_store::{RolloutRow, RolloutTargetRow, Store};
use lifeline_types::{AuditAction, PowerAction};
use serde::Serialize;

pub use super::firmware_plan::{Change, FirmwarePlan, PlanRequest, PlannedTarget, WaveLimits};
use crate::audit::{AuditService, Outcome};
use crate::context::Lifeline;
use crate::error::{EngineError, Result};

/// How long each part of an update may take.
#[derive(Debug, Clone, Copy)]
pub struct ApplyOptions {
    /// Between task monitor polls.
    pub poll: Duration,
    /// A task that has not ended by then failed.
    pub task_timeout: Duration,
    /// The new version must read back within this after the task (and the reset).
    pub confirm_timeout: Duration,
    /// An image upload may take this long.
    pub upload_timeout: Duration,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            poll: Duration::from_secs(2),
            task_timeout: Duration::from_secs(1800),
            confirm_timeout: Duration::from_secs(900),
            upload_timeout: Duration::from_secs(1800),
        }
    }
}

/// One BMC's end state.
#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    pub bmc: String,
    pub wave: i64,
    /// `done`, `failed`, `pending` (a wave not run), `skipped`.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The rollout's report.
#[derive(Debug, Clone, Serialize)]
pub struct RolloutReport {
    pub rollout: String,
    pub component: Component,
    pub version: String,
    /// `done` or `failed`.
    pub state: String,
    /// Whether this apply continued a rollout begun earlier.
    pub resumed: bool,
    /// Each wave's state.
    pub waves: Vec<String>,
    /// The BMCs that failed, with why (empty when done).
    pub failed: Vec<String>,
    pub targets: Vec<TargetReport>,
}

fn same_version(a: Option<&str>, b: &str) -> bool {
    a.is_some_and(|a| a == b || version_cmp(a, b) == Some(std::cmp::Ordering::Equal))
}

struct Ctx<'a> {
    store: &'a Store,
    plan: &'a FirmwarePlan,
    image: &'a FirmwareImage,
    opts: ApplyOptions,
    audit: AuditService,
}

impl Ctx<'_> {
    /// The newest update task that started since `row` was journaled as pushing.
    async fn adopt(&self, bmc: &Bmc, row: &RolloutTargetRow) -> Option<String> {
        let since = chrono::DateTime::from_timestamp_millis(row.updated_at - 60_000)?;
        let tasks = bmc.firmware_tasks().await.ok()?;
        tasks
            .into_iter()
            .filter_map(|(link, t)| {
                let at = chrono::DateTime::parse_from_rfc3339(t.start_time.as_deref()?).ok()?;
                (at >= since).then_some((at, link))
            })
            .max()
            .map(|(_, link)| link)
    }

    async fn save(&self, row: &mut RolloutTargetRow, state: &str, detail: Option<String>) -> Result<()> {
        row.state = state.to_owned();
        row.detail = detail;
        Ok(self.store.firmware_target_set(row).await?)
    }

    /// One BMC through push, task, reset and read-back, from wherever its journal row stands.
    async fn update(&self, bmc: &Bmc, link: &str, row: &mut RolloutTargetRow, rid: &str) -> Result<()> {
        let name = bmc.name().to_owned();
        let fail = |source| EngineError::Bmc { target: name.clone(), source };
        let version = self.plan.version.as_str();
        let current = bmc.firmware_read(link.to_owned()).await.map_err(fail)?.version;
        if row.before_version.is_none() {
            row.before_version.clone_from(&current);
        }
        if same_version(current.as_deref(), version) {
            row.after_version = current;
            return self.save(row, "done", Some("the version reads back".into())).await;
        }
        if row.state == "pushing" && row.task.is_none() {
            // Interrupted between the push and its journal entry: adopt the push's task if the BMC has one
            // that started after the journal said "pushing" (less a minute of clock skew).
            if let Some(link) = self.adopt(bmc, row).await {
                row.task = Some(link);
                self.save(row, "pushed", Some("resumed: the interrupted push's task adopted".into())).await?;
            }
        }
        if row.state == "pending" || (row.state == "pushing" && row.task.is_none()) {
            // The BMC may have changed since the plan: judge again before sending anything.
            let down = current.as_deref().map(|c| version_cmp(c, version));
            if !self.plan.allow_downgrade && !matches!(down, Some(Some(std::cmp::Ordering::Less))) {
                let why = format!(
                    "{} is at {}: {version} would be a downgrade (or cannot be compared); refused without \
                     --allow-downgrade",
                    name,
                    current.as_deref().unwrap_or("no version")
                );
                self.save(row, "failed", Some(why.clone())).await?;
                return Err(EngineError::Refused { target: name.clone(), reason: why });
            }
            self.save(row, "pushing", None).await?;
            let push = FirmwarePush {
                target: link.to_owned(),
                image: self.image.clone(),
                within: self.opts.upload_timeout,
            };
            let r = bmc.firmware_push(push).await.map_err(fail)?;
            row.task = r.accepted.task.clone();
            let apply = r.apply_time.clone().unwrap_or_else(|| "default".into());
            self.save(row, "pushed", Some(format!("{} ({apply}): {}", r.method, r.sent))).await?;
        }
        if let Some(task) = row.task.clone()
            && row.state == "pushed"
        {
            let deadline = Instant::now() + self.opts.task_timeout;
            loop {
                match bmc.firmware_task(task.clone()).await {
                    Ok(p) => match p.task.end() {
                        TaskEnd::Completed => break,
                        TaskEnd::Failed => {
                            let why = format!(
                                "task {task} ended {}: {}",
                                p.task.state.as_deref().unwrap_or("?"),
                                p.task.messages.join("; ")
                            );
                            self.save(row, "failed", Some(why.clone())).await?;
                            return Err(EngineError::Refused { target: name.clone(), reason: why });
                        }
                        TaskEnd::Running => {}
                    },
                    // A BMC that restarts to apply its own image forgets its tasks: the read-back decides.
                    Err(lifeline_bmc::BmcError::Redfish { source, .. }) if source.status() == Some(404) => {
                        break;
                    }
                    Err(e) if Instant::now() >= deadline => return Err(fail(e)),
                    Err(e) => tracing::debug!(bmc = %name, error = %e, "task poll failed; polling again"),
                }
                if Instant::now() >= deadline {
                    let why = format!("task {task} did not end within {:?}", self.opts.task_timeout);
                    self.save(row, "failed", Some(why.clone())).await?;
                    return Err(EngineError::Refused { target: name.clone(), reason: why });
                }
                tokio::time::sleep(self.opts.poll).await;
            }
        }
        let now = bmc.firmware_read(link.to_owned()).await.map_err(fail)?.version;
        if !same_version(now.as_deref(), version) && row.state != "resetting" {
            // Not in force after the task: the BMC staged it for a reset (OnReset, or its default).
            self.save(row, "resetting", None).await?;
            let sent = if self.plan.component == Component::Bmc {
                bmc.reset_bmc(false, self.opts.confirm_timeout).await.map_err(fail)?.sent
            } else {
                let r = bmc.power(PowerAction::Reset, Some(format!("{rid}/reset"))).await.map_err(fail)?;
                format!("host {:?} ({:?})", r.action, r.confirmation)
            };
            row.detail = Some(format!("reset to apply: {sent}"));
            self.store.firmware_target_set(row).await?;
        }
        let deadline = Instant::now() + self.opts.confirm_timeout;
        loop {
            let seen = bmc.firmware_read(link.to_owned()).await.ok().and_then(|s| s.version);
            if same_version(seen.as_deref(), version) {
                row.after_version = seen;
                return self.save(row, "done", Some("the version reads back".into())).await;
            }
            if Instant::now() >= deadline {
                let why = format!(
                    "{} still reads {} after the update and reset (waited {:?}); the new image did not take",
                    name,
                    seen.as_deref().unwrap_or("no version"),
                    self.opts.confirm_timeout
                );
                row.after_version = seen;
                self.save(row, "failed", Some(why.clone())).await?;
                return Err(EngineError::Refused { target: name.clone(), reason: why });
            }
            tokio::time::sleep(self.opts.poll.min(Duration::from_secs(2))).await;
        }
    }
}

impl Lifeline {
    /// Applies a plan (or resumes it): waves in order, stopping after the first wave with a failure.
    pub async fn firmware_apply(&self, plan: &FirmwarePlan, opts: ApplyOptions) -> Result<RolloutReport> {
        let image = plan.image.clone().ok_or_else(|| {
            EngineError::bad_argument(format!(
                "plan {} names no image (made with --version only): plan again with --image FILE|URL",
                plan.id
            ))
        })?;
        let store = self.store().await?;
        let audit = self.audit().await?;
        let members: Vec<(String, i64)> = plan
            .waves
            .iter()
            .enumerate()
            .flat_map(|(w, names)| names.iter().map(move |n| (n.clone(), w as i64)))
            .collect();
        let row = RolloutRow {
            id: plan.id.clone(),
            component: plan.component.as_str().into(),
            version: plan.version.clone(),
            plan: serde_json::to_string(plan).unwrap_or_default(),
            state: "running".into(),
            actor: self.actor().into(),
            detail: None,
            created_at: 0,
            updated_at: 0,
        };
        let resumed = !store.firmware_rollout_begin(&row, &members, plan.waves.len() as i64).await?;
        let prior = store.firmware_rollout(&plan.id).await?.map(|r| r.state).unwrap_or_default();
        if resumed && prior != "running" {
            return self.rollout_report(store, plan, resumed).await;
        }
        let intent = audit
            .intent(
                AuditAction::FirmwareRollout,
                &plan.id,
                None,
                serde_json::json!({ "component": plan.component, "version": plan.version, "image": image,
                    "waves": plan.waves.len(), "resumed": resumed }),
            )
            .await?;
        let pool = self.bmc_pool().await?;
        let sel = self.select_bmcs(&plan.waves.concat(), &[], false)?;
        let ctx = Ctx { store, plan, image: &image, opts, audit: audit.clone() };
        let waves = store.firmware_waves(&plan.id).await?;
        let mut failed_wave = None;
        for (w, state) in waves {
            if state == "done" {
                continue;
            }
            store.firmware_wave_state(&plan.id, w, "running").await?;
            let rows: Vec<RolloutTargetRow> =
                store.firmware_targets(&plan.id).await?.into_iter().filter(|r| r.wave == w).collect();
            let work = rows.into_iter().filter(|r| r.state != "done").map(|mut row| {
                let ctx = &ctx;
                let pool = &pool;
                let sel = &sel;
                async move {
                    let Some(b) = sel.bmcs.iter().find(|b| b.name() == row.target) else {
                        let why = format!("{} is no longer in the inventory", row.target);
                        ctx.save(&mut row, "failed", Some(why)).await?;
                        return Ok::<bool, EngineError>(false);
                    };
                    let link =
                        plan.targets.iter().find(|t| t.bmc == row.target).and_then(|t| t.component.clone());
                    let Some(link) = link else { return Ok(false) };
                    let bmc = pool.bmc(b.target.clone());
                    let who = row.target.clone();
                    let detail = serde_json::json!({ "rollout": plan.id, "component": plan.component,
                        "version": plan.version, "wave": w });
                    let (bmc, link, name) = (&bmc, &link, who.clone());
                    let r = self
                        .guarded(&who, AuditAction::FirmwareUpdate, |rid| async move {
                            let intent = ctx
                                .audit
                                .intent(AuditAction::FirmwareUpdate, &name, Some(&rid), detail)
                                .await?;
                            let r = ctx.update(bmc, link, &mut row, &rid).await;
                            let (o, d) = match &r {
                                Ok(()) => (
                                    Outcome::Ok,
                                    serde_json::json!({ "before": row.before_version,
                                    "after": row.after_version }),
                                ),
                                Err(e) => (
                                    Outcome::Failed,
                                    serde_json::json!({ "error": e.chain(),
                                    "before": row.before_version, "read_back": row.after_version }),
                                ),
                            };
                            ctx.audit.outcome(intent, o, d).await?;
                            r.map(|()| row.state.clone())
                        })
                        .await;
                    if let Err(e) = &r {
                        // A lease or store refusal before the update started: journal it as the failure.
                        let mut fresh = ctx
                            .store
                            .firmware_targets(&plan.id)
                            .await?
                            .into_iter()
                            .find(|x| x.target == who)
                            .unwrap_or_default_row(&plan.id, &who, w);
                        if fresh.state != "failed" {
                            ctx.save(&mut fresh, "failed", Some(e.report().message)).await?;
                        }
                    }
                    Ok(r.is_ok())
                }
            });
            let results = futures::future::join_all(work).await;
            let ok = results.iter().all(|r| matches!(r, Ok(true)));
            if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
                return Err(e);
            }
            store.firmware_wave_state(&plan.id, w, if ok { "done" } else { "failed" }).await?;
            if !ok {
                failed_wave = Some(w);
                break;
            }
        }
        let detail = match failed_wave {
            Some(w) => {
                let names: Vec<String> = store
                    .firmware_targets(&plan.id)
                    .await?
                    .into_iter()
                    .filter(|t| t.wave == w && t.state == "failed")
                    .map(|t| format!("{}: {}", t.target, t.detail.unwrap_or_default()))
                    .collect();
                for (later, _) in store.firmware_waves(&plan.id).await?.into_iter().filter(|(x, _)| *x > w) {
                    store.firmware_wave_state(&plan.id, later, "skipped").await?;
                }
                Some(format!("wave {w} failed, later waves not started: {}", names.join("; ")))
            }
            None => None,
        };
        let state = if failed_wave.is_some() { "failed" } else { "done" };
        store.firmware_rollout_state(&plan.id, state, detail.as_deref()).await?;
        let report = self.rollout_report(store, plan, resumed).await?;
        let o = if failed_wave.is_some() { Outcome::Failed } else { Outcome::Ok };
        audit.outcome(intent, o, serde_json::json!({ "state": state, "detail": detail })).await?;
        Ok(report)
    }

    async fn rollout_report(
        &self,
        store: &Store,
        plan: &FirmwarePlan,
        resumed: bool,
    ) -> Result<RolloutReport> {
        let r = store.firmware_rollout(&plan.id).await?;
        let targets: Vec<TargetReport> = store
            .firmware_targets(&plan.id)
            .await?
            .into_iter()
            .map(|t| TargetReport {
                bmc: t.target,
                wave: t.wave,
                state: t.state,
                before: t.before_version,
                after: t.after_version,
                detail: t.detail,
            })
            .collect();
        let failed = targets
            .iter()
            .filter(|t| t.state == "failed")
            .map(|t| format!("{}: {}", t.bmc, t.detail.clone().unwrap_or_default()))
            .collect();
        Ok(RolloutReport {
            rollout: plan.id.clone(),
            component: plan.component,
            version: plan.version.clone(),
            state: r.map(|r| r.state).unwrap_or_default(),
            resumed,
            waves: store.firmware_waves(&plan.id).await?.into_iter().map(|(_, s)| s).collect(),
            failed,
            targets,
        })
    }
}

trait OrDefaultRow {
    fn unwrap_or_default_row(self, rollout: &str, target: &str, wave: i64) -> RolloutTargetRow;
}

impl OrDefaultRow for Option<RolloutTargetRow> {
    fn unwrap_or_default_row(self, rollout: &str, target: &str, wave: i64) -> RolloutTargetRow {
        self.unwrap_or_else(|| RolloutTargetRow {
            rollout: rollout.into(),
            target: target.into(),
            wave,
            state: "pending".into(),
            task: None,
            before_version: None,
            after_version: None,
            detail: None,
            updated_at: 0,
        })
    }
}
