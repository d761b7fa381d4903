//! Reading a console's log back: `lifeline console log TARGET [--since T] [--follow]`.
//!
//! Files come from the index (so `--since` skips whole files that ended before T), records are parsed
//! leniently (a damaged line is skipped, not fatal), and `--follow` tails the newest file and moves on
//! when rotation starts the next one, like `tail -F`.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::format::{LogRecord, parse_record};
use super::index::{ConsoleLogIndex, LogFileEntry};
use crate::error::LogError;

/// An async iterator over a console's records.
pub struct LogReader {
    index: Arc<dyn ConsoleLogIndex>,
    console: String,
    since: Option<DateTime<Utc>>,
    follow: bool,
    poll: Duration,
    /// Highest seq read to its end.
    done: u64,
    current: Option<(u64, String, BufReader<tokio::fs::File>)>,
    partial: Vec<u8>,
}

impl std::fmt::Debug for LogReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogReader").field("console", &self.console).field("follow", &self.follow).finish()
    }
}

impl LogReader {
    pub fn new(
        index: Arc<dyn ConsoleLogIndex>,
        console: impl Into<String>,
        since: Option<DateTime<Utc>>,
        follow: bool,
    ) -> LogReader {
        LogReader {
            index,
            console: console.into(),
            since,
            follow,
            poll: Duration::from_millis(200),
            done: 0,
            current: None,
            partial: Vec::new(),
        }
    }

    /// How often `follow` looks for new data.
    pub fn poll_every(mut self, d: Duration) -> Self {
        self.poll = d;
        self
    }

    async fn files(&self) -> Result<Vec<LogFileEntry>, LogError> {
        self.index
            .files(&self.console)
            .await
            .map_err(|source| LogError::Index { console: self.console.clone(), source })
    }

    /// The next record at or after `since`; `None` at the end (never, when following).
    pub async fn next(&mut self) -> Option<Result<LogRecord, LogError>> {
        loop {
            if self.current.is_none() {
                let files = match self.files().await {
                    Ok(f) => f,
                    Err(e) => return Some(Err(e)),
                };
                let since = self.since;
                let next = files.into_iter().find(|f| {
                    f.seq > self.done
                        && !(f.closed && since.is_some_and(|s| f.last_ts.is_some_and(|l| l < s)))
                });
                match next {
                    Some(f) => {
                        let path = f.path.display().to_string();
                        match tokio::fs::File::open(&f.path).await {
                            Ok(file) => self.current = Some((f.seq, path, BufReader::new(file))),
                            // Retention removed it between listing and opening: go on.
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.done = f.seq,
                            Err(source) => return Some(Err(LogError::Io { path, source })),
                        }
                        continue;
                    }
                    None if self.follow => {
                        tokio::time::sleep(self.poll).await;
                        continue;
                    }
                    None => return None,
                }
            }
            let Some((seq, path, reader)) = self.current.as_mut() else { continue };
            let n = match reader.read_until(b'\n', &mut self.partial).await {
                Ok(n) => n,
                Err(source) => return Some(Err(LogError::Io { path: path.clone(), source })),
            };
            let seq = *seq;
            if n > 0 && self.partial.last() == Some(&b'\n') {
                let line = std::mem::take(&mut self.partial);
                match parse_record(&line) {
                    Some(r) if self.since.is_none_or(|s| r.ts >= s) => return Some(Ok(r)),
                    _ => continue,
                }
            }
            // End of this file (or a line still being written).
            let newer = match self.files().await {
                Ok(f) => f.iter().any(|f| f.seq > seq),
                Err(e) => return Some(Err(e)),
            };
            if newer {
                // Rotation happened: the writer finished this file with whole lines.
                self.partial.clear();
                self.done = seq;
                self.current = None;
            } else if self.follow {
                tokio::time::sleep(self.poll).await;
            } else {
                return None;
            }
        }
    }
}
