//! SSH client for switches: connect with a timeout, pin the host key, authenticate, then run commands
//! over exec channels or an interactive PTY shell.
//!
//! Why both transports: Linux-based NOSes (SONiC, Cumulus) and OpenSSH forced commands give clean
//! output on an exec channel; many switch CLIs (and FakeNOS) refuse exec or serve one shell channel
//! only, so there the driver talks to the prompt like a human would.

mod algorithms;
pub mod hostkey;
mod shell;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lifeline_types::{DeviceName, Fingerprint};
use russh::ChannelMsg;
use russh::client::{self, KeyboardInteractiveAuthResponse};
use russh::keys::{PrivateKey, PrivateKeyWithHashAlg};
use tokio::net::TcpStream;
use tokio::time::timeout;

pub use algorithms::AlgorithmProfile;
pub use hostkey::{PinPolicy, fingerprint};
pub use shell::Shell;

use crate::index::{HostKeyPins, IndexError};
use hostkey::{KeyVerdict, PinningHandler};

/// How to log in.
#[derive(Clone)]
pub enum SshAuth {
    Password(String),
    /// Keyboard-interactive: every prompt is answered with this password (TACACS/RADIUS-backed
    /// switches often offer only this method).
    KeyboardInteractive(String),
    PublicKey(Arc<PrivateKey>),
}

impl std::fmt::Debug for SshAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a secret, even in debug logs.
        f.write_str(match self {
            SshAuth::Password(_) => "Password(<removed>)",
            SshAuth::KeyboardInteractive(_) => "KeyboardInteractive(<removed>)",
            SshAuth::PublicKey(_) => "PublicKey(..)",
        })
    }
}

impl SshAuth {
    fn method(&self) -> &'static str {
        match self {
            SshAuth::Password(_) => "password",
            SshAuth::KeyboardInteractive(_) => "keyboard-interactive",
            SshAuth::PublicKey(_) => "publickey",
        }
    }
}

/// Per-device time limits, one per step of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Timeouts {
    /// TCP connect + SSH handshake (key exchange, host-key check).
    pub connect: Duration,
    pub auth: Duration,
    /// From opening the shell to the first prompt (banners included). A device that falls silent
    /// showing a prompt of another platform fails after [`PROMPT_SETTLE`] instead.
    pub prompt: Duration,
    /// One command, from sending it to its prompt/exit status (also the idle limit while reading).
    pub command: Duration,
    /// A whole fetch or restore of one device.
    pub total: Duration,
}

/// How long a device that shows a foreign prompt (and says nothing more) is given before the login
/// fails with [`SshError::PromptMismatch`].
pub const PROMPT_SETTLE: Duration = Duration::from_millis(1500);

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            auth: Duration::from_secs(15),
            prompt: Duration::from_secs(20),
            command: Duration::from_secs(60),
            total: Duration::from_secs(180),
        }
    }
}

/// Per-device overrides of [`Timeouts`] (the inventory's `[device.management.timeouts]`); `None`
/// keeps the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeoutOverrides {
    pub connect: Option<Duration>,
    pub auth: Option<Duration>,
    pub prompt: Option<Duration>,
    pub command: Option<Duration>,
    pub total: Option<Duration>,
}

impl Timeouts {
    /// Apply a device's overrides.
    pub fn with(self, o: &TimeoutOverrides) -> Timeouts {
        Timeouts {
            connect: o.connect.unwrap_or(self.connect),
            auth: o.auth.unwrap_or(self.auth),
            prompt: o.prompt.unwrap_or(self.prompt),
            command: o.command.unwrap_or(self.command),
            total: o.total.unwrap_or(self.total),
        }
    }

    /// A per-run limit (`backup run --timeout D`, like RANCID's `-t`): every step gets `step`, and
    /// the whole-device limit grows to at least `step` so a long `show running-config` is not cut
    /// by the default total. It wins over the inventory.
    pub fn with_step_limit(self, step: Duration) -> Timeouts {
        Timeouts { connect: step, auth: step, prompt: step, command: step, total: self.total.max(step) }
    }

