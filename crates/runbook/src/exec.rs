//! The executor: admits a run (guard, one run per target), then drives it step by step under the target's
//! lease, with a journal row before and after every step; resumes a run from its journal after a crash.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lifeline_engine::audit::Outcome;
use lifeline_engine::lease::{Acquired, LeaseGuard};
use lifeline_engine::ops::readmit::{ReportSource, SchedulerSpec};
use lifeline_engine::ops::runs::{ApprovalRow, JournalRow, NewJournal, RunRow, RunState, StepState, now_ms};
use lifeline_engine::{EngineError, Identity, Lifeline, Settings};
use lifeline_inventory::Device;
use lifeline_types::AuditAction;
use serde::Serialize;
use sha2::Digest;

use crate::error::{Result, RunbookError};
use crate::guard::{self, GuardVerdict};
use crate::library::parse_stored;
use crate::model::{Kind, OnFailure, Op, Runbook};
use crate::steps::{StepCtx, StepResult};
use crate::view::RunView;

/// Where the executor finds schedulers and verification reports (the CLI's flags, the server's config).
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub schedulers: SchedulerSpec,
    pub reports: Option<ReportSource>,
}

/// How to start a run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `--var NAME=VALUE`.
    pub vars: Vec<(String, String)>,
    /// The fault that started the run (the fault policy): its rule is what `fault-cleared` evaluates
    /// again, and a run that proves it gone resolves it.
    pub cause: Option<Cause>,
}

/// A run's cause: one fault record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    pub fault: i64,
    pub kind: String,
}

/// The lease that serialises admission decisions across processes and replicas.
const ADMISSION: &str = "runbook-admission";
/// The lease a run holds on its target while a process drives it (renewed every third of it). Shorter than
/// a replica's claim expiry (15 s, renewed every 5 s), so it is free by the time the run's claim expires
/// and the taker, which wakes at that expiry, has both (the server's takeover bound).
pub const RUN_LEASE_TTL: Duration = Duration::from_secs(12);

/// A step visited more often than this in one run (a `goto` loop) ends the run failed.
const MAX_VISITS: usize = 5;

/// The executor as one front end (the CLI, the server) uses it.
#[derive(Debug)]
pub struct Executor {
    pub settings: Settings,
    pub env: Env,
    /// The front end's context: reads, admission, approvals (acts as the operator).
    pub base: Lifeline,
    /// Set by a stopping server: a run stops at its next step boundary, left `running` for a resume
    /// (the step in flight finishes first).
    pub stop: Option<Arc<AtomicBool>>,
}

/// What a run command's targets resolve to.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Targets {
    pub devices: Vec<Target>,
    /// `name (role)` of devices a group or glob named whose role the runbook does not apply to.
    pub skipped: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub name: String,
    pub role: lifeline_types::Role,
}

impl Targets {
    /// The confirmation rule every acting verb has: more than one target, or any head node, storage
    /// server or switch, needs the count typed back.
    pub fn needs_count(&self) -> bool {
        use lifeline_types::Role;
        self.devices.len() > 1
            || self
                .devices
                .iter()
                .any(|t| matches!(t.role, Role::HeadNode | Role::StorageServer | Role::Switch))
    }
}

/// A dry run's plan for one target: what `--dry-run` prints and the API's plan answers.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Plan {
    pub runbook: String,
    pub target: String,
    pub vars: BTreeMap<String, String>,
    pub steps: Vec<PlannedStep>,
    /// The blast-radius guard's verdict: `allowed`, `reason`, the counts it weighed.
    pub guard: GuardVerdict,
}

/// One step of a plan.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct PlannedStep {
    pub name: String,
    pub kind: String,
    /// The step's operation with its parameters resolved.
    pub operation: Op,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    pub on_failure: OnFailure,
    pub timeout: String,
    pub approval_required: bool,
    pub idempotent: bool,
    /// A `[[verify]]` check: run after the last step; the run succeeds only when it passes.
    pub post_condition: bool,
}

pub(crate) fn digest(v: &serde_json::Value) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(v.to_string().as_bytes())))
}

fn new_run_id() -> String {
    format!("rb-{}", &uuid::Uuid::new_v4().simple().to_string()[..10])
}

impl Executor {
    pub fn new(settings: Settings, env: Env, base: Lifeline) -> Executor {
        Executor { settings, env, base, stop: None }
    }

    /// The same executor, stopping at step boundaries once `stop` is set.
    pub fn with_stop(mut self, stop: Arc<AtomicBool>) -> Executor {
        self.stop = Some(stop);
        self
    }

