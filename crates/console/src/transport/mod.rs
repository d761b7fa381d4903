//! One interface over the ways a host console is reached: IPMI SOL, SSH (OpenBMC's host console on
//! port 2200 / `obmc-console-client`), and an in-memory line for tests, benchmarks and the simulator.
//!
//! Why a trait: the console manager (viewers, logging, reconnect) and the expect engine must not care
//! which protocol carries the bytes. A transport knows how to open a link; a link carries bytes both
//! ways until it reports why it closed, so the manager can reconnect and mark the gap in the log.

pub mod memory;
pub mod sol;
pub mod ssh;

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::TransportError;

/// How to open a link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// If the console is held by another session ("SOL payload already active"), deactivate that
    /// session and take over. Never set on automatic reconnects.
    pub steal: bool,
}

/// What opening did, beyond giving a link: the caller audits a steal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenReport {
    /// Another session held the console and was deactivated.
    pub stole: bool,
    /// Free text for logs ("cipher suite 3, SOL instance 1", "ssh root@bmc:2200, host key SHA256:...").
    pub detail: String,
}

/// Something the host side did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkEvent {
    Data(Bytes),
    /// The BMC saw a break on the host's serial line.
    BreakDetected,
    /// The link is gone; the manager reconnects (the reason goes into the log's gap marker).
    Closed {
        reason: String,
    },
}

/// An open console link. `recv` must be cancel-safe: the manager races it against commands.
#[async_trait]
pub trait ConsoleLink: Send {
    async fn recv(&mut self) -> LinkEvent;
    /// Queue bytes for the host (keys).
    async fn send(&mut self, data: &[u8]) -> Result<(), TransportError>;
    async fn send_break(&mut self) -> Result<(), TransportError>;
    /// Prove the link is alive (IPMI: a command on the session; SSH: a keepalive request).
    async fn keepalive(&mut self) -> Result<(), TransportError>;
    /// Give the console back (SOL: deactivate payload, close session).
    async fn close(self: Box<Self>) -> Result<(), TransportError>;
}

/// A way to reach one console.
#[async_trait]
pub trait ConsoleTransport: Send + Sync + 'static {
    /// "sol://10.0.0.5 (instance 1)", for status lines and the log.
    fn describe(&self) -> String;
    async fn open(&self, opts: OpenOptions) -> Result<(Box<dyn ConsoleLink>, OpenReport), TransportError>;
}
