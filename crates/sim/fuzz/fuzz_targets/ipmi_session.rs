//! The simulated BMC's IPMI responder, driven through a real RMCP+ handshake (RAKP with the BMC's known
//! user and password, so the session keys are known here) and then any mix of in-session commands, SOL
//! packets, replays, tampered and raw datagrams. Properties:
//! - the handshake completes and RAKP 4's integrity check value verifies;
//! - every reply to the session opens with the session keys, authenticated, addressed to our session id;
//! - a replayed, tampered or unauthenticated in-session datagram is never answered inside the session.
#![no_main]

use std::net::SocketAddr;
use std::sync::OnceLock;

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use lifeline_ipmi::wire::crypto::{CipherSuite, RakpParams, SessionKeys, codes_equal};
use lifeline_ipmi::wire::message::Request;
use lifeline_ipmi::wire::packet::{self, Packet, PayloadType, V20Packet};
use lifeline_ipmi::wire::rakp::{OpenSessionRequest, OpenSessionResponse, Rakp1, Rakp2, Rakp34};
use lifeline_ipmi::wire::sol::SolPacket;
use lifeline_sim::ipmi::Bmc;
use lifeline_sim::{Host, HostConfig};

#[derive(Arbitrary, Debug)]
enum Step {
    Command { netfn: u8, cmd: u8, data: Vec<u8>, encrypted: bool },
    Sol { seq: u8, ack_seq: u8, accepted: u8, flags: u8, data: Vec<u8> },
    ConsoleOutput(Vec<u8>),
    Retransmit,
    Unauthenticated { netfn: u8, cmd: u8, data: Vec<u8> },
    Tampered { netfn: u8, cmd: u8, data: Vec<u8>, at: u16, xor: u8 },
    Replay,
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    suite17: bool,
    console_sid: u32,
    console_random: [u8; 16],
    admin: bool,
    steps: Vec<Step>,
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime"))
}

fn sessionless(pt: PayloadType, payload: Vec<u8>) -> Vec<u8> {
    packet::encode(&Packet::V20(V20Packet::sessionless(pt, payload)), None, [0; 16])
}

fn one_reply(out: Vec<(Vec<u8>, SocketAddr)>) -> Vec<u8> {
    assert_eq!(out.len(), 1, "handshake step answered with {} datagrams", out.len());
    out.into_iter().next().map(|(d, _)| d).unwrap_or_default()
}

fn payload_of(d: &[u8]) -> Vec<u8> {
    match packet::decode(d, None) {
        Ok(Packet::V20(p)) => p.payload,
        other => panic!("handshake reply is not RMCP+: {other:?}"),
    }
}

