//! Property tests of the pure wire layer: every codec round-trips (decode ∘ encode = id)
//! and no decoder panics on arbitrary bytes.

use lifeline_ipmi::wire::{
    Body, app::*, chassis::*, crypto::*, message, packet::*, payload::*, rakp::*, sdr::*, sel::*, sensor::*,
    sol::SolPacket, user::*,
};
use proptest::prelude::*;

fn rt<T: Body + PartialEq + std::fmt::Debug>(v: T) {
    let bytes = v.encode();
    let back = T::decode(&bytes).expect("decode of encoded value");
    assert_eq!(back, v);
}

fn suite() -> impl Strategy<Value = CipherSuite> {
    prop_oneof![Just(CipherSuite::Suite3), Just(CipherSuite::Suite17)]
}

fn keys() -> impl Strategy<Value = SessionKeys> {
    (suite(), proptest::collection::vec(any::<u8>(), 20..32))
        .prop_map(|(s, sik)| SessionKeys::derive(s, &sik))
}

fn payload_type() -> impl Strategy<Value = PayloadType> {
    (0u8..0x40).prop_filter("OEM explicit", |v| *v != 2).prop_map(PayloadType::from_u8)
}

fn name16() -> impl Strategy<Value = String> {
    "[ -~]{0,16}"
}

prop_compose! {
    fn common()(owner_id in any::<u8>(), owner_lun in any::<u8>(), number in any::<u8>(), entity_id in any::<u8>(),
        entity_instance in any::<u8>(), sensor_type in any::<u8>(), event_reading_type in any::<u8>(),
        units1 in any::<u8>(), base_unit in any::<u8>(), modifier_unit in any::<u8>(), name in name16())
        -> SensorCommon {
        SensorCommon { owner_id, owner_lun, number, entity_id, entity_instance, sensor_type, event_reading_type,
            units1, base_unit, modifier_unit, name: name.trim_end_matches('\0').to_string() }
    }
}

