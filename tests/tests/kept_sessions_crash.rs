//! BMC sessions survive crashes without leaking: a server sweeping an iDRAC-like Redfish BMC (8 session
//! slots, sessions idle for 30 minutes before the BMC drops them) is killed with SIGKILL ten times while it
//! keeps a session there. Each start takes over the session its dead predecessor recorded, so the BMC never
//! holds more than one Lifeline session (without the record, each crash left one and the ninth start was
//! refused a login); a graceful end then deletes it. The BMC's own session collection is the witness.

use std::process::Command;
use std::time::Duration;

use lifeline_test_utils::{ServeProcess, SimProcess, unique_loopback, wait_until};

const OFFSET: u16 = 41900;
const CONFIG: &str = "[server]\nsweep-interval = \"1s\"\nconsole-logging = false\n";

fn sim() -> (SimProcess, String) {
    let ip = unique_loopback();
    let inv = format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"rf\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{ip}\", port = {}, protocol = \"redfish\", flavor = \"idrac-like\" }}\n",
        443 + OFFSET
    );
    let sim = SimProcess::start(&inv, OFFSET, &[("LIFELINE_BMC_PASSWORD", "s3cret-pw")]);
    (sim, format!("https://{ip}:{}", 443 + OFFSET))
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
    let (sim, url) = sim();
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
