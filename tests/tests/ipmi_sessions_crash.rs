//! IPMI sessions survive crashes without leaking, against real OpenIPMI `ipmi_sim`: a one-shot
//! `lifeline power cycle` SIGKILLed while its ADMINISTRATOR session is open leaves that session on the BMC
//! (ipmi_sim would keep it for its 30 s inactivity timeout) and written down in `bmc_sessions` by its
//! BMC-side id; the next process's start (`lifeline serve`) sends Close Session naming that id from a
//! session of its own, so the row is gone and the BMC's own count of active sessions, read with real
//! `ipmitool session info active`, is back to what it was, well before ipmi_sim's timeout.
//!
//! A one-shot command does the same before its first session on a BMC, far from the BMC's limit: a
//! `lifeline power status` after a killed `power cycle` closes what it left, while the session of a live
//! `lifeline serve`'s console, written down by an owner that is alive, stays open and recorded.
//!
//! A server's always-on SOL console survives crash-restarts without leaking its IPMI session, against real
//! OpenIPMI `ipmi_sim`. ipmi_sim has 63 session slots (compiled in: `MAX_SESSIONS`; its own `session info`
//! says "slot count: 63") and drops a session after 30 s without an IPMI request on it (not configurable; the
//! SOL packets of a dead console do not count as activity). To bring the table within reach of a short test,
//! 59 slots are held by `ipmitool shell` sessions kept busy, leaving four. `lifeline serve` (console logging
//! on) is then killed with SIGKILL ten times, each restart within seconds of the kill: every start closes the
//! console session its dead predecessor recorded (and the SOL payload it held), so the console is back at
//! once (its host output logged again within seconds, not after the BMC's 30 s), one-shot power reads keep
//! working, and the BMC never holds more than one session of ours (the live console). Each kill leaves the
//! console's session on the BMC (checked every round): unclosed, they would take the four free slots within
//! four restarts.

use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lifeline_test_utils::{IpmiSims, have, lifeline_bin, skip_or_fail, wait_until};

/// ipmi_sim's session table (lanserv's `MAX_SESSIONS`).
const SLOTS: usize = 63;
/// Slots left to Lifeline and the ipmitool that counts, in the console test.
const FREE: usize = 4;
const RESTARTS: usize = 10;

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

/// Sessions active on the BMC (the one ipmitool opens to ask included) and its slot count.
fn active(bmcs: &IpmiSims) -> (usize, usize) {
    bmcs.session_table(0)
}