fuzz_target!(|input: Input| {
    let _rt = runtime().enter();
    let mut cfg = HostConfig::server("fuzz-node");
    cfg.time_scale = 0.0;
    let (user, password) = (cfg.bmc.username.clone(), cfg.bmc.password.clone());
    let suite = if input.suite17 { CipherSuite::Suite17 } else { CipherSuite::Suite3 };
    if !cfg.bmc.cipher_suites.contains(&suite.id()) {
        return;
    }
    let host = Host::new(cfg);
    let mut bmc = Bmc::new(host.clone(), 623);
    let peer: SocketAddr = "127.0.0.1:40623".parse().expect("address");
    let console_sid = input.console_sid.max(1);

    // Open Session, RAKP 1-4, as a console does.
    let open = OpenSessionRequest {
        tag: 1,
        max_privilege: 0,
        console_session_id: console_sid,
        algorithms: suite.algorithms(),
    };
    let r = one_reply(bmc.handle(&sessionless(PayloadType::OpenSessionRequest, open.encode()), peer));
    let opened = OpenSessionResponse::decode(&payload_of(&r)).expect("Open Session response");
    assert_eq!(opened.status, 0, "Open Session refused");
    let role = if input.admin { 0x14 } else { 0x12 };
    let r1 = Rakp1 {
        tag: 2,
        bmc_session_id: opened.bmc_session_id,
        console_random: input.console_random,
        role,
        username: user.clone().into_bytes(),
    };
    let r = one_reply(bmc.handle(&sessionless(PayloadType::Rakp1, r1.encode()), peer));
    let r2 = Rakp2::decode(&payload_of(&r)).expect("RAKP 2");
    assert_eq!(r2.status, 0, "RAKP 2 refused");
    let params = RakpParams {
        suite,
        console_session_id: console_sid,
        bmc_session_id: opened.bmc_session_id,
        console_random: input.console_random,
        bmc_random: r2.bmc_random,
        bmc_guid: r2.bmc_guid,
        role,
        username: user.into_bytes(),
    };
    assert!(codes_equal(&params.rakp2_code(password.as_bytes()), &r2.auth_code), "RAKP 2 code");
    let r3 = Rakp34 {
        tag: 3,
        status: 0,
        session_id: opened.bmc_session_id,
        auth_code: params.rakp3_code(password.as_bytes()),
    };
    let r = one_reply(bmc.handle(&sessionless(PayloadType::Rakp3, r3.encode()), peer));
    let r4 = Rakp34::decode(&payload_of(&r)).expect("RAKP 4");
    assert_eq!(r4.status, 0, "RAKP 4 refused");
    let sik = params.sik(password.as_bytes(), None);
    assert!(codes_equal(&params.rakp4_icv(&sik), &r4.auth_code), "RAKP 4 integrity check value");
    let keys = SessionKeys::derive(suite, &sik);

    // Every datagram the BMC sends to us inside the session must open with the keys.
    let check = |out: &[(Vec<u8>, SocketAddr)]| {
        for (d, _) in out {
            if packet::peek_session_id(d) == Some(console_sid) {
                match packet::decode(d, Some(&keys)) {
                    Ok(Packet::V20(p)) => assert!(p.authenticated, "unauthenticated in-session reply"),
                    other => panic!("in-session reply does not open: {other:?}"),
                }
            }
        }
    };
    let in_session_reply = |out: &[(Vec<u8>, SocketAddr)]| {
        out.iter().any(|(d, _)| packet::peek_session_id(d) == Some(console_sid))
    };

    let mut seq = 0u32;
    let mut rq_seq = 0u8;
    let mut last: Option<Vec<u8>> = None;
    let bmc_sid = opened.bmc_session_id;
    let seal = |seq: &mut u32,
                rq_seq: &mut u8,
                netfn: u8,
                cmd: u8,
                data: &[u8],
                encrypted: bool,
                authenticated: bool,
                iv: u8| {
        *seq += 1;
        *rq_seq = (*rq_seq + 1) & 0x3F;
        let req = Request::new(netfn & 0x3E, cmd, *rq_seq, data.to_vec());
        let p = V20Packet {
            payload_type: PayloadType::Ipmi,
            encrypted,
            authenticated,
            session_id: bmc_sid,
            seq: *seq,
            payload: req.encode(),
        };
        packet::encode(&Packet::V20(p), Some(&keys), [iv; 16])
    };
    for step in input.steps.iter().take(32) {
        bmc.check_reset();
        let out = match step {
            Step::Command { netfn, cmd, data, encrypted } => {
                let d = seal(&mut seq, &mut rq_seq, *netfn, *cmd, data, *encrypted, true, *cmd);
                last = Some(d.clone());
                bmc.handle(&d, peer)
            }
            Step::Sol { seq: s, ack_seq, accepted, flags, data } => {
                seq += 1;
                let sol = SolPacket {
                    seq: s & 0x0F,
                    ack_seq: ack_seq & 0x0F,
                    accepted: *accepted,
                    flags: *flags,
                    data: data.clone(),
                };
                let p = V20Packet {
                    payload_type: PayloadType::Sol,
                    encrypted: true,
                    authenticated: true,
                    session_id: opened.bmc_session_id,
                    seq,
                    payload: sol.encode(),
                };
                let d = packet::encode(&Packet::V20(p), Some(&keys), [7; 16]);
                last = Some(d.clone());
                bmc.handle(&d, peer)
            }
            Step::ConsoleOutput(b) => bmc.sol_output(b),
            Step::Retransmit => bmc.sol_retransmit(),
            Step::Unauthenticated { netfn, cmd, data } => {
                let d = seal(&mut seq, &mut rq_seq, *netfn, *cmd, data, false, false, 0);
                let out = bmc.handle(&d, peer);
                assert!(!in_session_reply(&out), "unauthenticated request answered in the session");
                out
            }
            Step::Tampered { netfn, cmd, data, at, xor } => {
                let mut d = seal(&mut seq, &mut rq_seq, *netfn, *cmd, data, true, true, 1);
                let at = 4 + usize::from(*at) % (d.len() - 4);
                d[at] ^= xor | 1;
                let out = bmc.handle(&d, peer);
                assert!(!in_session_reply(&out), "tampered request (byte {at}) answered in the session");
                out
            }
            Step::Replay => match &last {
                Some(d) => {
                    let out = bmc.handle(d, peer);
                    assert!(!in_session_reply(&out), "replayed datagram answered in the session");
                    out
                }
                None => continue,
            },
            Step::Raw(b) => bmc.handle(b, peer),
        };
        check(&out);
    }
    bmc.expire();
});
