//! IPMI Serial-over-LAN transport on top of `lifeline-ipmi`'s SOL primitive (which does activation,
//! sequence numbers, acks and retransmission).
//!
//! What this layer adds: the "payload already active" policy (report it; deactivate the other session
//! only when asked to steal, and say so), a keepalive that *detects* a dead session (a command on the
//! session that must be answered; the BMC may have restarted or timed us out), and care when the BMC
//! deactivated us: if someone else owns the payload now, we never send Deactivate Payload (that would
//! kick the operator who just took it over).

use std::net::SocketAddr;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use lifeline_ipmi::client::{ClientConfig, Error as IpmiError, Session, Sol, SolConfig, SolEvent, SolWriter};
use tokio::time::timeout;

use super::{ConsoleLink, ConsoleTransport, LinkEvent, OpenOptions, OpenReport};
use crate::error::TransportError;

const PAYLOAD_SOL: u8 = 1;
const NETFN_APP: u8 = 0x06;
const GET_PAYLOAD_INSTANCE_INFO: u8 = 0x4B;

/// How to reach one BMC's SOL.
#[derive(Debug, Clone)]
pub struct SolTransport {
    pub console: String,
    pub addr: SocketAddr,
    pub client: ClientConfig,
    pub sol: SolConfig,
    /// Session setup + activation.
    pub open_timeout: Duration,
    /// One keepalive round trip (the session's own retransmissions happen inside it).
    pub keepalive_timeout: Duration,
}

impl SolTransport {
    pub fn new(console: impl Into<String>, addr: SocketAddr, client: ClientConfig) -> SolTransport {
        // The manager runs its own keepalive (one that detects failure), so the primitive's is off.
        let sol = SolConfig { keepalive: None, ..SolConfig::default() };
        SolTransport {
            console: console.into(),
            addr,
            client,
            sol,
            open_timeout: Duration::from_secs(20),
            keepalive_timeout: Duration::from_secs(10),
        }
    }

    fn ipmi(&self, stage: &'static str) -> impl FnOnce(IpmiError) -> TransportError + '_ {
        move |source| TransportError::Ipmi { console: self.console.clone(), stage, source }
    }

    async fn open_inner(
        &self,
        opts: OpenOptions,
    ) -> Result<(Box<dyn ConsoleLink>, OpenReport), TransportError> {
        let session = Session::open(self.addr, &self.client).await.map_err(self.ipmi("open session"))?;
        let mut stole = false;
        let sol = match session.activate_sol(self.sol.clone()).await {
            Ok(sol) => sol,
            Err(IpmiError::PayloadAlreadyActive { instance, .. }) if opts.steal => {
                tracing::warn!(console = %self.console, instance, "stealing the SOL payload from another session");
                session
                    .deactivate_payload(PAYLOAD_SOL, instance)
                    .await
                    .map_err(self.ipmi("steal (deactivate)"))?;
                stole = true;
                session.activate_sol(self.sol.clone()).await.map_err(self.ipmi("activate after steal"))?
            }
            Err(IpmiError::PayloadAlreadyActive { instance, .. }) => {
                let _ = timeout(Duration::from_secs(5), session.close()).await;
                return Err(TransportError::PayloadBusy { console: self.console.clone(), instance });
            }
            Err(e) => {
                let _ = timeout(Duration::from_secs(5), session.close()).await;
                return Err(self.ipmi("activate SOL")(e));
            }
        };
        let detail = format!(
            "sol://{} cipher suite {} instance {}",
            self.addr,
            session.cipher_suite().id(),
            sol.instance()
        );
        let writer = sol.writer();
        let link = SolLink {
            console: self.console.clone(),
            session: Some(session),
            writer,
            sol: Some(sol),
            keepalive_timeout: self.keepalive_timeout,
        };
        Ok((Box::new(link), OpenReport { stole, detail }))
    }
}

#[async_trait]
impl ConsoleTransport for SolTransport {
    fn describe(&self) -> String {
        format!("sol://{} (instance {})", self.addr, self.sol.instance)
    }

