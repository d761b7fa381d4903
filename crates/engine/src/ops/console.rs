//! Serial consoles: one manager per process (one BMC session per console, many viewers, logs indexed in the
//! store), attach sessions audited (a steal is its own audit row), log reading, bootloader rescue.

use std::sync::Arc;
use std::time::Duration;

use lifeline_console::{
    AttachOptions, Bootloader, ConsoleManager, Expect, LogReader, ManagerConfig, Pattern, RescueOptions,
    Step, Viewer, WriteMode,
};
use lifeline_types::AuditAction;
use serde::Serialize;

use crate::adapters::StoreLogIndex;
use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result, error_chain};

/// An attached console: the viewer for the front end's terminal or WebSocket, and the manager that keeps
/// the BMC session (ended by [`Lifeline::console_detach`]).
pub struct ConsoleSession {
    pub target: String,
    pub viewer: Option<Viewer>,
    pub stole: bool,
    manager: ConsoleManager,
    /// The manager belongs to this session (closed with it), not to the process (the server's).
    owned: bool,
}

impl ConsoleSession {
    /// Takes the viewer out (it moves into the terminal or WebSocket task); the session stays to detach.
    pub fn split_viewer(mut self) -> (ConsoleSession, Viewer) {
        let v = self.viewer.take().expect("a session's viewer is taken once");
        (self, v)
    }
}

impl ConsoleSession {
    /// Ends the session: a session-owned manager closes its BMC session; on a shared manager only this
    /// viewer goes (the always-on logger keeps the console open).
    async fn close(self) {
        if self.owned {
            self.manager.shutdown().await;
        }
    }
}

impl std::fmt::Debug for ConsoleSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleSession").field("target", &self.target).field("stole", &self.stole).finish()
    }
}

/// `console rescue`.
#[derive(Debug, Clone, Serialize)]
pub struct Rescue {
    pub target: String,
    pub outcome: &'static str,
    pub bootloader: Bootloader,
    pub attempts: Option<u32>,
    pub prompt: Option<String>,
    pub error: Option<String>,
    pub transcript: String,
}

/// `wait-for console`: whether a pattern appeared in the console's output before the deadline.
#[derive(Debug, Clone, Serialize)]
pub struct ConsoleWaited {
    pub target: String,
    pub pattern: String,
    pub reached: bool,
    /// The text that matched.
    pub matched: Option<String>,
    pub waited_ms: u64,
    /// The last line on the console's screen when the wait ended (what the operator would have seen).
    pub last_line: String,
    pub transcript: String,
}

/// A console expect script's outcome (runbook `console` steps with `script`).
#[derive(Debug, Clone, Serialize)]
pub struct ConsoleScripted {
    pub target: String,
    pub outcome: &'static str,
    pub steps: usize,
    /// 0-based index of the step that failed.
    pub failed_step: Option<usize>,
    pub error: Option<String>,
    pub transcript: String,
}

impl Lifeline {
    /// Watches a console read-only until `pattern` (a regex over the byte stream) appears or `within`
    /// passes. Read-only: it never types, so it cannot disturb a boot it is watching. With `since`, output
    /// the console printed from that moment on counts too, when this process was already logging it (see
    /// [`Lifeline::console_keep`]): a prompt printed while the wait was still attaching is not missed.
    pub async fn console_wait(
        &self,
        target: &str,
        pattern: &str,
        within: Duration,
        since: Option<std::time::Instant>,
    ) -> Result<ConsoleWaited> {
        let p =
            Pattern::new(lifeline_console::On::Stream, pattern).map_err(|e| EngineError::BadArgument {
                message: format!("console pattern `{pattern}` is not a valid regular expression: {e}"),
            })?;
        let started = std::time::Instant::now();
        #[cfg(feature = "test-hooks")]
        crate::hooks::console_attach_delay().await;
        let session = self.console_open(target, WriteMode::ReadOnly, false).await?;
        let (session, viewer) = session.split_viewer();
        // Read after attaching: a chunk that arrives in between is seen twice, never missed.
        let earlier = since.and_then(|t| session.manager.output_since(target, t).ok()).unwrap_or_default();
        let mut e = Expect::new(target, lifeline_console::Primed::new(earlier, viewer));
        let res = e.expect(p, within).await;
        let out = ConsoleWaited {
            target: target.into(),
            pattern: pattern.into(),
            reached: res.is_ok(),
            matched: res.as_ref().ok().map(|m| m.text.clone()),
            waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            last_line: e.last_line(),
            transcript: e.transcript_text(),
        };
        drop(e);
        session.close().await;
        Ok(out)
    }

