//! Attaching a terminal to a console (`lifeline console TARGET`): raw mode, escape sequences, and the
//! copy loop between the terminal and a [`Viewer`].
//!
//! Raw mode is restored on every exit path: the guard's `Drop` (normal return, `?`, cancellation) and a
//! panic hook (a panic in another task or thread must not leave the operator's terminal unusable).

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Mutex, Once};

use nix::sys::termios::{self, SetArg, Termios};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::error::ConsoleError;
use crate::escape::{ESCAPE_HELP, EscapeAction, EscapeParser};
use crate::manager::{ConsoleStatus, Viewer, ViewerEvent};

/// The terminal state to put back if the process panics while in raw mode.
static RESTORE: Mutex<Option<(OwnedFd, Termios)>> = Mutex::new(None);
static HOOK: Once = Once::new();

fn restore_saved() {
    let saved = RESTORE.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some((fd, t)) = saved {
        let _ = termios::tcsetattr(&fd, SetArg::TCSANOW, &t);
    }
}

/// Raw mode on a terminal for as long as the guard lives.
#[derive(Debug)]
pub struct RawModeGuard {
    _private: (),
}

impl RawModeGuard {
    /// Save the terminal's settings and switch it to raw mode.
    pub fn enter(fd: impl AsFd) -> nix::Result<RawModeGuard> {
        HOOK.call_once(|| {
            let prev = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore_saved();
                prev(info);
            }));
        });
        let saved = termios::tcgetattr(&fd)?;
        let mut raw = saved.clone();
        termios::cfmakeraw(&mut raw);
        let keep = nix::unistd::dup(&fd)?;
        *RESTORE.lock().unwrap_or_else(|p| p.into_inner()) = Some((keep, saved));
        if let Err(e) = termios::tcsetattr(&fd, SetArg::TCSANOW, &raw) {
            restore_saved();
            return Err(e);
        }
        Ok(RawModeGuard { _private: () })
    }
}

impl Drop for RawModeGuard {
    fn drop(&mut self) {
        restore_saved();
    }
}

/// Why the attach loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detach {
    /// `~.`
    Escape,
    /// The terminal's input ended (EOF).
    InputClosed,
    /// The console went away (manager shut down, console removed).
    ConsoleClosed,
}

#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error("terminal I/O")]
    Terminal(#[source] std::io::Error),
    #[error("cannot switch the terminal to raw mode")]
    RawMode(#[source] nix::Error),
}

/// Attach the process's terminal (stdin/stdout) to `viewer`. Raw mode only if stdin is a terminal.
pub async fn attach_terminal(viewer: Viewer) -> Result<Detach, AttachError> {
    let stdin = std::io::stdin();
    let _guard = if nix::unistd::isatty(stdin.as_fd()).unwrap_or(false) {
        Some(RawModeGuard::enter(stdin.as_fd()).map_err(AttachError::RawMode)?)
    } else {
        None
    };
    attach_io(viewer, tokio::io::stdin(), tokio::io::stdout()).await
}

fn notice(text: &str) -> Vec<u8> {
    format!("\r\n[lifeline: {text}]\r\n").into_bytes()
}

/// The copy loop over any byte streams (the terminal, a pty in tests, a websocket later).
pub async fn attach_io<R, W>(mut viewer: Viewer, mut input: R, mut output: W) -> Result<Detach, AttachError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut parser = EscapeParser::new();
    let mut buf = vec![0u8; 4096];
    let mut told_read_only = false;
    let hello = format!(
        "connected to {} as {} ({}); ~? for help",
        viewer.console(),
        viewer.who(),
        if viewer.is_writer() { "writing" } else { "read-only, ~W takes over" }
    );
    output.write_all(&notice(&hello)).await.map_err(AttachError::Terminal)?;
    output.flush().await.map_err(AttachError::Terminal)?;
    loop {
        tokio::select! {
            n = input.read(&mut buf) => {
                let n = n.map_err(AttachError::Terminal)?;
                if n == 0 {
                    return Ok(Detach::InputClosed);
                }
                for action in parser.feed(&buf[..n]) {
                    let local: Option<Vec<u8>> = match action {
                        EscapeAction::Leave => {
                            output.write_all(&notice("detached")).await.map_err(AttachError::Terminal)?;
                            output.flush().await.map_err(AttachError::Terminal)?;
                            return Ok(Detach::Escape);
                        }
                        EscapeAction::Help => Some(ESCAPE_HELP.as_bytes().to_vec()),
                        EscapeAction::TakeWrite => {
                            let prev = viewer.take_write();
                            told_read_only = false;
                            Some(notice(&match prev {
                                Some(p) => format!("you took over writing from {p}"),
                                None => "you are writing".into(),
                            }))
                        }
                        EscapeAction::Break => match viewer.send_break().await {
                            Ok(()) => Some(notice("break sent")),
                            Err(e) => Some(notice(&e.to_string())),
                        },
                        EscapeAction::Send(bytes) => match viewer.write(&bytes).await {
                            Ok(()) => None,
                            Err(ConsoleError::NotWriter { .. }) if told_read_only => None,
                            Err(ConsoleError::NotWriter { .. }) => {
                                told_read_only = true;
                                let w = viewer.writer().unwrap_or_else(|| "nobody".into());
                                Some(notice(&format!("read-only ({w} is writing); ~W takes over")))
                            }
                            Err(e) => Some(notice(&e.to_string())),
                        },
                    };
                    if let Some(t) = local {
                        output.write_all(&t).await.map_err(AttachError::Terminal)?;
                        output.flush().await.map_err(AttachError::Terminal)?;
                    }
                }
            }
            ev = viewer.recv() => {
                let bytes: Vec<u8> = match ev {
                    ViewerEvent::Data(b) => b.to_vec(),
                    ViewerEvent::Marker(t) => notice(&t),
                    ViewerEvent::Status(ConsoleStatus::Busy) => notice("console held by another session"),
                    ViewerEvent::Status(_) => continue,
                    ViewerEvent::WriterChanged { writer } => {
                        if viewer.is_writer() { continue }
                        notice(&format!("{} is writing now", writer.unwrap_or_else(|| "nobody".into())))
                    }
                    ViewerEvent::Lagged { missed } => notice(&format!("terminal too slow: {missed} chunks skipped")),
                    ViewerEvent::Closed => return Ok(Detach::ConsoleClosed),
                };
                output.write_all(&bytes).await.map_err(AttachError::Terminal)?;
                output.flush().await.map_err(AttachError::Terminal)?;
            }
        }
    }
}
