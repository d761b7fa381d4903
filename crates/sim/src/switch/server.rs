//! The russh server of one simulated switch: password and keyboard-interactive auth, exec requests
//! and PTY shells with echo, line editing and the CLI's prompt.
//!
//! Why every connection is a task in a `JoinSet` owned by [`serve`]: dropping (or aborting) `serve`
//! ends every session of that switch, which is what stopping a simulated switch must do.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use russh::server::{self, Auth, Msg, Session};
use russh::{Channel, ChannelId, MethodKind, MethodSet};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use super::{Cli, Reply, SwitchState};
use crate::actions::{Origin, Protocol};

/// Accept SSH connections for `state` until the listener fails or this future is dropped.
pub async fn serve(listener: TcpListener, state: Arc<SwitchState>) -> std::io::Result<()> {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (sock, peer) = accepted?;
                if !state.answering() {
                    // A dead management port (or a NOS that is not running: bootloader, kernel, boot
                    // loop): the connection gets nothing, not even a banner.
                    let st = state.clone();
                    conns.spawn(async move {
                        let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
                        while !st.answering() && tokio::time::Instant::now() < deadline {
                            let _ = tokio::time::timeout(Duration::from_millis(500), st.mgmt_changed()).await;
                        }
                        drop(sock);
                    });
                    continue;
                }
                let _ = sock.set_nodelay(true);
                let config = Arc::new(server::Config {
                    server_id: russh::SshId::Standard(identification(state.platform).into()),
                    keys: vec![state.host_key()],
                    methods: MethodSet::from(&[MethodKind::Password, MethodKind::KeyboardInteractive][..]),
                    auth_rejection_time: Duration::from_millis(50),
                    auth_rejection_time_initial: Some(Duration::ZERO),
                    inactivity_timeout: Some(Duration::from_secs(600)),
                    nodelay: true,
                    ..Default::default()
                });
                let handler = Conn { state: state.clone(), chans: HashMap::new(), peer, user: None };
                conns.spawn(async move {
                    if let Ok(running) = server::run_stream(config, sock, handler).await {
                        let _ = running.await;
                    }
                });
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// The identification line the platform's own sshd sends (RFC 4253 §4.2): OpenSSH on the Linux-based
/// NOSes (Debian's build on SONiC and Cumulus), Cisco's own server on IOS. A runbook's `ssh-banner`
/// post-condition tells the NOS from a rescue environment (ONIE's dropbear) by it.
pub fn identification(platform: lifeline_types::Platform) -> &'static str {
    use lifeline_types::Platform;
    match platform {
        Platform::Sonic => "SSH-2.0-OpenSSH_8.4p1 Debian-5+deb11u3",
        Platform::Cumulus => "SSH-2.0-OpenSSH_7.9p1 Debian-10+deb10u2",
        Platform::Eos => "SSH-2.0-OpenSSH_8.7",
        Platform::Ios => "SSH-2.0-Cisco-1.25",
        Platform::Nxos => "SSH-2.0-OpenSSH_8.3",
    }
}

struct Chan {
    cli: Cli,
    line: Vec<u8>,
    last_cr: bool,
}

struct Conn {
    state: Arc<SwitchState>,
    chans: HashMap<ChannelId, Chan>,
    peer: SocketAddr,
    /// The login, once authenticated.
    user: Option<String>,
}

fn crlf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\n', "\r\n")
}

impl Conn {
    fn cli(&self, exec: bool) -> Cli {
        let origin = Origin::new(Protocol::Ssh, Some(self.peer), self.user.clone());
        Cli::new(self.state.clone(), exec).with_origin(origin)
    }

    fn send(
        &self,
        session: &mut Session,
        ch: ChannelId,
        r: &Reply,
        prompt: Option<String>,
    ) -> Result<(), russh::Error> {
        let mut out = crlf(&r.text);
        if r.prompt
            && let Some(p) = prompt
        {
            out.push_str(&p);
        }
        if !out.is_empty() {
            session.data(ch, out.into_bytes())?;
        }
        if r.close {
            // Like a login shell ending: an exit status, so `ssh` exits 0.
            session.exit_status_request(ch, 0)?;
            session.eof(ch)?;
            session.close(ch)?;
        }
        Ok(())
    }
}

