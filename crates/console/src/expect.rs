//! The expect engine: a `vt100` screen model of the console plus the raw stream, so a script can wait
//! for text on the *screen* (what an operator sees after cursor movement and redraws, e.g. which GRUB
//! entry is highlighted) or in the *stream* (a regex over bytes as they arrived), send keys and control
//! sequences, with timeouts, and keep a transcript of everything.
//!
//! Runbooks use [`Step`] lists (serializable); Rust code calls the methods directly.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use regex::Regex;
use regex::bytes::Regex as BytesRegex;
use tokio::time::Instant;

use crate::csi_clamp::CsiClamp;
use crate::error::{ConsoleError, TransportError};
use crate::manager::{Viewer, ViewerEvent};
use crate::transport::{ConsoleLink, LinkEvent};
use crate::utf8_carry::Utf8Carry;

/// Screen size of the model (what a serial console usually is).
pub const ROWS: u16 = 24;
pub const COLS: u16 = 80;
/// Unmatched stream bytes kept for stream patterns.
const STREAM_KEEP: usize = 256 * 1024;

/// Something that carries console bytes both ways: a manager [`Viewer`] (must hold the write lock to
/// send) or a raw [`ConsoleLink`].
#[async_trait]
pub trait ConsoleIo: Send {
    /// Next bytes from the console; `None` when it is gone.
    async fn recv_bytes(&mut self) -> Option<Bytes>;
    async fn send_bytes(&mut self, data: &[u8]) -> Result<(), ConsoleError>;
    async fn send_break(&mut self) -> Result<(), ConsoleError>;
}

#[async_trait]
impl ConsoleIo for Viewer {
    async fn recv_bytes(&mut self) -> Option<Bytes> {
        loop {
            match self.recv().await {
                ViewerEvent::Data(b) => return Some(b),
                ViewerEvent::Closed => return None,
                _ => continue,
            }
        }
    }
    async fn send_bytes(&mut self, data: &[u8]) -> Result<(), ConsoleError> {
        self.write(data).await
    }
    async fn send_break(&mut self) -> Result<(), ConsoleError> {
        Viewer::send_break(self).await
    }
}

/// A console read first from output it printed before (the manager's recent output), then live: a wait
/// started after a power cycle still sees a prompt printed while it was attaching.
pub struct Primed<C> {
    first: Option<Bytes>,
    pub io: C,
}

impl<C> Primed<C> {
    pub fn new(first: Vec<u8>, io: C) -> Primed<C> {
        Primed { first: (!first.is_empty()).then(|| Bytes::from(first)), io }
    }
}

#[async_trait]
impl<C: ConsoleIo> ConsoleIo for Primed<C> {
    async fn recv_bytes(&mut self) -> Option<Bytes> {
        match self.first.take() {
            Some(b) => Some(b),
            None => self.io.recv_bytes().await,
        }
    }
    async fn send_bytes(&mut self, data: &[u8]) -> Result<(), ConsoleError> {
        self.io.send_bytes(data).await
    }
    async fn send_break(&mut self) -> Result<(), ConsoleError> {
        self.io.send_break().await
    }
}

/// A raw link (no manager): for tools and tests that own the session.
pub struct LinkIo {
    pub console: String,
    pub link: Box<dyn ConsoleLink>,
}

impl std::fmt::Debug for LinkIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkIo").field("console", &self.console).finish()
    }
}

fn link_err(console: &str) -> impl FnOnce(TransportError) -> ConsoleError + '_ {
    move |source| ConsoleError::Open { console: console.to_owned(), source }
}

#[async_trait]
impl ConsoleIo for LinkIo {
    async fn recv_bytes(&mut self) -> Option<Bytes> {
        loop {
            match self.link.recv().await {
                LinkEvent::Data(b) => return Some(b),
                LinkEvent::BreakDetected => continue,
                LinkEvent::Closed { .. } => return None,
            }
        }
    }
    async fn send_bytes(&mut self, data: &[u8]) -> Result<(), ConsoleError> {
        self.link.send(data).await.map_err(link_err(&self.console))
    }
    async fn send_break(&mut self) -> Result<(), ConsoleError> {
        self.link.send_break().await.map_err(link_err(&self.console))
    }
}

