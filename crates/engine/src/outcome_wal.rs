//! Outcome first, then the answer. An action whose BMC command was sent must never be answered "not done"
//! because the store could not take its outcome (a full disk, a database outage mid-action): a client told
//! "not done" retries, and the node is cycled twice.
//!
//! So before the command is sent, a *slot* is written and fsynced in the data directory
//! (`pending-outcomes/`), already as large as any outcome it will hold. When the store refuses the outcome,
//! it is written into that slot in place (over blocks already allocated, which needs no free space) and
//! fsynced, and the answer says "done, recording delayed". When the store took the outcome, the slot is
//! removed. Slots are replayed into the store whenever it takes writes again (before every action, at
//! `/readyz`, on start). A slot whose owner died before writing an outcome (kill -9 after sending) is
//! replayed as `interrupted` with the only honest outcome: "unknown: the process died after sending".
//!
//! A slot is a file of exactly [`SLOT_BYTES`]: one JSON document padded with spaces (JSON allows trailing
//! whitespace). Replay claims a slot by renaming it, so two processes sharing a data directory never record
//! one outcome twice.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use lifeline_store::{AuditEntry, Store};
use serde::{Deserialize, Serialize};

/// The size of every slot: far above any power, boot or reset report (a few KiB); an outcome that does not
/// fit is kept in a shortened form that says so.
pub const SLOT_BYTES: usize = 32 * 1024;

/// The folder of the data directory that holds the slots.
pub const DIR_NAME: &str = "pending-outcomes";

/// What the store did not take: the idempotency row of a request, or the outcome row of an audit intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Pending {
    /// A request of the idempotency table: its outcome is the stored answer a retry gets.
    Request { request_id: String, target: String, action: String },
    /// An audit intent row (id `intent`) whose outcome row is owed.
    Audit { intent: i64, actor: String, action: String, target: String, request_id: Option<String> },
}

/// An outcome the store refused, kept in its slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    /// The audit outcome (`ok`, `failed`, `interrupted`) or the request state (`done`, `interrupted`).
    pub outcome: String,
    /// The audit detail, or the request's stored answer.
    pub detail: serde_json::Value,
    /// Why it was not recorded at once.
    pub why: String,
    pub at_ms: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SlotDoc {
    pid: u32,
    host: String,
    since_ms: i64,
    pending: Pending,
    kept: Option<Kept>,
}

#[derive(Debug, thiserror::Error)]
pub enum WalError {
    #[error("cannot write the outcome slot {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What one replay did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Replayed {
    /// Outcomes written into the store.
    pub recorded: usize,
    /// Slots of dead owners recorded as interrupted.
    pub interrupted: usize,
    /// Outcomes still waiting (the store refused them again).
    pub waiting: usize,
    /// The store's last refusal, when one happened.
    pub error: Option<String>,
}

/// The slots of one data directory.
#[derive(Debug)]
pub struct OutcomeWal {
    dir: PathBuf,
    /// Slots of this process whose action is still running (never replayed from under it).
    live: Mutex<HashSet<PathBuf>>,
    /// The last time the store refused an outcome, and why (for `/readyz` and answers).
    last_refusal: Mutex<Option<String>>,
}

/// A reserved slot: its action may send; its outcome must be [`Slot::recorded`] or [`Slot::keep`]-ed.
#[derive(Debug)]
pub struct Slot {
    wal: Arc<OutcomeWal>,
    path: PathBuf,
    doc: SlotDoc,
    done: bool,
}

