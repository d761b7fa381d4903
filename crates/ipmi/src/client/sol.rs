//! Raw Serial-over-LAN on a session: activate payload type 1, exchange SOL packets
//! with acknowledgements, retransmit unacknowledged data, break, deactivate.
//!
//! This is the primitive the console crate builds on (reconnect, logging, viewers,
//! `--steal` policy live there). One task per SOL owns the protocol state, so `write`,
//! `send_break` and `read` can be used from different tasks and are cancel-safe.

use super::error::{Error, Result};
use super::session::{Inner, Session};
use crate::wire::{
    app::GetDeviceId,
    cc,
    packet::PayloadType,
    payload::{
        ActivatePayload, DeactivatePayload, GetPayloadInstanceInfo, PAYLOAD_SOL, PayloadActivated,
        SOL_AUX_ENCRYPT_AUTH,
    },
    sol::{SolPacket, op, status},
};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, sleep_until};

#[derive(Debug, Clone)]
pub struct SolConfig {
    /// Payload instance (1 on almost every BMC).
    pub instance: u8,
    /// Wait for an ack before retransmitting a data packet.
    pub retransmit: Duration,
    /// Retransmissions of one packet before giving up.
    pub retries: u32,
    /// Get Device ID every this often so the BMC does not time the session out.
    pub keepalive: Option<Duration>,
}

impl Default for SolConfig {
    fn default() -> Self {
        Self {
            instance: 1,
            retransmit: Duration::from_millis(500),
            retries: 8,
            keepalive: Some(Duration::from_secs(20)),
        }
    }
}

/// What the BMC side of the serial line did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SolEvent {
    /// Characters from the host (in order, without duplicates).
    Data(Vec<u8>),
    /// The BMC saw a break on the host's serial line.
    BreakDetected,
    /// The BMC reported a transmit overrun (characters from us were dropped).
    TransmitOverrun,
    /// The BMC is deactivating SOL (another session stole it, or it was closed).
    Deactivated,
    /// Our data was not acknowledged after all retransmissions: the link or BMC is gone.
    Lost,
}

enum Cmd {
    Write(Vec<u8>),
    Break,
    Flush(oneshot::Sender<Result<()>>),
}

/// An active SOL payload. Keeps its session alive; deactivated on [`deactivate`](Sol::deactivate)
/// or (best effort) on drop.
pub struct Sol {
    inner: Arc<Inner>,
    instance: u8,
    cmd_tx: mpsc::Sender<Cmd>,
    events: mpsc::Receiver<SolEvent>,
    task: tokio::task::JoinHandle<()>,
    keepalive: Option<tokio::task::JoinHandle<()>>,
    activated: PayloadActivated,
}

impl std::fmt::Debug for Sol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sol").field("bmc", &self.inner.bmc).field("instance", &self.instance).finish()
    }
}

/// A cloneable writer handle for a [`Sol`].
#[derive(Clone, Debug)]
pub struct SolWriter {
    bmc: String,
    cmd_tx: mpsc::Sender<Cmd>,
}

impl SolWriter {
    /// Queue characters for the host (returns once queued; see [`flush`](Self::flush)).
    pub async fn write(&self, data: &[u8]) -> Result<()> {
        self.send(Cmd::Write(data.to_vec())).await
    }
    pub async fn send_break(&self) -> Result<()> {
        self.send(Cmd::Break).await
    }
    /// Wait until everything queued so far was acknowledged by the BMC.
    pub async fn flush(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.send(Cmd::Flush(tx)).await?;
        rx.await
            .map_err(|_| Error::Sol { bmc: self.bmc.clone(), what: "stopped before the flush completed" })?
    }
    async fn send(&self, c: Cmd) -> Result<()> {
        self.cmd_tx
            .send(c)
            .await
            .map_err(|_| Error::Sol { bmc: self.bmc.clone(), what: "is no longer active" })
    }
}