/// Named keys (what terminals send for them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Key {
    Enter,
    Esc,
    Up,
    Down,
    Left,
    Right,
    Tab,
    Backspace,
    CtrlC,
    CtrlD,
    CtrlU,
    Space,
    F2,
    F12,
}

impl Key {
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Key::Enter => b"\r",
            Key::Esc => b"\x1b",
            Key::Up => b"\x1b[A",
            Key::Down => b"\x1b[B",
            Key::Right => b"\x1b[C",
            Key::Left => b"\x1b[D",
            Key::Tab => b"\t",
            Key::Backspace => b"\x7f",
            Key::CtrlC => b"\x03",
            Key::CtrlD => b"\x04",
            Key::CtrlU => b"\x15",
            Key::Space => b" ",
            Key::F2 => b"\x1bOQ",
            Key::F12 => b"\x1b[24~",
        }
    }
}

/// Where a pattern is looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum On {
    /// The bytes received since the last stream match (consumed up to the end of a match).
    #[default]
    Stream,
    /// The current screen contents (not consumed).
    Screen,
}

/// A pattern to wait for.
#[derive(Debug, Clone)]
pub enum Pattern {
    Stream(BytesRegex),
    Screen(Regex),
}

impl Pattern {
    /// Build from a regex string. Invalid regexes are reported by the caller as step errors.
    pub fn new(on: On, re: &str) -> Result<Pattern, regex::Error> {
        Ok(match on {
            On::Stream => Pattern::Stream(BytesRegex::new(re)?),
            On::Screen => Pattern::Screen(Regex::new(re)?),
        })
    }
    pub fn stream(re: &str) -> Pattern {
        Pattern::Stream(
            BytesRegex::new(re).unwrap_or_else(|_| BytesRegex::new(&regex::escape(re)).expect("escaped")),
        )
    }
    pub fn screen(re: &str) -> Pattern {
        Pattern::Screen(Regex::new(re).unwrap_or_else(|_| Regex::new(&regex::escape(re)).expect("escaped")))
    }
    fn describe(&self) -> String {
        match self {
            Pattern::Stream(r) => format!("stream /{}/", r.as_str()),
            Pattern::Screen(r) => format!("screen /{}/", r.as_str()),
        }
    }
}

/// What matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// Index in the patterns given to `expect_any`.
    pub index: usize,
    pub text: String,
}

/// One transcript line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TranscriptEntry {
    pub ts: DateTime<Utc>,
    pub dir: Dir,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dir {
    /// From the console.
    In,
    /// Sent by the script.
    Out,
    /// The script's own note (what it matched, what it decided).
    Note,
}

#[derive(Debug, thiserror::Error)]
pub enum ExpectError {
    #[error("{console}: none of [{patterns}] seen within {}; screen ends with: {tail:?}", lifeline_types::Human(*after))]
    Timeout { console: String, patterns: String, after: Duration, tail: String },
    #[error("{console}: the console closed while waiting for [{patterns}]")]
    Closed { console: String, patterns: String },
    #[error("{console}: sending failed")]
    Send {
        console: String,
        #[source]
        source: ConsoleError,
    },
    #[error("{console}: bad pattern {pattern:?}")]
    BadPattern {
        console: String,
        pattern: String,
        #[source]
        source: regex::Error,
    },
    #[error("{console}: {what}")]
    Profile { console: String, what: String },
}

/// The engine over one console.
pub struct Expect<C: ConsoleIo> {
    console: String,
    io: C,
    parser: vt100::Parser,
    /// Bounds the screen model's work per control sequence (see [`CsiClamp`]).
    clamp: CsiClamp,
    /// What the clamp passes on, reused between reads.
    screen_bytes: Vec<u8>,
    /// A character a read cut in two waits for the next read (see [`Utf8Carry`]).
    carry: Utf8Carry,
    stream: Vec<u8>,
    transcript: Vec<TranscriptEntry>,
    closed: bool,
}

impl<C: ConsoleIo> std::fmt::Debug for Expect<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expect").field("console", &self.console).finish()
    }
}

/// Printable form of bytes for the transcript.
fn show(b: &[u8]) -> String {
    let mut s = String::new();
    for c in String::from_utf8_lossy(b).chars() {
        match c {
            '\r' => s.push_str("\\r"),
            '\n' => s.push_str("\\n"),
            '\x1b' => s.push_str("\\e"),
            c if c.is_control() => s.push_str(&format!("\\x{:02x}", c as u32)),
            c => s.push(c),
        }
    }
    s
}