    /// Defaults, then the device's inventory overrides, then the run's `--timeout`.
    pub fn resolve(device: &TimeoutOverrides, run: Option<Duration>) -> Timeouts {
        let t = Timeouts::default().with(device);
        match run {
            Some(step) => t.with_step_limit(step),
            None => t,
        }
    }
}

/// How a platform's prompt is named in messages ("expected an IOS prompt").
pub fn prompt_name(platform: lifeline_types::Platform) -> &'static str {
    use lifeline_types::Platform::*;
    match platform {
        Ios => "an IOS",
        Nxos => "an NX-OS",
        Eos => "an EOS",
        Sonic => "a SONiC",
        Cumulus => "a Cumulus",
    }
}

/// Exec channel, interactive shell, or exec with a fallback to the shell when refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    #[default]
    Auto,
    Exec,
    Shell,
}

/// Everything needed to reach one switch.
#[derive(Debug, Clone)]
pub struct SshTarget {
    pub device: DeviceName,
    pub host: String,
    pub port: u16,
    pub username: String,
    pub auth: SshAuth,
    /// `enable` password when the platform needs one and it differs from the login password.
    pub enable_password: Option<String>,
    /// Per-device override of the platform's algorithm profile.
    pub algorithms: Option<AlgorithmProfile>,
    pub transport: Transport,
    pub timeouts: Timeouts,
}

#[derive(Debug, thiserror::Error)]
pub enum SshError {
    #[error("{device}: cannot connect to {addr}")]
    Connect {
        device: DeviceName,
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{device}: no SSH handshake with {addr} within {}", lifeline_types::Human(*after))]
    ConnectTimeout { device: DeviceName, addr: String, after: Duration },
    #[error("{device}: SSH handshake with {addr} failed (no common algorithm? see --legacy-algorithms)")]
    Handshake {
        device: DeviceName,
        addr: String,
        #[source]
        source: russh::Error,
    },
    #[error(
        "{device}: HOST KEY CHANGED: pinned {pinned}, presented {presented}; refusing to connect (if the switch was replaced or re-keyed on purpose, re-pin with `lifeline backup trust {device}`)"
    )]
    HostKeyChanged { device: DeviceName, pinned: Fingerprint, presented: Fingerprint },
    #[error(
        "{device}: the switch presents {presented}, not the confirmed {expected}; nothing was pinned (look again and confirm what is presented now)"
    )]
    HostKeyNotConfirmed { device: DeviceName, expected: Fingerprint, presented: Fingerprint },
    #[error("{device}: the server presented a host certificate; only plain pinned keys are supported")]
    HostCertificate { device: DeviceName },
    /// The handshake was ended on purpose after the host key was seen ([`Session::presented_host_key`]).
    #[error("{device}: handshake ended after reading the host key")]
    Looked { device: DeviceName },
    #[error("{device}: host-key pin store failed")]
    PinStore {
        device: DeviceName,
        #[source]
        source: IndexError,
    },
    #[error("{device}: {method} authentication as `{user}` rejected")]
    AuthRejected { device: DeviceName, user: String, method: &'static str },
    #[error("{device}: authentication not finished within {}", lifeline_types::Human(*after))]
    AuthTimeout { device: DeviceName, after: Duration },
    #[error("{device}: authentication failed")]
    Auth {
        device: DeviceName,
        #[source]
        source: russh::Error,
    },
    #[error("{device}: SSH channel error")]
    Channel {
        device: DeviceName,
        #[source]
        source: russh::Error,
    },
    #[error("{device}: the server refused the exec request for `{command}`")]
    ExecRefused { device: DeviceName, command: String },
    #[error(
        "{device}: expected {} prompt, saw `{saw}` (is the inventory platform right?)",
        prompt_name(*expected)
    )]
    PromptMismatch { device: DeviceName, expected: lifeline_types::Platform, saw: String },
    #[error("{device}: `{command}` did not finish within {}", lifeline_types::Human(*after))]
    CommandTimeout { device: DeviceName, command: String, after: Duration },
    #[error("{device}: connection closed before `{command}` finished ({received} bytes received)")]
    ClosedEarly { device: DeviceName, command: String, received: usize },
    #[error("{device}: `{command}` exited with status {status}: {stderr}")]
    ExitStatus { device: DeviceName, command: String, status: u32, stderr: String },
    #[error("{device}: `{command}` failed on the device: {message}")]
    CliError { device: DeviceName, command: String, message: String },
}

