//! Where the log files of a console are recorded. The store implements [`ConsoleLogIndex`] (the lead
//! wires it to the database's console log index); [`DirLogIndex`] is the file-only implementation: the
//! directory itself is the index, so the CLI can read logs without a database.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::format::parse_record;

pub type IndexError = Box<dyn std::error::Error + Send + Sync>;

/// One rotated log file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LogFileEntry {
    pub console: String,
    /// Increases with every new file of the console (also after a restart).
    pub seq: u64,
    pub path: PathBuf,
    pub first_ts: DateTime<Utc>,
    /// Time of the last record; `None` while the file is still being written.
    pub last_ts: Option<DateTime<Utc>>,
    pub bytes: u64,
    /// No more records will be appended.
    pub closed: bool,
}

/// The console log index. Calls come from one background task per manager, in file order.
#[async_trait]
pub trait ConsoleLogIndex: Send + Sync + 'static {
    async fn file_opened(&self, entry: &LogFileEntry) -> Result<(), IndexError>;
    async fn file_closed(&self, entry: &LogFileEntry) -> Result<(), IndexError>;
    /// Retention deleted the file.
    async fn file_removed(&self, console: &str, seq: u64) -> Result<(), IndexError>;
    /// Files of a console in `seq` order (readers use this to find where `--since` starts).
    async fn files(&self, console: &str) -> Result<Vec<LogFileEntry>, IndexError>;
}

/// File-only index: lists `<root>/<console>/<seq>.log`.
#[derive(Debug, Clone)]
pub struct DirLogIndex {
    root: PathBuf,
}

impl DirLogIndex {
    /// `root` is the manager's log root (`<data_dir>/console`).
    pub fn new(root: impl Into<PathBuf>) -> DirLogIndex {
        DirLogIndex { root: root.into() }
    }
}

/// `00000042.log` -> 42.
pub(crate) fn seq_of(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    name.strip_suffix(".log")?.parse().ok()
}

pub(crate) fn file_name(seq: u64) -> String {
    format!("{seq:08}.log")
}

fn list_dir(dir: &Path, console: &str) -> std::io::Result<Vec<LogFileEntry>> {
    let mut v = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(v),
        Err(e) => return Err(e),
    };
    for e in rd {
        let path = e?.path();
        let Some(seq) = seq_of(&path) else { continue };
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            // Retention removed it while we listed: it is simply not there any more.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let first = first_ts(&path)
            .unwrap_or_else(|| meta.modified().map(DateTime::<Utc>::from).unwrap_or_else(|_| Utc::now()));
        v.push(LogFileEntry {
            console: console.to_owned(),
            seq,
            path,
            first_ts: first,
            last_ts: meta.modified().ok().map(DateTime::<Utc>::from),
            bytes: meta.len(),
            closed: true,
        });
    }
    v.sort_by_key(|e| e.seq);
    if let Some(last) = v.last_mut() {
        // The newest file may still grow; its mtime is not a bound on what it will hold.
        last.closed = false;
        last.last_ts = None;
    }
    Ok(v)
}

fn first_ts(path: &Path) -> Option<DateTime<Utc>> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    std::io::BufReader::new(f).read_until(b'\n', &mut line).ok()?;
    parse_record(&line).map(|r| r.ts)
}

#[async_trait]
impl ConsoleLogIndex for DirLogIndex {
    async fn file_opened(&self, _: &LogFileEntry) -> Result<(), IndexError> {
        Ok(())
    }
    async fn file_closed(&self, _: &LogFileEntry) -> Result<(), IndexError> {
        Ok(())
    }
    async fn file_removed(&self, _: &str, _: u64) -> Result<(), IndexError> {
        Ok(())
    }
    async fn files(&self, console: &str) -> Result<Vec<LogFileEntry>, IndexError> {
        let dir = self.root.join(console);
        let console = console.to_owned();
        let v = tokio::task::spawn_blocking(move || list_dir(&dir, &console)).await??;
        Ok(v)
    }
}