impl<C: ConsoleIo> Expect<C> {
    pub fn new(console: impl Into<String>, io: C) -> Expect<C> {
        Expect {
            console: console.into(),
            io,
            parser: vt100::Parser::new(ROWS, COLS, 0),
            clamp: CsiClamp::new(ROWS, COLS),
            carry: Utf8Carry::default(),
            screen_bytes: Vec::new(),
            stream: Vec::new(),
            transcript: Vec::new(),
            closed: false,
        }
    }

    pub fn console(&self) -> &str {
        &self.console
    }

    /// The underlying I/O (e.g. to hand a viewer back).
    pub fn into_inner(self) -> C {
        self.io
    }

    /// The screen as text (rows joined by `\n`, trailing blanks trimmed).
    pub fn screen(&self) -> String {
        self.parser.screen().contents()
    }

    /// Screen rows (full width, so columns line up).
    pub fn rows(&self) -> Vec<String> {
        self.parser.screen().rows(0, COLS).collect()
    }

    /// The last non-empty screen row (what a prompt looks like).
    pub fn last_line(&self) -> String {
        self.rows().into_iter().rev().find(|r| !r.trim().is_empty()).unwrap_or_default().trim_end().to_owned()
    }

    pub fn transcript(&self) -> &[TranscriptEntry] {
        &self.transcript
    }

    /// The transcript as text, one entry per line (`<` in, `>` out, `#` note).
    pub fn transcript_text(&self) -> String {
        self.transcript
            .iter()
            .map(|e| {
                let d = match e.dir {
                    Dir::In => '<',
                    Dir::Out => '>',
                    Dir::Note => '#',
                };
                format!("{} {d} {}\n", e.ts.format("%H:%M:%S%.3f"), e.text)
            })
            .collect()
    }

    pub fn note(&mut self, text: impl Into<String>) {
        self.transcript.push(TranscriptEntry { ts: Utc::now(), dir: Dir::Note, text: text.into() });
    }

    fn ingest(&mut self, b: &[u8]) {
        self.screen_bytes.clear();
        self.clamp.feed(b, &mut self.screen_bytes);
        self.carry.apply(&mut self.screen_bytes);
        self.parser.process(&self.screen_bytes);
        self.stream.extend_from_slice(b);
        if self.stream.len() > STREAM_KEEP {
            let cut = self.stream.len() - STREAM_KEEP / 2;
            self.stream.drain(..cut);
        }
        self.transcript.push(TranscriptEntry { ts: Utc::now(), dir: Dir::In, text: show(b) });
    }

    /// Check patterns against what is already there (consuming on a stream match).
    fn check(&mut self, patterns: &[Pattern]) -> Option<Match> {
        for (index, p) in patterns.iter().enumerate() {
            match p {
                Pattern::Stream(re) => {
                    if let Some(m) = re.find(&self.stream) {
                        let text = String::from_utf8_lossy(m.as_bytes()).into_owned();
                        let end = m.end();
                        self.stream.drain(..end);
                        return Some(Match { index, text });
                    }
                }
                Pattern::Screen(re) => {
                    let screen = self.screen();
                    if let Some(m) = re.find(&screen) {
                        return Some(Match { index, text: m.as_str().to_owned() });
                    }
                }
            }
        }
        None
    }

    /// Wait for the first of `patterns` (checked against what was already received first).
    pub async fn expect_any(&mut self, patterns: &[Pattern], within: Duration) -> Result<Match, ExpectError> {
        let deadline = Instant::now() + within;
        let names = || patterns.iter().map(Pattern::describe).collect::<Vec<_>>().join(", ");
        loop {
            if let Some(m) = self.check(patterns) {
                self.note(format!("matched {}: {:?}", patterns[m.index].describe(), m.text));
                return Ok(m);
            }
            if self.closed {
                return Err(ExpectError::Closed { console: self.console.clone(), patterns: names() });
            }
            match tokio::time::timeout_at(deadline, self.io.recv_bytes()).await {
                Ok(Some(b)) => self.ingest(&b),
                Ok(None) => self.closed = true,
                Err(_) => {
                    let screen = self.screen();
                    let tail: String =
                        screen.chars().rev().take(300).collect::<Vec<_>>().into_iter().rev().collect();
                    self.note(format!("timeout waiting for {}", names()));
                    return Err(ExpectError::Timeout {
                        console: self.console.clone(),
                        patterns: names(),
                        after: within,
                        tail,
                    });
                }
            }
        }
    }

