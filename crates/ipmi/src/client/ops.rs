//! High-level operations on a session: device id, power, SDR/sensors (chunked reads),
//! SEL, users. These encode the retry rules that are protocol knowledge rather than
//! policy: partial SDR reads on 0xCA, re-reservation on 0xC5, never blindly resending a
//! power action whose reply was lost.

use super::error::{Error, Result};
use super::session::Session;
use crate::wire::{
    app::{DeviceId, GetDeviceId},
    cc,
    chassis::{ChassisControl, ChassisOp, ChassisStatus, GetChassisStatus},
    sdr::{
        self, FullSensor, GetSdr, GetSdrRepositoryInfo, ReserveSdrRepository, SdrBody, SdrRecord,
        SdrRepositoryInfo,
    },
    sel::{self, ClearSel, GetSelEntry, GetSelInfo, ReserveSel, SelInfo, SelRecord},
    sensor::{GetSensorReading, SensorReading},
    user::{
        CC_PASSWORD_MISMATCH, CC_PASSWORD_SIZE, GetUserAccess, GetUserName, PasswordOp, SetUserAccess,
        SetUserName, SetUserPassword, UserAccess,
    },
};
use lifeline_types::PowerState;
use std::time::Duration;

/// Largest body piece requested per Get SDR once a BMC refused a whole-record read (ipmitool's choice;
/// OpenIPMI refuses more).
const SDR_CHUNK: u8 = 16;
/// Get SDR length meaning "the whole record".
const SDR_WHOLE: u8 = 0xFF;
const MAX_RECORDS: usize = 4096;

/// One sensor as listed by `ipmitool sdr list`.
#[derive(Debug, Clone, PartialEq)]
pub struct SensorValue {
    pub name: String,
    pub number: u8,
    pub sensor_type: u8,
    pub type_name: String,
    pub unit: String,
    /// Converted reading (threshold sensors with a full record), `None` if unavailable.
    pub value: Option<f64>,
    pub raw: Option<u8>,
    /// Threshold state bits (or discrete state bits 0-7).
    pub state: Option<u8>,
    pub status: SensorStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SensorStatus {
    Ok,
    NonCritical,
    Critical,
    NonRecoverable,
    /// Discrete sensor: see `state`.
    Discrete,
    Unavailable,
}

impl SensorStatus {
    fn from_threshold_bits(bits: u8) -> Self {
        if bits & 0x24 != 0 {
            Self::NonRecoverable
        } else if bits & 0x12 != 0 {
            Self::Critical
        } else if bits & 0x09 != 0 {
            Self::NonCritical
        } else {
            Self::Ok
        }
    }
}

/// A user slot (Get User Name + Get User Access).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: u8,
    pub name: String,
    pub access: UserAccess,
}

impl Session {
    pub async fn device_id(&self) -> Result<DeviceId> {
        self.call(&GetDeviceId).await
    }

    pub async fn chassis_status(&self) -> Result<ChassisStatus> {
        self.call(&GetChassisStatus).await
    }

    pub async fn power_state(&self) -> Result<PowerState> {
        Ok(if self.chassis_status().await?.power_on() { PowerState::On } else { PowerState::Off })
    }

