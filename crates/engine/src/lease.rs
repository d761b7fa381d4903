//! Per-target action leases over the store, so that two CLI processes, a CLI and a server, or two replicas
//! never run two actions on one BMC or switch at once.
//!
//! A lease is renewed while the action runs (every third of its time to live) and released when it ends; a
//! holder that dies leaves it to expire, and the next taker writes an `interrupted` audit row for the dead
//! holder's request. A second request on a held target is refused with a conflict naming the holder and its
//! action, or waits (`--wait`). A request that waited while the holder ran the *same* action finds the work
//! done (one power cycle asked by twenty operators is one power cycle), and says with which request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{TimeZone, Utc};
use lifeline_store::{LeaseAttempt, LeaseRow, RequestRow, Store};
use lifeline_types::{AuditAction, LoggedAction};

use crate::audit::{AuditService, Outcome};
use crate::error::{EngineError, Holder, Result};

/// How long a lease lives without renewal.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30);

/// Takes leases as one holder.
#[derive(Debug, Clone)]
pub struct Leases {
    store: Store,
    holder: String,
    ttl: Duration,
    wait: Option<Duration>,
}

/// The result of asking for a target.
#[derive(Debug)]
pub enum Acquired {
    /// The target is ours until the guard is released.
    Lease(LeaseGuard),
    /// While we waited, another holder completed the same action on the target: this request is answered
    /// by that one.
    DoneBy(RequestRow),
}

fn ts(ms: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
}

fn holder_of(l: &LeaseRow) -> Holder {
    Holder {
        holder: l.holder.clone(),
        action: l.action.clone(),
        request_id: l.request_id.clone(),
        since: ts(l.acquired_at_ms),
        expires: ts(l.expires_at_ms),
    }
}

impl Leases {
    pub fn new(store: Store, holder: String) -> Self {
        Leases { store, holder, ttl: DEFAULT_TTL, wait: None }
    }

    /// Wait up to `wait` for a busy target instead of refusing at once.
    pub fn with_wait(mut self, wait: Option<Duration>) -> Self {
        self.wait = wait;
        self
    }

    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// Takes `target` for `action` on behalf of `request_id`.
    pub async fn acquire(
        &self,
        target: &str,
        action: AuditAction,
        request_id: &str,
        audit: &AuditService,
    ) -> Result<Acquired> {
        let asked_at = lifeline_store::now_ms();
        let deadline = self.wait.map(|w| tokio::time::Instant::now() + w);
        let ttl_ms = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
        // The lease row keeps the word, as the audit log does.
        let action = action.as_str();
        let mut waited_on_same_action = false;
        let mut pause = Duration::from_millis(50);
        loop {
            let attempt = match self.try_once(target, request_id, action, ttl_ms).await {
                Ok(a) => a,
                Err(e) => return Err(e.into()),
            };
            match attempt {
                LeaseAttempt::Acquired { lease, previous } => {
                    if let Some(prev) = previous {
                        interrupted(audit, &prev).await;
                    }
                    let guard = LeaseGuard::start(self.store.clone(), lease, self.ttl);
                    if waited_on_same_action
                        && let Some(done) = self.store.finished_since(target, action, asked_at).await?
                        && done.request_id != request_id
                    {
                        guard.release().await;
                        return Ok(Acquired::DoneBy(done));
                    }
                    return Ok(Acquired::Lease(guard));
                }
                LeaseAttempt::Held(held) if held.holder == self.holder => {
                    // This holder (a runbook run, say) already owns the target: its steps act under it.
                    return Ok(Acquired::Lease(LeaseGuard::nested(held)));
                }
                LeaseAttempt::Held(held) if holder_is_dead_here(&held.holder) => {
                    // Its process on this host is gone (killed, crashed): no need to wait for the expiry.
                    if let Some(lease) = self
                        .store
                        .take_over_lease(target, held.fence, &self.holder, request_id, action, ttl_ms)
                        .await?
                    {
                        interrupted(audit, &held).await;
                        return Ok(Acquired::Lease(LeaseGuard::start(self.store.clone(), lease, self.ttl)));
                    }
                }
                LeaseAttempt::Held(held) => {
                    let Some(deadline) = deadline else {
                        return Err(EngineError::Busy { target: target.into(), holder: holder_of(&held) });
                    };
                    waited_on_same_action |= held.action == action;
                    let now = tokio::time::Instant::now();
                    if now >= deadline {
                        return Err(EngineError::Busy { target: target.into(), holder: holder_of(&held) });
                    }
                    // No later than just after the holder's expiry: a silent holder's target is taken
                    // as soon as it can be (the replicas' takeover bound counts on it).
                    let to_expiry =
                        u64::try_from(held.expires_at_ms + 20 - lifeline_store::now_ms()).unwrap_or(0);
                    let nap = pause.min(Duration::from_millis(to_expiry.max(5)));
                    tokio::time::sleep(nap.min(deadline - now)).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
            }
        }
    }
}

/// The lease an action runs under, as the writes that must be fenced see it (the config version a
/// backup records): set for the action's future by [`run_fenced`], read by [`current_fence`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub target: String,
    pub holder: String,
    pub fence: i64,
}

