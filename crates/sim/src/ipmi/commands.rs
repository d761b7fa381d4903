//! In-session IPMI commands: what `ipmitool`, FreeIPMI and Lifeline's client send.
//! Everything is computed from the shared [`Host`](crate::host::Host) on each request.

use lifeline_ipmi::wire::{
    Body, Command,
    app::{
        CipherSuiteRecord, CloseSession, DeviceId, GetChannelAuthCaps, SetSessionPrivilege,
        encode_cipher_suite_records,
    },
    cc,
    chassis::{ChassisOp, ChassisStatus},
    message::{Request, Response},
    netfn,
    payload::{ActivatePayload, DeactivatePayload, PAYLOAD_SOL, PayloadActivated, PayloadActivationStatus},
    sdr::{GetSdr, RecordChunk, Reservation, SdrRepositoryInfo},
    sel::{ClearSel, ClearSelStatus, SelInfo},
    sensor::GetSensorReading,
    user::{
        CC_PASSWORD_MISMATCH, GetUserAccess, GetUserName, PasswordOp, SetUserAccess, SetUserName,
        SetUserPassword, UserAccess, UserName,
    },
};

use super::session::{Bmc, Out};
use super::sol::Sol;
use crate::actions::{Origin, Protocol};
use crate::host::{Phase, PowerCommand};
use crate::sel::now_secs;

use crate::accounts::{ChangeRefused, MAX_USERS, NO_ACCESS};

/// The reply to an account change: refusals as the completion codes ipmitool explains.
fn account_change(req: &Request, r: Result<(), ChangeRefused>) -> (Response, Out) {
    let code = match r {
        Ok(()) => cc::OK,
        Err(ChangeRefused::NoSuchSlot | ChangeRefused::BadPrivilege | ChangeRefused::Fixed) => {
            cc::PARAMETER_OUT_OF_RANGE
        }
        Err(ChangeRefused::PasswordLength) => cc::REQUEST_DATA_LENGTH_INVALID,
        // "Invalid data field in request".
        Err(ChangeRefused::NameTaken) => 0xCC,
    };
    (req.respond(code, Vec::new()), Vec::new())
}

