//! BMC sessions survive crashes without leaking: a server sweeping an iDRAC-like Redfish BMC (8 session
//! slots, sessions idle for 30 minutes before the BMC drops them) is killed with SIGKILL ten times while it
//! keeps a session there. Each start takes over the session its dead predecessor recorded, so the BMC never
//! holds more than one Lifeline session (without the record, each crash left one and the ninth start was
//! refused a login); a graceful end then deletes it. The BMC's own session collection is the witness.
//!
//! A one-shot command keeps no session but writes down each one it holds: a `lifeline power status`
//! SIGKILLed while it holds the last free slot (the other seven held by other tools) leaves its session
//! findable, and the next command, refused a login at the limit, deletes it, logs in once more and answers;
//! with the table full of other tools' sessions the command fails naming the limit and touches none.

use std::process::Command;
use std::time::Duration;

use lifeline_test_utils::{ServeProcess, SimProcess, output_json, output_text, unique_loopback, wait_until};

const OFFSET: u16 = 41900;
const CLI_OFFSET: u16 = 43100;
const CONFIG: &str = "[server]\nsweep-interval = \"1s\"\nconsole-logging = false\n";

fn sim(offset: u16) -> (SimProcess, String) {
    let ip = unique_loopback();
    let inv = format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"rf\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{ip}\", port = {}, protocol = \"redfish\", flavor = \"idrac-like\" }}\n",
        443 + offset
    );
    let sim = SimProcess::start(&inv, offset, &[("LIFELINE_BMC_PASSWORD", "s3cret-pw")]);
    (sim, format!("https://{ip}:{}", 443 + offset))
}

/// The sessions the BMC lists (read with HTTP Basic, which opens none).
fn sessions(url: &str) -> usize {
    let out = Command::new("curl")
        .args(["-sk", "--max-time", "10", "-u", "admin:s3cret-pw"])
        .arg(format!("{url}/redfish/v1/SessionService/Sessions"))
        .output()
        .expect("curl");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    v["Members"].as_array().map_or_else(|| panic!("no Members: {v}"), Vec::len)
}

/// Logs in as another tool would and leaves the session open.
fn other_tool_logs_in(url: &str) {
    let out = Command::new("curl")
        .args(["-sk", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(["-H", "Content-Type: application/json"])
        .args(["-d", r#"{"UserName":"admin","Password":"s3cret-pw"}"#])
        .arg(format!("{url}/redfish/v1/SessionService/Sessions"))
        .output()
        .expect("curl");
    let code = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(code.starts_with('2'), "another tool's login answered {code}");
}

/// The sessions recorded in the store.
fn recorded(sim: &SimProcess) -> usize {
    let out = Command::new("sqlite3")
        .arg(sim.data.join("lifeline.db"))
        .arg("SELECT count(*) FROM bmc_sessions")
        .output()
        .expect("sqlite3");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

#[test]
fn ten_sigkills_with_a_kept_redfish_session_leave_at_most_one_and_a_graceful_end_none() {
    if !lifeline_test_utils::have("curl") || !lifeline_test_utils::have("sqlite3") {
        let _: Option<()> = lifeline_test_utils::skip_or_fail("curl and sqlite3 are needed");
        return;
    }
    let (sim, url) = sim(OFFSET);
    assert_eq!(sessions(&url), 0);
    for round in 0..10 {
        let mut srv = ServeProcess::start_with(&sim, CONFIG);
        wait_until("a kept session, recorded", Duration::from_secs(60), || {
            (sessions(&url) >= 1 && recorded(&sim) == 1).then_some(())
        });
        // Past a sweep or two, so the kill lands between sweeps or in one, wherever it falls.
        std::thread::sleep(Duration::from_millis(300 * (round % 4)));
        srv.kill9();
        let n = sessions(&url);
        assert!(n <= 1, "after kill {}: {n} sessions on the BMC", round + 1);
    }
    let srv = ServeProcess::start_with(&sim, CONFIG);
    wait_until("the last server's sweeps", Duration::from_secs(60), || {
        (sessions(&url) == 1 && recorded(&sim) == 1).then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(sessions(&url), 1);
    // SIGTERM: the graceful end deletes the session and strikes it off.
    let st = Command::new("kill").args(["-TERM", &srv.pid().to_string()]).status().unwrap();
    assert!(st.success());
    let mut srv = srv;
    let t = std::time::Instant::now();
    while srv.child.try_wait().unwrap().is_none() {
        assert!(t.elapsed() < Duration::from_secs(30), "lifeline serve did not end on SIGTERM");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(sessions(&url), 0, "a session was left after a graceful end");
    assert_eq!(recorded(&sim), 0);
}

#[test]
fn a_command_at_the_session_limit_frees_a_killed_commands_session_and_names_the_limit_when_it_cannot() {
    if !lifeline_test_utils::have("curl") || !lifeline_test_utils::have("sqlite3") {
        let _: Option<()> = lifeline_test_utils::skip_or_fail("curl and sqlite3 are needed");
        return;
    }
    let (sim, url) = sim(CLI_OFFSET);
    for _ in 0..7 {
        other_tool_logs_in(&url);
    }
    assert_eq!(sessions(&url), 7);

    // A command killed while it holds the eighth slot: the BMC answers each request after 2 s, so the
    // command is still reading when its session is written down.
    sim.fault("rf", "bmc-slow=2000");
    let mut killed = sim.spawn_lifeline(&["power", "status", "rf", "--json"]);
    wait_until("the command's session, recorded", Duration::from_secs(60), || {
        if let Ok(Some(st)) = killed.try_wait() {
            panic!("the command ended before it was killed: {st}");
        }
        (recorded(&sim) == 1).then_some(())
    });
    killed.kill().expect("SIGKILL");
    killed.wait().unwrap();
    sim.fault("rf", "clear");
    assert_eq!(sessions(&url), 8, "the killed command's session stays on the BMC, and the table is full");
    assert_eq!(recorded(&sim), 1);

    // The next command is refused at the limit, deletes the dead one's session and logs in once more.
    let o = sim.lifeline(&["power", "status", "rf", "--json"]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert_eq!(output_json(&o)[0]["power"], "on", "{text}");
    assert_eq!(sessions(&url), 7, "the dead command's session was deleted, this one's logged out: {text}");
    assert_eq!(recorded(&sim), 0, "both struck off the record");

    // Eight sessions of other tools: none is ours to free. The message names the limit; nothing is touched.
    other_tool_logs_in(&url);
    assert_eq!(sessions(&url), 8);
    let o = sim.lifeline(&["power", "status", "rf", "--json"]);
    let text = output_text(&o);
    assert_ne!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("session limit") && text.contains("limit: 8 sessions"), "{text}");
    assert!(text.contains("no stale session of its own"), "{text}");
    assert_eq!(sessions(&url), 8, "no other tool's session was deleted");
    assert_eq!(recorded(&sim), 0);
}