    fn stopping(&self) -> bool {
        self.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed))
    }

    fn device(&self, name: &str) -> Result<Device> {
        let inv = self.base.inventory()?;
        inv.device(name).cloned().ok_or_else(|| EngineError::UnknownDevice { name: name.into() }.into())
    }

    /// The variables of a run: parameter defaults, overridden by `--var`, plus `target`, `run`, `runbook`.
    pub fn vars(
        rb: &Runbook,
        target: &str,
        run: &str,
        opts: &RunOptions,
    ) -> Result<BTreeMap<String, String>> {
        let mut vars: BTreeMap<String, String> =
            rb.params.iter().map(|p| (p.name.clone(), p.default.clone())).collect();
        for (k, v) in &opts.vars {
            if !vars.contains_key(k) {
                let known = rb.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ");
                return Err(RunbookError::BadVar {
                    var: k.clone(),
                    why: format!("runbook `{}` has no parameter `{k}` (parameters: {known})", rb.name),
                });
            }
            vars.insert(k.clone(), v.clone());
        }
        // Every value, default or given, against its declared type, before anything is touched.
        for p in &rb.params {
            let v = &vars[&p.name];
            if let Err(why) = p.ty.check(v, &p.default) {
                return Err(RunbookError::BadVar { var: p.name.clone(), why });
            }
        }
        vars.insert("target".into(), target.into());
        vars.insert("run".into(), run.into());
        vars.insert("runbook".into(), rb.name.clone());
        let (fault, kind) = opts
            .cause
            .as_ref()
            .map_or((String::new(), String::new()), |c| (c.fault.to_string(), c.kind.clone()));
        vars.insert("fault".into(), fault);
        vars.insert("fault-kind".into(), kind);
        Ok(vars)
    }

    /// `device` parameters name devices of the inventory (of their roles).
    fn check_devices(&self, rb: &Runbook, vars: &BTreeMap<String, String>) -> Result<()> {
        let inv = self.base.inventory()?;
        for p in &rb.params {
            if let Err(why) = p.ty.check_device(&vars[&p.name], &inv) {
                return Err(RunbookError::BadVar { var: p.name.clone(), why });
            }
            if let Err(why) = p.ty.check_served(&vars[&p.name], &self.base) {
                return Err(RunbookError::BadVar { var: p.name.clone(), why });
            }
        }
        Ok(())
    }

    /// The devices a run command names, in every form the other verbs take (names, racks, roles, groups,
    /// globs, `all`): a device named on its own must have a role the runbook applies to; devices a group
    /// or glob brings in with another role are skipped (and listed).
    pub fn targets(&self, rb: &Runbook, names: &[String]) -> Result<Targets> {
        let inv = self.base.inventory()?;
        let picked = lifeline_inventory::select(&inv, names).map_err(EngineError::Select)?;
        let mut out = Targets::default();
        for d in picked {
            if rb.targets.contains(&d.role) {
                out.devices.push(Target { name: d.name.to_string(), role: d.role });
            } else if names.iter().any(|n| n == d.name.as_str()) {
                self.check_target(rb, d.name.as_str())?;
            } else {
                out.skipped.push(format!("{} ({})", d.name, d.role));
            }
        }
        if out.devices.is_empty() {
            let expected = rb.targets.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
            return Err(RunbookError::NoTargets {
                runbook: rb.name.clone(),
                targets: names.join(" "),
                why: format!("no {expected} among them (skipped: {})", out.skipped.join(", ")),
            });
        }
        Ok(out)
    }

    fn check_target(&self, rb: &Runbook, target: &str) -> Result<Device> {
        let d = self.device(target)?;
        if !rb.targets.contains(&d.role) {
            return Err(RunbookError::WrongTarget {
                runbook: rb.name.clone(),
                target: target.into(),
                role: d.role.to_string(),
                expected: rb.targets.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
            });
        }
        Ok(d)
    }

    async fn guard_now(&self, d: &Device) -> Result<GuardVerdict> {
        let active = self.base.runs_in(RunState::ACTIVE).await?;
        let escalated = self.open_escalations().await?;
        let inv = self.base.inventory()?;
        Ok(guard::evaluate(&self.base.config.config.runbooks.guard, &inv, d, &active, &escalated))
    }

    /// The plan of a run, without running anything.
    pub async fn plan(&self, rb: &Runbook, target: &str, opts: &RunOptions) -> Result<Plan> {
        let d = self.check_target(rb, target)?;
        let vars = Self::vars(rb, target, "(dry-run)", opts)?;
        self.check_devices(rb, &vars)?;
        let mut steps = Vec::new();
        for (i, s) in rb.all_steps().enumerate() {
            let op = crate::steps::resolve(&s.op, &vars)
                .map_err(|why| RunbookError::BadVar { var: s.name.clone(), why })?;
            steps.push(PlannedStep {
                name: s.name.clone(),
                kind: s.kind.as_str().into(),
                idempotent: s.kind.idempotent(&op),
                operation: op,
                when: s.when.as_ref().map(|c| c.text().to_owned()),
                on_failure: s.on_failure.clone(),
                timeout: humantime::format_duration(s.timeout).to_string(),
                approval_required: s.approve,
                post_condition: rb.is_post(i),
            });
        }
        let guard = self.guard_now(&d).await?;
        Ok(Plan { runbook: rb.name.clone(), target: target.into(), vars, steps, guard })
    }

    /// Admits a run (or records its refusal) and drives it until it ends or waits for approval.
    pub async fn start(&self, rb: &Runbook, text: &str, target: &str, opts: &RunOptions) -> Result<RunView> {
        let v = self.admit(rb, text, target, opts, false).await?;
        if v.state != RunState::Running {
            return Ok(v);
        }
        self.drive(&v.run).await
    }

    /// Admits a run under the guard and records it (`running`; with `approve_first`, `waiting-approval`
    /// before its first step, as the server's fault policy in `approve` mode wants; or `refused` with the
    /// guard's reason) without running a step: a server drives it in the background with
    /// [`Executor::resume`] and answers at once.
    pub async fn admit(
        &self,
        rb: &Runbook,
        text: &str,
        target: &str,
        opts: &RunOptions,
        approve_first: bool,
    ) -> Result<RunView> {
        let d = self.check_target(rb, target)?;
        let id = new_run_id();
        let vars = Self::vars(rb, target, &id, opts)?;
        self.check_devices(rb, &vars)?;
        let audit = self.base.audit().await?;
        let leases = self.base.leases().await?.with_wait(Some(Duration::from_secs(60)));
        let admission = match acquire(&leases, ADMISSION, AuditAction::RunbookAdmit, &id, &audit).await? {
            Acquired::Lease(g) => g,
            Acquired::DoneBy(_) => {
                return Err(
                    EngineError::internal("runbook admission", std::io::Error::other("coalesced")).into()
                );
            }
        };
        let verdict = self.guard_now(&d).await;
        let now = now_ms();
        let mut row = RunRow {
            id: id.clone(),
            runbook: rb.name.clone(),
            target: target.into(),
            rack: Some(d.rack.clone()),
            role: Some(d.role.to_string()),
            actor: self.base.actor().into(),
            vars: serde_json::to_value(&vars).unwrap_or_default(),
            definition: text.into(),
            digest: rb.digest.clone(),
            state: RunState::Running,
            next_step: 0,
            reason: None,
            created_at_ms: now,
            updated_at_ms: now,
            ended_at_ms: None,
        };
        let verdict = match verdict {
            Ok(v) => v,
            Err(e) => {
                admission.release().await;
                return Err(e);
            }
        };
        let waiting = format!(
            "the fault policy asks for approval before the first step: lifeline runbook approve {id}"
        );
        if !verdict.allowed {
            row.state = RunState::Refused;
            row.reason = verdict.reason.clone();
            row.ended_at_ms = Some(now);
        } else if approve_first {
            row.state = RunState::WaitingApproval;
            row.reason = Some(waiting.clone());
        }
        let created = self.base.run_create(&row).await;
        admission.release().await;
        created?;
        let detail = serde_json::json!({ "run": id, "runbook": rb.name, "vars": vars, "guard": verdict });
        audit
            .record(
                AuditAction::RunbookStart,
                target,
                if verdict.allowed { Outcome::Ok } else { Outcome::Refused },
                Some(&id),
                &detail,
            )
            .await?;
        if !verdict.allowed {
            return Ok(RunView::build(&row, Some(rb), &[]));
        }
        if approve_first {
            self.base
                .run_journal_append(&NewJournal {
                    run_id: id.clone(),
                    step_index: 0,
                    step: rb.steps.first().map(|s| s.name.clone()).unwrap_or_default(),
                    attempt: 1,
                    phase: "decision".into(),
                    state: RunState::WaitingApproval.as_str().into(),
                    request_id: None,
                    detail: serde_json::json!({ "message": waiting }),
                    evidence: serde_json::json!({}),
                })
                .await?;
        }
        self.status(&id).await
    }

    /// Loads a run and its definition.
    pub async fn load(&self, id: &str) -> Result<(RunRow, Runbook, Vec<JournalRow>)> {
        let run = self.base.run_record(id).await?.ok_or_else(|| RunbookError::NoRun { id: id.into() })?;
        let rb = parse_stored(&run.runbook, &run.definition)?;
        let journal = self.base.run_journal(id).await?;
        Ok((run, rb, journal))
    }

    pub async fn status(&self, id: &str) -> Result<RunView> {
        let (run, rb, journal) = self.load(id).await?;
        let mut v = RunView::build(&run, Some(&rb), &journal);
        if run.state == RunState::Running {
            let driven = matches!(
                self.base.target_lease(&run.target).await?,
                Some(l) if l.holder.starts_with(&format!("runbook:{id} ")) && l.expires_at_ms >= now_ms()
            );
            if !driven {
                v.stalled = Some(format!(
                    "no process drives this run (its process stopped; a server resumes it at start): lifeline runbook resume {id}"
                ));
            }
        }
        Ok(v)
    }

    /// Records the operator's approval of the step the run waits on, then continues it. `skip`: the
    /// operator says the step's effect is in place (an unknown outcome they checked by hand).
    pub async fn approve(&self, id: &str, skip: bool) -> Result<RunView> {
        self.record_approval(id, skip).await?;
        self.drive(id).await
    }

    /// Records the approval and makes the run `running` again, without driving it (a server continues
    /// it in the background with [`Executor::resume`]).
    pub async fn record_approval(&self, id: &str, skip: bool) -> Result<RunView> {
        let (run, rb, journal) = self.load(id).await?;
        if run.state != RunState::WaitingApproval {
            return Err(RunbookError::State {
                id: id.into(),
                state: run.state.to_string(),
                what: "nothing waits for approval".into(),
            });
        }
        let i = run.next_step;
        let attempt = next_attempt(&journal, i);
        self.base
            .run_approve_step(&ApprovalRow {
                run_id: id.into(),
                step_index: i,
                attempt,
                approver: self.base.actor().into(),
                decision: if skip { "skip" } else { "run" }.into(),
                at_ms: now_ms(),
            })
            .await?;
        let step =
            rb.step_at(usize::try_from(i).unwrap_or(usize::MAX)).map(|s| s.name.clone()).unwrap_or_default();
        self.base
            .audit()
            .await?
            .record(
                AuditAction::RunbookApprove,
                &run.target,
                Outcome::Ok,
                Some(id),
                serde_json::json!({ "step": step, "attempt": attempt, "skip": skip }),
            )
            .await?;
        if !self.base.run_set_state(id, RunState::Running, i, None).await? {
            return Err(RunbookError::State {
                id: id.into(),
                state: "ended".into(),
                what: "it ended while being approved".into(),
            });
        }
        self.status(id).await
    }

    /// Journals that the process driving a run stopped (`what`: the step in flight, or the boundary it
    /// stopped at); the run stays `running`, for [`Executor::resume`] on the next start.
    pub async fn mark_interrupted(&self, id: &str, what: &str) -> Result<()> {
        let Some(run) = self.base.run_record(id).await? else { return Ok(()) };
        let detail = serde_json::json!({ "message": what, "by": self.base.actor() });
        self.base.run_journal_append(&run_event(id, run.next_step, "interrupted", detail)).await?;
        Ok(())
    }

    /// Escalated runs that still need a human, as the guard counts them: an escalation is over once a later
    /// run on the same target succeeded (its post-conditions proved the target back) or an operator
    /// cleared it ([`Executor::clear`]).
    pub async fn open_escalations(&self) -> Result<Vec<RunRow>> {
        let escalated = self.base.runs_in(&[RunState::Escalated]).await?;
        if escalated.is_empty() {
            return Ok(escalated);
        }
        let succeeded = self.base.runs_in(&[RunState::Succeeded]).await?;
        let mut open = Vec::new();
        for r in escalated {
            if succeeded.iter().any(|s| s.target == r.target && s.created_at_ms > r.created_at_ms) {
                continue;
            }
            let journal = self.base.run_journal(&r.id).await?;
            if journal.iter().any(|j| j.phase == "run" && j.state == "cleared") {
                continue;
            }
            open.push(r);
        }
        Ok(open)
    }

    /// An operator says an escalated run's target has been seen to: it no longer counts against its rack's
    /// guard. The run keeps its end state (history); the clearing is journaled and audited with `why`.
    pub async fn clear(&self, id: &str, why: &str) -> Result<RunView> {
        let (run, rb, _) = self.load(id).await?;
        if run.state != RunState::Escalated {
            return Err(RunbookError::State {
                id: id.into(),
                state: run.state.to_string(),
                what: "only an escalated run is cleared".into(),
            });
        }
        let detail = serde_json::json!({ "by": self.base.actor(), "reason": why });
        self.base.run_journal_append(&run_event(id, run.next_step, "cleared", detail.clone())).await?;
        self.base
            .audit()
            .await?
            .record(AuditAction::RunbookClear, &run.target, Outcome::Ok, Some(id), &detail)
            .await?;
        let journal = self.base.run_journal(id).await?;
        Ok(RunView::build(&run, Some(&rb), &journal))
    }

    /// Ends a run: it stops before its next step (a step in flight in another process finishes first).
    pub async fn abort(&self, id: &str) -> Result<RunView> {
        let (run, rb, journal) = self.load(id).await?;
        if !self
            .base
            .run_set_state(
                id,
                RunState::Aborted,
                run.next_step,
                Some(&format!("aborted by {}", self.base.actor())),
            )
            .await?
        {
            return Err(RunbookError::State {
                id: id.into(),
                state: run.state.to_string(),
                what: "it has already ended".into(),
            });
        }
        let detail = serde_json::json!({ "by": self.base.actor() });
        self.base
            .run_journal_append(&run_event(id, run.next_step, RunState::Aborted.as_str(), detail))
            .await?;
        self.base
            .audit()
            .await?
            .record(
                AuditAction::RunbookAbort,
                &run.target,
                Outcome::Ok,
                Some(id),
                serde_json::json!({ "runbook": run.runbook }),
            )
            .await?;
        let run = self.base.run_record(id).await?.unwrap_or(run);
        Ok(RunView::build(&run, Some(&rb), &journal))
    }

    /// Runs left `running` by a process that stopped (what a restarting server resumes with
    /// [`Executor::resume`]; a run whose process is still alive keeps its target lease and is refused).
    pub async fn interrupted_runs(&self) -> Result<Vec<String>> {
        Ok(self.base.runs_in(&[RunState::Running]).await?.into_iter().map(|r| r.id).collect())
    }

    /// Continues a run that is `running` (its process died) from its journal.
    pub async fn resume(&self, id: &str) -> Result<RunView> {
        let (run, _, _) = self.load(id).await?;
        match run.state {
            RunState::Running => self.drive(id).await,
            RunState::WaitingApproval => Err(RunbookError::State {
                id: id.into(),
                state: run.state.to_string(),
                what: "it waits for `lifeline runbook approve`".into(),
            }),
            _ => Err(RunbookError::State {
                id: id.into(),
                state: run.state.to_string(),
                what: "it has ended".into(),
            }),
        }
    }

    /// Runs a run's remaining steps in this process, as `runbook:<id>`, holding the target's lease.
    async fn drive(&self, id: &str) -> Result<RunView> {
        let (run, rb, _) = self.load(id).await?;
        // The run's own context shares this process's store (opened once, see `Lifeline::for_actor`).
        self.base.open_store().await?;
        let mut l = self.base.for_actor(Identity::new(format!("runbook:{id}")));
        // A process without an always-on console logger (the CLI) keeps this run's console open for the
        // run, when a step waits on it: a boot prompt printed while a wait attaches is then not missed.
        let own_consoles = if rb.watches_console() && l.shared_consoles().is_none() {
            match l.console_manager().await {
                Ok(m) => {
                    l = l.with_console_manager(m.clone());
                    if let Err(e) = l.console_keep(&run.target).await {
                        tracing::info!(run = id, target = %run.target, "console not kept open for the run ({}); its waits attach when they start", e.chain());
                    }
                    Some(m)
                }
                Err(e) => {
                    tracing::info!(run = id, "no console manager for the run: {}", e.chain());
                    None
                }
            }
        } else {
            None
        };
        let audit = l.audit().await?;
        // A short lease: a replica that stops renewing it (killed, paused) frees the run for another within
        // RUN_LEASE_TTL, no later than its replica claim expires (the server's takeover bound).
        let leases = l.leases().await?.with_wait(Some(Duration::from_secs(45))).with_ttl(RUN_LEASE_TTL);
        let lease =
            match acquire(&leases, &run.target, AuditAction::RunbookRun, &format!("runbook:{id}"), &audit)
                .await?
            {
                Acquired::Lease(g) => g,
                Acquired::DoneBy(_) => {
                    return Err(RunbookError::State {
                        id: id.into(),
                        state: run.state.to_string(),
                        what: "another process ran it".into(),
                    });
                }
            };
        let fence = lease.fence_token();
        let driver = Driver {
            x: self,
            l: &l,
            rb: &rb,
            run_id: id,
            target: run.target.clone(),
            fence: fence.clone(),
            last_started: std::sync::Mutex::new(None),
        };
        // Every BMC command a step sends is authorized under the run's lease (see `FENCE_MARGIN_MS`).
        let result = lifeline_engine::lease::run_fenced(fence, driver.go()).await;
        release(lease).await;
        if let Some(m) = own_consoles {
            m.shutdown().await;
        }
        result?;
        self.status(id).await
    }
}

