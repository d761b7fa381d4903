//! IPMI sessions a dead process of ours left, closed by the next one against OpenIPMI `ipmi_sim`: a one-shot
//! pool closes them before its first session on that BMC (not only when the BMC reports its limit), asking
//! the ledger once per BMC; a dead console's SOL payload is deactivated before its session is closed, so the
//! next activation is not answered "payload already active" (0x80) until the BMC's 30 s timeout; a payload
//! held by a session that is not stale (an operator's console) is never touched. The BMC's own count of
//! active sessions (`ipmitool session info active`) and its payload holder are the witnesses.

mod common;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::*;
use lifeline_bmc::*;
use lifeline_ipmi::client::{ClientConfig, Error as IpmiError, Session, SolConfig};
use lifeline_ipmi::wire::Privilege;
use lifeline_ipmi::wire::payload::PAYLOAD_SOL;
use lifeline_types::PowerState;

async fn active_sessions(sim: &Arc<IpmiSims>) -> usize {
    let sim = sim.clone();
    tokio::task::spawn_blocking(move || sim.session_table(0).0).await.unwrap()
}

/// A session as a process that is then killed leaves it: open on the BMC, never closed.
async fn abandoned(sim: &IpmiSims, sol: bool) -> u32 {
    let mut cfg = ClientConfig::new("admin", "password");
    cfg.privilege = Privilege::Administrator;
    let s = Session::open(sim.addr(0), &cfg).await.expect("open");
    let id = s.bmc_session_id();
    if sol {
        let sol = s
            .activate_sol(SolConfig { keepalive: None, ..SolConfig::default() })
            .await
            .expect("activate SOL");
        std::mem::forget(sol);
    }
    std::mem::forget(s);
    id
}

/// A ledger whose dead owners left `stale` on the BMC (what the engine's store ledger hands over).
#[derive(Default)]
struct DeadOwners {
    stale: Mutex<Vec<u32>>,
    asked: Mutex<usize>,
    opened: Mutex<Vec<u32>>,
    closed: Mutex<Vec<u32>>,
}

#[async_trait]
impl SessionLedger for DeadOwners {
    async fn kept(&self, _bmc: &str, _uri: &str, _token: &str) {}
    async fn closed(&self, _bmc: &str, _uri: &str) {}
    async fn ipmi_opened(&self, _bmc: &str, id: u32) {
        self.opened.lock().unwrap().push(id);
    }
    async fn ipmi_closed(&self, _bmc: &str, id: u32) {
        self.closed.lock().unwrap().push(id);
    }
    async fn stale_ipmi(&self, _bmc: &str) -> Vec<u32> {
        *self.asked.lock().unwrap() += 1;
        std::mem::take(&mut *self.stale.lock().unwrap())
    }
}

fn one_shot_pool(ledger: Arc<DeadOwners>) -> BmcPool {
    let opts = BmcOptions { ledger: Some(SharedLedger(ledger)), ..quick_options() };
    BmcPool::new(opts, Arc::new(MemoryAuditSink::new()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_pool_closes_dead_owners_sessions_before_its_first_session_there() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let sim = Arc::new(sim);
    let base = active_sessions(&sim).await;
    let dead = [abandoned(&sim, false).await, abandoned(&sim, false).await];
    assert_eq!(active_sessions(&sim).await, base + 2, "the dead process's sessions are on the BMC");

    let ledger = Arc::new(DeadOwners::default());
    ledger.stale.lock().unwrap().extend(dead);
    let pool = one_shot_pool(ledger.clone());
    let bmc = pool.bmc(sim.target(0, "node1"));
    // Far from the limit: closed anyway, before the read.
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);
    let closed = ledger.closed.lock().unwrap().clone();
    for id in dead {
        assert!(closed.contains(&id), "{id:#x} struck off: {closed:x?}");
    }
    assert_eq!(active_sessions(&sim).await, base, "the dead process's sessions are gone from the BMC");
    // Once per BMC and process: a second read does not ask the ledger again.
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);
    assert_eq!(*ledger.asked.lock().unwrap(), 1, "the ledger is asked once per BMC");
    // Every session of ours was written down and struck off (the one that closed the others included).
    let (opened, closed) = (ledger.opened.lock().unwrap().clone(), ledger.closed.lock().unwrap().clone());
    assert!(opened.iter().all(|id| closed.contains(id)), "opened {opened:x?}, closed {closed:x?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_consoles_payload_is_deactivated_and_its_session_closed_but_a_live_one_is_left() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let sim = Arc::new(sim);
    let base = active_sessions(&sim).await;
    let console = abandoned(&sim, true).await;

    // A new console is refused while the dead one holds SOL (what a restarted server met until ipmi_sim's
    // 30 s timeout).
    let mut cfg = ClientConfig::new("admin", "password");
    cfg.privilege = Privilege::Administrator;
    let next = Session::open(sim.addr(0), &cfg).await.unwrap();
    assert_eq!(
        next.payload_holder(PAYLOAD_SOL, 1).await.unwrap(),
        Some(console),
        "the dead console holds SOL"
    );
    let refused = next.activate_sol(SolConfig { keepalive: None, ..SolConfig::default() }).await;
    assert!(matches!(refused, Err(IpmiError::PayloadAlreadyActive { .. })), "{:?}", refused.err());

    let ledger = Arc::new(DeadOwners::default());
    ledger.stale.lock().unwrap().push(console);
    let pool = one_shot_pool(ledger.clone());
    let done = pool.bmc(sim.target(0, "node1")).close_dead_owners_ipmi().await;
    assert_eq!((done.sol_freed, done.closed, done.refused, done.failed), (1, 1, 0, 0), "{done:?}");
    assert_eq!(next.payload_holder(PAYLOAD_SOL, 1).await.unwrap(), None, "SOL is free");
    let sol = next
        .activate_sol(SolConfig { keepalive: None, ..SolConfig::default() })
        .await
        .expect("activates at once");
    assert_eq!(active_sessions(&sim).await, base + 1, "only the new console's session is left");

    // The live console's payload is not touched when another dead session of ours is closed.
    let other = abandoned(&sim, false).await;
    ledger.stale.lock().unwrap().push(other);
    let done = pool.bmc(sim.target(0, "node1")).close_dead_owners_ipmi().await;
    assert_eq!((done.sol_freed, done.closed), (0, 1), "{done:?}");
    assert_eq!(
        next.payload_holder(PAYLOAD_SOL, 1).await.unwrap(),
        Some(next.bmc_session_id()),
        "still held by the live console"
    );
    sol.deactivate().await.unwrap();
    next.close().await.unwrap();
    assert_eq!(active_sessions(&sim).await, base);
}
