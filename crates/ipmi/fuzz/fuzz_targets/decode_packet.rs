//! Every byte string a BMC (or an attacker on the OOB network) can send must decode to a
//! value or an error, never a panic: datagram framing with and without session keys,
//! IPMI messages, session setup messages, SDR/SEL records and SOL packets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lifeline_ipmi::wire::{Body, app, crypto, message, packet, rakp, sdr, sel, sol, user};

fuzz_target!(|data: &[u8]| {
    let keys3 = crypto::SessionKeys::derive(crypto::CipherSuite::Suite3, &[7; 20]);
    let keys17 = crypto::SessionKeys::derive(crypto::CipherSuite::Suite17, &[7; 32]);
    let _ = packet::peek_session_id(data);
    for k in [None, Some(&keys3), Some(&keys17)] {
        if let Ok(packet::Packet::V20(p)) = packet::decode(data, k) {
            let _ = message::Response::decode(&p.payload);
            let _ = sol::SolPacket::decode(&p.payload);
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
