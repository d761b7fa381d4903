//! The console manager: at most one BMC session per console, any number of viewers, one writer.
//!
//! Why this shape:
//! - One task per active console owns the link; viewers never touch it. Host output goes to a
//!   `broadcast` channel, which never waits for receivers: a slow viewer lags (it is told how many
//!   chunks it missed) and the BMC session never stalls.
//! - Every chunk is handed to the log writer thread before it is broadcast; markers record what
//!   Lifeline did (reconnects and the gap they cover, steals, writer changes, breaks).
//! - The link is re-opened when the BMC drops it, with backoff, and never by stealing: a console held by
//!   someone else stays `Busy` until an operator asks to steal (the caller audits that).
//! - Writing is exclusive: one viewer holds the write lock; others are read-only until they take it
//!   over explicitly (the previous writer is told).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::{ConsoleError, TransportError};
use crate::log::writer::{self, IndexUpdate, LogSender};
use crate::log::{ConsoleLogIndex, LogConfig, LogReader};
use crate::scan::{ConsoleFinding, RuleSet};
use crate::transport::{ConsoleTransport, OpenOptions, OpenReport};

mod recent;
mod run;
use run::Run;

/// Manager settings.
#[derive(Debug, Clone)]
pub struct ManagerConfig {
    /// Logs go to `<data_dir>/console/<console>/`.
    pub data_dir: PathBuf,
    pub rotate_bytes: u64,
    pub keep_files: usize,
    /// Chunks buffered per viewer before it lags.
    pub viewer_buffer: usize,
    /// How often a link must prove it is alive.
    pub keepalive: Duration,
    pub reconnect_min: Duration,
    pub reconnect_max: Duration,
    pub max_queued_log_bytes: usize,
    pub max_open_log_files: usize,
    /// Console rules every session's output is scanned with (`None`: no scanning). Findings are
    /// published on [`ConsoleManager::findings`].
    pub scan: Option<Arc<RuleSet>>,
    /// Findings buffered per subscriber before it lags (it is told how many it missed).
    pub finding_buffer: usize,
}

impl ManagerConfig {
    pub fn new(data_dir: impl Into<PathBuf>) -> ManagerConfig {
        ManagerConfig {
            data_dir: data_dir.into(),
            rotate_bytes: 8 << 20,
            keep_files: 16,
            viewer_buffer: 256,
            keepalive: Duration::from_secs(20),
            reconnect_min: Duration::from_millis(500),
            reconnect_max: Duration::from_secs(30),
            max_queued_log_bytes: 64 << 20,
            max_open_log_files: 512,
            scan: None,
            finding_buffer: 4096,
        }
    }

    pub fn log_root(&self) -> PathBuf {
        self.data_dir.join("console")
    }
}

/// Where a console's BMC session is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum ConsoleStatus {
    /// No session (nobody attached, not pinned).
    Idle,
    Connected {
        detail: String,
    },
    /// The link dropped; reconnecting with backoff.
    Reconnecting {
        reason: String,
    },
    /// Another session holds the console; not stealing on our own.
    Busy,
}

/// What viewers receive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsoleEvent {
    Data { ts: DateTime<Utc>, bytes: Bytes },
    Marker { ts: DateTime<Utc>, text: String },
    Status(ConsoleStatus),
    WriterChanged { writer: Option<String> },
}

/// How a viewer wants to attach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteMode {
    #[default]
    ReadOnly,
    /// Take the write lock if free, else fail with `WriterBusy`.
    Write,
    /// Take the write lock even from another viewer (who is told).
    TakeOver,
}

#[derive(Debug, Clone, Default)]
pub struct AttachOptions {
    /// Who (user name), for the write lock and the log.
    pub who: String,
    pub mode: WriteMode,
    /// If the BMC says another session holds the console, deactivate it and take over. The returned
    /// [`OpenReport::stole`] tells the caller to audit it.
    pub steal: bool,
}

/// Summary for listings.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ConsoleInfo {
    pub name: String,
    pub transport: String,
    pub status: ConsoleStatus,
    pub viewers: Vec<String>,
    pub writer: Option<String>,
    pub pinned: bool,
}

enum Cmd {
    Write(Bytes, oneshot::Sender<Result<(), TransportError>>),
    Break(oneshot::Sender<Result<(), TransportError>>),
    Marker(String),
    /// Retry now, stealing if busy.
    Steal(oneshot::Sender<Result<OpenReport, TransportError>>),
    Stop(oneshot::Sender<()>),
}