impl SshError {
    pub fn device(&self) -> &DeviceName {
        match self {
            SshError::Connect { device, .. }
            | SshError::ConnectTimeout { device, .. }
            | SshError::Handshake { device, .. }
            | SshError::HostKeyChanged { device, .. }
            | SshError::HostKeyNotConfirmed { device, .. }
            | SshError::HostCertificate { device }
            | SshError::Looked { device }
            | SshError::PinStore { device, .. }
            | SshError::AuthRejected { device, .. }
            | SshError::AuthTimeout { device, .. }
            | SshError::Auth { device, .. }
            | SshError::Channel { device, .. }
            | SshError::ExecRefused { device, .. }
            | SshError::PromptMismatch { device, .. }
            | SshError::CommandTimeout { device, .. }
            | SshError::ClosedEarly { device, .. }
            | SshError::ExitStatus { device, .. }
            | SshError::CliError { device, .. } => device,
        }
    }
}

/// Output of one exec'd command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: u32,
}

/// An authenticated SSH connection to one switch.
pub struct Session {
    handle: client::Handle<PinningHandler>,
    target: SshTarget,
    /// Fingerprint of the host key this connection was made with.
    pub host_key: Fingerprint,
}

/// TCP connect and SSH handshake with the host key checked under `policy`; also returns the key seen,
/// whatever the verdict.
async fn handshake(
    target: &SshTarget,
    default_algorithms: AlgorithmProfile,
    pins: Arc<dyn HostKeyPins>,
    policy: PinPolicy,
) -> (Result<client::Handle<hostkey::PinningHandler>, SshError>, Option<Fingerprint>) {
    let device = target.device.clone();
    let addr = format!("{}:{}", target.host, target.port);
    let t = target.timeouts;
    let config = Arc::new(client::Config {
        preferred: target.algorithms.unwrap_or(default_algorithms).preferred(),
        inactivity_timeout: Some(t.command.max(t.auth)),
        nodelay: true,
        ..Default::default()
    });
    let verdict = Arc::new(Mutex::new(None));
    let seen = Arc::new(Mutex::new(None));
    let handler =
        PinningHandler { device: device.clone(), pins, policy, verdict: verdict.clone(), seen: seen.clone() };
    let handshake = async {
        let tcp = TcpStream::connect(&addr).await.map_err(|source| SshError::Connect {
            device: device.clone(),
            addr: addr.clone(),
            source,
        })?;
        let _ = tcp.set_nodelay(true);
        client::connect_stream(config, tcp, handler).await.map_err(|source| {
            match verdict.lock().expect("verdict lock").take() {
                Some(KeyVerdict::Changed { pinned, presented }) => {
                    SshError::HostKeyChanged { device: device.clone(), pinned, presented }
                }
                Some(KeyVerdict::NotConfirmed { expected, presented }) => {
                    SshError::HostKeyNotConfirmed { device: device.clone(), expected, presented }
                }
                Some(KeyVerdict::Looked) => SshError::Looked { device: device.clone() },
                Some(KeyVerdict::Certificate) => SshError::HostCertificate { device: device.clone() },
                Some(KeyVerdict::Store(source)) => SshError::PinStore { device: device.clone(), source },
                None => SshError::Handshake { device: device.clone(), addr: addr.clone(), source },
            }
        })
    };
    let handle = timeout(t.connect, handshake)
        .await
        .map_err(|_| SshError::ConnectTimeout {
            device: device.clone(),
            addr: addr.clone(),
            after: t.connect,
        })
        .and_then(|r| r);
    let seen = *seen.lock().expect("seen lock");
    (handle, seen)
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("device", &self.target.device).finish()
    }
}

