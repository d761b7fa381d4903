//! 10,000 simulated BMCs in one process answer IPMI and Redfish, each from its own address, while the
//! simulator holds only a few descriptors (it used to hold one socket per BMC per protocol, 20,000 here,
//! which is this machine's whole open-file limit).

mod common;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;

use lifeline_ipmi::client::{ClientConfig, Session};
use lifeline_sim::{EndpointKind, SimOptions};
use tokio::net::UdpSocket;

const N: usize = 10_000;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

/// Get Channel Authentication Capabilities (IPMI 1.5 framing, no session), written out by hand: the
/// answer needs no session, so every address can be asked cheaply.
const AUTH_CAPS: [u8; 23] = [
    0x06, 0x00, 0xff, 0x07, // RMCP: version, reserved, sequence (no ack), class IPMI
    0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x09, // auth type none, sequence 0, session 0, length 9
    0x20, 0x18, 0xc8, 0x81, 0x00, 0x38, 0x8e, 0x04,
    0xb5, // BMC, App, Get Channel Auth Caps ch 0xE admin
];

/// Asks every address, a window at a time, until each has answered from its own address (or 60 s).
async fn ping_all(targets: &[SocketAddr]) -> HashSet<SocketAddr> {
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let mut answered = HashSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut buf = [0u8; 512];
    while answered.len() < targets.len() && tokio::time::Instant::now() < deadline {
        let missing: Vec<_> = targets.iter().filter(|t| !answered.contains(*t)).take(256).collect();
        for t in &missing {
            let _ = sock.send_to(&AUTH_CAPS, t).await;
        }
        let window = tokio::time::Instant::now() + Duration::from_millis(500);
        let want = answered.len() + missing.len();
        while answered.len() < want {
            match tokio::time::timeout_at(window, sock.recv_from(&mut buf)).await {
                // A completion code 0 answer (byte 20 of the reply) from the address asked.
                Ok(Ok((n, from))) if n > 20 && buf[20] == 0 => {
                    answered.insert(from);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_bmcs_answer_ipmi_and_redfish_with_few_descriptors() {
    let before = open_fds();
    let t0 = std::time::Instant::now();
    let fleet = common::fleet(N, SimOptions::for_tests()).await;
    let started = t0.elapsed();
    let held = open_fds().saturating_sub(before);
    eprintln!("{N} BMCs started in {:.2} s holding {held} more descriptors", started.as_secs_f64());
    // One UDP socket, one TCP listener for the BMCs, the control listener, and a little of the runtime.
    assert!(held <= 16, "{N} BMCs hold {held} descriptors");

    let ipmi: Vec<SocketAddr> = fleet
        .endpoints()
        .iter()
        .filter(|e| e.kind == EndpointKind::Ipmi)
        .map(|e| SocketAddr::new(e.address, e.port))
        .collect();
    assert_eq!(ipmi.len(), N);
    assert_eq!(ipmi.iter().collect::<HashSet<_>>().len(), N, "every BMC has its own address");
    let answered = ping_all(&ipmi).await;
    assert_eq!(answered.len(), N, "every BMC answers IPMI from its own address");

    // Full RMCP+ sessions (RAKP, suite 17) and a power read on a sample spread over the fleet.
    let cfg = ClientConfig::new("admin", "password");
    for addr in ipmi.iter().step_by(N / 20) {
        let s = Session::open(*addr, &cfg).await.unwrap_or_else(|e| panic!("{addr}: {e}"));
        s.power_state().await.unwrap_or_else(|e| panic!("{addr}: {e}"));
        s.close().await.unwrap_or_else(|e| panic!("{addr}: {e}"));
    }

    // Redfish over TLS on a sample: each BMC has its own certificate (made on first use) and the client
    // pins it, so an answer from any other BMC would fail the handshake.
    let names: Vec<String> = fleet
        .endpoints()
        .iter()
        .filter(|e| e.kind == EndpointKind::Redfish)
        .map(|e| e.name.clone())
        .collect();
    assert_eq!(names.len(), N);
    let mut seen = HashSet::new();
    for name in names.iter().step_by(N / 50) {
        let (base, client) = common::bmc(&fleet, name);
        let r = client
            .get(format!("{base}/redfish/v1/Systems"))
            .basic_auth("admin", Some("password"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(r.status().is_success(), "{name}: {}", r.status());
        seen.insert(name.clone());
    }
    assert_eq!(seen.len(), 50);
    assert!(open_fds().saturating_sub(before) < 200, "descriptors stay few after the sweeps");
    fleet.shutdown().await;
}
