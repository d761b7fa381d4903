//! A `lifeline serve --plain-http` process over a [`SimProcess`]'s inventory and data directory, on a free
//! loopback port, polled until `/healthz` answers and killed on drop; and local users for it. Shared by the
//! server's end-to-end tests, the browser tests and the console benchmark.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::{SimProcess, lifeline_bin, wait_until};

/// A running server; `child` is public so a test can SIGKILL it.
#[derive(Debug)]
pub struct ServeProcess {
    pub child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ServeProcess {
    /// With sweeps off (tests drive what they need).
    pub fn start(sim: &SimProcess) -> ServeProcess {
        Self::start_with(sim, "[server]\nsweep-interval = \"0s\"\n")
    }

    /// With a `lifeline.toml` of this text, in the simulator's environment (its credential variables).
    pub fn start_with(sim: &SimProcess, config: &str) -> ServeProcess {
        Self::start_args(sim, config, &[])
    }

    /// Like [`ServeProcess::start_with`], with more `lifeline serve` arguments (`--slurm-conf F
    /// --node-state DIR` for runbook runs, `--database-url URL` for a replica on PostgreSQL).
    pub fn start_args(sim: &SimProcess, config: &str, extra: &[&str]) -> ServeProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let cfg = sim.dir.path().join("lifeline.toml");
        std::fs::write(&cfg, config).unwrap();
        let mut child = Command::new(lifeline_bin())
            .args(["serve", "--plain-http", "--listen", &addr, "--config"])
            .arg(&cfg)
            .arg("--inventory")
            .arg(&sim.inventory)
            .arg("--data-dir")
            .arg(&sim.data)
            .args(extra)
            .envs(sim.env().iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .spawn()
            .expect("start lifeline serve");
        wait_until("lifeline serve /healthz", Duration::from_secs(30), || {
            if let Ok(Some(st)) = child.try_wait() {
                panic!("lifeline serve exited early: {st}");
            }
            healthz_ok(&addr).then_some(())
        });
        ServeProcess { child, addr }
    }
}

impl ServeProcess {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGSTOP: the process stays, frozen (a paused VM, a long GC pause, a stalled host).
    pub fn pause(&self) {
        self.signal(nix::sys::signal::Signal::SIGSTOP);
    }

    /// SIGCONT after [`ServeProcess::pause`].
    pub fn resume(&self) {
        self.signal(nix::sys::signal::Signal::SIGCONT);
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid"));
        nix::sys::signal::kill(pid, signal).expect("signal lifeline serve");
    }

    /// SIGKILL, then reap.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `/healthz` answers 200 at `addr`.
pub fn healthz_ok(addr: &str) -> bool {
    let Ok(mut s) = std::net::TcpStream::connect(addr) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if write!(s, "GET /healthz HTTP/1.0\r\nHost: {addr}\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.ends_with(b"200")
}

/// `lifeline user add NAME --role ROLE --password-stdin` on the simulator's data directory.
pub fn add_user(sim: &SimProcess, name: &str, role: &str, password: &str) {
    add_user_args(sim, name, role, password, &[])
}

/// The same with extra arguments (`--database-url URL`).
pub fn add_user_args(sim: &SimProcess, name: &str, role: &str, password: &str, extra: &[&str]) {
    let mut add = Command::new(lifeline_bin())
        .args(["user", "add", name, "--role", role, "--password-stdin", "--inventory"])
        .arg(&sim.inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .args(extra)
        .envs(sim.env().iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("run lifeline user add");
    add.stdin.take().unwrap().write_all(format!("{password}\n").as_bytes()).unwrap();
    assert!(add.wait().unwrap().success(), "user add {name}");
}