struct Session {
    cmds: mpsc::Sender<Cmd>,
    task: JoinHandle<()>,
}

#[derive(Default)]
struct Book {
    viewers: HashMap<u64, String>,
    writer: Option<(u64, String)>,
    pinned: bool,
    status: Option<ConsoleStatus>,
}

struct Entry {
    name: Arc<str>,
    transport: Arc<dyn ConsoleTransport>,
    events: broadcast::Sender<ConsoleEvent>,
    book: StdMutex<Book>,
    session: tokio::sync::Mutex<Option<Session>>,
    recent: StdMutex<recent::Recent>,
}

impl Entry {
    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, recent::Recent> {
        self.recent.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct Inner {
    cfg: ManagerConfig,
    consoles: StdMutex<HashMap<String, Arc<Entry>>>,
    log: LogSender,
    index: Arc<dyn ConsoleLogIndex>,
    findings: broadcast::Sender<ConsoleFinding>,
    next_viewer: AtomicU64,
    index_task: JoinHandle<()>,
    log_thread: StdMutex<Option<std::thread::JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.index_task.abort();
        let consoles = self.consoles.get_mut().unwrap_or_else(|p| p.into_inner());
        for e in consoles.values() {
            if let Ok(mut s) = e.session.try_lock()
                && let Some(s) = s.take()
            {
                s.task.abort();
            }
        }
    }
}

/// The console manager. Cheap to clone.
#[derive(Clone)]
pub struct ConsoleManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ConsoleManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleManager").field("data_dir", &self.inner.cfg.data_dir).finish()
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name.len() <= 128
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl ConsoleManager {
    /// Start the log writer and the index task. Needs a tokio runtime.
    pub fn new(cfg: ManagerConfig, index: Arc<dyn ConsoleLogIndex>) -> Result<ConsoleManager, ConsoleError> {
        let root = cfg.log_root();
        let (index_tx, mut index_rx) = mpsc::unbounded_channel();
        let log_cfg = LogConfig {
            root: root.clone(),
            rotate_bytes: cfg.rotate_bytes.max(1),
            keep_files: cfg.keep_files,
            max_queued_bytes: cfg.max_queued_log_bytes,
            max_open_files: cfg.max_open_log_files,
        };
        let (log, thread) = writer::spawn(log_cfg, index_tx).map_err(|source| {
            ConsoleError::Log(crate::error::LogError::Io { path: root.display().to_string(), source })
        })?;
        let idx = index.clone();
        let index_task = tokio::spawn(async move {
            while let Some(u) = index_rx.recv().await {
                let (console, r) = match &u {
                    IndexUpdate::Opened(e) => (e.console.clone(), idx.file_opened(e).await),
                    IndexUpdate::Closed(e) => (e.console.clone(), idx.file_closed(e).await),
                    IndexUpdate::Removed { console, seq } => {
                        (console.clone(), idx.file_removed(console, *seq).await)
                    }
                };
                if let Err(e) = r {
                    tracing::warn!(%console, error = %e, "console log index update failed");
                }
            }
        });
        let findings = broadcast::channel(cfg.finding_buffer.max(1)).0;
        Ok(ConsoleManager {
            inner: Arc::new(Inner {
                cfg,
                consoles: StdMutex::new(HashMap::new()),
                log,
                index,
                findings,
                next_viewer: AtomicU64::new(1),
                index_task,
                log_thread: StdMutex::new(Some(thread)),
            }),
        })
    }

    pub fn config(&self) -> &ManagerConfig {
        &self.inner.cfg
    }

    /// Findings from every console's output (when [`ManagerConfig::scan`] is set), in the order each
    /// console printed them. A subscriber that falls behind is told how many it missed (`Lagged`); the
    /// sessions never wait for it.
    pub fn findings(&self) -> broadcast::Receiver<ConsoleFinding> {
        self.inner.findings.subscribe()
    }

    fn consoles(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        self.inner.consoles.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn entry(&self, name: &str) -> Result<Arc<Entry>, ConsoleError> {
        self.consoles()
            .get(name)
            .cloned()
            .ok_or_else(|| ConsoleError::UnknownConsole { console: name.to_owned() })
    }

    /// Register a console (replacing nothing: a known name is an error-free no-op returning false).
    pub fn add(&self, name: &str, transport: Arc<dyn ConsoleTransport>) -> Result<bool, ConsoleError> {
        if !valid_name(name) {
            return Err(ConsoleError::BadName { console: name.to_owned() });
        }
        let mut c = self.consoles();
        if c.contains_key(name) {
            return Ok(false);
        }
        let entry = Arc::new(Entry {
            name: Arc::from(name),
            transport,
            events: broadcast::channel(self.inner.cfg.viewer_buffer.max(1)).0,
            book: StdMutex::new(Book::default()),
            session: tokio::sync::Mutex::new(None),
            recent: StdMutex::default(),
        });
        c.insert(name.to_owned(), entry);
        Ok(true)
    }

    /// Keep the console's session open (and logged) even with no viewer: what the server does for
    /// every console it manages. Returns the open report when this call opened the session.
    pub async fn start(&self, name: &str, steal: bool) -> Result<Option<OpenReport>, ConsoleError> {
        let e = self.entry(name)?;
        e.book().pinned = true;
        match self.ensure_session(&e, steal).await {
            Ok(r) => Ok(r),
            Err(err) => {
                e.book().pinned = false;
                Err(err)
            }
        }
    }

    /// Attach a viewer (opening the BMC session if none is open).
    pub async fn attach(
        &self,
        name: &str,
        opts: AttachOptions,
    ) -> Result<(Viewer, Option<OpenReport>), ConsoleError> {
        let e = self.entry(name)?;
        let id = self.inner.next_viewer.fetch_add(1, Ordering::Relaxed);
        let rx = e.events.subscribe();
        {
            let mut b = e.book();
            if opts.mode == WriteMode::Write
                && let Some((_, holder)) = &b.writer
            {
                return Err(ConsoleError::WriterBusy { console: name.to_owned(), holder: holder.clone() });
            }
            b.viewers.insert(id, opts.who.clone());
        }
        // From here on the viewer owns its registration (Drop undoes it on every error path).
        let viewer = Viewer {
            id,
            who: opts.who.clone(),
            entry: e.clone(),
            rx,
            manager: Arc::downgrade(&self.inner),
            status: e.book().status.clone(),
        };
        let report = self.ensure_session(&e, opts.steal).await?;
        if opts.mode != WriteMode::ReadOnly {
            viewer.take_write();
        }
        Ok((viewer, report))
    }

    /// Open the session if there is none; if it is `Busy` and `steal` is set, steal now.
    async fn ensure_session(&self, e: &Arc<Entry>, steal: bool) -> Result<Option<OpenReport>, ConsoleError> {
        let mut slot = e.session.lock().await;
        if let Some(s) = slot.as_ref() {
            if s.task.is_finished() {
                *slot = None;
            } else {
                if steal && e.book().status == Some(ConsoleStatus::Busy) {
                    let (tx, rx) = oneshot::channel();
                    let _ = s.cmds.send(Cmd::Steal(tx)).await;
                    let r = rx.await.map_err(|_| ConsoleError::Stopped { console: e.name.to_string() })?;
                    return r
                        .map(Some)
                        .map_err(|source| ConsoleError::Open { console: e.name.to_string(), source });
                }
                return Ok(None);
            }
        }
        let (link, report) = e
            .transport
            .open(OpenOptions { steal })
            .await
            .map_err(|source| ConsoleError::Open { console: e.name.to_string(), source })?;
        let (cmds, cmd_rx) = mpsc::channel(64);
        let run =
            Run::new(e.clone(), self.inner.log.clone(), self.inner.cfg.clone(), self.inner.findings.clone());
        let task = tokio::spawn(run.run(link, report.clone(), cmd_rx));
        *slot = Some(Session { cmds, task });
        Ok(Some(report))
    }

    /// Unpin the console and close its session (deactivating SOL) once nobody views it; with `force`,
    /// close it now even with viewers attached (they see the status go idle).
    pub async fn stop(&self, name: &str, force: bool) -> Result<(), ConsoleError> {
        let e = self.entry(name)?;
        e.book().pinned = false;
        stop_if_unused(&e, force).await;
        Ok(())
    }

    /// What the console printed at or after `since` (at most the last [`recent::RECENT_BYTES`]), for a
    /// wait that must also see output from before its viewer attached.
    pub fn output_since(&self, name: &str, since: std::time::Instant) -> Result<Vec<u8>, ConsoleError> {
        Ok(self.entry(name)?.recent().since(since))
    }

    pub fn status(&self, name: &str) -> Result<ConsoleStatus, ConsoleError> {
        Ok(self.entry(name)?.book().status.clone().unwrap_or(ConsoleStatus::Idle))
    }

    pub fn list(&self) -> Vec<ConsoleInfo> {
        let entries: Vec<Arc<Entry>> = self.consoles().values().cloned().collect();
        let mut v: Vec<ConsoleInfo> = entries
            .iter()
            .map(|e| {
                let b = e.book();
                let mut viewers: Vec<String> = b.viewers.values().cloned().collect();
                viewers.sort();
                ConsoleInfo {
                    name: e.name.to_string(),
                    transport: e.transport.describe(),
                    status: b.status.clone().unwrap_or(ConsoleStatus::Idle),
                    viewers,
                    writer: b.writer.as_ref().map(|(_, w)| w.clone()),
                    pinned: b.pinned,
                }
            })
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Read a console's log (`lifeline console log TARGET [--since T] [--follow]`).
    pub fn log(
        &self,
        name: &str,
        since: Option<DateTime<Utc>>,
        follow: bool,
    ) -> Result<LogReader, ConsoleError> {
        if !valid_name(name) {
            return Err(ConsoleError::BadName { console: name.to_owned() });
        }
        Ok(LogReader::new(self.inner.index.clone(), name, since, follow))
    }

    /// Write buffered log records to disk now.
    pub async fn flush_logs(&self) {
        self.inner.log.flush().await;
    }

    /// Close every session (deactivate SOL, close sessions) and flush the logs.
    pub async fn shutdown(&self) {
        let entries: Vec<Arc<Entry>> = self.consoles().values().cloned().collect();
        let mut set = tokio::task::JoinSet::new();
        for e in entries {
            e.book().pinned = false;
            set.spawn(async move { stop_if_unused(&e, true).await });
        }
        while set.join_next().await.is_some() {}
        self.flush_logs().await;
        let t = self.inner.log_thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(t);
    }
}

/// Stop the session if nobody needs it (or `force`), waiting until the link is closed.
async fn stop_if_unused(e: &Arc<Entry>, force: bool) {
    let mut slot = e.session.lock().await;
    {
        let b = e.book();
        if !force && (b.pinned || !b.viewers.is_empty()) {
            return;
        }
    }
    let Some(s) = slot.take() else { return };
    let (tx, rx) = oneshot::channel();
    if s.cmds.send(Cmd::Stop(tx)).await.is_ok() {
        // The link's close has its own timeouts (SOL deactivate, Close Session).
        let _ = tokio::time::timeout(Duration::from_secs(30), rx).await;
    }
    s.task.abort();
    e.book().status = Some(ConsoleStatus::Idle);
    let _ = e.events.send(ConsoleEvent::Status(ConsoleStatus::Idle));
}

/// What a viewer gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewerEvent {
    Data(Bytes),
    Marker(String),
    Status(ConsoleStatus),
    WriterChanged {
        writer: Option<String>,
    },
    /// This viewer was too slow and missed `missed` chunks (the session did not wait for it).
    Lagged {
        missed: u64,
    },
    /// The console was removed or the manager dropped.
    Closed,
}

/// One attached viewer. Dropping it detaches (and closes the session if it was the last user).
pub struct Viewer {
    id: u64,
    who: String,
    entry: Arc<Entry>,
    rx: broadcast::Receiver<ConsoleEvent>,
    manager: Weak<Inner>,
    status: Option<ConsoleStatus>,
}

impl std::fmt::Debug for Viewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Viewer").field("console", &self.entry.name).field("who", &self.who).finish()
    }
}