impl Session {
    /// Activate SOL. "Already active in another session" (0x80) is reported as
    /// [`Error::PayloadAlreadyActive`] so callers can offer to steal it
    /// ([`Session::deactivate_payload`] then activate again).
    pub async fn activate_sol(&self, cfg: SolConfig) -> Result<Sol> {
        let inner = self.inner.clone();
        let (pkt_tx, pkt_rx) = mpsc::channel(64);
        {
            let mut slot = inner.sol_tx.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_some() {
                return Err(Error::Sol { bmc: inner.bmc.clone(), what: "is already active on this session" });
            }
            *slot = Some(pkt_tx);
        }
        let req = ActivatePayload {
            payload_type: PAYLOAD_SOL,
            instance: cfg.instance,
            aux: [SOL_AUX_ENCRYPT_AUTH, 0, 0, 0],
        };
        let activated = match self.call(&req).await {
            Ok(a) => a,
            Err(e) => {
                *inner.sol_tx.lock().unwrap_or_else(|p| p.into_inner()) = None;
                return Err(match e {
                    Error::CompletionCode { code: cc::PAYLOAD_ALREADY_ACTIVE, bmc, .. } => {
                        Error::PayloadAlreadyActive { bmc, instance: cfg.instance }
                    }
                    e => e,
                });
            }
        };
        *inner.sol_active.lock().unwrap_or_else(|p| p.into_inner()) = Some(cfg.instance);
        let (cmd_tx, cmd_rx) = mpsc::channel(64);
        let (ev_tx, events) = mpsc::channel(256);
        // Characters per packet: what the BMC accepts minus the 4-byte SOL header.
        let max_chars = (activated.inbound_size as usize).saturating_sub(4).clamp(1, 200);
        let task = tokio::spawn(run(inner.clone(), cfg.clone(), max_chars, pkt_rx, cmd_rx, ev_tx));
        let keepalive = cfg.keepalive.map(|every| {
            let weak = Arc::downgrade(&inner);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let Some(i) = weak.upgrade() else { return };
                    let _ = i.call(&GetDeviceId, "GetDeviceId", true).await;
                }
            })
        });
        Ok(Sol { inner, instance: cfg.instance, cmd_tx, events, task, keepalive, activated })
    }

    /// The session holding a payload instance (`None`: free), via Get Payload Instance Info.
    pub async fn payload_holder(&self, payload_type: u8, instance: u8) -> Result<Option<u32>> {
        Ok(self.call(&GetPayloadInstanceInfo { payload_type, instance }).await?.holder())
    }

    /// Deactivate a payload instance, whichever session owns it (used to steal a stuck SOL).
    /// "Already deactivated" (0x80) counts as success.
    pub async fn deactivate_payload(&self, payload_type: u8, instance: u8) -> Result<()> {
        match self.call(&DeactivatePayload { payload_type, instance }).await {
            Ok(_) | Err(Error::CompletionCode { code: cc::PAYLOAD_ALREADY_ACTIVE, .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Sol {
    pub fn writer(&self) -> SolWriter {
        SolWriter { bmc: self.inner.bmc.clone(), cmd_tx: self.cmd_tx.clone() }
    }
    pub async fn write(&self, data: &[u8]) -> Result<()> {
        self.writer().write(data).await
    }
    pub async fn send_break(&self) -> Result<()> {
        self.writer().send_break().await
    }
    pub async fn flush(&self) -> Result<()> {
        self.writer().flush().await
    }
    /// Next event; `None` once SOL has stopped. Cancel-safe.
    pub async fn read(&mut self) -> Option<SolEvent> {
        self.events.recv().await
    }
    /// What the BMC answered to Activate Payload (sizes, port).
    pub fn activation(&self) -> &PayloadActivated {
        &self.activated
    }
    pub fn instance(&self) -> u8 {
        self.instance
    }

    /// Deactivate the payload; the session stays open.
    pub async fn deactivate(mut self) -> Result<()> {
        self.stop();
        let taken = self.inner.sol_active.lock().unwrap_or_else(|p| p.into_inner()).take();
        if taken.is_some() {
            let r = self
                .inner
                .call(
                    &DeactivatePayload { payload_type: PAYLOAD_SOL, instance: self.instance },
                    "DeactivatePayload",
                    true,
                )
                .await;
            match r {
                Ok(_) | Err(Error::CompletionCode { code: cc::PAYLOAD_ALREADY_ACTIVE, .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn stop(&mut self) {
        self.task.abort();
        if let Some(k) = self.keepalive.take() {
            k.abort();
        }
        *self.inner.sol_tx.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl Drop for Sol {
    fn drop(&mut self) {
        self.stop();
        let taken = self.inner.sol_active.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let (Some(instance), Ok(h)) = (taken, tokio::runtime::Handle::try_current()) {
            if self.inner.is_closed() {
                return;
            }
            let inner = self.inner.clone();
            h.spawn(async move {
                let d = DeactivatePayload { payload_type: PAYLOAD_SOL, instance };
                let _ = inner.call(&d, "DeactivatePayload", true).await;
            });
        }
    }
}

struct Outstanding {
    seq: u8,
    data: Vec<u8>,
    flags: u8,
    sends: u32,
    deadline: Instant,
}

async fn run(
    inner: Arc<Inner>,
    cfg: SolConfig,
    max_chars: usize,
    mut pkts: mpsc::Receiver<SolPacket>,
    mut cmds: mpsc::Receiver<Cmd>,
    events: mpsc::Sender<SolEvent>,
) {
    let mut out_seq = 0u8;
    let mut last_in_seq = 0u8;
    let mut outstanding: Option<Outstanding> = None;
    let mut outbuf: VecDeque<u8> = VecDeque::new();
    let mut pending_break = false;
    let mut flushes: Vec<oneshot::Sender<Result<()>>> = Vec::new();
    let far = || Instant::now() + Duration::from_secs(3600);
    loop {
        // Start the next packet when nothing is in flight (stop-and-wait, like ipmitool).
        if outstanding.is_none() && (!outbuf.is_empty() || pending_break) {
            out_seq = SolPacket::next_seq(out_seq);
            let n = outbuf.len().min(max_chars);
            let data: Vec<u8> = outbuf.drain(..n).collect();
            let flags = if std::mem::take(&mut pending_break) { op::GENERATE_BREAK } else { 0 };
            let p = SolPacket { seq: out_seq, ack_seq: 0, accepted: 0, flags, data: data.clone() };
            if inner.send_payload(PayloadType::Sol, p.encode()).await.is_err() {
                let _ = events.send(SolEvent::Lost).await;
                return;
            }
            outstanding = Some(Outstanding {
                seq: out_seq,
                data,
                flags,
                sends: 1,
                deadline: Instant::now() + cfg.retransmit,
            });
        }
        if outstanding.is_none() && outbuf.is_empty() {
            for f in flushes.drain(..) {
                let _ = f.send(Ok(()));
            }
        }
        let deadline = outstanding.as_ref().map(|o| o.deadline).unwrap_or_else(far);
        tokio::select! {
            p = pkts.recv() => {
                let Some(p) = p else { return };
                if p.ack_seq != 0 && let Some(o) = &outstanding && o.seq == p.ack_seq {
                    if p.is_nack() {
                        // BMC cannot take characters now: retry the same packet later.
                        if let Some(o) = outstanding.as_mut() { o.deadline = Instant::now() + cfg.retransmit; }
                    } else {
                        let accepted = (p.accepted as usize).min(o.data.len());
                        let rest: Vec<u8> = o.data[accepted..].to_vec();
                        for b in rest.into_iter().rev() {
                            outbuf.push_front(b);
                        }
                        outstanding = None;
                    }
                }
                if p.flags & status::BREAK_DETECTED != 0 {
                    let _ = events.send(SolEvent::BreakDetected).await;
                }
                if p.flags & status::TRANSMIT_OVERRUN != 0 {
                    let _ = events.send(SolEvent::TransmitOverrun).await;
                }
                if p.seq != 0 {
                    if p.seq != last_in_seq && !p.data.is_empty() {
                        let _ = events.send(SolEvent::Data(p.data.clone())).await;
                    }
                    last_in_seq = p.seq;
                    // Ack every data packet, duplicates included (our earlier ack may be lost).
                    let ack = SolPacket { seq: 0, ack_seq: p.seq, accepted: p.data.len() as u8, flags: 0, data: vec![] };
                    let _ = inner.send_payload(PayloadType::Sol, ack.encode()).await;
                }
                if p.flags & status::DEACTIVATING != 0 {
                    // The BMC ended the payload (often: another session took it over). It is no longer
                    // ours, so neither drop nor Close Session may deactivate it again.
                    *inner.sol_active.lock().unwrap_or_else(|p| p.into_inner()) = None;
                    let _ = events.send(SolEvent::Deactivated).await;
                    return;
                }
            }
            c = cmds.recv() => match c {
                Some(Cmd::Write(d)) => outbuf.extend(d),
                Some(Cmd::Break) => pending_break = true,
                Some(Cmd::Flush(tx)) => flushes.push(tx),
                None => return,
            },
            _ = sleep_until(deadline), if outstanding.is_some() => {
                let Some(o) = outstanding.as_mut() else { continue };
                if o.sends > cfg.retries {
                    let _ = events.send(SolEvent::Lost).await;
                    for f in flushes.drain(..) {
                        let _ = f.send(Err(Error::Sol { bmc: inner.bmc.clone(), what: "data was never acknowledged" }));
                    }
                    return;
                }
                let p = SolPacket { seq: o.seq, ack_seq: 0, accepted: 0, flags: o.flags, data: o.data.clone() };
                o.sends += 1;
                o.deadline = Instant::now() + cfg.retransmit;
                let _ = inner.send_payload(PayloadType::Sol, p.encode()).await;
            }
        }
    }
}