fn sdr_record() -> impl Strategy<Value = SdrRecord> {
    let full =
        (common(), 0u8..0x80, -512i16..512, -512i16..512, -8i8..8, -8i8..8, 0u8..0x40, any::<[u8; 6]>())
            .prop_map(|(common, linearization, m, b, r_exp, b_exp, readable_thresholds, thresholds)| {
                SdrBody::Full(FullSensor {
                    common,
                    linearization,
                    m,
                    b,
                    r_exp,
                    b_exp,
                    readable_thresholds,
                    thresholds,
                })
            });
    let compact = common().prop_map(|common| SdrBody::Compact(CompactSensor { common }));
    let other = ((3u8..=255), proptest::collection::vec(any::<u8>(), 0..64))
        .prop_map(|(record_type, data)| SdrBody::Other { record_type, data });
    (any::<u16>(), any::<u8>(), prop_oneof![full, compact, other])
        .prop_map(|(record_id, version, body)| SdrRecord { record_id, version, body })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn packet_v20_round_trip(k in keys(), pt in payload_type(), enc in any::<bool>(), auth in any::<bool>(),
                             sid in any::<u32>(), seq in any::<u32>(), iv in any::<[u8; 16]>(),
                             payload in proptest::collection::vec(any::<u8>(), 0..200)) {
        let p = Packet::V20(V20Packet { payload_type: pt, encrypted: enc, authenticated: auth, session_id: sid, seq, payload });
        let bytes = encode(&p, Some(&k), iv);
        prop_assert_eq!(decode(&bytes, Some(&k)).unwrap(), p);
        if auth || enc {
            prop_assert_eq!(decode(&bytes, None), Err(lifeline_ipmi::wire::DecodeError::NoKeys));
        }
        prop_assert_eq!(peek_session_id(&bytes), Some(sid));
    }

    #[test]
    fn tampered_authenticated_packet_is_rejected(k in keys(), payload in proptest::collection::vec(any::<u8>(), 1..64),
                                                 at in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let p = Packet::V20(V20Packet { payload_type: PayloadType::Ipmi, encrypted: true, authenticated: true,
            session_id: 7, seq: 9, payload });
        let mut bytes = encode(&p, Some(&k), [3; 16]);
        let i = 4 + at.index(bytes.len() - 4);
        bytes[i] ^= flip;
        prop_assert!(decode(&bytes, Some(&k)) != Ok(p));
    }

    #[test]
    fn packet_v15_and_asf_round_trip(seq in any::<u32>(), sid in any::<u32>(), code in any::<Option<[u8; 16]>>(),
                                     at in 1u8..=5, msg in proptest::collection::vec(any::<u8>(), 0..255),
                                     tag in any::<u8>(), ty in any::<u8>(), data in proptest::collection::vec(any::<u8>(), 0..40)) {
        let p = Packet::V15(V15Packet { auth_type: if code.is_some() { at } else { 0 }, seq, session_id: sid, auth_code: code, message: msg });
        prop_assert_eq!(decode(&encode(&p, None, [0; 16]), None).unwrap(), p);
        let a = Packet::Asf(AsfMessage { msg_type: ty, tag, data });
        prop_assert_eq!(decode(&encode(&a, None, [0; 16]), None).unwrap(), a);
    }

    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), k in keys()) {
        let _ = decode(&bytes, None);
        let _ = decode(&bytes, Some(&k));
        let _ = peek_session_id(&bytes);
        let _ = message::Request::decode(&bytes);
        let _ = message::Response::decode(&bytes);
        let _ = OpenSessionRequest::decode(&bytes);
        let _ = OpenSessionResponse::decode(&bytes);
        let _ = Rakp1::decode(&bytes);
        let _ = Rakp2::decode(&bytes);
        let _ = Rakp34::decode(&bytes);
        let _ = SdrRecord::decode(&bytes);
        let _ = SelRecord::decode(&bytes);
        let _ = SolPacket::decode(&bytes);
        let _ = k.decrypt(&bytes);
        let _ = parse_cipher_suite_records(&bytes);
        let _ = DeviceId::decode(&bytes);
        let _ = ChannelAuthCaps::decode(&bytes);
        let _ = ChassisStatus::decode(&bytes);
        let _ = SensorReading::decode(&bytes);
        let _ = SdrRepositoryInfo::decode(&bytes);
        let _ = SelInfo::decode(&bytes);
        let _ = RecordChunk::decode(&bytes);
        let _ = UserAccess::decode(&bytes);
        let _ = UserName::decode(&bytes);
        let _ = PayloadActivated::decode(&bytes);
        let _ = PayloadActivationStatus::decode(&bytes);
        let _ = PayloadInstanceInfo::decode(&bytes);
        let _ = ClearSel::decode(&bytes);
        let _ = ActivatePayload::decode(&bytes);
    }

    #[test]
    fn message_round_trip(netfn in 0u8..0x40, lun in 0u8..4, seq in 0u8..0x40, cmd in any::<u8>(), cc in any::<u8>(),
                          data in proptest::collection::vec(any::<u8>(), 0..100)) {
        let mut rq = message::Request::new(netfn, cmd, seq, data.clone());
        rq.rs_lun = lun;
        prop_assert_eq!(message::Request::decode(&rq.encode()).unwrap(), rq.clone());
        let rs = rq.respond(cc, data);
        prop_assert_eq!(message::Response::decode(&rs.encode()).unwrap(), rs);
    }

    #[test]
    fn session_setup_round_trip(tag in any::<u8>(), st in any::<u8>(), priv_ in 0u8..16, a in any::<u32>(), b in any::<u32>(),
                                algs in (0u8..64, 0u8..64, 0u8..64), r in any::<[u8; 16]>(), g in any::<[u8; 16]>(),
                                role in any::<u8>(), user in proptest::collection::vec(any::<u8>(), 0..=16),
                                code in proptest::collection::vec(any::<u8>(), 0..40)) {
        let req = OpenSessionRequest { tag, max_privilege: priv_, console_session_id: a, algorithms: algs };
        prop_assert_eq!(OpenSessionRequest::decode(&req.encode()).unwrap(), req);
        let ok = st == 0;
        let resp = OpenSessionResponse { tag, status: st, max_privilege: priv_, console_session_id: a,
            bmc_session_id: if ok { b } else { 0 }, algorithms: if ok { Some(algs) } else { None } };
        prop_assert_eq!(OpenSessionResponse::decode(&resp.encode()).unwrap(), resp);
        let r1 = Rakp1 { tag, bmc_session_id: b, console_random: r, role, username: user };
        prop_assert_eq!(Rakp1::decode(&r1.encode()).unwrap(), r1);
        let r2 = Rakp2 { tag, status: st, console_session_id: a, bmc_random: if ok { r } else { [0; 16] },
            bmc_guid: if ok { g } else { [0; 16] }, auth_code: if ok { code.clone() } else { vec![] } };
        prop_assert_eq!(Rakp2::decode(&r2.encode()).unwrap(), r2);
        let r3 = Rakp34 { tag, status: st, session_id: b, auth_code: code };
        prop_assert_eq!(Rakp34::decode(&r3.encode()).unwrap(), r3);
    }

    /// Both halves of RAKP agree: what a BMC computes, a console verifies, for each suite.
    #[test]
    fn rakp_both_sides_agree(s in suite(), a in any::<u32>(), b in any::<u32>(), rm in any::<[u8; 16]>(),
                             rc in any::<[u8; 16]>(), g in any::<[u8; 16]>(), role in 1u8..5,
                             user in "[a-z]{1,16}", pw in "[ -~]{0,20}", wrong in "[ -~]{1,20}") {
        let p = RakpParams { suite: s, console_session_id: a, bmc_session_id: b, console_random: rm, bmc_random: rc,
            bmc_guid: g, role, username: user.into_bytes() };
        let pw = pw.as_bytes();
        prop_assert_eq!(p.rakp2_code(pw).len(), s.rakp_code_len());
        if wrong.as_bytes() != pw {
            prop_assert_ne!(p.rakp2_code(pw), p.rakp2_code(wrong.as_bytes()));
        }
        // HMAC zero-pads short keys: a password padded to 20 bytes (FreeIPMI) gives the same codes.
        let mut padded = pw.to_vec();
        padded.resize(20, 0);
        prop_assert_eq!(p.rakp3_code(pw), p.rakp3_code(&padded));
        let sik = p.sik(pw, None);
        prop_assert_eq!(p.sik(pw, Some(&[0; 20])), sik.clone());
        prop_assert_eq!(p.rakp4_icv(&sik).len(), s.icv_len());
        let k = SessionKeys::derive(s, &sik);
        prop_assert_eq!(k.k1.len(), s.rakp_code_len());
    }

    #[test]
    fn aes_round_trip(k in keys(), iv in any::<[u8; 16]>(), data in proptest::collection::vec(any::<u8>(), 0..100)) {
        let c = k.encrypt(iv, &data);
        prop_assert_eq!(c.len() % 16, 0);
        prop_assert_eq!(k.decrypt(&c).unwrap(), data);
    }

    #[test]
    fn app_bodies_round_trip(b in any::<[u8; 8]>(), mfg in 0u32..(1 << 24), prod in any::<u16>(), aux in any::<Option<[u8; 4]>>(),
                             data in proptest::collection::vec(any::<u8>(), 0..16), sid in any::<u32>()) {
        rt(DeviceId { device_id: b[0], device_revision: b[1], firmware_major: b[2], firmware_minor: b[3], ipmi_version: b[4],
            additional_support: b[5], manufacturer_id: mfg, product_id: prod, aux_firmware: aux });
        rt(GetChannelAuthCaps { channel: b[0], privilege: b[1] });
        rt(ChannelAuthCaps { channel: b[0], auth_types: b[1], status: b[2], extended: b[3], oem_id: mfg, oem_aux: b[4] });
        rt(GetChannelCipherSuites { channel: b[0], payload_type: b[1], index: b[2] });
        rt(ChannelCipherSuites { channel: b[0], data });
        rt(SetSessionPrivilege { privilege: b[0] });
        rt(SessionPrivilege { privilege: b[0] });
        rt(CloseSession { session_id: sid });
    }

    #[test]
    fn cipher_suite_records_round_trip(recs in proptest::collection::vec(
        (any::<u8>(), proptest::collection::vec(0u8..64, 0..3), proptest::collection::vec(0u8..64, 0..3),
         proptest::collection::vec(0u8..64, 0..3)), 0..6)) {
        let recs: Vec<_> = recs.into_iter().map(|(id, auth, integrity, confidentiality)|
            CipherSuiteRecord { id, auth, integrity, confidentiality }).collect();
        prop_assert_eq!(parse_cipher_suite_records(&encode_cipher_suite_records(&recs)), recs);
    }

    #[test]
    fn chassis_sensor_bodies_round_trip(b in any::<[u8; 4]>(), fp in any::<Option<u8>>(), s1 in any::<Option<u8>>(), s2 in any::<Option<u8>>()) {
        rt(ChassisStatus { power: b[0], last_power_event: b[1], misc: b[2], front_panel: fp });
        rt(ChassisControl { op: b[3] });
        rt(GetSensorReading { number: b[0] });
        rt(SensorReading { raw: b[0], flags: b[1], state1: s1, state2: if s1.is_some() { s2 } else { None } });
    }

    #[test]
    fn storage_bodies_round_trip(a in any::<u16>(), b in any::<u16>(), c in any::<u32>(), d in any::<u32>(), e in any::<[u8; 4]>(),
                                 data in proptest::collection::vec(any::<u8>(), 0..40), ed in any::<[u8; 3]>()) {
        rt(SdrRepositoryInfo { version: e[0], record_count: a, free_space: b, last_addition: c, last_erase: d, operation_support: e[1] });
        rt(SelInfo { version: e[0], entries: a, free_space: b, last_addition: c, last_erase: d, operation_support: e[1] });
        rt(Reservation { id: a });
        rt(GetSdr { reservation: a, record_id: b, offset: e[0], len: e[1] });
        rt(GetSelEntry(GetSdr { reservation: a, record_id: b, offset: e[0], len: e[1] }));
        rt(RecordChunk { next_id: a, data });
        rt(ClearSel { reservation: a, action: e[2] });
        rt(ClearSelStatus { progress: e[3] });
        let s = SelRecord { record_id: a, record_type: e[0], timestamp: c, generator_id: b, evm_rev: e[1], sensor_type: e[2],
            sensor_number: e[3], event_dir_type: e[0], event_data: ed };
        prop_assert_eq!(SelRecord::decode(&s.encode()).unwrap(), s);
    }

    #[test]
    fn sdr_record_round_trip(r in sdr_record()) {
        prop_assert_eq!(SdrRecord::decode(&r.encode()).unwrap(), r);
    }

    #[test]
    fn user_payload_sol_round_trip(b in any::<[u8; 4]>(), n in "[ -~]{0,16}", w in any::<[u16; 4]>(),
                                   data in proptest::collection::vec(any::<u8>(), 0..100)) {
        rt(GetUserAccess { channel: b[0] & 0x0F, user_id: b[1] & 0x3F });
        rt(UserAccess { max_users: b[0], enabled: b[1], fixed_names: b[2], access: b[3] });
        rt(GetUserName { user_id: b[0] & 0x3F });
        rt(UserName { name: n.trim_end_matches('\0').to_string() });
        rt(ActivatePayload { payload_type: b[0] & 0x3F, instance: b[1] & 0x0F, aux: b });
        rt(PayloadActivated { aux: b, inbound_size: w[0], outbound_size: w[1], port: w[2], vlan: w[3] });
        rt(DeactivatePayload { payload_type: b[0] & 0x3F, instance: b[1] & 0x0F });
        rt(GetPayloadActivationStatus { payload_type: b[0] & 0x3F });
        rt(PayloadActivationStatus { capacity: b[0] & 0x0F, active: w[0] });
        let s = SolPacket { seq: b[0] & 0x0F, ack_seq: b[1] & 0x0F, accepted: b[2], flags: b[3], data };
        prop_assert_eq!(SolPacket::decode(&s.encode()).unwrap(), s);
    }
}

