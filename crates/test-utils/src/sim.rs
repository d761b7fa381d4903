//! A `lifeline sim` process serving a test's inventory, and the `lifeline` binary pointed at it: the
//! harness every end-to-end test starts from (start, poll until the endpoints file exists, tear down).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use crate::{lifeline_bin, wait_until};

/// A running simulator plus the directory (inventory, endpoints, data dir) of one test.
#[derive(Debug)]
pub struct SimProcess {
    child: Child,
    pub endpoints: PathBuf,
    pub inventory: PathBuf,
    /// `--data-dir` for the `lifeline` commands of this test.
    pub data: PathBuf,
    /// `--export-node-state` directory.
    pub node_state: PathBuf,
    env: Vec<(String, String)>,
    pub dir: tempfile::TempDir,
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl SimProcess {
    /// Writes `inventory` into a fresh directory and serves it with `--port-offset offset`.
    pub fn start(inventory: &str, offset: u16, env: &[(&str, &str)]) -> SimProcess {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inventory.toml");
        std::fs::write(&path, inventory).unwrap();
        Self::start_in(dir, path, offset, env)
    }

    /// Serves an existing inventory file.
    pub fn start_file(inventory: &Path, offset: u16, env: &[(&str, &str)]) -> SimProcess {
        Self::start_in(tempfile::tempdir().unwrap(), inventory.to_path_buf(), offset, env)
    }

    fn start_in(dir: tempfile::TempDir, inventory: PathBuf, offset: u16, env: &[(&str, &str)]) -> SimProcess {
        let endpoints = dir.path().join("endpoints.json");
        let node_state = dir.path().join("node-state");
        let env: Vec<(String, String)> =
            env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let mut child = Command::new(lifeline_bin())
            .args(["sim", "--inventory"])
            .arg(&inventory)
            .args(["--port-offset", &offset.to_string(), "--time-scale", "0.02"])
            .arg("--export-node-state")
            .arg(&node_state)
            .arg("--endpoints-json")
            .arg(&endpoints)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .spawn()
            .expect("start lifeline sim");
        wait_until("lifeline sim endpoints", Duration::from_secs(30), || {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("lifeline sim exited early with {status}");
            }
            endpoints.exists().then_some(())
        });
        let data = dir.path().join("data");
        SimProcess { child, endpoints, inventory, data, node_state, env, dir }
    }

    /// `lifeline ARGS --inventory … --data-dir …` with the test's environment and no terminal.
    pub fn lifeline(&self, args: &[&str]) -> Output {
        Command::new(lifeline_bin())
            .args(args)
            .arg("--inventory")
            .arg(&self.inventory)
            .arg("--data-dir")
            .arg(&self.data)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env_remove("LIFELINE_DATABASE_URL")
            .env_remove("LIFELINE_CONFIG")
            .stdin(Stdio::null())
            .output()
            .expect("run lifeline")
    }

    /// The same command as [`SimProcess::lifeline`], started without waiting (concurrency tests).
    pub fn spawn_lifeline(&self, args: &[&str]) -> Child {
        Command::new(lifeline_bin())
            .args(args)
            .arg("--inventory")
            .arg(&self.inventory)
            .arg("--data-dir")
            .arg(&self.data)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env_remove("LIFELINE_DATABASE_URL")
            .env_remove("LIFELINE_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start lifeline")
    }

    /// The simulator's control API base URL (`http://ADDR:PORT`), from the endpoints file.
    pub fn control_url(&self) -> String {
        let eps: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&self.endpoints).unwrap()).unwrap();
        let c = eps.as_array().unwrap().iter().find(|e| e["kind"] == "control").expect("control endpoint");
        format!("http://{}:{}", c["address"].as_str().unwrap(), c["port"])
    }

    /// What the simulated device was made to do (`GET /devices/NAME/actions`): power and BMC actions
    /// actually executed, in order.
    pub fn actions(&self, device: &str) -> Vec<serde_json::Value> {
        let body = http_get(&format!("{}/devices/{device}/actions", self.control_url()));
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        v.as_array().cloned().unwrap_or_else(|| panic!("not an array: {v}"))
    }

    /// Injects a fault (or `clear`) through the simulator's control API; panics if it is refused.
    pub fn fault(&self, device: &str, fault: &str) {
        let o =
            self.lifeline(&["sim", "fault", "--endpoints", self.endpoints.to_str().unwrap(), device, fault]);
        assert!(o.status.success(), "sim fault {device} {fault}: {}", output_text(&o));
    }

    /// Sets (or replaces) one variable of the environment later commands and servers of this test get.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_owned()));
    }

    /// The environment the simulator and this test's `lifeline` commands run with.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// The simulator's process id (to signal it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the simulator to exit (after a signal).
    pub fn wait_exit(&mut self, within: Duration) -> std::process::ExitStatus {
        wait_until("lifeline sim to exit", within, || self.child.try_wait().ok().flatten())
    }
}

/// stdout and stderr of a command, for assertion messages.
pub fn output_text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// stdout parsed as JSON, with the whole output in the panic message when it is not.
pub fn output_json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", output_text(o)))
}

/// The fingerprint a `lifeline bmc trust X --json` or `backup trust X --json` look showed as presented
/// (the look re-pins nothing and exits 1); an operator confirms it with `--fingerprint`.
pub fn presented_fingerprint(look: &Output) -> String {
    let v = output_json(look);
    let view = if v["views"].is_array() { &v["views"][0] } else { &v["view"] };
    view["presented"].as_str().unwrap_or_else(|| panic!("no presented fingerprint: {v}")).to_owned()
}

/// A plain HTTP/1.0 GET on loopback (the simulator's control API), returning the body.
pub fn http_get(url: &str) -> String {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").expect("http:// URL");
    let (host, path) = rest.split_once('/').map(|(h, p)| (h, format!("/{p}"))).unwrap_or((rest, "/".into()));
    let mut s = std::net::TcpStream::connect(host).unwrap_or_else(|e| panic!("connect {host}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    assert!(head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"), "GET {url}: {head}");
    body.to_owned()
}

/// The CLI tests' small fleet: `n1` (Redfish, generic), `n2` (Redfish, iDRAC-like) and `n3` (IPMI,
/// OpenBMC-like), GPU nodes on fresh loopback addresses, served by `lifeline sim --port-offset 20000`
/// with the password in `LIFELINE_BMC_PASSWORD`.
pub fn three_flavour_sim() -> SimProcess {
    const OFFSET: u16 = 20000;
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    for (i, (proto, port, flavor)) in [
        ("redfish", 443 + OFFSET, "generic"),
        ("redfish", 443 + OFFSET, "idrac-like"),
        ("ipmi", 623 + OFFSET, "openbmc-like"),
    ]
    .into_iter()
    .enumerate()
    {
        let ip = crate::unique_loopback();
        t.push_str(&format!(
            "\n[[device]]\nname = \"n{}\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{ip}\", port = {port}, protocol = \"{proto}\", flavor = \"{flavor}\" }}\n\
             gpus = {{ count = 8, model = \"NVIDIA H100 80GB HBM3\" }}\n",
            i + 1
        ));
    }
    SimProcess::start(&t, OFFSET, &[("LIFELINE_BMC_PASSWORD", "s3cret-pw")])
}