    async fn open(&self, opts: OpenOptions) -> Result<(Box<dyn ConsoleLink>, OpenReport), TransportError> {
        timeout(self.open_timeout, self.open_inner(opts)).await.map_err(|_| TransportError::Timeout {
            console: self.console.clone(),
            stage: "SOL open",
            after: self.open_timeout,
        })?
    }
}

struct SolLink {
    console: String,
    session: Option<Session>,
    sol: Option<Sol>,
    writer: SolWriter,
    keepalive_timeout: Duration,
}

impl SolLink {
    fn err(&self, stage: &'static str) -> impl FnOnce(IpmiError) -> TransportError + '_ {
        move |source| TransportError::Ipmi { console: self.console.clone(), stage, source }
    }

    /// Session id owning our SOL instance now (0: nobody), via Get Payload Instance Info.
    async fn payload_owner(&self) -> Option<u32> {
        let (session, sol) = (self.session.as_ref()?, self.sol.as_ref()?);
        let r = session.raw(NETFN_APP, GET_PAYLOAD_INSTANCE_INFO, vec![PAYLOAD_SOL, sol.instance()]);
        let resp = timeout(Duration::from_secs(2), r).await.ok()?.ok()?;
        if resp.completion != 0 || resp.data.len() < 4 {
            return None;
        }
        Some(u32::from_le_bytes([resp.data[0], resp.data[1], resp.data[2], resp.data[3]]))
    }
}

#[async_trait]
impl ConsoleLink for SolLink {
    async fn recv(&mut self) -> LinkEvent {
        let Some(sol) = self.sol.as_mut() else {
            return LinkEvent::Closed { reason: "SOL already closed".into() };
        };
        loop {
            return match sol.read().await {
                Some(SolEvent::Data(d)) => LinkEvent::Data(Bytes::from(d)),
                Some(SolEvent::BreakDetected) => LinkEvent::BreakDetected,
                Some(SolEvent::TransmitOverrun) => continue,
                Some(SolEvent::Deactivated) => LinkEvent::Closed {
                    reason: "the BMC deactivated SOL (another session took it, or the BMC closed it)".into(),
                },
                Some(SolEvent::Lost) => {
                    LinkEvent::Closed { reason: "SOL data was never acknowledged".into() }
                }
                None => LinkEvent::Closed { reason: "SOL stopped".into() },
            };
        }
    }

    async fn send(&mut self, data: &[u8]) -> Result<(), TransportError> {
        self.writer.write(data).await.map_err(self.err("write"))
    }

    async fn send_break(&mut self) -> Result<(), TransportError> {
        self.writer.send_break().await.map_err(self.err("break"))
    }

    async fn keepalive(&mut self) -> Result<(), TransportError> {
        let Some(session) = self.session.as_ref() else {
            return Err(TransportError::Closed { console: self.console.clone() });
        };
        let ours = session.bmc_session_id();
        let instance = self.sol.as_ref().map(Sol::instance).unwrap_or(1);
        // Get Payload Instance Info both proves the session alive and tells whether the payload is
        // still ours: ipmi_sim (and real BMCs) deactivate a payload for another client's
        // `sol deactivate` without telling the session that owned it.
        let info = session.raw(NETFN_APP, GET_PAYLOAD_INSTANCE_INFO, vec![PAYLOAD_SOL, instance]);
        match timeout(self.keepalive_timeout, info).await {
            Ok(Ok(r)) if r.completion == 0 && r.data.len() >= 4 => {
                let owner = u32::from_le_bytes([r.data[0], r.data[1], r.data[2], r.data[3]]);
                if owner == ours {
                    Ok(())
                } else {
                    Err(TransportError::PayloadLost { console: self.console.clone(), instance, owner })
                }
            }
            // Not supported here: fall back to a plain command.
            Ok(Ok(_)) => match timeout(self.keepalive_timeout, session.device_id()).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(self.err("keepalive")(e)),
                Err(_) => Err(TransportError::Timeout {
                    console: self.console.clone(),
                    stage: "keepalive",
                    after: self.keepalive_timeout,
                }),
            },
            Ok(Err(e)) => Err(self.err("keepalive")(e)),
            Err(_) => Err(TransportError::Timeout {
                console: self.console.clone(),
                stage: "keepalive",
                after: self.keepalive_timeout,
            }),
        }
    }

    async fn close(mut self: Box<Self>) -> Result<(), TransportError> {
        {
            // Whatever ended the link, never deactivate a payload someone else owns now.
            let owner = self.payload_owner().await;
            let ours = self.session.as_ref().map(Session::bmc_session_id);
            if matches!(owner, Some(id) if id != 0 && Some(id) != ours) {
                // Someone else owns the payload now. lifeline-ipmi would send Deactivate Payload on
                // every exit path (deactivate, close, drop) and kick them, so we let this session go
                // without a word; the BMC times it out. Bounded: one socket per such event.
                tracing::warn!(console = %self.console, "SOL taken over by another session; not deactivating it");
                std::mem::forget(self.sol.take());
                std::mem::forget(self.session.take());
                return Ok(());
            }
        }
        let mut result = Ok(());
        if let Some(sol) = self.sol.take() {
            match timeout(Duration::from_secs(10), sol.deactivate()).await {
                Ok(Err(e)) => result = Err(self.err("deactivate")(e)),
                Err(_) => {
                    result = Err(TransportError::Timeout {
                        console: self.console.clone(),
                        stage: "deactivate",
                        after: Duration::from_secs(10),
                    })
                }
                Ok(Ok(())) => {}
            }
        }
        if let Some(session) = self.session.take() {
            match timeout(Duration::from_secs(10), session.close()).await {
                Ok(Err(e)) if result.is_ok() => result = Err(self.err("close session")(e)),
                Err(_) if result.is_ok() => {
                    result = Err(TransportError::Timeout {
                        console: self.console.clone(),
                        stage: "close session",
                        after: Duration::from_secs(10),
                    })
                }
                _ => {}
            }
        }
        result
    }
}
