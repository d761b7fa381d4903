//! RMCP+ session traffic with known keys, so the authenticated and encrypted paths are reached (raw bytes
//! almost never carry a valid HMAC): any packet sealed with the session keys opens to the same packet, and
//! no change to the signed bytes or the AuthCode is accepted as authenticated — at most a packet whose
//! "authenticated" bit was cleared decodes, which the session layers (client and simulator) refuse. The
//! IPMI message and SOL payload codecs inside round-trip too.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use lifeline_ipmi::wire::DecodeError;
use lifeline_ipmi::wire::crypto::{CipherSuite, SessionKeys};
use lifeline_ipmi::wire::message::{Request, Response};
use lifeline_ipmi::wire::packet::{self, Packet, PayloadType, V20Packet};
use lifeline_ipmi::wire::sol::SolPacket;

#[derive(Arbitrary, Debug)]
enum Inner {
    Request {
        rs_addr: u8,
        netfn: u8,
        rs_lun: u8,
        rq_addr: u8,
        rq_seq: u8,
        rq_lun: u8,
        cmd: u8,
        data: Vec<u8>,
    },
    Response {
        netfn: u8,
        rq_seq: u8,
        cmd: u8,
        completion: u8,
        data: Vec<u8>,
    },
    Sol {
        seq: u8,
        ack_seq: u8,
        accepted: u8,
        flags: u8,
        data: Vec<u8>,
    },
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    suite17: bool,
    sik: Vec<u8>,
    payload_type: u8,
    encrypted: bool,
    authenticated: bool,
    session_id: u32,
    seq: u32,
    iv: [u8; 16],
    inner: Inner,
    /// (offset, xor) changes applied to the sealed datagram.
    tamper: Vec<(u16, u8)>,
    /// Decode with keys of the other suite / another SIK as well.
    other_sik: Vec<u8>,
}

fn payload_of(inner: &Inner) -> (PayloadType, Vec<u8>) {
    match inner {
        Inner::Request { rs_addr, netfn, rs_lun, rq_addr, rq_seq, rq_lun, cmd, data } => {
            let r = Request {
                rs_addr: *rs_addr,
                netfn: netfn & 0x3F,
                rs_lun: rs_lun & 3,
                rq_addr: *rq_addr,
                rq_seq: rq_seq & 0x3F,
                rq_lun: rq_lun & 3,
                cmd: *cmd,
                data: data.clone(),
            };
            let e = r.encode();
            assert_eq!(Request::decode(&e), Ok(r.clone()), "IPMI request round trip");
            let resp = r.respond(0, data.clone());
            assert_eq!(Response::decode(&resp.encode()), Ok(resp), "IPMI response round trip");
            (PayloadType::Ipmi, e)
        }
        Inner::Response { netfn, rq_seq, cmd, completion, data } => {
            let req = Request::new(netfn & 0x3E, *cmd, rq_seq & 0x3F, vec![]);
            let resp = req.respond(*completion, data.clone());
            let e = resp.encode();
            assert_eq!(Response::decode(&e), Ok(resp), "IPMI response round trip");
            (PayloadType::Ipmi, e)
        }
        Inner::Sol { seq, ack_seq, accepted, flags, data } => {
            let p = SolPacket {
                seq: seq & 0x0F,
                ack_seq: ack_seq & 0x0F,
                accepted: *accepted,
                flags: *flags,
                data: data.clone(),
            };
            let e = p.encode();
            assert_eq!(SolPacket::decode(&e), Ok(p), "SOL packet round trip");
            (PayloadType::Sol, e)
        }
        Inner::Raw(b) => (PayloadType::Ipmi, b.clone()),
    }
}

fuzz_target!(|input: Input| {
    let suite = if input.suite17 { CipherSuite::Suite17 } else { CipherSuite::Suite3 };
    let keys = SessionKeys::derive(suite, &input.sik);
    let (default_type, mut payload) = payload_of(&input.inner);
    payload.truncate(4096);
    let payload_type = match input.payload_type {
        0..=0x7F => default_type,
        t => PayloadType::from_u8(t),
    };
    if payload_type == PayloadType::Other(0x02) {
        return; // OEM explicit payloads carry extra header bytes; decode rejects them by design.
    }
    let p = V20Packet {
        payload_type,
        encrypted: input.encrypted,
        authenticated: input.authenticated,
        session_id: input.session_id,
        seq: input.seq,
        payload,
    };
    let sealed = packet::encode(&Packet::V20(p.clone()), Some(&keys), input.iv);
    assert_eq!(packet::peek_session_id(&sealed), Some(p.session_id));
    assert_eq!(packet::decode(&sealed, Some(&keys)), Ok(Packet::V20(p.clone())), "seal/open round trip");
    if p.authenticated || p.encrypted {
        assert_eq!(packet::decode(&sealed, None), Err(DecodeError::NoKeys));
    }

    // Keys of another SIK (or the other suite) never open an authenticated packet.
    let other_suite = if input.other_sik.len() % 2 == 0 {
        suite
    } else if input.suite17 {
        CipherSuite::Suite3
    } else {
        CipherSuite::Suite17
    };
    let other = SessionKeys::derive(other_suite, &input.other_sik);
    if p.authenticated && other != keys {
        assert!(packet::decode(&sealed, Some(&other)).is_err(), "accepted with the wrong keys");
    }

    // Tampering with the signed bytes or the AuthCode.
    let mut t = sealed.clone();
    let mut changed = false;
    for (at, x) in &input.tamper {
        let at = 4 + usize::from(*at) % (t.len() - 4).max(1);
        if at < t.len() && *x != 0 {
            t[at] ^= x;
            changed = true;
        }
    }
    if p.authenticated && changed && t != sealed {
        match packet::decode(&t, Some(&keys)) {
            Err(_) => {}
            Ok(Packet::V20(q)) => {
                assert!(!q.authenticated, "tampered packet accepted as authenticated: {q:?}")
            }
            // The auth type or class byte changed: an IPMI 1.5 / ASF packet, never a session's traffic.
            Ok(_) => {}
        }
    } else {
        let _ = packet::decode(&t, Some(&keys));
    }
});
