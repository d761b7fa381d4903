//! The task that owns one console's BMC session: it reads the link, logs and broadcasts every chunk, carries
//! out viewers' writes, breaks and steals, and re-opens the link with backoff when the BMC drops it. Split
//! from the manager (which books viewers and writers and starts and stops these tasks).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, mpsc, oneshot};

use super::{Cmd, ConsoleEvent, ConsoleStatus, Entry, ManagerConfig};
use crate::error::TransportError;
use crate::log::writer::LogSender;
use crate::log::{LogRecord, RecordKind};
use crate::scan::{ConsoleFinding, ConsoleScanner, Finding};
use crate::transport::{ConsoleLink, LinkEvent, OpenOptions, OpenReport};

/// The per-console session task.
pub(super) struct Run {
    entry: Arc<Entry>,
    log: LogSender,
    cfg: ManagerConfig,
    /// Bytes the log queue refused since the last successful record.
    lost_log_bytes: u64,
    /// The console as a sensor: every complete line of output, as it is logged (when configured).
    scanner: Option<ConsoleScanner>,
    findings: broadcast::Sender<ConsoleFinding>,
    found: Vec<Finding>,
}

enum Ended {
    Lost(String),
    /// Answer the stopper once the link is closed.
    Stopped(Option<oneshot::Sender<()>>),
}

impl Run {
    pub(super) fn new(
        entry: Arc<Entry>,
        log: LogSender,
        cfg: ManagerConfig,
        findings: broadcast::Sender<ConsoleFinding>,
    ) -> Run {
        let scanner = cfg.scan.clone().map(ConsoleScanner::new);
        Run { entry, log, cfg, lost_log_bytes: 0, scanner, findings, found: Vec::new() }
    }

    fn scan(&mut self, ts: DateTime<Utc>, bytes: &[u8]) {
        let Some(scanner) = self.scanner.as_mut() else { return };
        scanner.feed(ts, bytes, &mut self.found);
        for finding in self.found.drain(..) {
            tracing::debug!(console = %self.entry.name, rule = %finding.rule, line = %finding.line, "console finding");
            // No subscriber is not an error: findings are events, not state.
            let _ = self.findings.send(ConsoleFinding { console: self.entry.name.to_string(), finding });
        }
    }

    fn set_status(&self, s: ConsoleStatus) {
        let changed = {
            let mut b = self.entry.book();
            let changed = b.status.as_ref() != Some(&s);
            b.status = Some(s.clone());
            changed
        };
        if changed {
            let _ = self.entry.events.send(ConsoleEvent::Status(s));
        }
    }

    fn log(&mut self, kind: RecordKind, ts: DateTime<Utc>, data: Vec<u8>) {
        if self.lost_log_bytes > 0 {
            let note = format!("log overrun: {} bytes were not logged (disk too slow)", self.lost_log_bytes);
            let r = LogRecord { ts, kind: RecordKind::Marker, data: note.into_bytes() };
            if self.log.record(&self.entry.name, r) {
                self.lost_log_bytes = 0;
            }
        }
        let n = data.len() as u64;
        if !self.log.record(&self.entry.name, LogRecord { ts, kind, data }) {
            self.lost_log_bytes += n;
        }
    }

    fn marker(&mut self, text: String) {
        let ts = Utc::now();
        tracing::info!(console = %self.entry.name, "{text}");
        self.log(RecordKind::Marker, ts, text.clone().into_bytes());
        let _ = self.entry.events.send(ConsoleEvent::Marker { ts, text });
    }

    pub(super) async fn run(
        mut self,
        mut link: Box<dyn ConsoleLink>,
        report: OpenReport,
        mut cmds: mpsc::Receiver<Cmd>,
    ) {
        let mut text = format!("console session opened ({})", report.detail);
        if report.stole {
            text.push_str("; the previous session was deactivated (stolen)");
        }
        self.marker(text);
        self.set_status(ConsoleStatus::Connected { detail: report.detail });
        loop {
            let reason = match self.connected(&mut link, &mut cmds).await {
                Ended::Stopped(done) => {
                    let r = link.close().await;
                    self.marker(match r {
                        Ok(()) => "console session closed".into(),
                        Err(e) => format!("console session closed with an error: {e}"),
                    });
                    if let Some(done) = done {
                        let _ = done.send(());
                    }
                    return;
                }
                Ended::Lost(reason) => reason,
            };
            // What follows the gap does not continue the half line before it.
            if let Some(s) = self.scanner.as_mut() {
                s.link_lost();
            }
            let lost_at = tokio::time::Instant::now();
            self.marker(format!("console link lost: {reason}; reconnecting"));
            self.set_status(ConsoleStatus::Reconnecting { reason });
            // Courtesy close of a link already known dead: bounded short, the BMC side is likely gone.
            let _ = tokio::time::timeout(Duration::from_secs(3), link.close()).await;
            match self.reconnect(&mut cmds).await {
                Some((l, rep)) => {
                    link = l;
                    let mut text = format!(
                        "reconnected after a gap of {:.1}s ({})",
                        lost_at.elapsed().as_secs_f64(),
                        rep.detail
                    );
                    if rep.stole {
                        text.push_str("; the previous session was deactivated (stolen)");
                    }
                    self.marker(text);
                    self.set_status(ConsoleStatus::Connected { detail: rep.detail });
                }
                None => return,
            }
        }
    }