impl OutcomeWal {
    /// The slots of `data_dir`, one instance per process and folder (every context of a process shares it,
    /// so its live slots are known to each).
    pub fn for_dir(data_dir: &Path) -> Arc<OutcomeWal> {
        static ALL: std::sync::OnceLock<Mutex<std::collections::HashMap<PathBuf, Arc<OutcomeWal>>>> =
            std::sync::OnceLock::new();
        let dir = data_dir.join(DIR_NAME);
        let mut all = ALL.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
        all.entry(dir.clone())
            .or_insert_with(|| {
                Arc::new(OutcomeWal { dir, live: Mutex::default(), last_refusal: Mutex::default() })
            })
            .clone()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes and fsyncs a slot for `pending` (file and folder), before its action sends anything. Failing
    /// here refuses the action: nothing was sent.
    pub async fn reserve(self: &Arc<Self>, pending: Pending) -> Result<Slot, WalError> {
        let doc = SlotDoc {
            pid: std::process::id(),
            host: crate::lease::this_host(),
            since_ms: lifeline_store::now_ms(),
            pending,
            kept: None,
        };
        let dir = self.dir.clone();
        let path = dir.join(format!("{}.slot", uuid::Uuid::new_v4().simple()));
        let bytes = padded(&doc);
        let p = path.clone();
        blocking(move || {
            {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir)
            }
            .map_err(|source| io(&dir, source))?;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&p)
                .map_err(|source| io(&p, source))?;
            f.write_all(&bytes).and_then(|()| f.sync_all()).map_err(|source| io(&p, source))?;
            std::fs::File::open(&dir).and_then(|d| d.sync_all()).map_err(|source| io(&dir, source))
        })
        .await?;
        self.live.lock().unwrap_or_else(|e| e.into_inner()).insert(path.clone());
        Ok(Slot { wal: self.clone(), path, doc, done: false })
    }

    /// Remembers that the store refused a write (for `/readyz`); `None` when a write succeeded since.
    pub fn note_refusal(&self, why: Option<String>) {
        *self.last_refusal.lock().unwrap_or_else(|e| e.into_inner()) = why;
    }

    pub fn last_refusal(&self) -> Option<String> {
        self.last_refusal.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The kept outcome of `request_id`, if its slot still waits for the store.
    pub fn kept_request(&self, request_id: &str) -> Option<(Pending, Kept)> {
        self.read_all().into_iter().find_map(|(_, doc)| match (&doc.pending, doc.kept) {
            (Pending::Request { request_id: r, .. }, Some(k)) if r == request_id => Some((doc.pending, k)),
            _ => None,
        })
    }

    /// How many outcomes wait for the store (kept, or left by a dead owner).
    pub fn waiting(&self) -> usize {
        self.read_all().iter().filter(|(p, d)| d.kept.is_some() || self.abandoned(p, d)).count()
    }

    /// Writes every kept outcome (and every dead owner's slot, as interrupted) into the store, each slot
    /// claimed by a rename first. Stops at the first refusal: the store is still not taking writes.
    pub async fn replay(&self, store: &Store) -> Replayed {
        let mut r = Replayed::default();
        let mut slots = self.read_all();
        slots.retain(|(p, d)| d.kept.is_some() || self.abandoned(p, d));
        for (path, doc) in slots {
            if r.error.is_some() {
                r.waiting += 1;
                continue;
            }
            let claimed = path.with_extension(format!("replaying-{}", std::process::id()));
            if std::fs::rename(&path, &claimed).is_err() {
                continue; // another process took it
            }
            let (kept, interrupted) = match doc.kept.clone() {
                Some(k) => (k, false),
                None => (died_after_sending(), true),
            };
            match record(store, &doc.pending, &kept).await {
                Ok(()) => {
                    let _ = std::fs::remove_file(&claimed);
                    if interrupted {
                        r.interrupted += 1;
                    } else {
                        r.recorded += 1;
                    }
                }
                Err(e) => {
                    let _ = std::fs::rename(&claimed, &path);
                    r.waiting += 1;
                    r.error = Some(e);
                }
            }
        }
        if r.recorded + r.interrupted > 0 {
            tracing::info!(recorded = r.recorded, interrupted = r.interrupted, "delayed outcomes recorded");
        }
        if r.error.is_none() && r.recorded + r.interrupted > 0 {
            self.note_refusal(None);
        }
        r
    }

    /// Every readable slot, with the path it is known by (a claim of a dead process counts as a slot).
    fn read_all(&self) -> Vec<(PathBuf, SlotDoc)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let path = e.path();
            let ext = path.extension().and_then(|x| x.to_str()).unwrap_or_default().to_owned();
            let path = match ext.strip_prefix("replaying-").map(str::parse::<i32>) {
                Some(Ok(pid)) if !pid_alive(pid) => {
                    // A replayer died holding it: put it back.
                    let back = path.with_extension("slot");
                    if std::fs::rename(&path, &back).is_err() {
                        continue;
                    }
                    back
                }
                _ if ext == "slot" => path,
                _ => continue,
            };
            let Ok(bytes) = std::fs::read(&path) else { continue };
            match serde_json::from_slice::<SlotDoc>(&bytes) {
                Ok(doc) => out.push((path, doc)),
                Err(e) => tracing::warn!(slot = %path.display(), "unreadable outcome slot left alone: {e}"),
            }
        }
        out
    }

    /// A slot without an outcome whose owner is gone: the process died after (perhaps) sending.
    fn abandoned(&self, path: &Path, doc: &SlotDoc) -> bool {
        if doc.kept.is_some() || doc.host != crate::lease::this_host() {
            return false;
        }
        if doc.pid == std::process::id() {
            return !self.live.lock().unwrap_or_else(|e| e.into_inner()).contains(path);
        }
        !pid_alive(i32::try_from(doc.pid).unwrap_or(-1))
    }
}

