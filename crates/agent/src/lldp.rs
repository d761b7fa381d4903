//! The node's end of each cable: what lldpd on this node hears on each NIC (`lldpcli -f json show
//! neighbors details`), carried in the report as lldpd printed it under `lldp`.
//!
//! Why raw: the server compares it with the inventory and with the switches' own LLDP tables, through the
//! one lldpd parser it already uses for switches (`lifeline_netcfg::lldp`); the agent stays small and
//! never judges cabling itself (no verdict depends on it). A node without lldpd says so in `error`.

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

/// The program and its arguments: fixed, nothing from a request reaches them.
pub const PROGRAM: &str = "lldpcli";
pub const ARGS: [&str; 5] = ["-f", "json", "show", "neighbors", "details"];
/// lldpcli asks a local daemon over a unix socket: a second is plenty, ten is a daemon that hangs.
const TIMEOUT: Duration = Duration::from_secs(10);
/// More than this is not lldpcli's answer for one node's NICs.
const MAX_OUTPUT: u64 = 4 << 20;

/// One read of the node's LLDP neighbours.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LldpRead {
    /// The command run, or `file:PATH` for a recorded output.
    pub source: String,
    /// lldpd's JSON as printed (absent when it could not be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl LldpRead {
    fn of(source: String, res: Result<String, String>) -> LldpRead {
        // A JSON parse here only guards the wire: lldpd's structure is read by the server.
        let res = res.and_then(|o| match serde_json::from_str::<serde_json::Value>(&o) {
            Ok(_) => Ok(o),
            Err(e) => Err(format!("not lldpd's JSON: {e}")),
        });
        match res {
            Ok(o) => LldpRead { source, output: Some(o), error: None },
            Err(e) => LldpRead { source, output: None, error: Some(e) },
        }
    }

    /// One line for the table.
    pub fn summary(&self) -> String {
        match (&self.output, &self.error) {
            (Some(o), _) => format!(
                "lldp: neighbours read by `{}` ({} bytes, sent with the report)",
                self.source,
                o.len()
            ),
            (None, Some(e)) => format!("lldp: not read by `{}`: {e}", self.source),
            (None, None) => format!("lldp: nothing from `{}`", self.source),
        }
    }
}

/// A recorded `lldpcli -f json show neighbors details` output.
pub fn read_file(path: &Path) -> LldpRead {
    let res = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()));
    LldpRead::of(format!("file:{}", path.display()), res)
}

/// Runs lldpcli on this node.
pub fn read_live() -> LldpRead {
    LldpRead::of(format!("{PROGRAM} {}", ARGS.join(" ")), run(PROGRAM))
}

fn run(program: &str) -> Result<String, String> {
    let mut child = Command::new(program)
        .args(ARGS)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("{program} not found (is lldpd installed?)"),
            _ => format!("cannot run {program}: {e}"),
        })?;
    let mut out = child.stdout.take().ok_or("no stdout")?;
    let mut err = child.stderr.take().ok_or("no stderr")?;
    // Read on threads so a large answer never blocks the child on a full pipe while we wait.
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        (&mut out).take(MAX_OUTPUT).read_to_string(&mut s).map(|_| s)
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = (&mut err).take(64 << 10).read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() >= TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{program} did not answer within {} s", TIMEOUT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for {program}: {e}")),
        }
    };
    let stdout =
        out_t.join().map_err(|_| "reader thread panicked")?.map_err(|e| format!("{program}: {e}"))?;
    let stderr = err_t.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("{program} exited with {status}: {}", stderr.trim()));
    }
    Ok(stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_node_output_is_carried_as_printed() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../netcfg/src/lldp/testdata/lldpd-node.json");
        let r = read_file(&p);
        assert_eq!(r.error, None);
        assert_eq!(r.output.as_deref(), Some(std::fs::read_to_string(&p).unwrap().as_str()));
        assert!(r.source.starts_with("file:"));
    }

    #[test]
    fn a_missing_program_or_a_non_json_answer_is_an_error_not_a_panic() {
        let e = run("lifeline-no-such-lldpcli").unwrap_err();
        assert!(e.contains("not found"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.json");
        std::fs::write(&f, "Interface: eth0\n").unwrap();
        assert!(read_file(&f).error.unwrap().starts_with("not lldpd's JSON"));
        assert!(read_file(&dir.path().join("absent")).error.unwrap().starts_with("cannot read"));
    }

    /// The real lldpd on this machine, when installed: its answer is lldpd's JSON (possibly with no
    /// neighbour: no LLDP peer on this host's links), or an error naming why (no daemon running).
    #[test]
    fn the_real_lldpcli_answers_json_or_says_why_not() {
        if Command::new(PROGRAM).arg("-v").output().is_err() {
            eprintln!("SKIP: {PROGRAM} not installed");
            return;
        }
        let r = read_live();
        match (&r.output, &r.error) {
            (Some(o), None) => assert!(o.contains("\"lldp\""), "{o}"),
            (None, Some(e)) => assert!(e.contains(PROGRAM), "{e}"),
            other => panic!("{other:?}"),
        }
    }
}
