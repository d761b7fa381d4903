//! 30 % datagram loss in both directions between the client and a real ipmi_sim:
//! commands still succeed through retransmission, and a power action whose reply was
//! lost is not executed twice (checked in ipmi_sim's chassis.log).

mod common;

use common::{IpmiSim, admin, lossy_timing};
use lifeline_ipmi::wire::chassis::ChassisOp;
use lifeline_ipmi::{CipherSuite, Session};
use lifeline_test_utils::UdpRelay;

#[tokio::test]
async fn thirty_percent_loss_commands_succeed_and_power_is_never_doubled() {
    let Some(sim) = IpmiSim::start() else { return };
    let proxy = UdpRelay::start(sim.addr, 0.30, 0x1fe11e).await;
    let mut cfg = admin();
    cfg.cipher_suites = vec![CipherSuite::Suite3];
    cfg.timing = lossy_timing();
    let t0 = std::time::Instant::now();
    let s = Session::open(proxy.addr, &cfg).await.expect("open through 30% loss");
    eprintln!("open: {:?}", t0.elapsed());
    for _ in 0..5 {
        s.device_id().await.expect("device id through loss");
    }
    assert_eq!(s.sdr_records().await.expect("SDR through loss").len(), 7);
    assert_eq!(s.sel_entries().await.expect("SEL through loss").len(), 2);

    eprintln!("reads: {:?}", t0.elapsed());
    const ROUNDS: usize = 4;
    for _ in 0..ROUNDS {
        s.chassis_control(ChassisOp::PowerDown).await.expect("off");
        assert!(!s.chassis_status().await.unwrap().power_on());
        s.chassis_control(ChassisOp::PowerUp).await.expect("on");
        assert!(s.chassis_status().await.unwrap().power_on());
    }
    eprintln!("power: {:?}", t0.elapsed());
    let log = sim.chassis_log();
    let offs = log.lines().filter(|l| l.ends_with("set power 0")).count();
    let ons = log.lines().filter(|l| l.ends_with("set power 1")).count();
    assert_eq!((offs, ons), (ROUNDS, ROUNDS), "each power action executed exactly once:\n{log}");

    // Cycle cannot be confirmed from state: it is sent once, never resent; either
    // acknowledged or reported Unconfirmed, but never executed twice.
    let before = sim.chassis_log().lines().count();
    match s.chassis_control(ChassisOp::PowerCycle).await {
        Ok(()) | Err(lifeline_ipmi::Error::Unconfirmed { .. }) => {}
        Err(e) => panic!("cycle: {e}"),
    }
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let cycles = sim.chassis_log().lines().skip(before).filter(|l| l.ends_with("set power 0")).count();
    assert!(cycles <= 1, "cycle executed {cycles} times");

    eprintln!("cycle: {:?}", t0.elapsed());
    s.close().await.expect("close through loss");
    eprintln!("close: {:?}", t0.elapsed());
    let (dropped, passed) = (proxy.dropped(), proxy.passed());
    eprintln!("proxy dropped {dropped}, passed {passed}");
    assert!(dropped as f64 > 0.2 * (dropped + passed) as f64, "the link really was lossy");
}