impl Slot {
    pub fn pending(&self) -> &Pending {
        &self.doc.pending
    }

    /// The folder of the slots.
    pub fn dir(&self) -> &Path {
        self.wal.dir()
    }

    /// The store took the outcome: the slot goes.
    pub fn recorded(mut self) {
        self.done = true;
        self.forget();
        if let Err(e) = std::fs::remove_file(&self.path) {
            tracing::warn!(slot = %self.path.display(), "cannot remove a recorded outcome's slot: {e}");
        }
    }

    /// The store refused the outcome: it is written into the slot (in place) and fsynced, to be replayed.
    pub async fn keep(mut self, outcome: &str, detail: serde_json::Value, why: &str) -> Result<(), WalError> {
        self.done = true;
        self.doc.kept =
            Some(Kept { outcome: outcome.into(), detail, why: why.into(), at_ms: lifeline_store::now_ms() });
        self.wal.note_refusal(Some(why.into()));
        let bytes = padded(&self.doc);
        let path = self.path.clone();
        let r = blocking(move || {
            let f =
                std::fs::OpenOptions::new().write(true).open(&path).map_err(|source| io(&path, source))?;
            f.write_all_at(&bytes, 0).and_then(|()| f.sync_data()).map_err(|source| io(&path, source))
        })
        .await;
        self.forget();
        r
    }

    fn forget(&self) {
        self.wal.live.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.path);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.done {
            // The action was cancelled (its caller went away) after perhaps sending: no longer live, so the
            // next replay records it as interrupted.
            self.forget();
        }
    }
}

/// What a slot left without an outcome says: the truth is not known.
fn died_after_sending() -> Kept {
    Kept {
        outcome: crate::audit::Outcome::Interrupted.as_str().into(),
        detail: serde_json::json!({
            "outcome": "unknown: the process died after sending",
            "note": "the process stopped between sending the command and recording its outcome; check the target",
        }),
        why: "the owner died".into(),
        at_ms: lifeline_store::now_ms(),
    }
}

/// Writes one kept outcome into the store.
async fn record(store: &Store, pending: &Pending, kept: &Kept) -> Result<(), String> {
    #[cfg(feature = "test-hooks")]
    if let Some(why) = crate::hooks::recording_refused() {
        return Err(why);
    }
    let r = match pending {
        Pending::Request { request_id, .. } if kept.outcome == "interrupted" => {
            store.interrupt_request(request_id, &kept.detail).await.map(|_| ())
        }
        Pending::Request { request_id, .. } => store.finish_request(request_id, &kept.detail).await,
        Pending::Audit { intent, actor, action, target, request_id } => {
            let mut detail = kept.detail.clone();
            if let serde_json::Value::Object(m) = &mut detail {
                m.insert("intent".into(), (*intent).into());
                m.insert("recorded_late".into(), serde_json::json!({ "at_ms": kept.at_ms, "why": kept.why }));
            }
            store
                .audit(&AuditEntry {
                    actor: actor.clone(),
                    action: action.clone(),
                    target: target.clone(),
                    outcome: kept.outcome.clone(),
                    detail,
                    request_id: request_id.clone(),
                })
                .await
                .map(|_| ())
        }
    };
    r.map_err(|e| lifeline_types::error_chain(&e))
}

/// The document padded to [`SLOT_BYTES`]; an outcome too large for it is shortened, saying so.
fn padded(doc: &SlotDoc) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(doc).unwrap_or_default();
    if bytes.len() > SLOT_BYTES {
        let mut short = doc.clone();
        if let Some(k) = &mut short.kept {
            let text = k.detail.to_string();
            let cut: String = text.chars().take(SLOT_BYTES / 4).collect();
            k.detail = serde_json::json!({ "truncated": true, "start": cut });
        }
        bytes = serde_json::to_vec(&short).unwrap_or_default();
        bytes.truncate(SLOT_BYTES);
    }
    bytes.resize(SLOT_BYTES, b' ');
    bytes
}

