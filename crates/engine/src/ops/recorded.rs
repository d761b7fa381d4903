//! How [`Lifeline::guarded`] keeps "outcome first, then the answer" ([`crate::outcome_wal`]): a slot per
//! request before the action, the request's outcome into the store or else into the slot, and an answer
//! that says "done, recording delayed" instead of "not done" when the store refused it. Also what
//! readiness asks: whether actions can be recorded now.

use std::sync::Arc;
use std::time::Duration;

use lifeline_store::Store;
use serde::Serialize;

use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::ops::Acted;
use crate::outcome_wal::{OutcomeWal, Pending, Slot};

/// How long readiness waits for its write probe: a store that takes longer cannot record actions in time.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

impl Lifeline {
    /// The outcome slots of this data directory (shared by every context of the process).
    pub fn outcome_wal(&self) -> Arc<OutcomeWal> {
        OutcomeWal::for_dir(&self.paths.data_dir)
    }

    /// Why actions cannot be recorded now, or `None`: kept outcomes are replayed first, then one write is
    /// committed. `/readyz` fails with this reason.
    pub async fn recording_problem(&self) -> Option<String> {
        let store = match self.store().await {
            Ok(s) => s,
            Err(e) => return Some(format!("actions cannot be recorded: {}", e.chain())),
        };
        let wal = self.outcome_wal();
        let replay = wal.replay(store).await;
        let probe = match refused() {
            Some(why) => Err(why),
            None => match tokio::time::timeout(PROBE_TIMEOUT, store.probe_write()).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(lifeline_types::error_chain(&e)),
                Err(_) => Err(format!("a write took over {PROBE_TIMEOUT:?}")),
            },
        };
        match probe {
            Err(why) => {
                wal.note_refusal(Some(why.clone()));
                let waiting = match replay.waiting {
                    0 => String::new(),
                    n => format!("; {n} action outcome(s) wait in {}", wal.dir().display()),
                };
                Some(format!(
                    "actions cannot be recorded: the store {} refuses writes: {why}{waiting}",
                    store.location()
                ))
            }
            Ok(()) if replay.waiting > 0 => Some(format!(
                "{} action outcome(s) wait in {} to be recorded: {}",
                replay.waiting,
                wal.dir().display(),
                replay.error.unwrap_or_default()
            )),
            Ok(()) => {
                wal.note_refusal(None);
                None
            }
        }
    }
}

/// The injected refusal of the `test-hooks` build, else none.
fn refused() -> Option<String> {
    #[cfg(feature = "test-hooks")]
    return crate::hooks::recording_refused();
    #[cfg(not(feature = "test-hooks"))]
    None
}

/// Replays kept outcomes (when there are any); a request whose outcome still waits in its slot is answered
/// from there, with the warning.
pub(crate) async fn kept_first<T>(
    l: &Lifeline,
    store: &Store,
    request_id: &str,
    retry: &str,
) -> Option<Acted<T>> {
    let wal = l.outcome_wal();
    if wal.waiting() > 0 {
        wal.replay(store).await;
    }
    let (_, kept) = wal.kept_request(request_id)?;
    let mut outcome = kept.detail;
    if let serde_json::Value::Object(m) = &mut outcome {
        m.insert("recording".into(), "delayed".into());
        m.insert("warning".into(), delayed_warning(retry, &kept.why, wal.dir()).into());
    }
    Some(Acted::Replayed { request_id: request_id.into(), outcome, coalesced: false })
}

/// The request's slot, before it acts. Without one nothing is done.
pub(crate) async fn reserve(
    l: &Lifeline,
    request_id: &str,
    target: &str,
    action: lifeline_types::AuditAction,
) -> Result<Slot> {
    let pending = Pending::Request {
        request_id: request_id.into(),
        target: target.into(),
        action: action.as_str().into(),
    };
    l.outcome_wal().reserve(pending).await.map_err(|e| EngineError::AuditUnavailable {
        what: format!("{action} on {target}: the outcome slot cannot be written"),
        source: Box::new(e),
    })
}

/// Records the request's outcome, or keeps it in its slot when the store refuses it. The action's own
/// result decides the answer; a refused recording only adds the warning, which names `retry`, the key the
/// caller passes to get the outcome again.
pub(crate) async fn finish<T: Serialize>(
    store: &Store,
    slot: Slot,
    (request_id, retry): (&str, &str),
    stored: serde_json::Value,
    result: Result<T>,
) -> Result<Acted<T>> {
    let finished = match refused() {
        Some(why) => Err(why),
        None => store.finish_request(request_id, &stored).await.map_err(|e| lifeline_types::error_chain(&e)),
    };
    let why = match finished {
        Ok(()) => {
            slot.recorded();
            return result.map(Acted::Fresh);
        }
        Err(why) => why,
    };
    let dir = slot.dir().to_path_buf();
    let warning = match slot.keep("done", stored, &why).await {
        Ok(()) => delayed_warning(retry, &why, &dir),
        Err(e) => {
            tracing::error!(request_id, "an outcome could be neither recorded nor kept: {why}; {e}");
            format!(
                "done, but its outcome could not be recorded (store: {why}) nor kept locally ({}); request \
                 {retry}",
                lifeline_types::error_chain(&e)
            )
        }
    };
    tracing::warn!(request_id, "{warning}");
    result.map(|value| Acted::Delayed { value, request_id: request_id.into(), warning })
}

fn delayed_warning(retry: &str, why: &str, dir: &std::path::Path) -> String {
    format!(
        "done, recording delayed: the store refused the outcome ({why}); it is kept in {} and recorded when the \
         store takes writes again; a retry with request id {retry} returns it",
        dir.display()
    )
}