/// Takes a lease, retrying the store's transient "released between two statements" answer, which the
/// engine retries only once: six processes queueing for the admission lease meet it more often.
async fn acquire(
    leases: &lifeline_engine::lease::Leases,
    target: &str,
    action: AuditAction,
    request_id: &str,
    audit: &lifeline_engine::AuditService,
) -> Result<Acquired> {
    let mut tries = 0;
    loop {
        match leases.acquire(target, action, request_id, audit).await {
            Err(EngineError::Store(e)) if tries < 50 && e.to_string().contains("lease.take") => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => return Ok(other?),
        }
    }
}

async fn release(g: LeaseGuard) {
    g.release().await;
}

/// One run being driven.
struct Driver<'a> {
    x: &'a Executor,
    l: &'a Lifeline,
    rb: &'a Runbook,
    run_id: &'a str,
    target: String,
    /// The run's lease on its target: a driver that no longer holds it (paused past its expiry while
    /// another process took the run over) stops without acting or writing.
    fence: lifeline_engine::lease::Fence,
    /// When the last step run by this driver started: the next step's console wait reads from there.
    last_started: std::sync::Mutex<Option<std::time::Instant>>,
}

/// How the step at hand is to be handled after reading the journal.
enum Next {
    /// Run attempt N (with request id `…#N`).
    Run(i64),
    /// The step is done (its outcome was found).
    Done(StepResult, i64),
    /// Wait for an operator.
    Pause(String, i64),
}