tokio::task_local! {
    static CURRENT_FENCE: Fence;
}

/// Runs `f` with `fence` as the lease its fenced writes must still hold.
pub async fn run_fenced<F: std::future::Future>(fence: Fence, f: F) -> F::Output {
    CURRENT_FENCE.scope(fence, f).await
}

/// The lease the running action holds, if it runs under one.
pub fn current_fence() -> Option<Fence> {
    CURRENT_FENCE.try_with(Clone::clone).ok()
}

/// This process's holder name: `ACTOR (pid PID on HOST) #TAG`.
pub fn holder_name(actor: &str) -> String {
    let host = this_host();
    let tag = &uuid::Uuid::new_v4().simple().to_string()[..6];
    format!("{actor} (pid {} on {host}) #{tag}", std::process::id())
}

pub(crate) fn this_host() -> String {
    nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_default()
}

/// Whether a holder named by [`holder_name`] is a process on this host that no longer exists. Another
/// host's holder, or a name we cannot read, is never presumed dead: only its expiry frees it. Also used
/// by the server's replica membership and work claims (a restarted server takes its own dead
/// predecessor's work at once instead of after the expiry).
pub fn holder_is_dead_here(holder: &str) -> bool {
    let Some(rest) = holder.rsplit_once(" (pid ").map(|(_, r)| r) else { return false };
    let Some((pid, rest)) = rest.split_once(" on ") else { return false };
    let Some((host, _)) = rest.split_once(") #") else { return false };
    let Ok(pid) = pid.parse::<i32>() else { return false };
    if host != this_host() || pid == i32::try_from(std::process::id()).unwrap_or(-1) {
        return false;
    }
    // Signal 0 checks existence; EPERM means it exists under another user.
    matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Err(nix::errno::Errno::ESRCH))
}