impl Bmc {
    /// Execute one request for session `idx`. Extra datagrams (SOL notices to another
    /// session) come back in the second element.
    pub(super) fn command(&mut self, idx: usize, req: &Request) -> (Response, Out) {
        let ok = |data: Vec<u8>| (req.respond(cc::OK, data), Vec::new());
        let err = |code: u8| (req.respond(code, Vec::new()), Vec::new());
        let privilege = self.sessions[idx].privilege;
        let operator = privilege >= 3;
        let admin = privilege >= 4;
        match (req.netfn, req.cmd) {
            // ---- App ----
            (netfn::APP, 0x01) => ok(self.device_id().encode()),
            // Cold / Warm Reset (`ipmitool mc reset cold|warm`): answered, then every session goes.
            (netfn::APP, 0x02 | 0x03) => {
                if !admin {
                    return err(cc::INSUFFICIENT_PRIVILEGE);
                }
                self.host.reset_bmc_by(&self.origin(idx));
                ok(vec![])
            }
            (netfn::APP, 0x37) => ok(self.guid.to_vec()),
            (GetChannelAuthCaps::NETFN, GetChannelAuthCaps::CMD) => (self.auth_caps(req), Vec::new()),
            (netfn::APP, 0x54) => (self.cipher_suites(req), Vec::new()),
            (SetSessionPrivilege::NETFN, SetSessionPrivilege::CMD) => {
                let Ok(r) = SetSessionPrivilege::decode(&req.data) else {
                    return err(cc::REQUEST_DATA_LENGTH_INVALID);
                };
                let s = &mut self.sessions[idx];
                match r.privilege & 0x0F {
                    0 => ok(vec![s.privilege]),
                    p if p > s.max_priv || p > 4 => err(0x81),
                    p => {
                        s.privilege = p;
                        ok(vec![p])
                    }
                }
            }
            (CloseSession::NETFN, CloseSession::CMD) => {
                let Ok(r) = CloseSession::decode(&req.data) else {
                    return err(cc::REQUEST_DATA_LENGTH_INVALID);
                };
                let own = self.sessions[idx].id;
                if r.session_id == own {
                    self.pending_close = Some(own);
                    ok(vec![])
                } else if !self.sessions.iter().any(|s| s.id == r.session_id) {
                    err(0x87)
                } else if !admin {
                    err(cc::INSUFFICIENT_PRIVILEGE)
                } else {
                    self.remove_session(r.session_id);
                    ok(vec![])
                }
            }
            (GetUserAccess::NETFN, GetUserAccess::CMD) => {
                let Ok(r) = GetUserAccess::decode(&req.data) else {
                    return err(cc::REQUEST_DATA_LENGTH_INVALID);
                };
                let Some(a) = self.host.accounts().get(r.user_id).filter(|_| r.user_id != 0) else {
                    return err(cc::PARAMETER_OUT_OF_RANGE);
                };
                let enabled_count = self.host.accounts().list().iter().filter(|a| a.enabled).count() as u8;
                let status = if a.enabled { 0x40 } else { 0x80 };
                let access = if a.privilege == NO_ACCESS { NO_ACCESS } else { 0x30 | a.privilege };
                ok(UserAccess {
                    max_users: MAX_USERS,
                    enabled: status | enabled_count,
                    fixed_names: 1,
                    access,
                }
                .encode())
            }
            (GetUserName::NETFN, GetUserName::CMD) => {
                let Ok(r) = GetUserName::decode(&req.data) else {
                    return err(cc::REQUEST_DATA_LENGTH_INVALID);
                };
                let Some(a) = self.host.accounts().get(r.user_id).filter(|_| r.user_id != 0) else {
                    return err(cc::PARAMETER_OUT_OF_RANGE);
                };
                ok(UserName { name: a.name }.encode())
            }
            (netfn::APP, 0x43 | 0x45 | 0x47) if !admin => err(cc::INSUFFICIENT_PRIVILEGE),
            (SetUserAccess::NETFN, SetUserAccess::CMD) => {
                let Ok(r) = SetUserAccess::decode(&req.data) else {
                    return err(cc::REQUEST_DATA_LENGTH_INVALID);
                };
                account_change(req, self.host.accounts().set_privilege(r.user_id, r.privilege))
            }
            (SetUserName::NETFN, SetUserName::CMD) => {
                let Ok(r) = SetUserName::decode(&req.data) else {
                    return err(cc::REQUEST_DATA_LENGTH_INVALID);
                };
                account_change(req, self.host.accounts().set_name(r.user_id, &r.name))
            }
            (SetUserPassword::NETFN, SetUserPassword::CMD) => {
                let Ok(r) = SetUserPassword::decode(&req.data) else {
                    return err(cc::REQUEST_DATA_LENGTH_INVALID);
                };
                let accounts = self.host.accounts();
                let password = String::from_utf8_lossy(&r.password).into_owned();
                let done = match r.op {
                    PasswordOp::Disable => accounts.set_enabled(r.user_id, false),
                    PasswordOp::Enable => accounts.set_enabled(r.user_id, true),
                    PasswordOp::Set => accounts.set_password(r.user_id, &password),
                    PasswordOp::Test => match accounts.test_password(r.user_id, &password) {
                        Ok(true) => Ok(()),
                        Ok(false) => return err(CC_PASSWORD_MISMATCH),
                        Err(e) => Err(e),
                    },
                };
                account_change(req, done)
            }
            (ActivatePayload::NETFN, ActivatePayload::CMD) => self.activate_payload(idx, req),
            (DeactivatePayload::NETFN, DeactivatePayload::CMD) => self.deactivate_payload(idx, req),
            (netfn::APP, 0x4A) => {
                let active = u16::from(self.sol.is_some() || self.stuck());
                ok(PayloadActivationStatus { capacity: 1, active }.encode())
            }
            // Get Payload Instance Info: the owning session id (0 = not active), then port 1.
            (netfn::APP, 0x4B) => {
                let owner = match (req.data.first(), req.data.get(1)) {
                    (Some(&PAYLOAD_SOL), Some(&1)) => self
                        .sol
                        .as_ref()
                        .map(|s| s.owner)
                        .unwrap_or(if self.stuck() { 0xFFFF_FFFF } else { 0 }),
                    (Some(&PAYLOAD_SOL), Some(_)) => return err(cc::PARAMETER_OUT_OF_RANGE),
                    _ => return err(cc::INVALID_DATA_FIELD),
                };
                let mut data = owner.to_le_bytes().to_vec();
                data.extend_from_slice(&[u8::from(owner != 0), 0, 0, 0, 0, 0, 0, 0]);
                ok(data)
            }
            // Get Channel Payload Support (FreeIPMI asks; ipmi_sim crashes on it).
            (netfn::APP, 0x4E) => ok(vec![0x03, 0x00, 0x3F, 0x00, 0x00, 0x00, 0x00, 0x00]),
            // Get Channel Info: channel 1, 802.3 LAN, IPMB-v1.0... enough for tools that ask.
            (netfn::APP, 0x42) => ok(vec![0x01, 0x04, 0x01, 0x82, 0xF2, 0x1B, 0x00, 0x00, 0x00]),

            // ---- Chassis ----
            (netfn::CHASSIS, 0x00) => ok(vec![0x00, 0x20, 0x20, 0x20, 0x20]),
            (netfn::CHASSIS, 0x01) => ok(self.chassis_status().encode()),
            (netfn::CHASSIS, 0x02) => {
                if !operator {
                    return err(cc::INSUFFICIENT_PRIVILEGE);
                }
                let Some(op) = req.data.first().and_then(|b| ChassisOp::from_u8(*b)) else {
                    return err(cc::INVALID_DATA_FIELD);
                };
                let cmd = match op {
                    ChassisOp::PowerDown => PowerCommand::ForceOff,
                    ChassisOp::PowerUp => PowerCommand::On,
                    ChassisOp::PowerCycle => PowerCommand::PowerCycle,
                    ChassisOp::HardReset => PowerCommand::ForceRestart,
                    ChassisOp::PulseDiagnostic => PowerCommand::Nmi,
                    ChassisOp::SoftShutdown => PowerCommand::GracefulShutdown,
                };
                match self.host.power_by(cmd, &self.origin(idx)) {
                    Ok(_) => ok(vec![]),
                    Err(_) => err(cc::NOT_SUPPORTED_IN_STATE),
                }
            }
            // Chassis Identify: accepted, nothing to model here.
            (netfn::CHASSIS, 0x04) => {
                if operator {
                    ok(vec![])
                } else {
                    err(cc::INSUFFICIENT_PRIVILEGE)
                }
            }
            // System Boot Options and LAN parameters (OPERATOR, as ipmi_sim enforces): see `boot.rs`.
            (netfn::CHASSIS, 0x08) if operator => (self.set_boot_options(req), Vec::new()),
            (netfn::CHASSIS, 0x09) if operator => (self.get_boot_options(req), Vec::new()),
            (netfn::TRANSPORT, 0x02) if operator => (self.get_lan_config(req), Vec::new()),
            (netfn::CHASSIS, 0x08 | 0x09) | (netfn::TRANSPORT, 0x02) => err(cc::INSUFFICIENT_PRIVILEGE),
            // FRU device 0 (`ipmitool fru print`).
            (netfn::STORAGE, 0x10) => (self.fru_info(req), Vec::new()),
            (netfn::STORAGE, 0x11) => (self.fru_read(req), Vec::new()),

            // ---- Sensor/Event ----
            (GetSensorReading::NETFN, GetSensorReading::CMD) => {
                let Ok(r) = GetSensorReading::decode(&req.data) else {
                    return err(cc::REQUEST_DATA_LENGTH_INVALID);
                };
                match super::sdr::reading(&self.host.sensors(), r.number) {
                    Some(rd) => ok(rd.encode()),
                    None => err(cc::NOT_PRESENT),
                }
            }
            // Get Sensor Thresholds.
            (netfn::SENSOR, 0x27) => {
                match req.data.first().and_then(|n| super::sdr::thresholds(&self.host.sensors(), *n)) {
                    Some(t) => ok(t),
                    None => err(cc::NOT_PRESENT),
                }
            }

            // ---- Storage: SDR ----
            (netfn::STORAGE, 0x20) => {
                let n = super::sdr::records(&self.host.sensors()).len() as u16;
                ok(SdrRepositoryInfo {
                    version: 0x51,
                    record_count: n,
                    free_space: 0x0800,
                    last_addition: 0,
                    last_erase: 0,
                    operation_support: 0x02,
                }
                .encode())
            }
            (netfn::STORAGE, 0x22) => {
                self.sdr_reservation = self.sdr_reservation.wrapping_add(1).max(1);
                ok(Reservation { id: self.sdr_reservation }.encode())
            }
            (GetSdr::NETFN, GetSdr::CMD) => {
                let Ok(r) = GetSdr::decode(&req.data) else { return err(cc::REQUEST_DATA_LENGTH_INVALID) };
                if r.offset != 0 && r.reservation != self.sdr_reservation {
                    return err(cc::RESERVATION_CANCELLED);
                }
                let recs = super::sdr::records(&self.host.sensors());
                let pos = if r.record_id == 0 {
                    Some(0)
                } else if r.record_id == 0xFFFF {
                    recs.len().checked_sub(1)
                } else {
                    recs.iter().position(|(id, _)| *id == r.record_id)
                };
                let Some(pos) = pos else { return err(cc::NOT_PRESENT) };
                let (_, bytes) = &recs[pos];
                let next_id = recs.get(pos + 1).map(|(id, _)| *id).unwrap_or(0xFFFF);
                let start = (r.offset as usize).min(bytes.len());
                let end = if r.len == 0xFF { bytes.len() } else { (start + r.len as usize).min(bytes.len()) };
                ok(RecordChunk { next_id, data: bytes[start..end].to_vec() }.encode())
            }

            // ---- Storage: SEL ----
            (netfn::STORAGE, 0x40) => {
                let (n, _, last_add, last_erase) = self.host.sel_info();
                let cap = crate::sel::SEL_CAPACITY;
                ok(SelInfo {
                    version: 0x51,
                    entries: n as u16,
                    free_space: (cap.saturating_sub(n) * 16) as u16,
                    last_addition: last_add,
                    last_erase,
                    operation_support: 0x02,
                }
                .encode())
            }
            (netfn::STORAGE, 0x42) => {
                let (_, generation, _, _) = self.host.sel_info();
                ok(Reservation { id: (generation as u16).max(1) }.encode())
            }
            (netfn::STORAGE, 0x43) => {
                let Ok(r) = GetSdr::decode(&req.data) else { return err(cc::REQUEST_DATA_LENGTH_INVALID) };
                let entries = self.host.sel_entries();
                let pos = match r.record_id {
                    0 => (!entries.is_empty()).then_some(0),
                    0xFFFF => entries.len().checked_sub(1),
                    id => entries.iter().position(|e| e.id == id),
                };
                let Some(pos) = pos else { return err(cc::NOT_PRESENT) };
                let rec = entries[pos].to_ipmi_record();
                let next_id = entries.get(pos + 1).map(|e| e.id).unwrap_or(0xFFFF);
                let start = (r.offset as usize).min(rec.len());
                let end = if r.len == 0xFF { rec.len() } else { (start + r.len as usize).min(rec.len()) };
                ok(RecordChunk { next_id, data: rec[start..end].to_vec() }.encode())
            }
            (ClearSel::NETFN, ClearSel::CMD) => {
                if !operator {
                    return err(cc::INSUFFICIENT_PRIVILEGE);
                }
                let Ok(r) = ClearSel::decode(&req.data) else { return err(cc::INVALID_DATA_FIELD) };
                if r.action == lifeline_ipmi::wire::sel::CLEAR_SEL_INITIATE {
                    self.host.sel_clear_by(&self.origin(idx));
                }
                ok(ClearSelStatus { progress: 1 }.encode())
            }
            // Get / Set SEL Time.
            (netfn::STORAGE, 0x48) => ok(now_secs().to_le_bytes().to_vec()),
            (netfn::STORAGE, 0x49) => ok(vec![]),

            // ---- Transport: Get SOL Configuration Parameters ----
            (netfn::TRANSPORT, 0x22) => self.sol_config(req),

            _ => err(cc::INVALID_COMMAND),
        }
    }