impl Driver<'_> {
    async fn journal(&self, row: NewJournal) -> Result<()> {
        self.l.run_journal_append(&row).await?;
        Ok(())
    }

    fn row(
        &self,
        i: usize,
        attempt: i64,
        phase: &str,
        state: &str,
        detail: serde_json::Value,
        evidence: serde_json::Value,
    ) -> NewJournal {
        let step = self.rb.step_at(i).map(|s| s.name.clone()).unwrap_or_default();
        let request_id = (phase == "intent").then(|| request_base(self.run_id, &step, attempt));
        NewJournal {
            run_id: self.run_id.into(),
            step_index: i as i64,
            step,
            attempt,
            phase: phase.into(),
            state: state.into(),
            request_id,
            detail,
            evidence,
        }
    }

    /// Whether this driver still holds the run's lease (unexpired): checked before each step and before
    /// a step's outcome is written, so a process that lost the run writes nothing for it.
    async fn still_ours(&self) -> Result<bool> {
        let ours = matches!(
            self.l.target_lease(&self.fence.target).await?,
            Some(l) if l.holder == self.fence.holder && l.fence == self.fence.fence && l.expires_at_ms >= now_ms()
        );
        if !ours {
            tracing::warn!(run = self.run_id, target = %self.target, "the run's lease was lost; stopping without acting or writing");
        }
        Ok(ours)
    }

    async fn go(&self) -> Result<()> {
        let mut visits = vec![0usize; self.rb.steps.len() + self.rb.post.len()];
        loop {
            if !self.still_ours().await? {
                return Ok(());
            }
            let run = self
                .l
                .run_record(self.run_id)
                .await?
                .ok_or_else(|| RunbookError::NoRun { id: self.run_id.into() })?;
            if run.state != RunState::Running {
                return Ok(());
            }
            if self.x.stopping() {
                // Left `running`: the next start resumes it from this boundary.
                let what = format!("stopped before step {} (the server is shutting down)", run.next_step);
                return self.x.mark_interrupted(self.run_id, &what).await;
            }
            let journal = self.l.run_journal(self.run_id).await?;
            let vars: BTreeMap<String, String> = serde_json::from_value(run.vars.clone()).unwrap_or_default();
            let i = usize::try_from(run.next_step).unwrap_or(usize::MAX);
            let Some(step) = self.rb.step_at(i) else {
                // Only reached through every post-condition: each re-observed its evidence and passed.
                let why = (!self.rb.post.is_empty()).then(|| {
                    let names = self.rb.post.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ");
                    format!("recovered: post-conditions passed ({names})")
                });
                return self.finish(RunState::Succeeded, why, i).await;
            };
            visits[i] += 1;
            if visits[i] > MAX_VISITS {
                return self
                    .finish(
                        RunState::Failed,
                        Some(format!("step `{}` was reached {MAX_VISITS} times (a goto loop)", step.name)),
                        i,
                    )
                    .await;
            }
            let outputs = outputs_of(&journal);
            if let Some(c) = &step.when
                && !c.eval(&outputs, &vars)
            {
                let out =
                    serde_json::json!({ "ok": false, "skipped": true, "failed": false, "state": "skipped" });
                let row = self.row(
                    i,
                    0,
                    "outcome",
                    "skipped",
                    serde_json::json!({ "message": format!("when `{}` is false", c.text()), "outputs": out }),
                    serde_json::json!({}),
                );
                self.move_run(Some(&row), RunState::Running, i + 1, None).await?;
                continue;
            }
            let op = match crate::steps::resolve(&step.op, &vars) {
                Ok(op) => op,
                Err(why) => {
                    return self
                        .finish(RunState::Failed, Some(format!("step `{}`: {why}", step.name)), i)
                        .await;
                }
            };
            let ctx = StepCtx {
                l: self.l,
                env: &self.x.env,
                rb: self.rb,
                step,
                op: &op,
                target: &self.target,
                run_id: self.run_id,
                since: *self.last_started.lock().unwrap_or_else(|p| p.into_inner()),
            };
            // The step's last attempt has its outcome, yet the run still points at the step: its process
            // stopped between writing the outcome and moving on (before the two were one transaction).
            // Route by the recorded outcome instead of acting a second time.
            if let Some((done, ok)) = settled(&journal, i, step) {
                let message = done.detail.get("message").and_then(|m| m.as_str()).unwrap_or_default();
                let why = format!("step `{}` {}: {message}", step.name, done.state);
                if !self.route(&ctx, i, ok, why, &done.evidence, None).await? {
                    return Ok(());
                }
                continue;
            }
            let approvals = self.l.run_approvals(self.run_id).await?;
            let next = self.decide(&ctx, i, &journal, &approvals).await?;
            let (result, attempt) = match next {
                Next::Pause(why, attempt) => {
                    self.journal(self.row(
                        i,
                        attempt,
                        "decision",
                        StepState::WaitingApproval.as_str(),
                        serde_json::json!({ "message": why }),
                        serde_json::json!({}),
                    ))
                    .await?;
                    self.l
                        .run_set_state(self.run_id, RunState::WaitingApproval, i as i64, Some(&why))
                        .await?;
                    return Ok(());
                }
                Next::Done(r, attempt) => (r, attempt),
                Next::Run(attempt) => {
                    *self.last_started.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(std::time::Instant::now());
                    let pre = crate::steps::pre_state(&ctx).await;
                    self.journal(self.row(
                        i,
                        attempt,
                        "intent",
                        StepState::Running.as_str(),
                        serde_json::json!({ "operation": op }),
                        pre,
                    ))
                    .await?;
                    let rid = request_base(self.run_id, &step.name, attempt);
                    let run = async {
                        match tokio::time::timeout(step.timeout, crate::steps::run(&ctx, &rid)).await {
                            Ok(r) => r,
                            Err(_) => StepResult::timeout(step.timeout),
                        }
                    };
                    // `runbook abort` from anywhere interrupts a step that only waits or reads (a 10-minute
                    // boot wait must not outlive the abort); an action in flight finishes first.
                    let r = if matches!(
                        step.kind,
                        Kind::WaitFor | Kind::Verify | Kind::FaultCleared | Kind::SshBanner
                    ) {
                        tokio::select! {
                            r = run => r,
                            why = ended_elsewhere(self.l, self.run_id) => StepResult::error(format!("interrupted: {why}")),
                        }
                    } else {
                        run.await
                    };
                    if !self.still_ours().await? {
                        // Another process owns the run now: its resume reads this attempt's intent and
                        // finds out what happened; an outcome from here would race it.
                        return Ok(());
                    }
                    (r, attempt)
                }
            };
            let state = result.state();
            let mut out = result.outputs.clone();
            if let serde_json::Value::Object(m) = &mut out {
                m.insert("ok".into(), result.ok.into());
                m.insert("failed".into(), (!result.ok).into());
                m.insert("skipped".into(), false.into());
                m.insert("state".into(), state.into());
            }
            let mut evidence = result.evidence.clone();
            let d = digest(&evidence);
            if let serde_json::Value::Object(m) = &mut evidence {
                m.insert("digest".into(), d.into());
            }
            let row = self.row(
                i,
                attempt,
                "outcome",
                state,
                serde_json::json!({ "message": result.message, "outputs": out }),
                evidence.clone(),
            );
            let why = format!("step `{}` {state}: {}", step.name, result.message);
            if !self.route(&ctx, i, result.ok, why, &evidence, Some(&row)).await? {
                return Ok(());
            }
        }
    }

    /// Moves the run on after step `i` ended: the next step when `ok`, else as its `on_failure` says.
    /// `row`, the step's outcome, is written in the same transaction as the move (`None`: the journal has
    /// it already). Returns whether the run goes on.
    async fn route(
        &self,
        ctx: &StepCtx<'_>,
        i: usize,
        ok: bool,
        why: String,
        evidence: &serde_json::Value,
        row: Option<&NewJournal>,
    ) -> Result<bool> {
        if ok {
            self.move_run(row, RunState::Running, i + 1, None).await?;
            return Ok(true);
        }
        match &ctx.step.on_failure {
            OnFailure::Stop => {
                self.finish_after(RunState::Failed, Some(why), i, row).await?;
                Ok(false)
            }
            OnFailure::Continue => {
                self.move_run(row, RunState::Running, i + 1, None).await?;
                Ok(true)
            }
            OnFailure::Goto(g) => {
                let j = self.rb.steps.iter().position(|s| &s.name == g).unwrap_or(self.rb.steps.len());
                self.move_run(row, RunState::Running, j, None).await?;
                Ok(true)
            }
            OnFailure::Escalate => {
                // The run ends with the outcome first, then escalates: killed in between, the escalation's
                // drain and mark are lost, but the step is never run a second time.
                if !self.move_run(row, RunState::Escalated, i, Some(&why)).await? {
                    return Ok(false);
                }
                crate::steps::escalate(ctx, &why, evidence).await;
                self.ended(RunState::Escalated, Some(why), i).await?;
                Ok(false)
            }
        }
    }

    /// Moves the run to `state` at step `next`, appending `row` in the same transaction when there is one.
    async fn move_run(
        &self,
        row: Option<&NewJournal>,
        state: RunState,
        next: usize,
        reason: Option<&str>,
    ) -> Result<bool> {
        Ok(match row {
            Some(row) => self.l.run_journal_and_move(row, state, next as i64, reason).await?,
            None => self.l.run_set_state(self.run_id, state, next as i64, reason).await?,
        })
    }

    /// Reads the journal (and for an action whose outcome is unknown, the target's state) to decide how to
    /// handle step `i`.
    async fn decide(
        &self,
        ctx: &StepCtx<'_>,
        i: usize,
        journal: &[JournalRow],
        approvals: &[ApprovalRow],
    ) -> Result<Next> {
        let step = ctx.step;
        let mine: Vec<&JournalRow> =
            journal.iter().filter(|j| j.step_index == i as i64 && j.phase != "run").collect();
        let last_intent = mine.iter().rev().find(|j| j.phase == "intent").copied();
        let approval =
            |attempt: i64| approvals.iter().find(|a| a.step_index == i as i64 && a.attempt == attempt);
        // A step left in flight by a process that died: its intent has no outcome after it.
        if let Some(intent) = last_intent
            && !mine.iter().any(|j| j.phase == "outcome" && j.id > intent.id)
        {
            let attempt = intent.attempt;
            if let Some(a) = approval(attempt + 1) {
                return Ok(if a.decision == "skip" {
                    Next::Done(StepResult::ok_by_operator(&a.approver), attempt + 1)
                } else {
                    Next::Run(attempt + 1)
                });
            }
            let found =
                crate::recover::recover(ctx, &request_base(self.run_id, &step.name, attempt), intent).await;
            self.journal(self.row(
                i,
                attempt,
                "decision",
                found.label(),
                serde_json::json!({ "message": found.message() }),
                serde_json::json!({}),
            ))
            .await?;
            return Ok(match found {
                crate::recover::Found::Replay => Next::Run(attempt),
                crate::recover::Found::NotStarted | crate::recover::Found::Repeatable => {
                    Next::Run(attempt + 1)
                }
                crate::recover::Found::Done(r) => Next::Done(r, attempt),
                crate::recover::Found::Unknown(why) => Next::Pause(why, attempt + 1),
            });
        }
        let attempt = next_attempt(journal, i as i64);
        if step.approve {
            match approval(attempt) {
                Some(a) if a.decision == "skip" => {
                    return Ok(Next::Done(StepResult::ok_by_operator(&a.approver), attempt));
                }
                Some(_) => {}
                None => {
                    return Ok(Next::Pause(
                        format!(
                            "step `{}` requires approval: lifeline runbook approve {}",
                            step.name, self.run_id
                        ),
                        attempt,
                    ));
                }
            }
        }
        Ok(Next::Run(attempt))
    }

    async fn finish(&self, state: RunState, reason: Option<String>, i: usize) -> Result<()> {
        self.finish_after(state, reason, i, None).await
    }

    /// Ends the run, writing `outcome` (the last step's) in the same transaction as the end state.
    async fn finish_after(
        &self,
        state: RunState,
        reason: Option<String>,
        i: usize,
        outcome: Option<&NewJournal>,
    ) -> Result<()> {
        if !self.move_run(outcome, state, i, reason.as_deref()).await? {
            return Ok(());
        }
        self.ended(state, reason, i).await
    }

    /// What follows a run's end state: its `run` journal row and the `runbook.end` audit row.
    async fn ended(&self, state: RunState, reason: Option<String>, i: usize) -> Result<()> {
        let last = self.rb.steps.len() + self.rb.post.len();
        self.journal(self.row(
            i.min(last.saturating_sub(1)),
            0,
            "run",
            state.as_str(),
            serde_json::json!({ "message": reason }),
            serde_json::json!({}),
        ))
        .await?;
        if state == RunState::Succeeded {
            self.resolve_cause().await;
        }
        // An image served to the target's BMC during the run is not served past it.
        if let Err(e) = self.l.media_revoke(&self.target).await {
            tracing::warn!(run = %self.run_id, "served image tokens of {}: {}", self.target, e.chain());
        }
        let outcome = match state {
            RunState::Succeeded => Outcome::Ok,
            RunState::Escalated => Outcome::Refused,
            _ => Outcome::Failed,
        };
        self.l
            .audit()
            .await?
            .record(
                AuditAction::RunbookEnd,
                &self.target,
                outcome,
                Some(self.run_id),
                serde_json::json!({ "runbook": self.rb.name, "state": state, "reason": reason }),
            )
            .await?;
        Ok(())
    }
}

