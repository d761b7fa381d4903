//! Host console over SSH, the way OpenBMC exposes it (`ssh -p 2200 root@bmc` lands directly on the host
//! console through `obmc-console-client`; on port 22 one runs `obmc-console-client` explicitly).
//!
//! Host keys: a pinned SHA-256 fingerprint is enforced inside the handshake (before the password is
//! sent); without a pin the presented key is accepted and reported in the open report so the caller can
//! pin it (trust on first use lives with the caller's store, not here).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use russh::ChannelMsg;
use russh::client::{self, Handle};
use russh::keys::{PrivateKey, PrivateKeyWithHashAlg, PublicKeyOrCertificate};
use sha2::{Digest, Sha256};
use tokio::net::TcpStream;
use tokio::time::timeout;

use super::{ConsoleLink, ConsoleTransport, LinkEvent, OpenOptions, OpenReport};
use crate::error::TransportError;

/// How to log in.
#[derive(Clone)]
pub enum SshLogin {
    Password(String),
    Key(Arc<PrivateKey>),
}

impl std::fmt::Debug for SshLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SshLogin::Password(_) => "Password(<removed>)",
            SshLogin::Key(_) => "Key(..)",
        })
    }
}

/// One BMC's SSH host console.
#[derive(Debug, Clone)]
pub struct SshTransport {
    pub console: String,
    pub host: String,
    /// 2200 on OpenBMC (console directly), 22 with `command`.
    pub port: u16,
    pub user: String,
    pub login: SshLogin,
    /// `None`: the login shell is the console (port 2200); else run this (e.g. `obmc-console-client`).
    pub command: Option<String>,
    /// Request a PTY (needed when the far side is a shell; obmc-console-client works either way).
    pub pty: bool,
    /// Expected host key fingerprint (hex SHA-256 of the key blob); `None` accepts and reports it.
    pub pinned_host_key: Option<String>,
    pub connect_timeout: Duration,
    pub keepalive_timeout: Duration,
}

impl SshTransport {
    pub fn new(
        console: impl Into<String>,
        host: impl Into<String>,
        port: u16,
        user: impl Into<String>,
        login: SshLogin,
    ) -> Self {
        SshTransport {
            console: console.into(),
            host: host.into(),
            port,
            user: user.into(),
            login,
            command: None,
            pty: true,
            pinned_host_key: None,
            connect_timeout: Duration::from_secs(15),
            keepalive_timeout: Duration::from_secs(10),
        }
    }

    async fn open_inner(&self) -> Result<(Box<dyn ConsoleLink>, OpenReport), TransportError> {
        let console = self.console.clone();
        let addr = format!("{}:{}", self.host, self.port);
        let seen = Arc::new(Mutex::new(None));
        let handler = KeyCheck { pinned: self.pinned_host_key.clone(), seen: seen.clone() };
        let config =
            Arc::new(client::Config { inactivity_timeout: None, nodelay: true, ..Default::default() });
        let tcp = TcpStream::connect(&addr).await.map_err(|source| TransportError::Connect {
            console: console.clone(),
            addr: addr.clone(),
            source,
        })?;
        let handle = client::connect_stream(config, tcp, handler).await;
        let presented: Option<String> = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut handle = match handle {
            Ok(h) => h,
            Err(source) => {
                if let (Some(pinned), Some(presented)) = (&self.pinned_host_key, presented)
                    && !pinned.eq_ignore_ascii_case(&presented)
                {
                    return Err(TransportError::HostKeyMismatch {
                        console,
                        pinned: pinned.clone(),
                        presented,
                    });
                }
                return Err(TransportError::Ssh { console, stage: "handshake", source });
            }
        };
        let ssh = |stage| move |source| TransportError::Ssh { console: self.console.clone(), stage, source };
        let ok = match &self.login {
            SshLogin::Password(p) => {
                handle.authenticate_password(&self.user, p).await.map_err(ssh("auth"))?.success()
            }
            SshLogin::Key(k) => {
                let hash = handle.best_supported_rsa_hash().await.map_err(ssh("auth"))?.flatten();
                handle
                    .authenticate_publickey(&self.user, PrivateKeyWithHashAlg::new(k.clone(), hash))
                    .await
                    .map_err(ssh("auth"))?
                    .success()
            }
        };
        if !ok {
            return Err(TransportError::AuthRejected { console, user: self.user.clone() });
        }
        let channel = handle.channel_open_session().await.map_err(ssh("open channel"))?;
        if self.pty {
            channel.request_pty(false, "vt100", 80, 24, 0, 0, &[]).await.map_err(ssh("pty"))?;
        }
        match &self.command {
            Some(cmd) => channel.exec(false, cmd.as_str()).await.map_err(ssh("exec"))?,
            None => channel.request_shell(false).await.map_err(ssh("shell"))?,
        }
        let detail = format!(
            "ssh://{}@{addr}{} host key sha256:{}",
            self.user,
            self.command.as_deref().map(|c| format!(" `{c}`")).unwrap_or_default(),
            presented.unwrap_or_default()
        );
        let link = SshLink {
            console: self.console.clone(),
            handle,
            channel,
            keepalive_timeout: self.keepalive_timeout,
        };
        // SSH has no notion of someone else holding the console: obmc-console fans out to every client.
        Ok((Box::new(link), OpenReport { stole: false, detail }))
    }
}