    /// Who sent the request of session `idx`: its peer and the BMC's one user (RAKP admits no other).
    fn origin(&self, idx: usize) -> Origin {
        let user = self.host.bmc_config().username.clone();
        Origin::new(Protocol::Ipmi, Some(self.sessions[idx].peer), Some(user))
    }

    fn device_id(&self) -> DeviceId {
        let id = &self.host.bmc_config().identity;
        DeviceId {
            device_id: 0x20,
            device_revision: 0x01,
            firmware_major: id.firmware_rev.0 & 0x7F,
            firmware_minor: id.firmware_rev.1,
            ipmi_version: 0x02,
            // Sensor device, SDR repository, SEL, chassis.
            additional_support: 0x87,
            manufacturer_id: id.iana & 0x0F_FFFF,
            product_id: id.product_id,
            aux_firmware: Some([0; 4]),
        }
    }

    fn chassis_status(&self) -> ChassisStatus {
        let on = self.host.phase() != Phase::Off;
        // Power restore policy "previous" (bits 6:5 = 01).
        ChassisStatus { power: u8::from(on) | 0x20, last_power_event: 0, misc: 0, front_panel: None }
    }

    pub(super) fn cipher_suites(&self, req: &Request) -> Response {
        let index = req.data.get(2).copied().unwrap_or(0) & 0x3F;
        let records: Vec<CipherSuiteRecord> = self
            .offered()
            .into_iter()
            .map(|s| {
                let (a, i, c) = s.algorithms();
                CipherSuiteRecord { id: s.id(), auth: vec![a], integrity: vec![i], confidentiality: vec![c] }
            })
            .collect();
        let all = encode_cipher_suite_records(&records);
        let start = (index as usize * 16).min(all.len());
        let end = (start + 16).min(all.len());
        let mut data = vec![1u8];
        data.extend_from_slice(&all[start..end]);
        req.respond(cc::OK, data)
    }

