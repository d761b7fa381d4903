//! Sessions on a shared [`Mux`] against real OpenIPMI `ipmi_sim` BMCs: many sessions to several BMCs over
//! two sockets, concurrent logins to one BMC, SOL, Close Session on drop, an empty routing table after the
//! sessions are gone, stray datagrams dropped, and the sockets released when the mux is dropped.

mod common;

use common::{admin, lossy_timing, read_until};
use lifeline_ipmi::client::{Mux, MuxStats};
use lifeline_ipmi::{CipherSuite, ClientConfig, Session};
use lifeline_test_utils::IpmiSims;
use std::net::SocketAddr;
use std::time::Duration;

fn suite3() -> ClientConfig {
    let mut cfg = admin();
    cfg.cipher_suites = vec![CipherSuite::Suite3];
    cfg
}

/// Waits (bounded) until the mux's table matches `want` (a dropped session's close runs in a task).
async fn settle(mux: &Mux, want: impl Fn(&MuxStats) -> bool) -> MuxStats {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let s = mux.stats();
        if want(&s) || tokio::time::Instant::now() >= deadline {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_sessions_to_several_bmcs_share_two_sockets() {
    let Some(sims) = IpmiSims::start(3) else { return };
    let mux = Mux::bind(2).expect("mux");
    let addrs: Vec<SocketAddr> = (0..3).map(|i| sims.addr(i)).collect();
    // Two sessions per BMC, all logging in at once (the default suite list: 17 refused, then 3).
    let opens = addrs.iter().flat_map(|a| [*a, *a]).map(|a| {
        let mux = mux.clone();
        async move { (a, mux.open(a, &admin()).await) }
    });
    let mut sessions = Vec::new();
    for (a, r) in futures::future::join_all(opens).await {
        let s = r.unwrap_or_else(|e| panic!("{a}: {e}"));
        assert_eq!(s.bmc(), a.to_string());
        assert_eq!(s.cipher_suite(), CipherSuite::Suite3);
        sessions.push(s);
    }
    let s = mux.stats();
    assert_eq!((s.sockets, s.sessions, s.waiting_addresses), (2, 6, 0), "{s:?}");
    // Requests on every session at once: each reply reaches its own session.
    let reads = sessions.iter().map(|s| async move {
        for _ in 0..5 {
            assert_eq!(s.device_id().await.expect("device id").manufacturer_id, 4753);
            assert!(s.chassis_status().await.expect("chassis status").power_on());
        }
    });
    futures::future::join_all(reads).await;
    for s in &sessions {
        assert_eq!(s.link_stats().answered, s.link_stats().transmissions, "{:?}", s.link_stats());
    }
    for s in sessions {
        s.close().await.expect("close");
    }
    let s = mux.stats();
    assert_eq!((s.sessions, s.waiting_addresses), (0, 0), "routing table not empty after close: {s:?}");
    assert!(s.delivered > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_logins_to_one_bmc_each_get_their_own_session() {
    let Some(sims) = IpmiSims::start(1) else { return };
    let mux = Mux::bind(1).expect("mux");
    let addr = sims.addr(0);
    // The default suite list makes every login ask for the BMC's cipher suites too: four logins' sessionless
    // replies and RAKP messages interleave on one socket from one address.
    let cfg = admin();
    let opens = (0..4).map(|_| mux.open(addr, &cfg));
    let sessions: Vec<Session> = futures::future::join_all(opens)
        .await
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.unwrap_or_else(|e| panic!("login {i}: {e}")))
        .collect();
    let mut ids: Vec<u32> = sessions.iter().map(|s| s.bmc_session_id()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 4, "two logins ended in the same BMC session");
    for s in &sessions {
        s.device_id().await.expect("device id");
    }
    assert_eq!(mux.stats().sessions, 4);
    futures::future::join_all(sessions.iter().map(Session::close)).await;
    assert_eq!(mux.stats().sessions, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_sessions_close_on_the_bmc_and_leave_the_table() {
    let Some(sims) = IpmiSims::start(1) else { return };
    let mux = Mux::bind(1).expect("mux");
    let addr = sims.addr(0);
    // Far more sessions, one after another, than ipmi_sim's table holds: each dropped one must be closed
    // on the BMC by its best-effort Close Session (sent through a waiter on the mux).
    for i in 0..40 {
        let s = mux.open(addr, &suite3()).await.unwrap_or_else(|e| panic!("session {i}: {e}"));
        s.device_id().await.unwrap();
        assert_eq!(mux.stats().sessions, 1);
        drop(s);
        // The mux's reader may hold the session for a moment (a late duplicate reply being decoded).
        let s = settle(&mux, |s| s.sessions == 0 && s.waiting_addresses == 0).await;
        assert_eq!(s.sessions, 0, "a dropped session stayed in the routing table: {s:?}");
        assert_eq!(s.waiting_addresses, 0, "the drop's Close Session never finished: {s:?}");
    }
    // The BMC still has room: nothing was orphaned.
    let s = mux.open(addr, &suite3()).await.expect("open after the drops");
    s.close().await.unwrap();
    // A closed session is closed once: a second close on a clone of its handle is not possible (close takes
    // self), and the table is empty.
    assert_eq!(mux.stats().sessions, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stray_datagrams_are_dropped_and_sessions_go_on() {
    let Some(sims) = IpmiSims::start(1) else { return };
    let mux = Mux::bind_on("127.0.0.1:0".parse().unwrap(), 1).expect("mux");
    let s = mux.open(sims.addr(0), &suite3()).await.expect("open");
    let local = mux.local_addrs()[0];
    let before = mux.stats().dropped;
    let stranger = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    // Garbage, an IPMI 1.5 reply, and an RMCP+ packet with our session's id but from another source.
    let forged = {
        use lifeline_ipmi::wire::packet::{self, Packet, PayloadType, V20Packet};
        let p = V20Packet {
            payload_type: PayloadType::Ipmi,
            encrypted: false,
            authenticated: false,
            session_id: 0x1234_5678,
            seq: 1,
            payload: vec![0; 8],
        };
        packet::encode(&Packet::V20(p), None, [0; 16])
    };
    for d in [&b"not ipmi"[..], &[6, 0, 0xff, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0][..], &forged[..]] {
        stranger.send_to(d, local).await.unwrap();
    }
    let after = settle(&mux, |m| m.dropped >= before + 3).await;
    assert_eq!(after.dropped, before + 3, "{after:?}");
    s.device_id().await.expect("the session still works");
    s.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lossy_logins_work_over_the_mux() {
    let Some(sims) = IpmiSims::start(1) else { return };
    let mux = Mux::bind(1).expect("mux");
    let mut cfg = suite3();
    cfg.timing = lossy_timing();
    let s = mux.open(sims.addr(0), &cfg).await.expect("open");
    s.device_id().await.unwrap();
    s.close().await.unwrap();
    // The mux's auto probe (session-less, no socket of its own).
    let caps = mux
        .get_channel_auth_caps(sims.addr(0), &cfg.timing, lifeline_ipmi::Privilege::Administrator)
        .await
        .expect("auth caps");
    assert!(caps.supports_v2());
    assert_eq!(mux.stats().waiting_addresses, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_mux_releases_its_sockets() {
    let mux = Mux::bind_on("127.0.0.1:0".parse().unwrap(), 2).expect("mux");
    let addrs = mux.local_addrs();
    assert_eq!(addrs.len(), 2);
    drop(mux);
    // The reader tasks held the sockets: they ended (aborted) and the ports are free again.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    for a in addrs {
        loop {
            match std::net::UdpSocket::bind(a) {
                Ok(_) => break,
                Err(e) => {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "{a} still bound after the mux was dropped: {e}"
                    );
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    }
}

/// SOL against ipmi_sim on a mux session: text from the host side of the serial line arrives, keys we send
/// arrive there, and the session closes cleanly with SOL active (deactivated first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sol_on_a_mux_session() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Some(sims) = IpmiSims::start(1) else { return };
    let mux = Mux::bind(1).expect("mux");
    let mut host = tokio::net::TcpStream::connect(sims.serial(0)).await.expect("serial tcp");
    let s = mux.open(sims.addr(0), &admin()).await.expect("open");
    let mut sol = s.activate_sol(Default::default()).await.expect("activate SOL");
    tokio::time::sleep(Duration::from_millis(200)).await;
    host.write_all(b"hello-over-the-mux\r\nEND\r\n").await.unwrap();
    let text = read_until(&mut sol, "END").await;
    assert!(text.contains("hello-over-the-mux"), "{text:?}");
    sol.write(b"typed-over-the-mux\r").await.unwrap();
    sol.flush().await.expect("BMC acked our characters");
    let mut buf = [0u8; 256];
    let mut typed = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !String::from_utf8_lossy(&typed).contains("typed-over-the-mux") {
            let n = host.read(&mut buf).await.unwrap();
            assert!(n > 0, "serial side closed");
            typed.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("keys did not arrive on the serial line");
    drop(sol);
    s.close().await.expect("close with SOL active");
    assert_eq!(mux.stats().sessions, 0);
    // ipmi_sim is still healthy (it crashes when a session closes with SOL active).
    let s = mux.open(sims.addr(0), &suite3()).await.expect("open again");
    s.device_id().await.unwrap();
    s.close().await.unwrap();
}