/// Sessions active on the BMC besides the one ipmitool opens to ask.
fn others(bmcs: &IpmiSims) -> usize {
    active(bmcs).0 - 1
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

/// One private ipmi_sim and a directory with its one-device inventory (`None` after a loud skip).
fn one_bmc() -> Option<(IpmiSims, tempfile::TempDir)> {
    if !have("ipmitool") || !have("sqlite3") {
        return skip_or_fail("ipmitool and sqlite3 are needed");
    }
    let bmcs = IpmiSims::start(1)?;
    let dir = tempfile::tempdir().unwrap();
    inventory(dir.path(), &bmcs);
    Some((bmcs, dir))
}

/// Writes the one-device inventory for `bmcs`' first BMC into `dir` (with its `data` directory).
fn inventory(dir: &std::path::Path, bmcs: &IpmiSims) {
    let a = bmcs.addr(0);
    std::fs::write(
        dir.join("inventory.toml"),
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
    std::fs::create_dir_all(dir.join("data")).unwrap();
}

/// Starts `lifeline serve` on a free port with `config` and waits for /healthz.
fn serve(dir: &std::path::Path, config: &str) -> Killed {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    std::fs::write(dir.join("lifeline.toml"), config).unwrap();
    let config = dir.join("lifeline.toml");
    let config = config.to_str().unwrap();
    let serve = lifeline(dir, &["serve", "--plain-http", "--listen", &listen, "--config", config])
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
    serve
}

/// Spawns `lifeline power cycle` and kills it with SIGKILL once its IPMI session is written down.
fn kill_a_power_cycle(dir: &std::path::Path, rows_before: usize) -> Instant {
    let child = lifeline(dir, &["power", "cycle", "n1", "--yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    wait_until("the command's IPMI session written down", Duration::from_secs(30), || {
        (recorded(dir) > rows_before).then_some(())
    });
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    Instant::now()
}

#[test]
fn a_one_shot_command_closes_dead_commands_sessions_first_and_leaves_a_live_consoles() {
    let Some((bmcs, dir)) = one_bmc() else { return };
    assert_eq!(others(&bmcs), 0, "a fresh ipmi_sim has no session");
    // A live server with its always-on console: one session of ours, written down by a live owner.
    let _serve = serve(dir.path(), "[server]\nsweep-interval = \"0s\"\nconsole-logging = true\n");
    wait_until("the console's session open and written down", Duration::from_secs(30), || {
        (others(&bmcs) == 1 && recorded(dir.path()) == 1).then_some(())
    });

    let killed_at = kill_a_power_cycle(dir.path(), 1);
    let left = others(&bmcs) - 1;
    assert!(left >= 1, "the killed command's session is on the BMC");
    assert_eq!(recorded(dir.path()), 1 + left, "each session the killed command left is written down");

    // The next one-shot command, far from ipmi_sim's 63 slots, closes them before it reads.
    let out = lifeline(dir.path(), &["power", "status", "n1"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let closed_after = killed_at.elapsed();
    assert_eq!(others(&bmcs), 1, "only the live console's session is left on the BMC");
    assert_eq!(recorded(dir.path()), 1, "only the live console's session is left written down");
    assert!(
        closed_after < Duration::from_secs(20),
        "closed after {closed_after:?} (ipmi_sim's timeout is 30 s)"
    );
}

#[test]
fn a_killed_commands_ipmi_session_is_closed_by_the_next_start() {
    let Some((bmcs, dir)) = one_bmc() else { return };
    let before = others(&bmcs);
    assert_eq!(before, 0, "a fresh ipmi_sim has no session");

    // A power cycle holds its session for the off phase and the pause after it (seconds): killed once its
    // session is written down.
    let killed_at = kill_a_power_cycle(dir.path(), 0);
    let left = others(&bmcs);
    let rows = recorded(dir.path());
    assert!(left >= 1, "the killed command's session is on the BMC");
    assert_eq!(rows, left, "each session the killed command left is written down");

    // The next process's start closes it (the server reclaims before it listens). Its own console logging
    // is off: an always-on SOL console would hold a session of its own and be counted.
    let serve = serve(dir.path(), "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\n");
    let closed_after = killed_at.elapsed();
    assert_eq!(recorded(dir.path()), 0, "the closed sessions are struck off");
    assert_eq!(others(&bmcs), before, "the BMC's session count is back");
    // ipmi_sim drops an idle session after 30 s: the count must be back long before that, or the test
    // would only have watched the timeout.
    assert!(closed_after < Duration::from_secs(20), "reclaimed after {closed_after:?}");
    drop(serve);
}

/// Whether any file under `dir` holds `needle` (the console logs are text, one record per line).
fn logged(dir: &Path, needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            logged(&p, needle)
        } else {
            std::fs::read(&p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
        }
    })
}

/// Sessions of another tool, each an `ipmitool shell` (which opens its session at start) kept from the
/// BMC's 30 s idle timeout by a command every few seconds.
struct OtherTools {
    children: Vec<Child>,
    stop: Arc<Mutex<bool>>,
}

impl OtherTools {
    fn hold(bmcs: &IpmiSims, n: usize) -> OtherTools {
        let port = bmcs.addr(0).port().to_string();
        let host = bmcs.ip.to_string();
        let mut children = Vec::new();
        let mut inputs: Vec<ChildStdin> = Vec::new();
        for _ in 0..n {
            let mut c = Command::new("ipmitool")
                .args(["-I", "lanplus", "-C", "3", "-H", &host, "-p", &port, "-U", "admin", "-P", "password"])
                .arg("shell")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("ipmitool shell");
            inputs.push(c.stdin.take().unwrap());
            children.push(c);
        }
        let stop = Arc::new(Mutex::new(false));
        let flag = stop.clone();
        std::thread::spawn(move || {
            while !*flag.lock().unwrap() {
                for i in &mut inputs {
                    let _ = i.write_all(b"mc guid\n");
                }
                std::thread::sleep(Duration::from_secs(5));
            }
        });
        OtherTools { children, stop }
    }
}

impl Drop for OtherTools {
    fn drop(&mut self) {
        *self.stop.lock().unwrap() = true;
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_killed_servers_console_session_is_closed_and_the_console_is_back_at_once() {
    let Some((bmcs, dir)) = one_bmc() else { return };
    // No sweeps (they would keep a read session of their own); the console is logged.
    let config = "[server]\nsweep-interval = \"0s\"\nconsole-logging = true\n";

    let (n, slots) = active(&bmcs);
    assert_eq!((n, slots), (1, SLOTS), "a fresh ipmi_sim: only the asking session, {SLOTS} slots");
    let _others = OtherTools::hold(&bmcs, SLOTS - FREE);
    let others = SLOTS - FREE;
    wait_until("the other tools' sessions open", Duration::from_secs(30), || {
        (active(&bmcs).0 == others + 1).then_some(())
    });

    let mut serial = std::net::TcpStream::connect(bmcs.serial(0)).expect("the host's serial line");
    let mut killed_at: Option<Instant> = None;
    let mut back_after = Vec::new();
    for round in 0..=RESTARTS {
        let mut srv = serve(dir.path(), config);
        // The console is live: what the host prints now is logged.
        let mark = format!("lifeline-console-round-{round}-{}", std::process::id());
        wait_until(
            &format!("round {round}: the console logs the host again"),
            Duration::from_secs(25),
            || {
                if let Ok(Some(st)) = srv.0.try_wait() {
                    panic!("round {round}: lifeline serve exited early: {st}");
                }
                serial.write_all(format!("{mark}\r\n").as_bytes()).unwrap();
                std::thread::sleep(Duration::from_millis(300));
                logged(&dir.path().join("data"), &mark).then_some(())
            },
        );
        if let Some(t) = killed_at {
            back_after.push(t.elapsed());
        }
        // Power reads work beside it (a one-shot command: its own session, closed when it ends).
        let out = lifeline(dir.path(), &["power", "status", "n1", "--json"]).output().unwrap();
        assert!(
            out.status.success(),
            "round {round}: power status failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("\"on\""),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        // One session of ours on the BMC: the live console's, written down; the dead servers' are gone.
        let ours = active(&bmcs).0 - others - 1;
        assert_eq!(ours, 1, "round {round}: the BMC holds {ours} sessions of ours (only the live console's)");
        assert_eq!(recorded(dir.path()), 1, "round {round}: the live console's session is written down");
        if round == RESTARTS {
            // A graceful end closes the console and strikes it off.
            let pid = srv.0.id().to_string();
            assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
            let st = srv.0.wait().unwrap();
            assert!(st.success(), "lifeline serve ended with {st}");
            break;
        }
        srv.0.kill().unwrap();
        srv.0.wait().unwrap();
        killed_at = Some(Instant::now());
        // The killed console's session is still on the BMC (ipmi_sim keeps it 30 s) and written down: left
        // alone, ten of these would overflow the four free slots.
        assert_eq!(active(&bmcs).0 - others - 1, 1, "round {round}: the killed console's session is left");
        assert_eq!(recorded(dir.path()), 1, "round {round}: the killed console's session stays written down");
    }
    assert_eq!(active(&bmcs).0, others + 1, "no session of ours after a graceful end");
    assert_eq!(recorded(dir.path()), 0, "nothing written down after a graceful end");
    // ipmi_sim frees a dead console's session only after 30 s idle: the console must be back long before.
    let slowest = back_after.iter().max().copied().unwrap_or_default();
    eprintln!("console back after a kill: {back_after:?}");
    assert!(slowest < Duration::from_secs(15), "a console came back only after {slowest:?}");
}