/// Cross-check our SDR encoder against a third-party parser (ipmi-rs) and the values
/// OpenIPMI's sdrcomp produces for the peers' bmc.sdrs ("12V Rail" etc).
#[test]
fn sdr_encoding_is_understood_by_ipmi_rs() {
    let rec = SdrRecord {
        record_id: 7,
        version: 0x51,
        body: SdrBody::Full(FullSensor {
            common: SensorCommon {
                owner_id: 0x20,
                owner_lun: 0,
                number: 6,
                entity_id: 7,
                entity_instance: 1,
                sensor_type: 0x02,
                event_reading_type: 0x01,
                units1: 0,
                base_unit: 4,
                modifier_unit: 0,
                name: "12V Rail".into(),
            },
            linearization: 0,
            m: 6,
            b: 0,
            r_exp: -2,
            b_exp: 0,
            readable_thresholds: 0x3F,
            thresholds: [0, 0, 220, 0, 0, 180],
        }),
    };
    let bytes = rec.encode();
    let theirs = ipmi_rs::storage::sdr::Record::parse(&bytes).expect("ipmi-rs parses our record");
    assert_eq!(theirs.sensor_number().map(|n| n.get()), Some(6));
    assert_eq!(theirs.id().map(|s| s.to_string()).as_deref(), Some("12V Rail"));
    let SdrBody::Full(f) = &rec.body else { unreachable!() };
    assert!((f.convert(200) - 12.0).abs() < 1e-9);
    assert_eq!(f.raw_for(12.0), 200);
    assert_eq!(f.common.unit_name(), "V");
    assert_eq!(f.common.sensor_type_name(), "Voltage");
}

