//! The server's side of the runbook executor (`lifeline-runbook`): runs started from the API or by the
//! fault policy are admitted in the request (so the caller gets the run id and the guard's verdict at
//! once) and then driven by background tasks the server owns — a run continues when its HTTP client goes
//! away. The server resumes the runs a previous process left `running` when it starts, and on SIGTERM
//! lets each run finish the step in flight (stopping at the next boundary) or journals it as interrupted.
//!
//! [`PolicyResponder`] is the fault policy's [`FaultResponder`] over the executor: `auto` admits and
//! starts the runbook on the fault's device under the blast-radius guard (`started` or `refused` with the
//! guard's reason), `approve` creates the run in `waiting-approval` before its first step, `notify` runs
//! nothing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use lifeline_engine::ops::fault_records::FaultRow;
use lifeline_engine::{EngineError, Identity, Lifeline, Settings};
use lifeline_runbook::{Env, Executor, Library, RunOptions, RunView, Runbook, RunbookError};

use crate::policy::{Action, Decision, FaultResponder, Response};
use crate::state::AppState;

/// How long a stopping server waits for steps in flight before journaling them as interrupted.
const STOP_GRACE: Duration = Duration::from_secs(30);
/// The actor of runs the fault policy starts (each run then acts as `runbook:<id>`).
pub const POLICY_ACTOR: &str = "fault-policy";

/// The runs this process drives, and how it builds executors.
#[derive(Debug, Default)]
pub struct Runner {
    config: RwLock<(Settings, Env)>,
    /// Set on shutdown: drivers stop at their next step boundary.
    stop: Arc<AtomicBool>,
    /// Run id → its driving task (one driver per run in this process).
    driving: Mutex<HashMap<String, Driving>>,
}

#[derive(Debug)]
struct Driving {
    task: tokio::task::AbortHandle,
    /// Set when the run was made `running` again (approved) while its driver was finishing.
    again: Arc<AtomicBool>,
}

impl Runner {
    /// Where runs find schedulers and agent reports (`lifeline serve --slurm-conf … --node-state …`).
    pub fn configure(&self, settings: Settings, env: Env) {
        *self.config.write().unwrap_or_else(std::sync::PoisonError::into_inner) = (settings, env);
    }

    /// Where runs find schedulers and agent reports (probation's checks and drains use the same).
    pub fn env(&self) -> Env {
        self.config.read().unwrap_or_else(std::sync::PoisonError::into_inner).1.clone()
    }

    /// An executor acting (admitting, approving, aborting) as `base`'s actor.
    pub fn executor(&self, base: Lifeline) -> Executor {
        let (settings, env) = self.config.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        Executor::new(settings, env, base).with_stop(self.stop.clone())
    }

    fn driving_ids(&self) -> Vec<String> {
        self.driving.lock().unwrap_or_else(std::sync::PoisonError::into_inner).keys().cloned().collect()
    }
}

/// The runbook library of the server's configuration (`[runbooks] dir`, default `./runbooks`).
pub fn library(s: &AppState) -> Library {
    Library::new(None, &s.base.config.config)
}

/// Loads a runbook of the library by name.
pub fn load(s: &AppState, name: &str) -> Result<(Runbook, String), RunbookError> {
    if name.contains('/') || name.ends_with(".toml") {
        return Err(RunbookError::NotFound { name: name.into(), dir: library(s).dir.display().to_string() });
    }
    library(s).load(name)
}