fn io(path: &Path, source: std::io::Error) -> WalError {
    WalError::Io { path: path.to_path_buf(), source }
}

fn pid_alive(pid: i32) -> bool {
    pid > 0
        && !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        )
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, WalError> + Send + 'static,
) -> Result<T, WalError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(WalError::Io { path: PathBuf::new(), source: std::io::Error::other(e) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_one_size_whatever_it_holds() {
        let mut doc = SlotDoc {
            pid: 1,
            host: "h".into(),
            since_ms: 0,
            pending: Pending::Request {
                request_id: "r".into(),
                target: "n".into(),
                action: "power.cycle".into(),
            },
            kept: None,
        };
        assert_eq!(padded(&doc).len(), SLOT_BYTES);
        doc.kept = Some(Kept {
            outcome: "done".into(),
            detail: serde_json::json!({ "big": "x".repeat(SLOT_BYTES * 2) }),
            why: "disk full".into(),
            at_ms: 1,
        });
        let b = padded(&doc);
        assert_eq!(b.len(), SLOT_BYTES);
        let back: SlotDoc = serde_json::from_slice(&b).unwrap();
        assert_eq!(back.kept.unwrap().detail["truncated"], true);
    }

    #[tokio::test]
    async fn a_refused_outcome_waits_in_its_slot_and_is_replayed_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).await.unwrap();
        assert!(store.begin_request("r1", "n1", "power.cycle", "cli:t").await.unwrap().is_none());
        let wal = OutcomeWal::for_dir(dir.path());
        let slot = wal
            .reserve(Pending::Request {
                request_id: "r1".into(),
                target: "n1".into(),
                action: "power.cycle".into(),
            })
            .await
            .unwrap();
        // While the action runs, its slot is never replayed from under it.
        assert_eq!(wal.waiting(), 0);
        assert_eq!(wal.replay(&store).await, Replayed::default());
        slot.keep("done", serde_json::json!({ "confirmed": true }), "disk full").await.unwrap();
        assert_eq!(wal.waiting(), 1);
        assert_eq!(wal.kept_request("r1").unwrap().1.detail["confirmed"], true);
        assert_eq!(wal.last_refusal().as_deref(), Some("disk full"));
        let r = wal.replay(&store).await;
        assert_eq!((r.recorded, r.waiting), (1, 0), "{r:?}");
        let row = store.request("r1").await.unwrap().unwrap();
        assert_eq!((row.state.as_str(), row.outcome.unwrap()["confirmed"].clone()), ("done", true.into()));
        assert_eq!(wal.waiting(), 0);
        assert!(wal.last_refusal().is_none());
        assert_eq!(wal.replay(&store).await.recorded, 0);
    }

    #[tokio::test]
    async fn a_dead_owners_slot_is_recorded_as_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).await.unwrap();
        assert!(store.begin_request("r2", "n1", "power.cycle", "cli:t").await.unwrap().is_none());
        let wal = OutcomeWal::for_dir(dir.path());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        for pending in [
            Pending::Request { request_id: "r2".into(), target: "n1".into(), action: "power.cycle".into() },
            Pending::Audit {
                intent: 7,
                actor: "cli:t".into(),
                action: "power.cycle".into(),
                target: "n1".into(),
                request_id: Some("r2".into()),
            },
        ] {
            let doc =
                SlotDoc { pid: dead, host: crate::lease::this_host(), since_ms: 0, pending, kept: None };
            std::fs::create_dir_all(wal.dir()).unwrap();
            std::fs::write(wal.dir().join(format!("{}.slot", uuid::Uuid::new_v4().simple())), padded(&doc))
                .unwrap();
        }
        assert_eq!(wal.waiting(), 2);
        let r = wal.replay(&store).await;
        assert_eq!(r.interrupted, 2, "{r:?}");
        let row = store.request("r2").await.unwrap().unwrap();
        assert_eq!(row.state, "interrupted");
        assert_eq!(row.outcome.unwrap()["outcome"], "unknown: the process died after sending");
        let audit = store.audit_log(Some("n1"), 10).await.unwrap();
        assert!(
            audit.iter().any(|a| a.entry.outcome == "interrupted" && a.entry.detail["intent"] == 7),
            "{audit:?}"
        );
    }
}