/// Known-answer check of the key schedule against an independent HMAC (RFC 2202 case 2).
#[test]
fn hmac_sha1_known_answer() {
    let mac = CipherSuite::Suite3.hmac(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
    assert_eq!(hex(&mac), "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    let mac = CipherSuite::Suite17.hmac(b"Jefe", &[b"what do ya want for nothing?"]);
    assert_eq!(hex(&mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

proptest! {
    /// Account management requests round-trip; passwords keep their bytes up to the first NUL, and the
    /// 20-byte form is chosen exactly when the password needs it.
    #[test]
    fn account_requests_round_trip(id in 1u8..64, ch in 0u8..16, pr in prop_oneof![1u8..=5, Just(0x0Fu8)],
                                   bits in any::<[bool; 3]>(), name in "[a-zA-Z0-9_]{0,16}",
                                   pw in proptest::collection::vec(1u8..=255, 0..=20), op in 0u8..4) {
        rt(SetUserName { user_id: id, name });
        rt(SetUserAccess { channel: ch, user_id: id, privilege: pr, ipmi_messaging: bits[0], link_auth: bits[1],
                           callback_only: bits[2] });
        let op = [PasswordOp::Disable, PasswordOp::Enable, PasswordOp::Set, PasswordOp::Test][op as usize];
        let r = SetUserPassword::new(id, op, &pw);
        prop_assert_eq!(r.twenty_bytes, pw.len() > 16);
        let wire = r.encode();
        let back = SetUserPassword::decode(&wire).unwrap();
        prop_assert_eq!(back.user_id, id);
        prop_assert_eq!(back.op, op);
        if matches!(op, PasswordOp::Set | PasswordOp::Test) {
            prop_assert_eq!(wire.len(), if pw.len() > 16 { 22 } else { 18 });
            prop_assert_eq!(back.password, pw);
        } else {
            prop_assert_eq!(wire.len(), 2);
        }
    }

    /// Decoding arbitrary bytes as an account request never panics.
    #[test]
    fn account_requests_decode_garbage(data in proptest::collection::vec(any::<u8>(), 0..40)) {
        let _ = SetUserName::decode(&data);
        let _ = SetUserPassword::decode(&data);
        let _ = SetUserAccess::decode(&data);
    }
}

proptest! {
    /// Close Session for another session's id: the request is that id, little-endian, to App 0x3C, and every
    /// completion code reads as exactly one outcome (a refusal keeps its code for the log line).
    #[test]
    fn close_session_of_another_id(sid in any::<u32>(), code in any::<u8>()) {
        use lifeline_ipmi::wire::Command;
        let req = CloseSession { session_id: sid };
        prop_assert_eq!(req.encode(), sid.to_le_bytes().to_vec());
        prop_assert_eq!((CloseSession::NETFN, CloseSession::CMD), (0x06, 0x3C));
        let outcome = CloseSession::outcome(code);
        match code {
            0x00 => prop_assert_eq!(outcome, CloseOutcome::Closed),
            0x87 | 0x88 => prop_assert_eq!(outcome, CloseOutcome::Gone),
            c => prop_assert_eq!(outcome, CloseOutcome::Refused(c)),
        }
    }

    /// Get Payload Instance Info: the request is the payload type and instance to App 0x4B; the answer's
    /// first four bytes are the holder's session id (little-endian, 0 = free), read back whatever the
    /// payload-specific bytes after it (none, some, all eight).
    #[test]
    fn payload_instance_info(t in 0u8..0x40, i in 0u8..0x10, sid in any::<u32>(), data in any::<[u8; 8]>(),
                             sent in 0usize..=8) {
        use lifeline_ipmi::wire::Command;
        let req = GetPayloadInstanceInfo { payload_type: t, instance: i };
        rt(req);
        prop_assert_eq!(req.encode(), vec![t, i]);
        prop_assert_eq!((GetPayloadInstanceInfo::NETFN, GetPayloadInstanceInfo::CMD), (0x06, 0x4B));
        rt(PayloadInstanceInfo { session_id: sid, data });
        let mut wire = sid.to_le_bytes().to_vec();
        wire.extend_from_slice(&data[..sent]);
        let got = PayloadInstanceInfo::decode(&wire).unwrap();
        prop_assert_eq!(got.session_id, sid);
        prop_assert_eq!(got.holder(), (sid != 0).then_some(sid));
        prop_assert_eq!(&got.data[..sent], &data[..sent]);
        prop_assert!(got.data[sent..].iter().all(|b| *b == 0));
        prop_assert!(PayloadInstanceInfo::decode(&wire[..3.min(wire.len())]).is_err());
    }
}
