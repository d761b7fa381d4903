//! The System Event Log of a simulated BMC, shared by IPMI (`sel list`) and Redfish (`LogServices`).
//!
//! One log per BMC, so a fault injected once shows the same record id in both protocols.

use std::collections::VecDeque;

use lifeline_types::Health;
use serde::Serialize;

/// Oldest records are dropped past this (real BMCs hold 512-4096; small keeps 1,000 BMCs cheap).
pub const SEL_CAPACITY: usize = 256;

/// IPMI sensor types used in SEL records (IPMI 2.0 table 42-3).
pub mod sensor_type {
    pub const TEMPERATURE: u8 = 0x01;
    pub const POWER_SUPPLY: u8 = 0x08;
    pub const POWER_UNIT: u8 = 0x09;
    pub const MEMORY: u8 = 0x0C;
    pub const SYSTEM_FIRMWARE_PROGRESS: u8 = 0x0F;
    pub const EVENT_LOGGING_DISABLED: u8 = 0x10;
    pub const CRITICAL_INTERRUPT: u8 = 0x13;
    pub const OS_STOP: u8 = 0x20;
    pub const LAN: u8 = 0x27;
    pub const ADDIN_CARD: u8 = 0x17;
}

/// One SEL record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelEntry {
    pub id: u16,
    /// Seconds since the Unix epoch.
    pub timestamp: u32,
    pub sensor_type: u8,
    pub sensor_number: u8,
    /// Event/reading type code (0x6f = sensor-specific, 0x01 = threshold).
    pub event_type: u8,
    pub deassertion: bool,
    pub event_data: [u8; 3],
    pub severity: Health,
    /// Human text (Redfish `Message`).
    pub message: String,
    /// Redfish `MessageId` (registry-style).
    pub message_id: String,
}

impl SelEntry {
    /// The 16-byte IPMI SEL record (type 0x02, system event) as Get SEL Entry returns it.
    pub fn to_ipmi_record(&self) -> [u8; 16] {
        let id = self.id.to_le_bytes();
        let ts = self.timestamp.to_le_bytes();
        [
            id[0],
            id[1],
            0x02,
            ts[0],
            ts[1],
            ts[2],
            ts[3],
            0x20, // generator: BMC slave address
            0x00,
            0x04, // EvM revision (IPMI 2.0)
            self.sensor_type,
            self.sensor_number,
            (u8::from(self.deassertion) << 7) | (self.event_type & 0x7f),
            self.event_data[0],
            self.event_data[1],
            self.event_data[2],
        ]
    }

    /// RFC 3339 creation time for Redfish.
    pub fn created(&self) -> String {
        chrono::DateTime::from_timestamp(i64::from(self.timestamp), 0)
            .unwrap_or_default()
            .format("%Y-%m-%dT%H:%M:%S+00:00")
            .to_string()
    }
}

/// What to log; the log assigns id and time.
#[derive(Debug, Clone)]
pub struct NewSel {
    pub sensor_type: u8,
    pub sensor_number: u8,
    pub event_type: u8,
    pub deassertion: bool,
    pub event_data: [u8; 3],
    pub severity: Health,
    pub message: String,
    pub message_id: &'static str,
}

impl NewSel {
    /// A sensor-specific (event type 6Fh) assertion with `offset` in the first event data byte.
    pub fn asserted(
        sensor_type: u8,
        sensor_number: u8,
        offset: u8,
        severity: Health,
        message: String,
        message_id: &'static str,
    ) -> NewSel {
        NewSel {
            sensor_type,
            sensor_number,
            event_type: 0x6f,
            deassertion: false,
            event_data: [offset, 0xff, 0xff],
            severity,
            message,
            message_id,
        }
    }
}

/// The log itself.
#[derive(Debug, Default)]
pub struct SelLog {
    entries: VecDeque<SelEntry>,
    next_id: u16,
    /// Bumped on every add/clear: IPMI reservation ids and Redfish ETags derive from it.
    pub generation: u32,
    /// Last add / erase time (Get SEL Info).
    pub last_add: u32,
    pub last_erase: u32,
}

pub fn now_secs() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or_default()
}

impl SelLog {
    pub fn add(&mut self, e: NewSel) -> SelEntry {
        self.next_id = self.next_id.wrapping_add(1).max(1);
        // 0xFFFF means "last record" in IPMI and 0 "first": never hand them out.
        if self.next_id == 0xFFFF {
            self.next_id = 1;
        }
        let entry = SelEntry {
            id: self.next_id,
            timestamp: now_secs(),
            sensor_type: e.sensor_type,
            sensor_number: e.sensor_number,
            event_type: e.event_type,
            deassertion: e.deassertion,
            event_data: e.event_data,
            severity: e.severity,
            message: e.message,
            message_id: e.message_id.to_owned(),
        };
        if self.entries.len() >= SEL_CAPACITY {
            self.entries.pop_front();
        }
        self.entries.push_back(entry.clone());
        self.generation = self.generation.wrapping_add(1);
        self.last_add = entry.timestamp;
        entry
    }

    /// Erase, then log the erase itself as real BMCs do ("Log area reset/cleared").
    pub fn clear(&mut self) -> SelEntry {
        self.entries.clear();
        self.last_erase = now_secs();
        self.add(NewSel {
            sensor_type: sensor_type::EVENT_LOGGING_DISABLED,
            sensor_number: 0x72,
            event_type: 0x6f,
            deassertion: false,
            event_data: [0x02, 0xff, 0xff],
            severity: Health::Ok,
            message: "Log area reset/cleared".into(),
            message_id: "OpenBMC.0.1.SELCleared",
        })
    }

    pub fn entries(&self) -> impl Iterator<Item = &SelEntry> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, id: u16) -> Option<&SelEntry> {
        self.entries.iter().find(|e| e.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(msg: &str) -> NewSel {
        NewSel {
            sensor_type: sensor_type::MEMORY,
            sensor_number: 0x60,
            event_type: 0x6f,
            deassertion: false,
            event_data: [0x01, 0xff, 0xff],
            severity: Health::Critical,
            message: msg.into(),
            message_id: "x",
        }
    }

    #[test]
    fn ids_increase_and_capacity_is_bounded() {
        let mut log = SelLog::default();
        let a = log.add(ev("a"));
        let b = log.add(ev("b"));
        assert!(b.id > a.id);
        for _ in 0..SEL_CAPACITY + 10 {
            log.add(ev("x"));
        }
        assert_eq!(log.len(), SEL_CAPACITY);
        let rec = b.to_ipmi_record();
        assert_eq!(rec[0..3], [b.id as u8, (b.id >> 8) as u8, 0x02]);
        assert_eq!(rec[10], sensor_type::MEMORY);
        let c = log.clear();
        assert_eq!(log.len(), 1);
        assert_eq!(c.sensor_type, sensor_type::EVENT_LOGGING_DISABLED);
    }
}
