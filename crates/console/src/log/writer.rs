//! The log writer: one OS thread per manager owns every console's current file.
//!
//! Why a thread: file writes are blocking I/O and must never run on (or stall) the runtime that carries
//! BMC sessions; one thread batching thousands of consoles' records costs far less than a blocking
//! task per write. Sessions hand records over without waiting; the queue is bounded in bytes, and
//! what does not fit is counted by the session and noted in the log as an overrun (never silently).
//! Files rotate by size; retention keeps the newest `keep_files` per console; the index hears about
//! every opened, closed and removed file through an async task.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc as std_mpsc;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;

use super::format::{LogRecord, encode_record};
use super::index::{LogFileEntry, file_name, seq_of};

/// Rotation and retention.
#[derive(Debug, Clone)]
pub struct LogConfig {
    /// `<data_dir>/console`.
    pub root: PathBuf,
    /// Start a new file once the current one reaches this size.
    pub rotate_bytes: u64,
    /// Files kept per console (oldest deleted first).
    pub keep_files: usize,
    /// Bytes queued for the writer thread before sessions start counting overruns.
    pub max_queued_bytes: usize,
    /// Open file handles kept (least recently written closed first).
    pub max_open_files: usize,
}

pub(crate) enum Msg {
    Record {
        console: Arc<str>,
        rec: LogRecord,
    },
    /// Flush everything, then answer (tests, shutdown, `log --follow` freshness).
    Flush(std_mpsc::SyncSender<()>),
}

/// What the index task is told.
#[derive(Debug)]
pub(crate) enum IndexUpdate {
    Opened(LogFileEntry),
    Closed(LogFileEntry),
    Removed { console: String, seq: u64 },
}

/// Handle used by sessions. Dropping the last one stops the thread after it drained the queue.
#[derive(Clone)]
pub(crate) struct LogSender {
    tx: std_mpsc::Sender<Msg>,
    queued: Arc<AtomicUsize>,
    max: usize,
}

impl LogSender {
    /// Queue a record; `false` (record dropped) when the writer is that far behind.
    pub(crate) fn record(&self, console: &Arc<str>, rec: LogRecord) -> bool {
        let n = rec.data.len() + 48;
        if self.queued.load(Ordering::Relaxed) + n > self.max {
            return false;
        }
        self.queued.fetch_add(n, Ordering::Relaxed);
        self.tx.send(Msg::Record { console: console.clone(), rec }).is_ok()
    }

    /// Flush all files (blocking wait on a helper thread, so callable from async code).
    pub(crate) async fn flush(&self) {
        let (tx, rx) = std_mpsc::sync_channel(1);
        if self.tx.send(Msg::Flush(tx)).is_ok() {
            let _ = tokio::task::spawn_blocking(move || rx.recv()).await;
        }
    }
}

/// Start the writer thread. Index updates go to `index_tx`.
pub(crate) fn spawn(
    cfg: LogConfig,
    index_tx: mpsc::UnboundedSender<IndexUpdate>,
) -> std::io::Result<(LogSender, std::thread::JoinHandle<()>)> {
    std::fs::create_dir_all(&cfg.root)?;
    let (tx, rx) = std_mpsc::channel();
    let queued = Arc::new(AtomicUsize::new(0));
    let q = queued.clone();
    let max = cfg.max_queued_bytes;
    let thread = std::thread::Builder::new()
        .name("console-log".into())
        .spawn(move || Writer { cfg, files: HashMap::new(), index_tx, clock: 0, open: 0 }.run(rx, q))?;
    Ok((LogSender { tx, queued, max }, thread))
}

struct ConsoleFile {
    seq: u64,
    path: PathBuf,
    out: Option<BufWriter<File>>,
    size: u64,
    first_ts: DateTime<Utc>,
    last_ts: DateTime<Utc>,
    last_used: u64,
    dirty: bool,
}

struct Writer {
    cfg: LogConfig,
    files: HashMap<Arc<str>, ConsoleFile>,
    index_tx: mpsc::UnboundedSender<IndexUpdate>,
    clock: u64,
    /// Files with an open handle.
    open: usize,
}

impl Writer {
    fn run(mut self, rx: std_mpsc::Receiver<Msg>, queued: Arc<AtomicUsize>) {
        let mut line = Vec::with_capacity(4096);
        while let Ok(first) = rx.recv() {
            let mut next = Some(first);
            let mut acks = Vec::new();
            // Drain what is queued, then flush once: one write syscall per console per batch.
            let mut batch = 0;
            while let Some(msg) = next.take() {
                match msg {
                    Msg::Record { console, rec } => {
                        queued.fetch_sub(rec.data.len() + 48, Ordering::Relaxed);
                        line.clear();
                        encode_record(&rec, &mut line);
                        if let Err(e) = self.write(&console, &rec, &line) {
                            tracing::warn!(%console, error = %e, "console log write failed");
                        }
                    }
                    Msg::Flush(ack) => acks.push(ack),
                }
                batch += 1;
                if batch < 4096 {
                    next = rx.try_recv().ok();
                }
            }
            self.flush_dirty();
            for a in acks {
                let _ = a.send(());
            }
        }
        // Sender gone: close every file (the index hears they are closed).
        let names: Vec<Arc<str>> = self.files.keys().cloned().collect();
        for n in names {
            self.close(&n);
        }
    }