    /// Keeps `target`'s console open and logged in this process's console manager while the caller
    /// works (a runbook run whose later steps read the console): its output is then seen from the moment
    /// of an action on, not from whenever a wait attaches. Needs a manager of the process's own
    /// ([`Lifeline::with_console_manager`]); a console that cannot be opened now is left to the steps.
    pub async fn console_keep(&self, target: &str) -> Result<()> {
        let Some(manager) = self.shared_consoles() else {
            return Err(EngineError::BadArgument { message: "no console manager in this process".into() });
        };
        let transport = self.sol_transport(target).await?;
        manager.add(target, Arc::new(transport)).map_err(|e| EngineError::failed_by(target, "console", e))?;
        manager.start(target, false).await.map_err(|e| EngineError::failed_by(target, "console", e))?;
        Ok(())
    }

    /// Runs an expect script on a console (write session, taking over another writer: the caller holds
    /// the target's lease). Audited as `console.script` with its outcome and the failing step.
    pub async fn console_script(&self, target: &str, steps: &[Step], steal: bool) -> Result<ConsoleScripted> {
        let audit = self.audit().await?;
        let session = self.console_open(target, WriteMode::Write, steal).await?;
        if session.stole {
            audit
                .record(
                    AuditAction::ConsoleSteal,
                    target,
                    Outcome::Ok,
                    None,
                    serde_json::json!({ "for": "script" }),
                )
                .await?;
        }
        let intent = audit
            .intent(AuditAction::ConsoleScript, target, None, serde_json::json!({ "steps": steps.len() }))
            .await?;
        let (session, viewer) = session.split_viewer();
        let mut e = Expect::new(target, viewer);
        let res = e.run_steps(steps).await;
        let transcript = e.transcript_text();
        drop(e);
        session.close().await;
        let out = ConsoleScripted {
            target: target.into(),
            outcome: if res.is_ok() { "ok" } else { "failed" },
            steps: steps.len(),
            failed_step: res.as_ref().err().map(|e| e.index),
            error: res.as_ref().err().map(|e| error_chain(e)),
            transcript,
        };
        let detail =
            serde_json::json!({ "steps": out.steps, "failed_step": out.failed_step, "error": out.error });
        audit.outcome(intent, if res.is_ok() { Outcome::Ok } else { Outcome::Failed }, detail).await?;
        Ok(out)
    }

    /// A console manager logging under the data directory, indexed in the store.
    pub async fn console_manager(&self) -> Result<ConsoleManager> {
        let store = self.store().await?.clone();
        let mut cfg = ManagerConfig::new(self.paths.data_dir.clone());
        // Every console is a sensor: the built-in rules read each line as it is logged; the server's fault
        // intake turns the findings into faults (`fault_rules::console`).
        cfg.scan = Some(lifeline_console::RuleSet::builtin());
        ConsoleManager::new(cfg, Arc::new(StoreLogIndex(store)))
            .map_err(|e| EngineError::failed_by("console", "starting the console manager", e))
    }

    async fn console_open(&self, target: &str, mode: WriteMode, steal: bool) -> Result<ConsoleSession> {
        let transport = self.sol_transport(target).await?;
        let (manager, owned) = match self.shared_consoles() {
            Some(m) => (m.clone(), false),
            None => (self.console_manager().await?, true),
        };
        manager.add(target, Arc::new(transport)).map_err(|e| EngineError::failed_by(target, "console", e))?;
        match manager.attach(target, AttachOptions { who: self.actor().to_owned(), mode, steal }).await {
            Ok((viewer, report)) => {
                let stole = report.as_ref().is_some_and(|r| r.stole);
                Ok(ConsoleSession { target: target.into(), viewer: Some(viewer), stole, manager, owned })
            }
            Err(e) => {
                if owned {
                    manager.shutdown().await;
                }
                let msg = error_chain(&e);
                let hint = if msg.contains("already active") || msg.contains("busy") {
                    "; another session holds this console: `--steal` deactivates it and takes over (audited)"
                } else {
                    ""
                };
                Err(EngineError::Failed {
                    target: target.into(),
                    what: format!("console: {msg}{hint}"),
                    source: None,
                })
            }
        }
    }

