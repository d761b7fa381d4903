//! IPMI sessions survive crashes without leaking, against real OpenIPMI `ipmi_sim`: a one-shot
//! `lifeline power cycle` SIGKILLed while its ADMINISTRATOR session is open leaves that session on the BMC
//! (ipmi_sim would keep it for its 30 s inactivity timeout) and written down in `bmc_sessions` by its
//! BMC-side id; the next process's start (`lifeline serve`) sends Close Session naming that id from a
//! session of its own, so the row is gone and the BMC's own count of active sessions, read with real
//! `ipmitool session info active`, is back to what it was, well before ipmi_sim's timeout.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lifeline_test_utils::{IpmiSims, have, lifeline_bin, skip_or_fail, wait_until};

fn lifeline(dir: &std::path::Path, args: &[&str]) -> Command {
    let mut c = Command::new(lifeline_bin());
    c.args(args)
        .arg("--inventory")
        .arg(dir.join("inventory.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .env("LIFELINE_BMC_PASSWORD", "password")
        .env_remove("LIFELINE_CONFIG")
        .env_remove("LIFELINE_DATABASE_URL")
        .stdin(Stdio::null());
    c
}

/// Sessions active on the BMC besides the one ipmitool opens to ask.
fn others(bmcs: &IpmiSims) -> usize {
    let text = bmcs.ipmitool(0, &["session", "info", "active"]);
    let n: usize = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("active sessions").map(|r| r.trim_start_matches([' ', ':']).trim().to_owned())
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no active session count in {text}"));
    n - 1
}

/// IPMI sessions written down in the store.
fn recorded(dir: &std::path::Path) -> usize {
    let out = Command::new("sqlite3")
        .arg(dir.join("data/lifeline.db"))
        .arg("SELECT count(*) FROM bmc_sessions WHERE session_uri LIKE 'ipmi:%'")
        .output()
        .expect("sqlite3");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_killed_commands_ipmi_session_is_closed_by_the_next_start() {
    if !have("ipmitool") || !have("sqlite3") {
        let _: Option<()> = skip_or_fail("ipmitool and sqlite3 are needed");
        return;
    }
    let Some(bmcs) = IpmiSims::start(1) else { return };
    let dir = tempfile::tempdir().unwrap();
    let a = bmcs.addr(0);
    std::fs::write(
        dir.path().join("inventory.toml"),
        format!(
            "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
             credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
             [[device]]\nname = \"n1\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{}\", port = {}, protocol = \"ipmi\" }}\n",
            a.ip(),
            a.port()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    let before = others(&bmcs);
    assert_eq!(before, 0, "a fresh ipmi_sim has no session");

    // A power cycle holds its session for the off phase and the pause after it (seconds): killed once its
    // session is written down.
    let child = lifeline(dir.path(), &["power", "cycle", "n1", "--yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    wait_until("the command's IPMI session written down", Duration::from_secs(30), || {
        (recorded(dir.path()) >= 1).then_some(())
    });
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let killed_at = Instant::now();
    let left = others(&bmcs);
    let rows = recorded(dir.path());
    assert!(left >= 1, "the killed command's session is on the BMC");
    assert_eq!(rows, left, "each session the killed command left is written down");

    // The next process's start closes it (the server reclaims before it listens). Its own console logging
    // is off: an always-on SOL console would hold a session of its own and be counted.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    std::fs::write(
        dir.path().join("lifeline.toml"),
        "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\n",
    )
    .unwrap();
    let config = dir.path().join("lifeline.toml");
    let config = config.to_str().unwrap();
    let serve = lifeline(dir.path(), &["serve", "--plain-http", "--listen", &listen, "--config", config])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut serve = Killed(serve);
    wait_until("lifeline serve /healthz", Duration::from_secs(30), || {
        if let Ok(Some(st)) = serve.0.try_wait() {
            panic!("lifeline serve exited early: {st}");
        }
        lifeline_test_utils::healthz_ok(&listen).then_some(())
    });
    let closed_after = killed_at.elapsed();
    assert_eq!(recorded(dir.path()), 0, "the closed sessions are struck off");
    assert_eq!(others(&bmcs), before, "the BMC's session count is back");
    // ipmi_sim drops an idle session after 30 s: the count must be back long before that, or the test
    // would only have watched the timeout.
    assert!(closed_after < Duration::from_secs(20), "reclaimed after {closed_after:?}");
    let _ = serve.0.kill();
}