/// Drives run `id` in the background. The run continues whatever happens to the request that started it.
/// When this process already drives it (a driver that just paused for approval and has not yet let go,
/// say), that driver goes round once more instead of a second one starting.
pub fn spawn_drive(s: &AppState, id: &str) {
    let mut driving = s.runbooks.driving.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(d) = driving.get(id) {
        d.again.store(true, Ordering::SeqCst);
        return;
    }
    if s.runbooks.stop.load(Ordering::Relaxed) {
        return;
    }
    let again = Arc::new(AtomicBool::new(false));
    let (st, run, more) = (s.clone(), id.to_owned(), again.clone());
    let task = tokio::spawn(async move {
        // One replica drives a run: the claim on its work key (a live holder elsewhere keeps it; a dead
        // one's is taken over). The claim renews itself while held and is checked between drives.
        let claim = match st.replica.claim(&crate::replica::run_key(&run)).await {
            Ok(Some(c)) => c,
            Ok(None) => {
                tracing::debug!(%run, "another replica drives this run");
                st.runbooks.driving.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&run);
                return;
            }
            Err(e) => {
                tracing::warn!(%run, "cannot claim the run: {e}");
                st.runbooks.driving.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&run);
                return;
            }
        };
        let mut last = None;
        loop {
            more.store(false, Ordering::SeqCst);
            if !claim.still_held().await {
                tracing::warn!(%run, "the run's claim was lost; another replica drives it");
                break;
            }
            last = drive_once(&st, &run).await;
            let mut driving = st.runbooks.driving.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !more.load(Ordering::SeqCst) || st.runbooks.stop.load(Ordering::Relaxed) {
                driving.remove(&run);
                break;
            }
        }
        // A run that ended is done for every replica; one that waits (approval) or stopped is given back,
        // so whichever replica gets the approval, or the next to start, drives it.
        match last.as_deref() {
            Some("succeeded" | "failed" | "escalated" | "aborted" | "refused") => {
                let _ = claim.finish(last.as_deref().unwrap_or_default()).await;
            }
            _ => claim.release().await,
        }
    });
    driving.insert(id.to_owned(), Driving { task: task.abort_handle(), again });
}

/// Drives a run once; its state afterwards when known.
async fn drive_once(st: &AppState, run: &str) -> Option<String> {
    let x = st.runbooks.executor(st.engine_as("server"));
    match x.resume(run).await {
        Ok(v) => {
            tracing::info!(run = %v.run, state = %v.state, "runbook run {} on {}: {}", v.runbook, v.target, v.state);
            if v.state != lifeline_types::RunState::Running {
                crate::webhook::notify(st, "runbook", serde_json::json!({ "event": "runbook", "run": &v }));
            }
            Some(v.state.to_string())
        }
        Err(e) => {
            tracing::warn!(%run, "runbook run: {}", e.chain());
            None
        }
    }
}

/// On start, and then every heartbeat (or at once when a run's claim seen held elsewhere expires, see
/// [`crate::replica::Replica::nap`]): continue every run left `running` that no live replica drives (a
/// previous process of this server killed or stopped mid-run, or another replica that died). A run a live
/// replica holds is skipped by the claim in [`spawn_drive`].
pub fn resume_interrupted(s: &AppState) {
    let st = s.clone();
    tokio::spawn(async move {
        loop {
            let x = st.runbooks.executor(st.engine_as("server"));
            match x.interrupted_runs().await {
                Ok(ids) => {
                    let driving = st.runbooks.driving_ids();
                    for id in ids.into_iter().filter(|id| !driving.contains(id)) {
                        tracing::debug!(run = %id, "an interrupted runbook run: claiming it");
                        spawn_drive(&st, &id);
                    }
                }
                Err(e) => tracing::warn!("cannot list interrupted runbook runs: {}", e.chain()),
            }
            // Until the next heartbeat, or just after a run's claim seen held elsewhere expires.
            tokio::select! {
                _ = st.replica.nap(crate::replica::HEARTBEAT) => {}
                _ = st.shutdown.cancelled() => return,
            }
            if st.runbooks.stop.load(Ordering::Relaxed) {
                return;
            }
        }
    });
}

