//! The one context every handler and scheduled job shares (modelled on omicron's gateway
//! `ServerContext`): the engine context (the store is the engine's alone), the console manager that logs every console, the
//! metrics, the login limiter, and the clock. Handlers stay thin: take what they need from here, call the
//! engine as the caller's identity, return its result.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use lifeline_console::ConsoleManager;
use lifeline_engine::{Identity, Lifeline};
use tokio_util::sync::CancellationToken;

use crate::auth::{Caller, LoginLimiter};
use crate::error::ApiResult;
use crate::metrics::Metrics;

/// Time, injectable so the scheduler's slots can be tested without waiting for them.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> DateTime<Utc>;
}

#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Shared by every request; cheap to clone.
#[derive(Clone, Debug)]
pub struct AppState(pub Arc<Inner>);

#[derive(Debug)]
pub struct Inner {
    /// The server's own context (actor `server`): reads, scheduler, and every store access.
    pub base: Arc<Lifeline>,
    /// Every console of the inventory, kept open and logged; WebSocket viewers attach here.
    pub consoles: ConsoleManager,
    pub metrics: Metrics,
    pub limiter: LoginLimiter,
    /// Refused logins, folded per source per window before they reach the audit log.
    pub refused_logins: crate::login_limit::RefusedLogins,
    pub clock: Arc<dyn Clock>,
    /// Cookies carry `Secure` when the listener is TLS.
    pub secure_cookies: bool,
    pub session_ttl: Duration,
    /// Cancelled on SIGTERM / Ctrl-C: scheduled jobs and WebSocket sessions end.
    pub shutdown: CancellationToken,
    /// Set once the store, inventory and listener are up (`/readyz`).
    pub ready: std::sync::atomic::AtomicBool,
    /// `GET /api/v1/devices`, built once and shared by concurrent callers.
    pub fleet_list: crate::api::devices::FleetCache,
    /// Every device's state and the overview (`/api/v1/summary`, `/api/v1/fleet`), shared likewise.
    pub fleet_states: crate::api::overview::SnapshotCache,
    /// Carries out the fault policy's decisions (the runbook executor, once installed).
    pub responder: std::sync::RwLock<Arc<dyn crate::policy::FaultResponder>>,
    /// The runbook runs this process drives in the background.
    pub runbooks: crate::runbooks::Runner,
    /// This process as one of the replicas sharing the store (membership, work claims).
    pub replica: Arc<crate::replica::Replica>,
    /// What does not work though the server runs (an event receiver that cannot listen, a BMC whose
    /// events cannot be received): each is logged as an error when found and fails `/readyz` until fixed
    /// by a restart, so that a silent half-working server is not taken for a working one.
    pub problems: std::sync::Mutex<std::collections::BTreeMap<String, String>>,
    /// Open live feeds and console WebSockets per user and per source.
    pub streams: crate::streams::StreamCounts,
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// The engine context for one request: acting as `web:<user>` (or `token:<id>` user), with the
    /// `Idempotency-Key` as the request id.
    ///
    /// The key is scoped to the caller (`web:<user>/<key>`): another user sending the same key makes a
    /// request of their own (audited as them), never a replay of someone else's outcome.
    pub fn engine_for(&self, caller: &Caller, request_id: Option<String>) -> Lifeline {
        let actor = caller.actor();
        let request_id = request_id.map(|k| format!("{actor}/{k}"));
        self.base.with_identity(Identity { actor, request_id, wait: None })
    }

    /// The engine context for scheduled work.
    pub fn engine_as(&self, actor: &str) -> Lifeline {
        self.base.with_identity(Identity::new(actor))
    }

    /// The fault policy's responder in force.
    pub fn responder(&self) -> Arc<dyn crate::policy::FaultResponder> {
        self.responder.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Installs the responder that carries out fault-policy decisions (the runbook executor).
    pub fn set_responder(&self, r: Arc<dyn crate::policy::FaultResponder>) {
        *self.responder.write().unwrap_or_else(std::sync::PoisonError::into_inner) = r;
    }

    /// Records a problem (logged as an error; `/readyz` fails while any is recorded).
    pub fn problem(&self, what: &str, detail: &str) {
        tracing::error!("{what}: {detail}");
        self.problems
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(what.to_owned(), detail.to_owned());
    }

    /// Forgets a problem that went away (the next sweep found every credential).
    pub fn clear_problem(&self, what: &str) {
        self.problems.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(what);
    }

    /// The recorded problems, `what: detail` each.
    pub fn problems(&self) -> Vec<String> {
        let p = self.problems.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        p.iter().map(|(k, v)| format!("{k}: {v}")).collect()
    }

    pub async fn audit_as(&self, actor: &str) -> ApiResult<lifeline_engine::AuditService> {
        Ok(self.base.with_identity(Identity::new(actor)).audit().await?)
    }
}
