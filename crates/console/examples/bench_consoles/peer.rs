//! The peer of the console bench: LLNL's ConMan (`conmand`, Debian package `conman`), the console
//! manager HPC sites run for always-on IPMI SOL logging, here logging the same simulated BMCs over SOL
//! (FreeIPMI's libipmiconsole) from the same run. Echo latency goes through its own client (`conman -j`,
//! on a pseudo-terminal as it requires), so the peer's path has one TCP hop and one process more than
//! ours (our viewers are in the manager's process): its latency is an upper bound for the daemon itself.
//!
//! conserver was the other candidate: Debian's `conserver-server` is built without FreeIPMI, so it could
//! only run one `ipmitool sol activate` process per console, which is not how a thousand consoles are run.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `conmand` and `conman` when both are installed.
pub fn find() -> Option<(PathBuf, PathBuf)> {
    let which = |name: &str| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    };
    Some((which("conmand")?, which("conman")?))
}

/// A running `conmand -F` with one IPMI SOL console per simulated BMC.
pub struct Conman {
    child: Child,
    pub pid: u32,
    pub logs: PathBuf,
    port: u16,
    client_bin: PathBuf,
    connected: Arc<AtomicUsize>,
    messages: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Drop for Conman {
    fn drop(&mut self) {
        let _ =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid as i32), nix::sys::signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Conman {
    /// Writes `dir/conman.conf` for `consoles` (name, BMC address) and starts the daemon.
    pub fn start(
        bins: &(PathBuf, PathBuf),
        dir: &Path,
        consoles: &[(String, std::net::Ipv4Addr)],
        password: &str,
    ) -> Result<Conman, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port for conmand: {e}"))?
            .port();
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
        let mut conf = format!(
            "server keepalive=on\nserver loopback=on\nserver port={port}\nserver logdir=\"{}\"\n\
             server pidfile=\"{}\"\nglobal log=\"%N.log\"\nglobal ipmiopts=\"U:admin,P:{password}\"\n",
            logs.display(),
            dir.join("conmand.pid").display()
        );
        for (name, addr) in consoles {
            conf.push_str(&format!("console name=\"{name}\" dev=\"ipmi:{addr}\"\n"));
        }
        let conf_path = dir.join("conman.conf");
        std::fs::write(&conf_path, conf).map_err(|e| format!("{}: {e}", conf_path.display()))?;
        let mut child = Command::new(&bins.0)
            .arg("-F")
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bins.0.display()))?;
        let connected = Arc::new(AtomicUsize::new(0));
        let messages = Arc::new(std::sync::Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("piped stderr");
        {
            let (connected, messages) = (connected.clone(), messages.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if line.contains("] connected to <") {
                        connected.fetch_add(1, Ordering::Relaxed);
                    } else if !line.starts_with("INFO:") {
                        messages.lock().unwrap_or_else(|e| e.into_inner()).push(line);
                    }
                }
            });
        }
        let pid = child.id();
        Ok(Conman { child, pid, logs, port, client_bin: bins.1.clone(), connected, messages })
    }

    /// Waits until `n` consoles have connected (or `within` passes); returns how many did.
    pub fn wait_connected(&mut self, n: usize, within: Duration) -> usize {
        let deadline = Instant::now() + within;
        while self.connected.load(Ordering::Relaxed) < n && Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.connected.load(Ordering::Relaxed)
    }

    /// What conmand said that was not routine (errors, notices), for the report when it fails.
    pub fn messages(&self) -> String {
        self.messages.lock().unwrap_or_else(|e| e.into_inner()).join("; ")
    }

    /// Joins console `name` with ConMan's own client on a fresh pseudo-terminal.
    pub fn client(&self, name: &str) -> Result<Client, String> {
        let pty = nix::pty::openpty(None, None).map_err(|e| format!("openpty: {e}"))?;
        let slave =
            |fd: &std::os::fd::OwnedFd| fd.try_clone().map(Stdio::from).map_err(|e| format!("pty: {e}"));
        let child = Command::new(&self.client_bin)
            .args(["-d", &format!("127.0.0.1:{}", self.port), "-j", name])
            .stdin(slave(&pty.slave)?)
            .stdout(slave(&pty.slave)?)
            .stderr(slave(&pty.slave)?)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.client_bin.display()))?;
        drop(pty.slave);
        let master = File::from(pty.master);
        let mut reader = master.try_clone().map_err(|e| format!("pty: {e}"))?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        let mut c = Client { child, master, rx };
        c.read_until(b"opened.", Duration::from_secs(10)).map_err(|e| format!("conman -j {name}: {e}"))?;
        Ok(c)
    }
}

/// One `conman -j CONSOLE` on a pseudo-terminal.
pub struct Client {
    child: Child,
    master: File,
    rx: mpsc::Receiver<Vec<u8>>,
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Client {
    fn read_until(&mut self, needle: &[u8], within: Duration) -> Result<(), String> {
        let deadline = Instant::now() + within;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(chunk) => {
                    seen.extend_from_slice(&chunk);
                    if seen.windows(needle.len()).any(|w| w == needle) {
                        return Ok(());
                    }
                    // Keep only a tail long enough to hold a needle split across chunks.
                    let keep = seen.len().saturating_sub(needle.len());
                    seen.drain(..keep);
                }
                Err(_) => return Err(format!("no {:?} within {within:?}", String::from_utf8_lossy(needle))),
            }
        }
    }

    /// One keystroke through ConMan, SOL and the simulated host's echo, back to this terminal.
    pub fn echo(&mut self, key: u8) -> Result<Duration, String> {
        while self.rx.try_recv().is_ok() {}
        let t = Instant::now();
        self.master.write_all(&[key]).map_err(|e| format!("pty write: {e}"))?;
        self.read_until(&[key], Duration::from_secs(5))?;
        Ok(t.elapsed())
    }
}