    async fn connected(&mut self, link: &mut Box<dyn ConsoleLink>, cmds: &mut mpsc::Receiver<Cmd>) -> Ended {
        let mut keepalive = tokio::time::interval(self.cfg.keepalive);
        keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        keepalive.tick().await;
        loop {
            tokio::select! {
                ev = link.recv() => match ev {
                    LinkEvent::Data(bytes) => {
                        let ts = Utc::now();
                        self.log(RecordKind::Output, ts, bytes.to_vec());
                        self.scan(ts, &bytes);
                        self.entry.recent().push(std::time::Instant::now(), bytes.clone());
                        let _ = self.entry.events.send(ConsoleEvent::Data { ts, bytes });
                    }
                    LinkEvent::BreakDetected => self.marker("the host's serial line sent a break".into()),
                    LinkEvent::Closed { reason } => return Ended::Lost(reason),
                },
                c = cmds.recv() => match c {
                    Some(Cmd::Write(b, ack)) => {
                        let r = link.send(&b).await;
                        let _ = ack.send(r);
                    }
                    Some(Cmd::Break(ack)) => {
                        let r = link.send_break().await;
                        let _ = ack.send(r);
                    }
                    Some(Cmd::Marker(t)) => self.marker(t),
                    Some(Cmd::Steal(ack)) => {
                        let detail = match self.entry.book().status.clone() {
                            Some(ConsoleStatus::Connected { detail }) => detail,
                            _ => String::new(),
                        };
                        let _ = ack.send(Ok(OpenReport { stole: false, detail }));
                    }
                    Some(Cmd::Stop(done)) => return Ended::Stopped(Some(done)),
                    None => return Ended::Stopped(None),
                },
                _ = keepalive.tick() => {
                    if let Err(e) = link.keepalive().await {
                        return Ended::Lost(format!("keepalive failed: {e}"));
                    }
                }
            }
        }
    }

    /// Re-open with backoff. Never steals unless an operator asks (Cmd::Steal). `None`: stopped.
    async fn reconnect(
        &mut self,
        cmds: &mut mpsc::Receiver<Cmd>,
    ) -> Option<(Box<dyn ConsoleLink>, OpenReport)> {
        let mut delay = self.cfg.reconnect_min;
        let mut last_error = String::new();
        let mut steal_ack: Option<oneshot::Sender<Result<OpenReport, TransportError>>> = None;
        loop {
            if steal_ack.is_none() {
                let sleep = tokio::time::sleep(delay);
                tokio::pin!(sleep);
                loop {
                    tokio::select! {
                        _ = &mut sleep => break,
                        c = cmds.recv() => match c {
                            Some(Cmd::Write(_, ack)) => {
                                let _ = ack.send(Err(TransportError::Closed { console: self.entry.name.to_string() }));
                            }
                            Some(Cmd::Break(ack)) => {
                                let _ = ack.send(Err(TransportError::Closed { console: self.entry.name.to_string() }));
                            }
                            Some(Cmd::Marker(t)) => self.marker(t),
                            Some(Cmd::Steal(ack)) => {
                                steal_ack = Some(ack);
                                break;
                            }
                            Some(Cmd::Stop(done)) => {
                                self.marker("console session stopped while reconnecting".into());
                                let _ = done.send(());
                                return None;
                            }
                            None => return None,
                        },
                    }
                }
            }
            let steal = steal_ack.is_some();
            match self.entry.transport.open(OpenOptions { steal }).await {
                Ok((link, rep)) => {
                    if let Some(ack) = steal_ack.take() {
                        let _ = ack.send(Ok(rep.clone()));
                    }
                    return Some((link, rep));
                }
                Err(e) => {
                    let msg = e.to_string();
                    let busy = e.is_busy();
                    if busy {
                        self.set_status(ConsoleStatus::Busy);
                    }
                    if msg != last_error {
                        let hint = if busy { " (not stealing; attach with steal to take over)" } else { "" };
                        self.marker(format!("reconnect failed: {msg}{hint}"));
                        last_error = msg;
                    }
                    if let Some(ack) = steal_ack.take() {
                        let _ = ack.send(Err(e));
                    }
                }
            }
            delay = (delay * 2).min(self.cfg.reconnect_max);
        }
    }
}
