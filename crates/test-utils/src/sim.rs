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

    /// Injects a fault (or `clear`) through the simulator's control API; panics if it is refused.
    pub fn fault(&self, device: &str, fault: &str) {
        let o =
            self.lifeline(&["sim", "fault", "--endpoints", self.endpoints.to_str().unwrap(), device, fault]);
        assert!(o.status.success(), "sim fault {device} {fault}: {}", output_text(&o));
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