/// On shutdown: runs stop at their next step boundary; a step still in flight after the grace period is
/// abandoned and journaled as interrupted (the next start resumes it from the journal).
pub async fn stop(s: &AppState) {
    s.runbooks.stop.store(true, Ordering::Relaxed);
    let deadline = tokio::time::Instant::now() + STOP_GRACE;
    while !s.runbooks.driving_ids().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let left: Vec<(String, Driving)> =
        s.runbooks.driving.lock().unwrap_or_else(std::sync::PoisonError::into_inner).drain().collect();
    let x = s.runbooks.executor(s.engine_as("server"));
    for (id, d) in left {
        d.task.abort();
        let why = format!("the server stopped during a step (not finished after {} s)", STOP_GRACE.as_secs());
        if let Err(e) = x.mark_interrupted(&id, &why).await {
            tracing::warn!(run = %id, "cannot journal the interruption: {}", e.chain());
        }
    }
}

/// A fault was resolved: the runs it started that still wait for approval before their first step are
/// withdrawn (nothing was done; nobody should be asked to approve a recovery for a fault that is gone).
pub async fn withdraw_for_resolved(s: &AppState, kind: &str, device: &str) {
    let x = s.runbooks.executor(s.engine_as("fault-policy"));
    match x.withdraw_for_resolved(kind, device).await {
        Ok(ids) => {
            for id in ids {
                tracing::info!(run = %id, %kind, %device, "run withdrawn: its fault cleared before approval");
            }
        }
        Err(e) => tracing::warn!(%kind, %device, "withdrawing runs of a resolved fault: {}", e.chain()),
    }
}

/// Admits one run for a caller (`approve_first`: in `waiting-approval` before its first step) and, when
/// admitted to run, drives it in the background.
pub async fn admit(
    s: &AppState,
    base: Lifeline,
    rb: &Runbook,
    text: &str,
    target: &str,
    opts: &RunOptions,
    approve_first: bool,
) -> Result<RunView, RunbookError> {
    let v = s.runbooks.executor(base).admit(rb, text, target, opts, approve_first).await?;
    match v.state.as_str() {
        "running" => spawn_drive(s, &v.run),
        "waiting-approval" => {
            crate::webhook::notify(s, "runbook", serde_json::json!({ "event": "approval-needed", "run": v }))
        }
        _ => {}
    }
    Ok(v)
}

/// The fault policy carried out by the runbook executor.
#[derive(Debug, Default)]
pub struct PolicyResponder;

impl FaultResponder for PolicyResponder {
    fn respond<'a>(
        &'a self,
        s: &'a AppState,
        fault: &'a FaultRow,
        d: &'a Decision,
    ) -> BoxFuture<'a, Result<Response, EngineError>> {
        Box::pin(async move {
            let Some(name) = d.runbook.as_deref().filter(|_| d.action != Action::Notify) else {
                return Ok(Response { state: "notified".into(), detail: serde_json::json!("notify only") });
            };
            let engine_err = |e: RunbookError| match e {
                RunbookError::Engine(e) => e,
                other => EngineError::Refused { target: fault.device.clone(), reason: other.chain() },
            };
            // One recovery per device at a time: a second fault on a device a run already answers (an
            // ECC error shows as both a critical rollup and a critical event) is linked to that run, not
            // answered by another run the guard would refuse.
            if let Some(r) = s.base.active_run_on(&fault.device).await? {
                return Ok(Response {
                    state: "linked".into(),
                    detail: serde_json::json!({ "run": r.id, "runbook": r.runbook, "reason": "a run already answers this device" }),
                });
            }
            let (rb, text) = load(s, name).map_err(engine_err)?;
            let base = s.base.with_identity(Identity::new(POLICY_ACTOR));
            let approve_first = d.action == Action::AwaitApproval;
            let opts = RunOptions {
                cause: Some(lifeline_runbook::exec::Cause { fault: fault.id, kind: fault.kind.clone() }),
                // A ladder rung's variables (`reset = "cycle"`).
                vars: d.vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            };
            let v =
                admit(s, base, &rb, &text, &fault.device, &opts, approve_first).await.map_err(engine_err)?;
            let state = match v.state.as_str() {
                "refused" => "refused",
                "waiting-approval" => "queued",
                _ => "started",
            };
            Ok(Response {
                state: state.into(),
                detail: serde_json::json!({ "run": v.run, "runbook": v.runbook, "reason": v.reason }),
            })
        })
    }
}