impl Leases {
    /// One take; a holder that released between our insert and our read (the row vanished) is not a
    /// failure: take again, a bounded number of times (each retry means someone else made progress).
    async fn try_once(
        &self,
        target: &str,
        request_id: &str,
        action: &str,
        ttl_ms: i64,
    ) -> std::result::Result<LeaseAttempt, lifeline_store::StoreError> {
        let mut last = None;
        for _ in 0..50 {
            match self.store.try_lease(target, &self.holder, request_id, action, ttl_ms).await {
                Ok(a) => return Ok(a),
                Err(e) => {
                    last = Some(e);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
        Err(last.expect("at least one attempt"))
    }
}

/// The dead holder's request gets its ending: we cannot know what it did, only that it stopped.
async fn interrupted(audit: &AuditService, prev: &LeaseRow) {
    let mut detail = serde_json::json!({
        "holder": prev.holder,
        "expired_at": ts(prev.expires_at_ms),
        "note": "the holder stopped before finishing; its lease expired and was taken over",
    });
    // A lease another version took may name an action this one does not know: its row still gets its
    // ending, under the family that keeps the word in the detail.
    let action = match LoggedAction::read(&prev.action) {
        LoggedAction::Known(a) => a,
        LoggedAction::Unknown(word) => {
            detail["action"] = word.into();
            AuditAction::LeaseInterrupted
        }
    };
    if let Err(e) =
        audit.record(action, &prev.target, Outcome::Interrupted, Some(&prev.request_id), detail).await
    {
        tracing::warn!(target = %prev.target, "cannot audit an interrupted request: {}", e.chain());
    }
    // Its request row ends too, instead of staying `running` for ever: a retry is told the outcome is
    // unknown at once.
    let outcome = serde_json::json!({
        "outcome": "unknown: the process stopped while acting (it may have sent its command)",
        "holder": prev.holder,
    });
    if let Err(e) = audit.store().interrupt_request(&prev.request_id, &outcome).await {
        tracing::warn!(target = %prev.target, "cannot end an interrupted request: {e}");
    }
}

/// A held lease; renewed in the background, released by [`LeaseGuard::release`] (or, as a fallback, on
/// drop, e.g. when the action is cancelled by Ctrl-C).
#[derive(Debug)]
pub struct LeaseGuard {
    /// `None` for a nested guard: the outer guard owns the lease.
    store: Option<Store>,
    lease: LeaseRow,
    renew: Option<tokio::task::JoinHandle<()>>,
    lost: Arc<AtomicBool>,
    done: bool,
}

impl LeaseGuard {
    fn start(store: Store, lease: LeaseRow, ttl: Duration) -> Self {
        let lost = Arc::new(AtomicBool::new(false));
        let (s, l, flag) = (store.clone(), lease.clone(), lost.clone());
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let renew = tokio::spawn(async move {
            let every = ttl / 3;
            loop {
                tokio::time::sleep(every).await;
                match s.renew_lease(&l.target, &l.holder, l.fence, ttl_ms).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::error!(target = %l.target, "lease lost while acting (paused past its expiry?)");
                        flag.store(true, Ordering::SeqCst);
                        return;
                    }
                    // A transient store error: try again at the next tick, before the lease runs out.
                    Err(e) => tracing::warn!(target = %l.target, "renewing the lease failed: {e}"),
                }
            }
        });
        LeaseGuard { store: Some(store), lease, renew: Some(renew), lost, done: false }
    }

    fn nested(lease: LeaseRow) -> Self {
        LeaseGuard { store: None, lease, renew: None, lost: Arc::default(), done: true }
    }

    pub fn lease(&self) -> &LeaseRow {
        &self.lease
    }

    /// The fencing token: grows with every new holder of the target.
    pub fn fence(&self) -> i64 {
        self.lease.fence
    }

    /// The target, holder and token, for [`run_fenced`].
    pub fn fence_token(&self) -> Fence {
        Fence {
            target: self.lease.target.clone(),
            holder: self.lease.holder.clone(),
            fence: self.lease.fence,
        }
    }

    /// Whether the lease was lost while held (another holder may act now).
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    pub async fn release(mut self) {
        self.finish();
        if let Some(store) = &self.store
            && let Err(e) =
                store.release_lease(&self.lease.target, &self.lease.holder, self.lease.fence).await
        {
            tracing::warn!(target = %self.lease.target, "releasing the lease failed (it will expire): {e}");
        }
    }

    fn finish(&mut self) {
        self.done = true;
        if let Some(r) = self.renew.take() {
            r.abort();
        }
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if let Some(r) = self.renew.take() {
            r.abort();
        }
        let Some(store) = self.store.clone().filter(|_| !self.done) else { return };
        let l = self.lease.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = store.release_lease(&l.target, &l.holder, l.fence).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_local_holders_are_recognised_and_others_are_not() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let host = this_host();
        assert!(holder_is_dead_here(&format!("cli:a (pid {pid} on {host}) #abc123")));
        let alive = std::os::unix::process::parent_id();
        assert!(!holder_is_dead_here(&format!("cli:a (pid {alive} on {host}) #abc123")));
        assert!(!holder_is_dead_here(&format!("cli:a (pid {pid} on another-host) #abc123")));
        assert!(!holder_is_dead_here("runbook:7"));
        assert!(holder_name("cli:x").starts_with(&format!("cli:x (pid {} on {host}) #", std::process::id())));
    }

    /// `n1`'s lease, taken by `actor` in a process that has since exited, for `request_id` and `action`.
    async fn held_by_the_dead(store: &Store, actor: &str, request_id: &str, action: &str) {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let dead = format!("{actor} (pid {pid} on {}) #dead00", this_host());
        let LeaseAttempt::Acquired { .. } =
            store.try_lease("n1", &dead, request_id, action, 60_000).await.unwrap()
        else {
            panic!("free lease not taken")
        };
    }

    /// `n1`'s lease for `action`, as a live `cli:b`.
    async fn take(store: &Store, action: AuditAction) -> LeaseGuard {
        let audit = AuditService::new(store.clone(), "cli:b");
        let leases = Leases::new(store.clone(), holder_name("cli:b"));
        let Acquired::Lease(g) = leases.acquire("n1", action, "r-new", &audit).await.unwrap() else {
            panic!("not acquired")
        };
        g
    }

    #[tokio::test]
    async fn a_dead_holders_lease_is_taken_over_at_once_and_audited() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).await.unwrap();
        assert!(store.begin_request("r-dead", "n1", "power.cycle", "cli:a").await.unwrap().is_none());
        held_by_the_dead(&store, "cli:a", "r-dead", "power.cycle").await;
        let g = take(&store, AuditAction::PowerCycle).await;
        assert_eq!(g.fence(), 2);
        g.release().await;
        let rows = store.audit_log(Some("n1"), 10).await.unwrap();
        assert!(
            rows.iter()
                .any(|r| r.entry.outcome == "interrupted" && r.entry.request_id.as_deref() == Some("r-dead")),
            "{rows:?}"
        );
        // The dead holder's request no longer reads `running`.
        assert_eq!(store.request("r-dead").await.unwrap().unwrap().state, "interrupted");
    }

    /// A dead holder's lease whose word this version does not know (another version's, or a run's lease
    /// named after its runbook before `runbook.run`) still gets its `interrupted` row, under
    /// `lease.interrupted` with the word in the detail.
    #[tokio::test]
    async fn a_dead_lease_of_an_unknown_word_is_audited_under_its_family() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).await.unwrap();
        held_by_the_dead(&store, "runbook:r9", "runbook:r9", "runbook.reinstall").await;
        let g = take(&store, AuditAction::PowerOn).await;
        g.release().await;
        let rows = store.audit_log(Some("n1"), 10).await.unwrap();
        let row = rows.iter().find(|r| r.entry.outcome == "interrupted").expect("an interrupted row");
        assert_eq!(row.entry.action, "lease.interrupted", "{rows:?}");
        assert_eq!(row.entry.detail["action"], "runbook.reinstall", "{rows:?}");
        assert_eq!(row.entry.request_id.as_deref(), Some("runbook:r9"));
    }
}