impl Session {
    /// Connect, check the host key against `pins` under `policy`, authenticate.
    pub async fn connect(
        target: &SshTarget,
        default_algorithms: AlgorithmProfile,
        pins: Arc<dyn HostKeyPins>,
        policy: PinPolicy,
    ) -> Result<Session, SshError> {
        let device = target.device.clone();
        let t = target.timeouts;
        let (handle, seen) = handshake(target, default_algorithms, pins, policy).await;
        let mut handle = handle?;
        let host_key = seen.expect("host key checked during handshake");

        timeout(t.auth, authenticate(&mut handle, target))
            .await
            .map_err(|_| SshError::AuthTimeout { device: device.clone(), after: t.auth })??;
        Ok(Session { handle, target: target.clone(), host_key })
    }

    /// The host key the server presents now, read in the handshake, which then ends: nothing is stored
    /// and no credential is sent (what an operator looks at before confirming a re-pin).
    pub async fn presented_host_key(
        target: &SshTarget,
        default_algorithms: AlgorithmProfile,
        pins: Arc<dyn HostKeyPins>,
    ) -> Result<Fingerprint, SshError> {
        match handshake(target, default_algorithms, pins, PinPolicy::Look).await {
            (Err(SshError::Looked { .. }), Some(fp)) => Ok(fp),
            (Err(e), _) => Err(e),
            (Ok(_), _) => unreachable!("PinPolicy::Look refuses every key"),
        }
    }

    pub fn target(&self) -> &SshTarget {
        &self.target
    }

    fn chan_err(&self, source: russh::Error) -> SshError {
        SshError::Channel { device: self.target.device.clone(), source }
    }

    /// Run `command` on an exec channel, optionally feeding `stdin`; waits for the exit status.
    pub async fn exec(&self, command: &str, stdin: Option<&[u8]>) -> Result<ExecOutput, SshError> {
        let after = self.target.timeouts.command;
        let device = self.target.device.clone();
        timeout(after, self.exec_inner(command, stdin)).await.map_err(|_| SshError::CommandTimeout {
            device,
            command: command.to_owned(),
            after,
        })?
    }

    async fn exec_inner(&self, command: &str, stdin: Option<&[u8]>) -> Result<ExecOutput, SshError> {
        let mut ch = self.handle.channel_open_session().await.map_err(|e| self.chan_err(e))?;
        ch.exec(true, command).await.map_err(|e| self.chan_err(e))?;
        let mut out = ExecOutput { stdout: Vec::new(), stderr: Vec::new(), status: 0 };
        let mut status = None;
        let mut stdin_sent = false;
        loop {
            let Some(msg) = ch.wait().await else { break };
            match msg {
                ChannelMsg::Success if !stdin_sent => {
                    stdin_sent = true;
                    if let Some(data) = stdin {
                        ch.data(data).await.map_err(|e| self.chan_err(e))?;
                    }
                    ch.eof().await.map_err(|e| self.chan_err(e))?;
                }
                ChannelMsg::Failure => {
                    return Err(SshError::ExecRefused {
                        device: self.target.device.clone(),
                        command: command.to_owned(),
                    });
                }
                ChannelMsg::Data { data } => out.stdout.extend_from_slice(&data),
                ChannelMsg::ExtendedData { data, .. } => out.stderr.extend_from_slice(&data),
                ChannelMsg::ExitStatus { exit_status } => status = Some(exit_status),
                ChannelMsg::Close => break,
                _ => {}
            }
        }
        match status {
            Some(s) => {
                out.status = s;
                Ok(out)
            }
            // No exit status means the channel or connection died mid-transfer: whatever arrived is
            // not trusted.
            None => Err(SshError::ClosedEarly {
                device: self.target.device.clone(),
                command: command.to_owned(),
                received: out.stdout.len(),
            }),
        }
    }