#[async_trait]
impl ConsoleTransport for SshTransport {
    fn describe(&self) -> String {
        format!("ssh://{}@{}:{}", self.user, self.host, self.port)
    }

    async fn open(&self, _opts: OpenOptions) -> Result<(Box<dyn ConsoleLink>, OpenReport), TransportError> {
        timeout(self.connect_timeout, self.open_inner()).await.map_err(|_| TransportError::Timeout {
            console: self.console.clone(),
            stage: "SSH open",
            after: self.connect_timeout,
        })?
    }
}

/// Hex SHA-256 of an SSH public key blob.
fn fingerprint(key: &russh::keys::PublicKey) -> String {
    let blob = key.to_bytes().unwrap_or_default();
    Sha256::digest(&blob).iter().map(|b| format!("{b:02x}")).collect()
}

struct KeyCheck {
    pinned: Option<String>,
    seen: Arc<Mutex<Option<String>>>,
}

impl client::Handler for KeyCheck {
    type Error = russh::Error;

    async fn check_server_key(&mut self, server_key: &PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        let PublicKeyOrCertificate::PublicKey { key, .. } = server_key else { return Ok(false) };
        let fp = fingerprint(key);
        *self.seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(fp.clone());
        Ok(self.pinned.as_ref().is_none_or(|p| p.eq_ignore_ascii_case(&fp)))
    }
}

struct SshLink {
    console: String,
    handle: Handle<KeyCheck>,
    channel: russh::Channel<client::Msg>,
    keepalive_timeout: Duration,
}

#[async_trait]
impl ConsoleLink for SshLink {
    async fn recv(&mut self) -> LinkEvent {
        loop {
            match self.channel.wait().await {
                Some(ChannelMsg::Data { data }) => return LinkEvent::Data(Bytes::copy_from_slice(&data)),
                Some(ChannelMsg::ExtendedData { data, .. }) => {
                    return LinkEvent::Data(Bytes::copy_from_slice(&data));
                }
                Some(ChannelMsg::ExitStatus { exit_status }) => {
                    return LinkEvent::Closed {
                        reason: format!("console command exited with status {exit_status}"),
                    };
                }
                Some(ChannelMsg::Eof | ChannelMsg::Close) | None => {
                    return LinkEvent::Closed { reason: "SSH channel closed by the BMC".into() };
                }
                Some(_) => continue,
            }
        }
    }

    async fn send(&mut self, data: &[u8]) -> Result<(), TransportError> {
        self.channel.data_bytes(Bytes::copy_from_slice(data)).await.map_err(|source| TransportError::Ssh {
            console: self.console.clone(),
            stage: "write",
            source,
        })
    }

    async fn send_break(&mut self) -> Result<(), TransportError> {
        // russh has no RFC 4335 "break" request; obmc-console has no break either.
        Err(TransportError::Unsupported { console: self.console.clone(), what: "serial break over SSH" })
    }

    async fn keepalive(&mut self) -> Result<(), TransportError> {
        if self.handle.is_closed() {
            return Err(TransportError::Closed { console: self.console.clone() });
        }
        match timeout(self.keepalive_timeout, self.handle.send_ping()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(source)) => {
                Err(TransportError::Ssh { console: self.console.clone(), stage: "keepalive", source })
            }
            Err(_) => Err(TransportError::Timeout {
                console: self.console.clone(),
                stage: "keepalive",
                after: self.keepalive_timeout,
            }),
        }
    }

    async fn close(self: Box<Self>) -> Result<(), TransportError> {
        let _ = timeout(Duration::from_secs(2), self.channel.close()).await;
        let _ = timeout(
            Duration::from_secs(2),
            self.handle.disconnect(russh::Disconnect::ByApplication, "", "en"),
        )
        .await;
        Ok(())
    }
}