impl Viewer {
    pub fn console(&self) -> &str {
        &self.entry.name
    }
    pub fn who(&self) -> &str {
        &self.who
    }

    /// Next event. Cancel-safe.
    pub async fn recv(&mut self) -> ViewerEvent {
        match self.rx.recv().await {
            Ok(ConsoleEvent::Data { bytes, .. }) => ViewerEvent::Data(bytes),
            Ok(ConsoleEvent::Marker { text, .. }) => ViewerEvent::Marker(text),
            Ok(ConsoleEvent::Status(s)) => {
                self.status = Some(s.clone());
                ViewerEvent::Status(s)
            }
            Ok(ConsoleEvent::WriterChanged { writer }) => ViewerEvent::WriterChanged { writer },
            Err(broadcast::error::RecvError::Lagged(missed)) => ViewerEvent::Lagged { missed },
            Err(broadcast::error::RecvError::Closed) => ViewerEvent::Closed,
        }
    }

    pub fn is_writer(&self) -> bool {
        self.entry.book().writer.as_ref().is_some_and(|(id, _)| *id == self.id)
    }

    /// The current writer's name.
    pub fn writer(&self) -> Option<String> {
        self.entry.book().writer.as_ref().map(|(_, w)| w.clone())
    }

    /// Take the write lock (from whoever holds it); returns the previous holder.
    pub fn take_write(&self) -> Option<String> {
        let prev = {
            let mut b = self.entry.book();
            if b.writer.as_ref().is_some_and(|(id, _)| *id == self.id) {
                return None;
            }
            b.writer.replace((self.id, self.who.clone())).map(|(_, w)| w)
        };
        let text = match &prev {
            Some(p) => format!("{} took over writing from {p}", self.who),
            None => format!("{} is writing", self.who),
        };
        self.note(text);
        let _ = self.entry.events.send(ConsoleEvent::WriterChanged { writer: Some(self.who.clone()) });
        prev
    }