    /// Chassis Control without ever doubling an action.
    ///
    /// Each transmission is sent once. When its reply is lost: for power up/down the
    /// chassis state is read, and the request is only sent again if the state shows it
    /// was not executed; for cycle/reset/soft/diag nothing tells "done" from "lost", so
    /// [`Error::Unconfirmed`] is returned and the caller confirms by polling.
    pub async fn chassis_control(&self, op: ChassisOp) -> Result<()> {
        let target = match op {
            ChassisOp::PowerUp => Some(true),
            ChassisOp::PowerDown => Some(false),
            _ => None,
        };
        let attempts = self.inner.timing.attempts.max(1);
        for _ in 0..attempts {
            match self.call_once(&ChassisControl { op: op as u8 }).await {
                Ok(_) => return Ok(()),
                Err(Error::Unconfirmed { .. }) if target.is_some() => {
                    let on = self.chassis_status().await?.power_on();
                    if Some(on) == target {
                        return Ok(());
                    }
                    tracing::debug!(bmc = %self.bmc(), ?op, "power action not executed (request lost), resending");
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::Unconfirmed { bmc: self.bmc().to_string(), cmd: "ChassisControl" })
    }

    pub async fn sdr_repository_info(&self) -> Result<SdrRepositoryInfo> {
        self.call(&GetSdrRepositoryInfo).await
    }

    async fn reserve_sdr(&self) -> Result<u16> {
        match self.call(&ReserveSdrRepository).await {
            Ok(r) => Ok(r.id),
            // Reservation is optional for BMCs that don't support it.
            Err(Error::CompletionCode { code: cc::INVALID_COMMAND, .. }) => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// Read every SDR. Each record is first asked for whole (one round trip, which matters on a lossy
    /// link: a record in 16-byte pieces costs 3-5); after the first 0xCA / 0xFF refusal (OpenIPMI) the rest
    /// are read as ipmitool does: 5-byte header, then the body in <=16-byte pieces, halving the piece on
    /// 0xCA. Re-reserves on 0xC5. Records that fail to parse are skipped.
    pub async fn sdr_records(&self) -> Result<Vec<SdrRecord>> {
        self.sdr_records_from(SDR_WHOLE).await
    }

    /// [`Session::sdr_records`] starting with pieces of `first_len` bytes (`0xFF`: whole records first;
    /// anything else: header, then pieces of at most that size, as for a BMC known to refuse whole reads).
    pub async fn sdr_records_from(&self, first_len: u8) -> Result<Vec<SdrRecord>> {
        let mut reservation = self.reserve_sdr().await?;
        let mut out = Vec::new();
        let mut record_id = sdr::FIRST_RECORD;
        let mut chunk = first_len.max(1);
        let mut rereserves = 0;
        let mut timeouts = 0;
        while out.len() < MAX_RECORDS {
            match self.read_sdr(reservation, record_id, &mut chunk).await {
                Ok((next, bytes)) => {
                    match SdrRecord::decode(&bytes) {
                        Ok(r) => out.push(r),
                        Err(e) => tracing::debug!(bmc = %self.bmc(), record_id, error = %e, "skipping SDR"),
                    }
                    if next == sdr::LAST_RECORD || next == record_id {
                        break;
                    }
                    record_id = next;
                }
                // Every retransmission of one request went unanswered: on a lossy link that happens now
                // and then over a long repository; read the record again rather than lose the rest.
                Err(Error::Timeout { .. }) if timeouts < 2 => timeouts += 1,
                Err(Error::CompletionCode { code: cc::RESERVATION_CANCELLED, .. }) if rereserves < 8 => {
                    rereserves += 1;
                    reservation = self.reserve_sdr().await?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    async fn read_sdr(&self, reservation: u16, record_id: u16, chunk: &mut u8) -> Result<(u16, Vec<u8>)> {
        let head_len = if *chunk == SDR_WHOLE { SDR_WHOLE } else { sdr::SDR_HEADER_LEN as u8 };
        let head = match self.call(&GetSdr { reservation, record_id, offset: 0, len: head_len }).await {
            Ok(h) => h,
            Err(Error::CompletionCode { code: cc::CANNOT_RETURN_REQUESTED_BYTES | 0xFF, .. })
                if head_len == SDR_WHOLE =>
            {
                tracing::debug!(bmc = %self.bmc(), record_id, "whole-record Get SDR refused; reading in pieces");
                *chunk = SDR_CHUNK;
                let len = sdr::SDR_HEADER_LEN as u8;
                self.call(&GetSdr { reservation, record_id, offset: 0, len }).await?
            }
            Err(e) => return Err(e),
        };
        let mut bytes = head.data;
        if bytes.len() < sdr::SDR_HEADER_LEN {
            return Ok((head.next_id, bytes));
        }
        let total = sdr::SDR_HEADER_LEN + bytes[4] as usize;
        // A whole read may come back padded (OpenIPMI, short records) or short (a BMC's own limit): keep
        // the record's bytes and fetch whatever is missing in pieces.
        bytes.truncate(total);
        if bytes.len() < total && *chunk == SDR_WHOLE {
            *chunk = SDR_CHUNK;
        }
        while bytes.len() < total {
            let len = (*chunk as usize).min(total - bytes.len()) as u8;
            let req = GetSdr { reservation, record_id, offset: bytes.len() as u8, len };
            match self.call(&req).await {
                Ok(piece) if !piece.data.is_empty() => {
                    let take = piece.data.len().min(total - bytes.len());
                    bytes.extend_from_slice(&piece.data[..take]);
                }
                Ok(_) => break,
                Err(Error::CompletionCode { code: cc::CANNOT_RETURN_REQUESTED_BYTES | 0xFF, .. })
                    if *chunk > 1 =>
                {
                    *chunk = (*chunk / 2).max(1);
                }
                Err(e) => return Err(e),
            }
        }
        Ok((head.next_id, bytes))
    }

    /// Every sensor with its reading, like `ipmitool sdr list`.
    pub async fn sensors(&self) -> Result<Vec<SensorValue>> {
        let records = self.sdr_records().await?;
        let mut out = Vec::new();
        for r in &records {
            let (common, full) = match &r.body {
                SdrBody::Full(f) => (&f.common, Some(f)),
                SdrBody::Compact(c) => (&c.common, None),
                SdrBody::Other { .. } => continue,
            };
            let reading = match self.call(&GetSensorReading { number: common.number }).await {
                Ok(rd) => Some(rd),
                Err(Error::CompletionCode { .. }) => None,
                Err(e) => return Err(e),
            };
            out.push(sensor_value(common, full, reading));
        }
        Ok(out)
    }

    pub async fn sel_info(&self) -> Result<SelInfo> {
        self.call(&GetSelInfo).await
    }

    /// All SEL entries, oldest first.
    pub async fn sel_entries(&self) -> Result<Vec<SelRecord>> {
        let info = self.sel_info().await?;
        let mut out = Vec::new();
        if info.entries == 0 {
            return Ok(out);
        }
        let mut record_id = 0u16;
        let limit = info.entries as usize + 16;
        while out.len() < limit.min(MAX_RECORDS) {
            let req = GetSelEntry(GetSdr { reservation: 0, record_id, offset: 0, len: 0xFF });
            let chunk = match self.call(&req).await {
                Ok(c) => c,
                // Emptied under us.
                Err(Error::CompletionCode { code: cc::NOT_PRESENT, .. }) => break,
                Err(e) => return Err(e),
            };
            match SelRecord::decode(&chunk.data) {
                Ok(r) => out.push(r),
                Err(e) => tracing::debug!(bmc = %self.bmc(), record_id, error = %e, "skipping SEL entry"),
            }
            if chunk.next_id == 0xFFFF || chunk.next_id == record_id {
                break;
            }
            record_id = chunk.next_id;
        }
        Ok(out)
    }

    /// Clear the SEL and wait (bounded) for the erase to complete.
    pub async fn clear_sel(&self) -> Result<()> {
        let reservation = self.call(&ReserveSel).await?.id;
        let mut st = self.call(&ClearSel { reservation, action: sel::CLEAR_SEL_INITIATE }).await?;
        for _ in 0..20 {
            if st.completed() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            st = self.call(&ClearSel { reservation, action: sel::CLEAR_SEL_STATUS }).await?;
        }
        Err(Error::Timeout {
            bmc: self.bmc().to_string(),
            what: "Clear SEL completion",
            after: Duration::from_secs(2),
        })
    }

    /// Every user slot on `channel` (usually 1, the LAN channel), named or not.
    pub async fn users(&self, channel: u8) -> Result<Vec<User>> {
        let first = self.call(&GetUserAccess { channel, user_id: 1 }).await?;
        let max = (first.max_users & 0x3F).max(1);
        let mut out = Vec::with_capacity(max as usize);
        for id in 1..=max {
            let access =
                if id == 1 { first } else { self.call(&GetUserAccess { channel, user_id: id }).await? };
            let name = match self.call(&GetUserName { user_id: id }).await {
                Ok(n) => n.name,
                // Unused slots answer with an error on some BMCs.
                Err(Error::CompletionCode { .. }) => String::new(),
                Err(e) => return Err(e),
            };
            out.push(User { id, name, access });
        }
        Ok(out)
    }

    /// Sets a user's password. Sent once (never retransmitted blindly): a lost reply is
    /// [`Error::Unconfirmed`], and the caller proves the outcome by a login, not by resending.
    pub async fn set_user_password(&self, user_id: u8, password: &[u8]) -> Result<()> {
        self.call_once(&SetUserPassword::new(user_id, PasswordOp::Set, password)).await.map(|_| ())
    }

    /// Whether `password` is the user's password (Set User Password, operation Test). A password stored
    /// in the other size (16 vs 20 bytes) does not match either.
    pub async fn test_user_password(&self, user_id: u8, password: &[u8]) -> Result<bool> {
        match self.call(&SetUserPassword::new(user_id, PasswordOp::Test, password)).await {
            Ok(_) => Ok(true),
            Err(Error::CompletionCode { code: CC_PASSWORD_MISMATCH | CC_PASSWORD_SIZE, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Enables or disables a user slot (idempotent: safe to retransmit).
    pub async fn enable_user(&self, user_id: u8, enabled: bool) -> Result<()> {
        let op = if enabled { PasswordOp::Enable } else { PasswordOp::Disable };
        self.call(&SetUserPassword::new(user_id, op, &[])).await.map(|_| ())
    }

    pub async fn set_user_name(&self, user_id: u8, name: &str) -> Result<()> {
        self.call(&SetUserName { user_id, name: name.to_owned() }).await.map(|_| ())
    }

    /// Sets a user's privilege limit on `channel`, with IPMI messaging and link authentication enabled.
    pub async fn set_user_privilege(&self, channel: u8, user_id: u8, privilege: u8) -> Result<()> {
        let req = SetUserAccess {
            channel,
            user_id,
            privilege,
            ipmi_messaging: true,
            link_auth: true,
            callback_only: false,
        };
        self.call(&req).await.map(|_| ())
    }
}

fn sensor_value(
    common: &sdr::SensorCommon,
    full: Option<&FullSensor>,
    reading: Option<SensorReading>,
) -> SensorValue {
    let available = reading.filter(|r| !r.unavailable());
    let value = match (full, available) {
        (Some(f), Some(rd)) if common.is_threshold() => Some(f.convert(rd.raw)),
        _ => None,
    };
    let status = match available {
        None => SensorStatus::Unavailable,
        Some(rd) if common.is_threshold() => SensorStatus::from_threshold_bits(rd.state1.unwrap_or(0)),
        Some(_) => SensorStatus::Discrete,
    };
    SensorValue {
        name: common.name.clone(),
        number: common.number,
        sensor_type: common.sensor_type,
        type_name: common.sensor_type_name(),
        unit: common.unit_name(),
        value,
        raw: available.map(|r| r.raw),
        state: available.and_then(|r| r.state1),
        status,
    }
}
