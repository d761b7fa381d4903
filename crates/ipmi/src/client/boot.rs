//! Boot device, BMC reset and LAN MAC over a session: the sequences around the [`crate::wire::boot`]
//! codecs. The set-in-progress handshake is protocol knowledge (IPMI 2.0 §28.13: lock parameter 0, write,
//! mark complete) and belongs here, as does tolerating the BMCs that do not implement parameter 0 (OpenIPMI
//! answers 0xCC): for them the write goes out on its own, as ipmitool's `chassis bootdev` does.

use super::error::{Error, Result};
use super::session::Session;
use crate::wire::{
    Body,
    boot::{
        BmcResetKind, BootFlags, BootOptionsReply, ColdReset, GetLanConfig, GetSystemBootOptions,
        SetSystemBootOptions, WarmReset, lan_param, param, progress,
    },
    cc,
};

/// What setting the boot flags involved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootWrite {
    /// The BMC took part in the set-in-progress handshake (parameter 0); false when it does not implement it.
    pub handshake: bool,
}

/// LAN channels tried for the BMC's MAC address, in order (1 is the usual one; some boards use 2 or 8).
const LAN_CHANNELS: [u8; 3] = [1, 2, 8];

impl Session {
    /// Boot flags (parameter 5) as the BMC reports them, with the parameter's reply header.
    pub async fn boot_flags(&self) -> Result<(BootOptionsReply, BootFlags)> {
        let r = self.call(&GetSystemBootOptions::new(param::BOOT_FLAGS)).await?;
        let f = BootFlags::decode(&r.data).map_err(|source| Error::Decode {
            bmc: self.bmc().to_owned(),
            what: "boot flags",
            source,
        })?;
        Ok((r, f))
    }

    /// Writes the boot flags inside the set-in-progress handshake. Setting flags is idempotent, so a write
    /// whose reply was lost is retransmitted like a read.
    pub async fn set_boot_flags(&self, flags: &BootFlags) -> Result<BootWrite> {
        let set = |p: u8, data: Vec<u8>| SetSystemBootOptions { param: p, mark_invalid: false, data };
        let handshake = match self.call(&set(param::SET_IN_PROGRESS, vec![progress::SET_IN_PROGRESS])).await {
            Ok(_) => true,
            // 0x80: parameter not supported; 0xCC / 0xC9: the BMC does not know parameter 0.
            Err(Error::CompletionCode {
                code: 0x80 | cc::INVALID_DATA_FIELD | cc::PARAMETER_OUT_OF_RANGE,
                ..
            }) => false,
            // 0x81: a set is already in progress (another client, or our own that died): say so.
            Err(e) => return Err(e),
        };
        let written = self.call(&set(param::BOOT_FLAGS, flags.encode())).await;
        if handshake {
            // Released even when the write failed, so the parameter is not left locked.
            let done = self.call(&set(param::SET_IN_PROGRESS, vec![progress::SET_COMPLETE])).await;
            written?;
            done?;
        } else {
            written?;
        }
        Ok(BootWrite { handshake })
    }

    /// Cold or Warm Reset of the BMC, sent once (never retransmitted: a BMC that reset before its reply
    /// left would be reset again). `Ok(false)`: sent, but no reply came (usual when it resets at once).
    pub async fn bmc_reset(&self, kind: BmcResetKind) -> Result<bool> {
        let r = match kind {
            BmcResetKind::Cold => self.call_once(&ColdReset).await,
            BmcResetKind::Warm => self.call_once(&WarmReset).await,
        };
        match r {
            Ok(_) => Ok(true),
            Err(Error::Unconfirmed { .. } | Error::Timeout { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The MAC address of the BMC's first LAN channel that answers, with the channel number.
    pub async fn lan_mac(&self) -> Result<Option<(u8, String)>> {
        let mut last = None;
        for ch in LAN_CHANNELS {
            match self.call(&GetLanConfig::new(ch, lan_param::MAC_ADDRESS)).await {
                Ok(r) => {
                    if let Some(mac) = r.mac() {
                        return Ok(Some((ch, mac)));
                    }
                }
                Err(e @ Error::CompletionCode { .. }) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        match last {
            Some(e) if e.completion_code() != Some(cc::INVALID_DATA_FIELD) => Err(e),
            _ => Ok(None),
        }
    }
}
