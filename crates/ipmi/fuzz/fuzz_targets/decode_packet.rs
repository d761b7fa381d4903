//! Every byte string a BMC (or an attacker on the OOB network) can send must decode to a
//! value or an error, never a panic: datagram framing with and without session keys,
//! IPMI messages, session setup messages, SDR/SEL records and SOL packets; and what decodes re-encodes to
//! the same packet (the seeds carry packets sealed with this target's keys, so the authenticated and
//! encrypted branches are reached).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lifeline_ipmi::wire::{Body, app, crypto, message, packet, rakp, sdr, sel, sol, user};

fuzz_target!(|data: &[u8]| {
    let keys3 = crypto::SessionKeys::derive(crypto::CipherSuite::Suite3, &[7; 20]);
    let keys17 = crypto::SessionKeys::derive(crypto::CipherSuite::Suite17, &[7; 32]);
    let _ = packet::peek_session_id(data);
    for k in [None, Some(&keys3), Some(&keys17)] {
        if let Ok(p) = packet::decode(data, k) {
            // What decodes re-encodes (with any IV) to a datagram that decodes to the same packet.
            let again = packet::decode(&packet::encode(&p, k, [9; 16]), k);
            assert_eq!(again.as_ref(), Ok(&p), "packet round trip");
            if let packet::Packet::V20(p) = &p {
                if let Ok(r) = message::Response::decode(&p.payload) {
                    assert_eq!(message::Response::decode(&r.encode()), Ok(r));
                }
                if let Ok(r) = message::Request::decode(&p.payload) {
                    assert_eq!(message::Request::decode(&r.encode()), Ok(r));
                }
                let _ = sol::SolPacket::decode(&p.payload);
            }
        }
    }
    let _ = message::Request::decode(data);
    let _ = rakp::OpenSessionRequest::decode(data);
    let _ = rakp::OpenSessionResponse::decode(data);
    let _ = rakp::Rakp1::decode(data);
    let _ = rakp::Rakp2::decode(data);
    let _ = rakp::Rakp34::decode(data);
    let _ = sdr::SdrRecord::decode(data);
    let _ = sel::SelRecord::decode(data);
    let _ = app::parse_cipher_suite_records(data);
    let _ = app::DeviceId::decode(data);
    let _ = user::UserName::decode(data);
    let _ = keys3.decrypt(data);
});