    pub async fn expect(&mut self, pattern: Pattern, within: Duration) -> Result<Match, ExpectError> {
        self.expect_any(std::slice::from_ref(&pattern), within).await
    }

    /// Read whatever arrives for `d` (keeps the screen current without waiting for anything).
    pub async fn pump(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        while !self.closed {
            match tokio::time::timeout_at(deadline, self.io.recv_bytes()).await {
                Ok(Some(b)) => self.ingest(&b),
                Ok(None) => self.closed = true,
                Err(_) => return,
            }
        }
    }

    /// Wait for the next chunk from the console (at most `within`); `false` on timeout or close.
    pub async fn read_some(&mut self, within: Duration) -> bool {
        if self.closed {
            return false;
        }
        match tokio::time::timeout(within, self.io.recv_bytes()).await {
            Ok(Some(b)) => {
                self.ingest(&b);
                true
            }
            Ok(None) => {
                self.closed = true;
                false
            }
            Err(_) => false,
        }
    }

    /// Whether the console went away.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The unmatched output since the last [`Expect::clear_stream`], as text.
    pub fn stream_text(&self) -> String {
        String::from_utf8_lossy(&self.stream).into_owned()
    }

    /// Drop unmatched stream bytes (so the next stream match only sees new output).
    pub fn clear_stream(&mut self) {
        self.stream.clear();
    }

    pub async fn send(&mut self, data: &[u8]) -> Result<(), ExpectError> {
        self.transcript.push(TranscriptEntry { ts: Utc::now(), dir: Dir::Out, text: show(data) });
        self.io
            .send_bytes(data)
            .await
            .map_err(|source| ExpectError::Send { console: self.console.clone(), source })
    }

    pub async fn send_key(&mut self, key: Key) -> Result<(), ExpectError> {
        self.send(key.bytes()).await
    }

    pub async fn send_break(&mut self) -> Result<(), ExpectError> {
        self.note("break");
        self.io
            .send_break()
            .await
            .map_err(|source| ExpectError::Send { console: self.console.clone(), source })
    }

    /// Run a step list (runbooks). Stops at the first failing step.
    pub async fn run_steps(&mut self, steps: &[Step]) -> Result<(), StepError> {
        for (i, step) in steps.iter().enumerate() {
            let r = match step {
                Step::Expect { pattern, on, timeout_ms } => match Pattern::new(*on, pattern) {
                    Ok(p) => self.expect(p, Duration::from_millis(*timeout_ms)).await.map(|_| ()),
                    Err(source) => Err(ExpectError::BadPattern {
                        console: self.console.clone(),
                        pattern: pattern.clone(),
                        source,
                    }),
                },
                Step::Send { text } => self.send(text.as_bytes()).await,
                Step::Key { key, count } => {
                    let mut r = Ok(());
                    for _ in 0..(*count).max(1) {
                        r = self.send_key(*key).await;
                        if r.is_err() {
                            break;
                        }
                    }
                    r
                }
                Step::Sleep { ms } => {
                    self.pump(Duration::from_millis(*ms)).await;
                    Ok(())
                }
                Step::Break => self.send_break().await,
            };
            r.map_err(|source| StepError { index: i, source })?;
        }
        Ok(())
    }
}

/// A runbook step.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "schema", schema(as = ConsoleStep))]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Step {
    Expect {
        pattern: String,
        #[serde(default)]
        on: On,
        #[serde(default = "default_timeout")]
        timeout_ms: u64,
    },
    Send {
        text: String,
    },
    Key {
        key: Key,
        #[serde(default = "one")]
        count: u32,
    },
    Sleep {
        ms: u64,
    },
    Break,
}

fn default_timeout() -> u64 {
    30_000
}
fn one() -> u32 {
    1
}

#[derive(Debug, thiserror::Error)]
#[error("step {index} failed")]
pub struct StepError {
    pub index: usize,
    #[source]
    pub source: ExpectError,
}