    fn sol_config(&self, req: &Request) -> (Response, Out) {
        let revision_only = req.data.first().is_some_and(|b| b & 0x80 != 0);
        let param = req.data.get(1).copied().unwrap_or(0);
        let value: Vec<u8> = match param {
            0 => vec![0x00],
            1 => vec![0x01],                                     // SOL enabled
            2 => vec![0x02],                                     // USER privilege, encryption/auth not forced
            3 => vec![0x0C, 0x60],                               // accumulate 60 ms, send threshold 96
            4 => vec![0x07, 0x32],                               // 7 retries, 500 ms
            5 | 6 => vec![0x0A],                                 // 115200 bit/s
            7 => vec![0x01],                                     // payload channel 1
            8 => self.port.to_le_bytes().to_vec(),               // payload port
            _ => return (req.respond(0x80, vec![]), Vec::new()), // parameter not supported
        };
        let mut data = vec![0x11];
        if !revision_only {
            data.extend(value);
        }
        (req.respond(cc::OK, data), Vec::new())
    }

    pub(super) fn stuck(&self) -> bool {
        self.host.bmc().sol_stuck() && !self.stuck_released
    }

    fn activate_payload(&mut self, idx: usize, req: &Request) -> (Response, Out) {
        let Ok(r) = ActivatePayload::decode(&req.data) else {
            return (req.respond(cc::REQUEST_DATA_LENGTH_INVALID, vec![]), Vec::new());
        };
        if r.payload_type != PAYLOAD_SOL {
            return (req.respond(0x81, vec![]), Vec::new());
        }
        if r.instance != 1 {
            return (req.respond(cc::PARAMETER_OUT_OF_RANGE, vec![]), Vec::new());
        }
        if self.sol.is_some() || self.stuck() {
            return (req.respond(cc::PAYLOAD_ALREADY_ACTIVE, vec![]), Vec::new());
        }
        let owner = self.sessions[idx].id;
        self.sol = Some(Sol::new(owner));
        let a = PayloadActivated {
            aux: [0; 4],
            inbound_size: super::sol::MAX_PAYLOAD as u16,
            outbound_size: super::sol::MAX_PAYLOAD as u16,
            port: self.port,
            vlan: 0xFFFF,
        };
        (req.respond(cc::OK, a.encode()), Vec::new())
    }