    fn write(&mut self, console: &Arc<str>, rec: &LogRecord, line: &[u8]) -> std::io::Result<()> {
        self.clock += 1;
        let clock = self.clock;
        if !self.files.contains_key(console) {
            if self.open >= self.cfg.max_open_files.max(1) {
                self.evict_lru();
            }
            let f = self.new_file(console, rec.ts, None)?;
            self.files.insert(console.clone(), f);
        }
        let needs_open = self.files.get(console).is_some_and(|f| f.out.is_none());
        if needs_open && self.open >= self.cfg.max_open_files.max(1) {
            self.evict_lru();
        }
        let Some(f) = self.files.get_mut(console) else { return Ok(()) };
        if f.out.is_none() {
            f.out = Some(BufWriter::new(OpenOptions::new().append(true).open(&f.path)?));
            self.open += 1;
        }
        if let Some(out) = f.out.as_mut() {
            out.write_all(line)?;
        }
        f.size += line.len() as u64;
        f.last_ts = rec.ts;
        f.last_used = clock;
        f.dirty = true;
        if f.size >= self.cfg.rotate_bytes {
            let prev = f.seq;
            self.close(console);
            let nf = self.new_file(console, rec.ts, Some(prev))?;
            self.files.insert(console.clone(), nf);
        }
        Ok(())
    }

    fn evict_lru(&mut self) {
        let victim = self
            .files
            .iter()
            .filter(|(_, f)| f.out.is_some())
            .min_by_key(|(_, f)| f.last_used)
            .map(|(k, _)| k.clone());
        if let Some(v) = victim
            && let Some(f) = self.files.get_mut(&v)
            && let Some(mut out) = f.out.take()
        {
            let _ = out.flush();
            f.dirty = false;
            self.open -= 1;
        }
    }

    fn flush_dirty(&mut self) {
        for (name, f) in self.files.iter_mut().filter(|(_, f)| f.dirty) {
            f.dirty = false;
            if let Some(out) = f.out.as_mut()
                && let Err(e) = out.flush()
            {
                tracing::warn!(console = %name, error = %e, "console log flush failed");
            }
        }
    }

    /// A fresh file after the newest existing one (a restart never appends to an old file).
    fn new_file(
        &mut self,
        console: &str,
        ts: DateTime<Utc>,
        prev: Option<u64>,
    ) -> std::io::Result<ConsoleFile> {
        let dir = self.cfg.root.join(console);
        std::fs::create_dir_all(&dir)?;
        let existing = existing_seqs(&dir)?;
        let seq = existing.last().copied().max(prev).unwrap_or(0) + 1;
        let path = dir.join(file_name(seq));
        let out = OpenOptions::new().create(true).append(true).open(&path)?;
        let entry = LogFileEntry {
            console: console.to_owned(),
            seq,
            path: path.clone(),
            first_ts: ts,
            last_ts: None,
            bytes: 0,
            closed: false,
        };
        let _ = self.index_tx.send(IndexUpdate::Opened(entry));
        // Retention: keep the newest keep_files including the new one.
        let keep = self.cfg.keep_files.max(1);
        let mut all = existing;
        all.push(seq);
        if all.len() > keep {
            for old in &all[..all.len() - keep] {
                let p = dir.join(file_name(*old));
                match std::fs::remove_file(&p) {
                    Ok(()) => {
                        let _ = self
                            .index_tx
                            .send(IndexUpdate::Removed { console: console.to_owned(), seq: *old });
                    }
                    Err(e) => tracing::warn!(path = %p.display(), error = %e, "console log retention"),
                }
            }
        }
        self.open += 1;
        Ok(ConsoleFile {
            seq,
            path,
            out: Some(BufWriter::new(out)),
            size: 0,
            first_ts: ts,
            last_ts: ts,
            last_used: self.clock,
            dirty: false,
        })
    }

    fn close(&mut self, console: &Arc<str>) {
        let Some(mut f) = self.files.remove(console) else { return };
        if let Some(mut out) = f.out.take() {
            let _ = out.flush();
            self.open -= 1;
        }
        let entry = LogFileEntry {
            console: console.to_string(),
            seq: f.seq,
            path: f.path,
            first_ts: f.first_ts,
            last_ts: Some(f.last_ts),
            bytes: f.size,
            closed: true,
        };
        let _ = self.index_tx.send(IndexUpdate::Closed(entry));
    }
}

fn existing_seqs(dir: &Path) -> std::io::Result<Vec<u64>> {
    let mut v: Vec<u64> =
        std::fs::read_dir(dir)?.filter_map(|e| e.ok().and_then(|e| seq_of(&e.path()))).collect();
    v.sort_unstable();
    Ok(v)
}