impl Driver<'_> {
    /// A run that a fault started and that ended `succeeded` has proven that fault gone on a fresh
    /// observation (its post-conditions): the fault record is resolved, audited under the run.
    async fn resolve_cause(&self) {
        let Ok(Some(run)) = self.l.run_record(self.run_id).await else { return };
        let kind = run.vars.get("fault-kind").and_then(|v| v.as_str()).unwrap_or_default();
        let fault = run.vars.get("fault").and_then(|v| v.as_str()).unwrap_or_default();
        if kind.is_empty() {
            return;
        }
        match self.l.fault_resolve(kind, &self.target).await {
            Ok(n) if n > 0 => {
                if let Ok(audit) = self.l.audit().await {
                    let detail = serde_json::json!({ "fault": fault, "kind": kind, "run": self.run_id });
                    let _ = audit
                        .record(
                            AuditAction::FaultResolve,
                            &self.target,
                            Outcome::Ok,
                            Some(self.run_id),
                            &detail,
                        )
                        .await;
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(run = self.run_id, "resolving fault {fault}: {e}"),
        }
    }
}

/// Resolves once the run is no longer `running` (aborted by an operator, from any process), saying so.
async fn ended_elsewhere(l: &Lifeline, id: &str) -> String {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        match l.run_record(id).await {
            Ok(Some(r)) if r.state != RunState::Running => {
                return format!("the run became {} ({})", r.state, r.reason.unwrap_or_default());
            }
            _ => {}
        }
    }
}

