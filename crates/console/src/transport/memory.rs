//! An in-memory serial line: the transport end goes to the console manager, the host end to whatever
//! plays the machine (a test, the benchmark's simulated consoles, the simulator's bootloader machines).
//!
//! It models what matters to the manager: output written while no link is open is lost (like a serial
//! line nobody listens to), a full link drops bytes instead of blocking the host (UART overrun), the BMC
//! can drop the link, and another session can hold the console (busy until stolen).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::mpsc;

use super::{ConsoleLink, ConsoleTransport, LinkEvent, OpenOptions, OpenReport};
use crate::error::TransportError;

/// Keys or a break from the console side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostInput {
    Data(Bytes),
    Break,
}

#[derive(Default)]
struct Shared {
    link: Option<(u64, mpsc::Sender<LinkEvent>)>,
    next_id: u64,
    busy: bool,
    opens: u64,
    steals: u64,
    dropped_bytes: u64,
}

fn lock(s: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// Build a line. `capacity` is in chunks, per direction.
pub fn memory_line(console: impl Into<String>, capacity: usize) -> (MemoryTransport, MemoryHost) {
    let shared = Arc::new(Mutex::new(Shared::default()));
    let (input_tx, input_rx) = mpsc::channel(capacity.max(1));
    let t = MemoryTransport {
        console: console.into(),
        shared: shared.clone(),
        input_tx,
        capacity: capacity.max(1),
    };
    (t, MemoryHost { writer: MemoryHostWriter { shared }, input_rx })
}

/// The console manager's end.
#[derive(Clone)]
pub struct MemoryTransport {
    console: String,
    shared: Arc<Mutex<Shared>>,
    input_tx: mpsc::Sender<HostInput>,
    capacity: usize,
}

impl std::fmt::Debug for MemoryTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTransport").field("console", &self.console).finish()
    }
}

/// The machine's end.
#[derive(Debug)]
pub struct MemoryHost {
    writer: MemoryHostWriter,
    input_rx: mpsc::Receiver<HostInput>,
}

/// A cloneable handle that prints on the line (give one to a bootloader machine's `emit`).
#[derive(Clone)]
pub struct MemoryHostWriter {
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for MemoryHostWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryHostWriter")
    }
}

impl MemoryHostWriter {
    /// Print. Never blocks: returns false (and counts the bytes) when no link is open or it is full.
    pub fn write(&self, bytes: impl Into<Bytes>) -> bool {
        let bytes: Bytes = bytes.into();
        let mut s = lock(&self.shared);
        let sent = match &s.link {
            Some((_, tx)) => tx.try_send(LinkEvent::Data(bytes.clone())).is_ok(),
            None => false,
        };
        if !sent {
            s.dropped_bytes += bytes.len() as u64;
        }
        sent
    }

    /// The BMC drops the session: the open link reports `Closed`.
    pub fn drop_link(&self, reason: &str) {
        let mut s = lock(&self.shared);
        if let Some((_, tx)) = s.link.take() {
            let _ = tx.try_send(LinkEvent::Closed { reason: reason.to_owned() });
        }
    }

    /// Another session holds the console (opens fail with `PayloadBusy` unless they steal).
    pub fn set_busy(&self, busy: bool) {
        lock(&self.shared).busy = busy;
    }

    pub fn is_linked(&self) -> bool {
        lock(&self.shared).link.is_some()
    }
    pub fn opens(&self) -> u64 {
        lock(&self.shared).opens
    }
    pub fn steals(&self) -> u64 {
        lock(&self.shared).steals
    }
    pub fn dropped_bytes(&self) -> u64 {
        lock(&self.shared).dropped_bytes
    }
}

impl MemoryHost {
    pub fn writer(&self) -> MemoryHostWriter {
        self.writer.clone()
    }
    pub fn write(&self, bytes: impl Into<Bytes>) -> bool {
        self.writer.write(bytes)
    }
    /// Next keys (or break) from the console; `None` when the transport is gone.
    pub async fn recv_input(&mut self) -> Option<HostInput> {
        self.input_rx.recv().await
    }
    pub fn try_recv_input(&mut self) -> Option<HostInput> {
        self.input_rx.try_recv().ok()
    }
}

impl std::ops::Deref for MemoryHost {
    type Target = MemoryHostWriter;
    fn deref(&self) -> &MemoryHostWriter {
        &self.writer
    }
}

#[async_trait]
impl ConsoleTransport for MemoryTransport {
    fn describe(&self) -> String {
        format!("memory://{}", self.console)
    }

    async fn open(&self, opts: OpenOptions) -> Result<(Box<dyn ConsoleLink>, OpenReport), TransportError> {
        let mut s = lock(&self.shared);
        let mut stole = false;
        if s.busy {
            if !opts.steal {
                return Err(TransportError::PayloadBusy { console: self.console.clone(), instance: 1 });
            }
            s.busy = false;
            s.steals += 1;
            stole = true;
        }
        s.next_id += 1;
        s.opens += 1;
        let id = s.next_id;
        let (tx, rx) = mpsc::channel(self.capacity);
        // A previous link (if any) sees its channel close.
        s.link = Some((id, tx));
        let link = MemoryLink {
            console: self.console.clone(),
            id,
            rx,
            input: self.input_tx.clone(),
            shared: self.shared.clone(),
        };
        Ok((Box::new(link), OpenReport { stole, detail: self.describe() }))
    }
}

struct MemoryLink {
    console: String,
    id: u64,
    rx: mpsc::Receiver<LinkEvent>,
    input: mpsc::Sender<HostInput>,
    shared: Arc<Mutex<Shared>>,
}

#[async_trait]
impl ConsoleLink for MemoryLink {
    async fn recv(&mut self) -> LinkEvent {
        self.rx
            .recv()
            .await
            .unwrap_or(LinkEvent::Closed { reason: "link replaced by a newer session".into() })
    }
    async fn send(&mut self, data: &[u8]) -> Result<(), TransportError> {
        self.input
            .send(HostInput::Data(Bytes::copy_from_slice(data)))
            .await
            .map_err(|_| TransportError::Closed { console: self.console.clone() })
    }
    async fn send_break(&mut self) -> Result<(), TransportError> {
        self.input
            .send(HostInput::Break)
            .await
            .map_err(|_| TransportError::Closed { console: self.console.clone() })
    }
    async fn keepalive(&mut self) -> Result<(), TransportError> {
        let s = lock(&self.shared);
        match &s.link {
            Some((id, _)) if *id == self.id => Ok(()),
            _ => Err(TransportError::Closed { console: self.console.clone() }),
        }
    }
    async fn close(self: Box<Self>) -> Result<(), TransportError> {
        let mut s = lock(&self.shared);
        if matches!(&s.link, Some((id, _)) if *id == self.id) {
            s.link = None;
        }
        Ok(())
    }
}
