//! A BMC at its session limit, as an iDRAC behaves (the simulator's `idrac-like` flavor: 8 Redfish session
//! slots, a 9th login refused with 503 and `IDRAC.2.x.RAC0218`, "The maximum number of user sessions is
//! reached."): Lifeline deletes the stale sessions its own dead processes left there (handed over by the
//! session ledger) and logs in once more; when none of the sessions are its own, the error says the BMC is
//! at its session limit and names the limit (the sessions the BMC lists), and nothing of anyone else's is
//! touched. The simulator's own session table is the witness.

mod common;

use std::net::IpAddr;
use std::process::Command;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::quick_options;
use lifeline_bmc::*;
use lifeline_redfish::MemoryPinStore;
use lifeline_sim::{EndpointKind, Fleet, FleetSpec, RedfishFlavor, RunningFleet, ServerSpec, SimOptions};
use lifeline_test_utils::unique_loopback;
use lifeline_types::BmcProtocol;

/// One simulated iDRAC-like BMC and its Redfish target.
async fn idrac() -> (RunningFleet, BmcTarget, String) {
    let mut s = ServerSpec::bare("idrac", IpAddr::V4(unique_loopback()), "admin", "password");
    s.bmc.flavor = RedfishFlavor::IdracLike;
    let fleet = Fleet::start(FleetSpec { servers: vec![s], switches: vec![] }, SimOptions::for_tests())
        .await
        .expect("fleet starts");
    let e = fleet.endpoint("idrac", EndpointKind::Redfish).expect("a Redfish endpoint");
    let mut t =
        BmcTarget::new("idrac", e.address.to_string(), BmcProtocol::Redfish, &e.username, &e.password);
    t.redfish_port = e.port;
    let url = t.redfish_url();
    (fleet, t, url)
}

/// Logs in as another tool would and leaves the session open: (its URI, its token).
fn open_session(url: &str) -> (String, String) {
    let out = Command::new("curl")
        .args([
            "-sk",
            "--max-time",
            "10",
            "-D",
            "-",
            "-o",
            "/dev/null",
            "-H",
            "Content-Type: application/json",
        ])
        .args(["-d", r#"{"UserName":"admin","Password":"password"}"#])
        .arg(format!("{url}/redfish/v1/SessionService/Sessions"))
        .output()
        .expect("curl");
    let head = String::from_utf8_lossy(&out.stdout).into_owned();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_else(|| panic!("no {name} in the login answer: {head}"))
    };
    let location = header("location");
    let uri = if location.starts_with("http") { location } else { format!("{url}{location}") };
    (uri, header("x-auth-token"))
}

/// A ledger holding the sessions of a dead process of ours (what the engine's store ledger hands over).
#[derive(Default)]
struct DeadOwnersLedger {
    stale: Mutex<Vec<(String, String)>>,
    closed: Mutex<Vec<String>>,
}

#[async_trait]
impl SessionLedger for DeadOwnersLedger {
    async fn kept(&self, _bmc: &str, _uri: &str, _token: &str) {}
    async fn closed(&self, _bmc: &str, uri: &str) {
        self.closed.lock().unwrap().push(uri.to_owned());
    }
    async fn stale(&self, _bmc: &str) -> Vec<(String, String)> {
        std::mem::take(&mut *self.stale.lock().unwrap())
    }
}

fn pool(ledger: Arc<DeadOwnersLedger>) -> BmcPool {
    let kept = KeptSessions::new(KeepOptions::default());
    kept.set_ledger(ledger);
    let opts = BmcOptions {
        tls: TlsPolicy::Pin(Arc::new(MemoryPinStore::default())),
        kept: Some(kept),
        ..quick_options()
    };
    BmcPool::new(opts, Arc::new(MemoryAuditSink::new()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_session_table_first_loses_our_own_stale_sessions_then_the_login_is_tried_once_more() {
    let (fleet, target, url) = idrac().await;
    let bmc = fleet.redfish("idrac").unwrap();
    // Two sessions a killed process of ours left (recorded in the ledger), six of other tools: full.
    let ours: Vec<(String, String)> = (0..2).map(|_| open_session(&url)).collect();
    for _ in 0..6 {
        open_session(&url);
    }
    assert_eq!(bmc.session_count(), 8, "the iDRAC-like BMC holds 8 sessions");
    let ledger = Arc::new(DeadOwnersLedger::default());
    *ledger.stale.lock().unwrap() = ours.clone();
    let pool = pool(ledger.clone());

    let power = pool.bmc(target.clone()).power_state().await;
    assert!(power.is_ok(), "logged in after freeing our stale sessions: {power:?}");
    let mut closed = ledger.closed.lock().unwrap().clone();
    closed.sort();
    let mut want: Vec<String> = ours.iter().map(|(u, _)| u.clone()).collect();
    want.sort();
    assert_eq!(closed, want, "both stale sessions deleted and struck off the ledger");
    // The other tools' six stay; ours was deleted after the read (not kept: not a sweep).
    assert_eq!(bmc.session_count(), 6, "only our own stale sessions were deleted");
    drop(pool);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_session_table_of_other_tools_is_reported_naming_the_limit_and_left_alone() {
    let (fleet, target, url) = idrac().await;
    let bmc = fleet.redfish("idrac").unwrap();
    for _ in 0..8 {
        open_session(&url);
    }
    let ledger = Arc::new(DeadOwnersLedger::default());
    let pool = pool(ledger.clone());
    let e = pool.bmc(target.clone()).power_state().await.expect_err("no slot for a login");
    let msg = lifeline_types::error_chain(&e);
    assert!(msg.contains("session limit") && msg.contains("limit: 8 sessions"), "{msg}");
    assert!(msg.contains("The maximum number of user sessions is reached."), "the BMC's own words: {msg}");
    assert!(msg.contains("no stale session of its own"), "{msg}");
    assert!(!msg.contains("lists no computer system"), "{msg}");
    assert_eq!(bmc.session_count(), 8, "nobody else's session was touched");
    assert!(ledger.closed.lock().unwrap().is_empty());
    drop(pool);
}