/// A journal row about the run as a whole (`phase = run`): aborted, interrupted.
pub(crate) fn run_event(id: &str, step_index: i64, state: &str, detail: serde_json::Value) -> NewJournal {
    NewJournal {
        run_id: id.into(),
        step_index,
        step: String::new(),
        attempt: 0,
        phase: "run".into(),
        state: state.into(),
        request_id: None,
        detail,
        evidence: serde_json::json!({}),
    }
}

/// Step `i`'s outcome, and whether it counts as done (`ok` or `skipped`), when it is the journal's last step
/// row (no later attempt of any step began), unless that outcome sends the run back to the step itself (a
/// failure with `on-failure` naming it: run again).
fn settled<'a>(
    journal: &'a [JournalRow],
    i: usize,
    step: &crate::model::Step,
) -> Option<(&'a JournalRow, bool)> {
    let last = journal.iter().rev().find(|j| j.phase == "intent" || j.phase == "outcome")?;
    let ok = matches!(last.state.parse(), Ok(StepState::Ok | StepState::Skipped));
    let to_itself = matches!(&step.on_failure, OnFailure::Goto(g) if *g == step.name);
    (last.phase == "outcome" && last.step_index == i as i64 && (ok || !to_itself)).then_some((last, ok))
}

/// The request id base of one step attempt; the engine scopes it per target (`…/<target>`).
pub(crate) fn request_base(run: &str, step: &str, attempt: i64) -> String {
    format!("runbook:{run}/{step}#{attempt}")
}

/// The attempt a step's next try (and an approval of it) carries: one more than its last intent.
fn next_attempt(journal: &[JournalRow], i: i64) -> i64 {
    journal.iter().filter(|j| j.step_index == i && j.phase == "intent").map(|j| j.attempt).max().unwrap_or(0)
        + 1
}

/// Each step's latest outputs, by step name, for `when`.
fn outputs_of(journal: &[JournalRow]) -> BTreeMap<String, serde_json::Value> {
    let mut out = BTreeMap::new();
    for j in journal.iter().filter(|j| j.phase == "outcome") {
        out.insert(j.step.clone(), j.detail.get("outputs").cloned().unwrap_or_default());
    }
    out
}