    /// Give the write lock back.
    pub fn release_write(&self) {
        let released = {
            let mut b = self.entry.book();
            if b.writer.as_ref().is_some_and(|(id, _)| *id == self.id) {
                b.writer = None;
                true
            } else {
                false
            }
        };
        if released {
            self.note(format!("{} stopped writing", self.who));
            let _ = self.entry.events.send(ConsoleEvent::WriterChanged { writer: None });
        }
    }

    fn note(&self, text: String) {
        if let Ok(s) = self.entry.session.try_lock()
            && let Some(s) = s.as_ref()
        {
            let _ = s.cmds.try_send(Cmd::Marker(text));
        }
    }

    async fn cmds(&self) -> Result<mpsc::Sender<Cmd>, ConsoleError> {
        let slot = self.entry.session.lock().await;
        slot.as_ref()
            .map(|s| s.cmds.clone())
            .ok_or_else(|| ConsoleError::Stopped { console: self.entry.name.to_string() })
    }

    fn check_writer(&self) -> Result<(), ConsoleError> {
        if self.is_writer() {
            Ok(())
        } else {
            Err(ConsoleError::NotWriter { console: self.entry.name.to_string(), viewer: self.who.clone() })
        }
    }

    /// Send keys (only the writer may).
    pub async fn write(&self, bytes: &[u8]) -> Result<(), ConsoleError> {
        self.check_writer()?;
        let cmds = self.cmds().await?;
        let (tx, rx) = oneshot::channel();
        let stopped = || ConsoleError::Stopped { console: self.entry.name.to_string() };
        cmds.send(Cmd::Write(Bytes::copy_from_slice(bytes), tx)).await.map_err(|_| stopped())?;
        rx.await
            .map_err(|_| stopped())?
            .map_err(|source| ConsoleError::Open { console: self.entry.name.to_string(), source })
    }