impl server::Handler for Conn {
    type Error = russh::Error;

    async fn auth_password(&mut self, user: &str, password: &str) -> Result<Auth, Self::Error> {
        if user == self.state.username && password == self.state.password {
            self.user = Some(user.to_owned());
            Ok(Auth::Accept)
        } else {
            Ok(Auth::reject())
        }
    }

    async fn auth_keyboard_interactive<'a>(
        &'a mut self,
        user: &str,
        _submethods: &str,
        response: Option<server::Response<'a>>,
    ) -> Result<Auth, Self::Error> {
        match response {
            None => Ok(Auth::Partial {
                name: "".into(),
                instructions: "".into(),
                prompts: vec![("Password: ".into(), false)].into(),
            }),
            Some(mut answers) => {
                let ok = user == self.state.username
                    && answers.next().is_some_and(|a| a.as_ref() == self.state.password.as_bytes());
                if ok {
                    self.user = Some(user.to_owned());
                }
                Ok(if ok { Auth::Accept } else { Auth::reject() })
            }
        }
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: server::ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.chans.insert(channel.id(), Chan { cli: self.cli(false), line: Vec::new(), last_cr: false });
        reply.accept().await;
        Ok(())
    }

    async fn shell_request(&mut self, channel: ChannelId, session: &mut Session) -> Result<(), Self::Error> {
        session.channel_success(channel)?;
        let Some(c) = self.chans.get(&channel) else { return Ok(()) };
        let prompt = c.cli.prompt();
        session.data(channel, crlf("\n").into_bytes())?;
        session.data(channel, prompt.into_bytes())?;
        Ok(())
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)?;
        let mut cli = self.cli(true);
        let cmd = String::from_utf8_lossy(data).into_owned();
        let r = cli.line(&cmd);
        if !r.text.is_empty() {
            session.data(channel, r.text.into_bytes())?;
        }
        session.exit_status_request(channel, r.status)?;
        session.eof(channel)?;
        session.close(channel)?;
        Ok(())
    }

    async fn data(
        &mut self,
        channel: ChannelId,
        data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        let Some(mut c) = self.chans.remove(&channel) else { return Ok(()) };
        let mut closed = false;
        for &b in data {
            if closed {
                break;
            }
            if c.cli.paging() {
                let r = c.cli.page_key(b);
                let p = c.cli.prompt();
                self.send(session, channel, &r, Some(p))?;
                continue;
            }
            if b == 0x04 && c.cli.wants_ctrl_d() {
                let r = c.cli.ctrl_d();
                session.data(channel, b"\r\n".to_vec())?;
                let p = c.cli.prompt();
                self.send(session, channel, &r, Some(p))?;
                continue;
            }
            match b {
                b'\r' | b'\n' => {
                    if b == b'\n' && c.last_cr {
                        c.last_cr = false;
                        continue;
                    }
                    c.last_cr = b == b'\r';
                    let line = String::from_utf8_lossy(&std::mem::take(&mut c.line)).into_owned();
                    // Echo like a terminal line discipline, then the command's output and prompt.
                    session.data(channel, format!("{line}\r\n").into_bytes())?;
                    let r = c.cli.line(&line);
                    let p = c.cli.prompt();
                    self.send(session, channel, &r, Some(p))?;
                    closed = r.close;
                }
                0x7f | 0x08 => {
                    c.last_cr = false;
                    c.line.pop();
                }
                0x03 => {
                    c.last_cr = false;
                    c.line.clear();
                    let p = c.cli.prompt();
                    session.data(channel, format!("^C\r\n{p}").into_bytes())?;
                }
                _ => {
                    c.last_cr = false;
                    c.line.push(b);
                }
            }
        }
        if !closed {
            self.chans.insert(channel, c);
        }
        Ok(())
    }

    async fn channel_close(&mut self, channel: ChannelId, _session: &mut Session) -> Result<(), Self::Error> {
        self.chans.remove(&channel);
        Ok(())
    }
}