    fn deactivate_payload(&mut self, idx: usize, req: &Request) -> (Response, Out) {
        let Ok(r) = DeactivatePayload::decode(&req.data) else {
            return (req.respond(cc::REQUEST_DATA_LENGTH_INVALID, vec![]), Vec::new());
        };
        if r.payload_type != PAYLOAD_SOL || r.instance != 1 {
            return (req.respond(cc::PARAMETER_OUT_OF_RANGE, vec![]), Vec::new());
        }
        if self.stuck() {
            // A stuck payload is released by an explicit deactivate (a "steal").
            self.stuck_released = true;
            return (req.respond(cc::OK, vec![]), Vec::new());
        }
        let Some(sol) = self.sol.take() else {
            // "Payload already deactivated".
            return (req.respond(cc::PAYLOAD_ALREADY_ACTIVE, vec![]), Vec::new());
        };
        let mut extra = Vec::new();
        if sol.owner != self.sessions[idx].id {
            // Tell the previous owner its SOL is gone (ipmitool: "SOL session closed by BMC").
            if let Some(owner) = self.sessions.iter_mut().find(|s| s.id == sol.owner) {
                let peer = owner.peer;
                if let Some(d) =
                    owner.seal(lifeline_ipmi::wire::packet::PayloadType::Sol, Sol::deactivating())
                {
                    extra.push((d, peer));
                }
            }
        }
        (req.respond(cc::OK, vec![]), extra)
    }
}