    /// Open an interactive PTY shell and wait for the first prompt of `platform` (`prompt`); a
    /// device that shows another prompt fails fast with [`SshError::PromptMismatch`].
    pub async fn shell(
        &self,
        prompt: &regex::Regex,
        platform: lifeline_types::Platform,
    ) -> Result<Shell, SshError> {
        let ch = self.handle.channel_open_session().await.map_err(|e| self.chan_err(e))?;
        ch.request_pty(false, "vt100", 200, 0, 0, 0, &[]).await.map_err(|e| self.chan_err(e))?;
        ch.request_shell(false).await.map_err(|e| self.chan_err(e))?;
        let mut sh = Shell::new(ch, self.target.device.clone(), prompt.clone(), self.target.timeouts.command);
        sh.wait_first_prompt(platform, self.target.timeouts.prompt).await?;
        Ok(sh)
    }

    /// Polite disconnect (the switch frees its vty line at once instead of at its idle timeout).
    pub async fn close(self) {
        let _ = timeout(
            Duration::from_secs(2),
            self.handle.disconnect(russh::Disconnect::ByApplication, "", "en"),
        )
        .await;
    }
}

async fn authenticate(
    handle: &mut client::Handle<PinningHandler>,
    target: &SshTarget,
) -> Result<(), SshError> {
    let device = target.device.clone();
    let user = target.username.clone();
    let auth_err = |source| SshError::Auth { device: device.clone(), source };
    let ok = match &target.auth {
        SshAuth::Password(p) => handle.authenticate_password(&user, p).await.map_err(auth_err)?.success(),
        SshAuth::PublicKey(key) => {
            let hash = handle.best_supported_rsa_hash().await.map_err(auth_err)?.flatten();
            handle
                .authenticate_publickey(&user, PrivateKeyWithHashAlg::new(key.clone(), hash))
                .await
                .map_err(auth_err)?
                .success()
        }
        SshAuth::KeyboardInteractive(p) => {
            let mut resp = handle
                .authenticate_keyboard_interactive_start(&user, None::<String>)
                .await
                .map_err(auth_err)?;
            // Servers may ask several rounds (an empty info request is legal); bound the loop.
            let mut rounds = 0;
            loop {
                match resp {
                    KeyboardInteractiveAuthResponse::Success => break true,
                    KeyboardInteractiveAuthResponse::Failure { .. } => break false,
                    KeyboardInteractiveAuthResponse::InfoRequest { prompts, .. } => {
                        rounds += 1;
                        if rounds > 5 {
                            break false;
                        }
                        let answers = prompts.iter().map(|_| p.clone()).collect();
                        resp = handle
                            .authenticate_keyboard_interactive_respond(answers)
                            .await
                            .map_err(auth_err)?;
                    }
                }
            }
        }
    };
    if ok { Ok(()) } else { Err(SshError::AuthRejected { device, user, method: target.auth.method() }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_resolve_defaults_then_device_then_run() {
        let d = Timeouts::default();
        assert_eq!(Timeouts::resolve(&TimeoutOverrides::default(), None), d);
        let dev = TimeoutOverrides {
            command: Some(Duration::from_secs(300)),
            total: Some(Duration::from_secs(600)),
            ..Default::default()
        };
        let t = Timeouts::resolve(&dev, None);
        assert_eq!(
            (t.connect, t.command, t.total),
            (d.connect, Duration::from_secs(300), Duration::from_secs(600))
        );
        // `--timeout 5s` wins over the inventory for every step; the total never shrinks below it.
        let t = Timeouts::resolve(&dev, Some(Duration::from_secs(5)));
        let five = Duration::from_secs(5);
        assert_eq!((t.connect, t.auth, t.prompt, t.command), (five, five, five, five));
        assert_eq!(t.total, Duration::from_secs(600));
        let t = Timeouts::resolve(&TimeoutOverrides::default(), Some(Duration::from_secs(900)));
        assert_eq!(t.total, Duration::from_secs(900));
    }
}