    /// Send a serial break (only the writer may; logged).
    pub async fn send_break(&self) -> Result<(), ConsoleError> {
        self.check_writer()?;
        let cmds = self.cmds().await?;
        let _ = cmds.send(Cmd::Marker(format!("{} sent a break", self.who))).await;
        let (tx, rx) = oneshot::channel();
        let stopped = || ConsoleError::Stopped { console: self.entry.name.to_string() };
        cmds.send(Cmd::Break(tx)).await.map_err(|_| stopped())?;
        rx.await
            .map_err(|_| stopped())?
            .map_err(|source| ConsoleError::Open { console: self.entry.name.to_string(), source })
    }

    /// Last status this viewer saw.
    pub fn last_status(&self) -> Option<&ConsoleStatus> {
        self.status.as_ref()
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let (last, was_writer) = {
            let mut b = self.entry.book();
            b.viewers.remove(&self.id);
            let was_writer = b.writer.as_ref().is_some_and(|(id, _)| *id == self.id);
            if was_writer {
                b.writer = None;
            }
            (b.viewers.is_empty() && !b.pinned, was_writer)
        };
        if was_writer {
            let _ = self.entry.events.send(ConsoleEvent::WriterChanged { writer: None });
        }
        if last
            && self.manager.upgrade().is_some()
            && let Ok(h) = tokio::runtime::Handle::try_current()
        {
            let e = self.entry.clone();
            h.spawn(async move { stop_if_unused(&e, false).await });
        }
    }
}