    /// Attaches to a console (audited: `console.attach`, or `console.steal` when another session was taken
    /// over; a write session is recorded as such).
    pub async fn console_attach(&self, target: &str, read_only: bool, steal: bool) -> Result<ConsoleSession> {
        let audit = self.audit().await?;
        let mode = if read_only { WriteMode::ReadOnly } else { WriteMode::Write };
        let mode_word = if read_only { "read-only" } else { "write" };
        match self.console_open(target, mode, steal).await {
            Ok(s) => {
                let action = if s.stole { AuditAction::ConsoleSteal } else { AuditAction::ConsoleAttach };
                audit
                    .record(
                        action,
                        target,
                        Outcome::Ok,
                        None,
                        serde_json::json!({ "stole": s.stole, "mode": mode_word }),
                    )
                    .await?;
                Ok(s)
            }
            Err(e) => {
                audit
                    .record(
                        AuditAction::ConsoleAttach,
                        target,
                        Outcome::Failed,
                        None,
                        serde_json::json!({ "error": e.chain() }),
                    )
                    .await?;
                Err(e)
            }
        }
    }

    /// Ends a session and writes its `console.detach` row (`how`: in words, e.g. "escape (~.)").
    pub async fn console_detach(&self, session: ConsoleSession, how: &str) -> Result<()> {
        let target = session.target.clone();
        session.close().await;
        self.audit()
            .await?
            .record(AuditAction::ConsoleDetach, &target, Outcome::Ok, None, serde_json::json!({ "how": how }))
            .await
    }

    /// Reads a console's log (every byte seen, gaps marked) from `since`, following new output if asked.
    pub async fn console_log(
        &self,
        target: &str,
        since: Option<chrono::DateTime<chrono::Utc>>,
        follow: bool,
    ) -> Result<LogReader> {
        let store = self.store().await?.clone();
        Ok(LogReader::new(Arc::new(StoreLogIndex(store)), target, since, follow))
    }

    /// Breaks a boot loop into the bootloader's rescue shell (audited; a steal is its own row).
    pub async fn console_rescue(
        &self,
        target: &str,
        bootloader: Bootloader,
        steal: bool,
        wait: Duration,
    ) -> Result<Rescue> {
        let audit = self.audit().await?;
        let session = self.console_open(target, WriteMode::Write, steal).await?;
        if session.stole {
            audit
                .record(
                    AuditAction::ConsoleSteal,
                    target,
                    Outcome::Ok,
                    None,
                    serde_json::json!({ "for": "rescue" }),
                )
                .await?;
        }
        let intent = audit
            .intent(AuditAction::ConsoleRescue, target, None, serde_json::json!({ "bootloader": bootloader }))
            .await?;
        let opts = RescueOptions { wait_for_bootloader: wait, ..RescueOptions::default() };
        let (session, viewer) = session.split_viewer();
        let mut e = Expect::new(target, viewer);
        let res = lifeline_console::break_into_rescue(&mut e, bootloader, &opts).await;
        let transcript = e.transcript_text();
        drop(e);
        session.close().await;
        let rescue = match &res {
            Ok(r) => Rescue {
                target: target.into(),
                outcome: "ok",
                bootloader,
                attempts: Some(r.attempts),
                prompt: Some(r.prompt.clone()),
                error: None,
                transcript,
            },
            Err(err) => Rescue {
                target: target.into(),
                outcome: "failed",
                bootloader,
                attempts: None,
                prompt: None,
                error: Some(error_chain(err)),
                transcript,
            },
        };
        let detail = serde_json::json!({ "bootloader": bootloader, "attempts": rescue.attempts, "prompt": rescue.prompt, "error": rescue.error });
        audit.outcome(intent, if res.is_ok() { Outcome::Ok } else { Outcome::Failed }, detail).await?;
        Ok(rescue)
    }
}
