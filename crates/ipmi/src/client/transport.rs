//! The datagram path a session or a pre-session exchange uses: its own connected UDP socket (a standalone
//! [`super::Session::open`]), or a route on a shared [`super::Mux`] (many sessions, a few sockets, one
//! reader task per socket).
//!
//! Why a small enum rather than generics: there are exactly two paths, the request/retransmission loop
//! ([`exchange`]) is the same over both, and the session code stays one non-generic type.

use super::error::{Error, Result};
use super::mux::{Mux, Waiter};
use super::timing::Timing;
use crate::wire::DecodeError;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex as StdMutex};
use tokio::net::UdpSocket;
use tokio::time::Instant;

pub(super) fn io_err(bmc: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io { bmc: bmc.to_string(), source }
}

pub(super) fn decode_err<'a>(bmc: &'a str, what: &'static str) -> impl FnOnce(DecodeError) -> Error + 'a {
    move |source| Error::Decode { bmc: bmc.to_string(), what, source }
}

/// A borrowed path for one exchange: send a datagram to the BMC, receive what the BMC sends back.
#[derive(Clone, Copy)]
pub(crate) enum Link<'a> {
    /// A socket connected to the BMC: everything it receives comes from the BMC.
    Socket(&'a UdpSocket),
    /// A waiter on a mux: receives what the BMC's address sent that no session on the mux claimed.
    Mux(&'a Waiter),
}

impl Link<'_> {
    pub(crate) async fn send(&self, datagram: &[u8]) -> std::io::Result<()> {
        match self {
            Link::Socket(s) => s.send(datagram).await.map(|_| ()),
            Link::Mux(w) => w.send(datagram).await,
        }
    }

    /// Whether no session on this path uses `console_session_id` already (a mux demultiplexes by it).
    pub(crate) fn session_id_free(&self, console_session_id: u32) -> bool {
        match self {
            Link::Socket(_) => true,
            Link::Mux(w) => w.session_id_free(console_session_id),
        }
    }
}

/// Send `datagram` and wait for a reply `accept` likes, retransmitting per `timing`.
/// Replies that `accept` rejects (late duplicates, other exchanges' replies) are ignored.
pub(crate) async fn exchange<T>(
    link: Link<'_>,
    bmc: &str,
    timing: &Timing,
    what: &'static str,
    datagram: &[u8],
    mut accept: impl FnMut(&[u8]) -> Option<Result<T>>,
) -> Result<T> {
    let started = Instant::now();
    match link {
        Link::Socket(socket) => {
            let mut buf = vec![0u8; 2048];
            for i in 0..timing.attempts.max(1) {
                socket.send(datagram).await.map_err(io_err(bmc))?;
                let deadline = Instant::now() + timing.attempt(i);
                loop {
                    match tokio::time::timeout_at(deadline, socket.recv(&mut buf)).await {
                        Err(_) => break,
                        // ICMP port unreachable etc.: the BMC may come back; treat like a loss.
                        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                            tokio::time::sleep_until(deadline).await;
                            break;
                        }
                        Ok(Err(e)) => return Err(io_err(bmc)(e)),
                        Ok(Ok(n)) => {
                            if let Some(r) = accept(&buf[..n]) {
                                return r;
                            }
                        }
                    }
                }
            }
        }
        Link::Mux(waiter) => {
            for i in 0..timing.attempts.max(1) {
                waiter.send(datagram).await.map_err(io_err(bmc))?;
                let deadline = Instant::now() + timing.attempt(i);
                while let Ok(d) = tokio::time::timeout_at(deadline, waiter.recv()).await {
                    if let Some(r) = accept(&d) {
                        return r;
                    }
                }
            }
        }
    }
    Err(Error::Timeout { bmc: bmc.to_string(), what, after: started.elapsed() })
}

/// The path an established session owns.
pub(crate) enum Transport {
    /// Its own connected socket and the reader task that feeds the session (aborted on close and drop).
    Own { socket: Arc<UdpSocket>, reader: StdMutex<Option<tokio::task::JoinHandle<()>>> },
    /// A route on a shared mux (which the session keeps alive): the mux's reader feeds the session.
    Mux { mux: Mux, socket: usize, addr: SocketAddr },
}

impl Transport {
    pub(crate) async fn send(&self, datagram: &[u8]) -> std::io::Result<()> {
        match self {
            Transport::Own { socket, .. } => socket.send(datagram).await.map(|_| ()),
            Transport::Mux { mux, socket, addr } => mux.send_to(*socket, datagram, *addr).await,
        }
    }

    /// Without a runtime (a session dropped after its runtime): one non-blocking attempt.
    pub(crate) fn try_send(&self, datagram: &[u8]) {
        let _ = match self {
            Transport::Own { socket, .. } => socket.try_send(datagram),
            Transport::Mux { mux, socket, addr } => mux.try_send_to(*socket, datagram, *addr),
        };
    }

    /// Stops the session's own reader task (none on a mux).
    pub(crate) fn stop_reader(&self) {
        if let Transport::Own { reader, .. } = self
            && let Some(h) = reader.lock().unwrap_or_else(|p| p.into_inner()).take()
        {
            h.abort();
        }
    }
}
