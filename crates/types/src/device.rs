//! What a device is: its name, its role in the cluster, and for switches the fabric, tier and platform.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::kebab_enum;

kebab_enum! {
    /// What a device does in the cluster; decides which checks and actions apply to it.
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    #[cfg_attr(feature = "schema", schema(as = DeviceRole))]
    pub enum Role {
        GpuNode => "gpu-node",
        HeadNode => "head-node",
        StorageServer => "storage-server",
        Switch => "switch",
    }
}

impl Role {
    /// Servers have a BMC; switches have a management port (and maybe a BMC).
    pub fn is_server(self) -> bool {
        !matches!(self, Role::Switch)
    }
}

kebab_enum! {
    /// The four networks of an AI cluster.
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum Fabric {
        /// 400G RoCEv2 / InfiniBand rails, one NIC per GPU.
        Backend => "backend",
        Storage => "storage",
        /// Kubernetes / Slurm control, SSH.
        Frontend => "frontend",
        /// 1G out-of-band management: every BMC and every switch management port.
        Oob => "oob",
    }
}

kebab_enum! {
    /// A switch's place in a Clos fabric.
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum Tier {
        Leaf => "leaf",
        Spine => "spine",
    }
}

kebab_enum! {
    /// Network operating system of a switch; selects the backup/restore driver and console profile.
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum Platform {
        Sonic => "sonic",
        Eos => "eos",
        Cumulus => "cumulus",
        Ios => "ios",
        Nxos => "nxos",
    }
}

kebab_enum! {
    /// Which text is a switch's configuration, where a platform has more than one (inventory
    /// `config-source`). Why a choice: a SONiC switch's saved `config_db.json` is what it boots with,
    /// and a Cumulus switch run without NVUE keeps its whole configuration in ifupdown2 and FRR files,
    /// which `nv config show` does not print.
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum ConfigSource {
        /// The platform's running configuration (Cumulus: NVUE's `nv config show -o commands`).
        Running => "running",
        /// SONiC only: `/etc/sonic/config_db.json`, the configuration the switch boots with.
        Saved => "saved",
        /// Cumulus only, without NVUE: `/etc/network/interfaces` and `/etc/frr/frr.conf`.
        Files => "files",
    }
}

impl ConfigSource {
    /// The sources a platform has (the first is its default).
    pub fn allowed(platform: Platform) -> &'static [ConfigSource] {
        match platform {
            Platform::Sonic => &[ConfigSource::Running, ConfigSource::Saved],
            Platform::Cumulus => &[ConfigSource::Running, ConfigSource::Files],
            Platform::Eos | Platform::Ios | Platform::Nxos => &[ConfigSource::Running],
        }
    }
}

kebab_enum! {
    /// How Lifeline talks to a BMC. `auto` probes Redfish first, falls back to IPMI and remembers.
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum BmcProtocol {
        Redfish => "redfish",
        Ipmi => "ipmi",
        Auto => "auto",
    }
}

/// A device name as written in the inventory: the key every other table and command uses.
///
/// Restricted to what is safe in file names, URLs, Slurm node names and Kubernetes node names:
/// lowercase ASCII letters, digits, `-`, `_` and `.`; starts with a letter or digit; at most 63 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(try_from = "String", into = "String")]
pub struct DeviceName(String);

/// Why a string is not a valid [`DeviceName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceNameError {
    #[error("device name is empty")]
    Empty,
    #[error("device name `{name}` is longer than 63 bytes")]
    TooLong { name: String },
    #[error("device name `{name}` has `{ch}` at byte {at}; use lowercase letters, digits, `-`, `_`, `.`")]
    BadChar { name: String, ch: char, at: usize },
    #[error("device name `{name}` must start with a letter or digit")]
    BadStart { name: String },
}

impl DeviceName {
    pub fn new(name: impl Into<String>) -> Result<Self, DeviceNameError> {
        let name = name.into();
        if name.is_empty() {
            return Err(DeviceNameError::Empty);
        }
        if name.len() > 63 {
            return Err(DeviceNameError::TooLong { name });
        }
        if let Some((at, ch)) = name
            .char_indices()
            .find(|&(_, c)| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.')))
        {
            return Err(DeviceNameError::BadChar { name, ch, at });
        }
        if !name.as_bytes()[0].is_ascii_alphanumeric() {
            return Err(DeviceNameError::BadStart { name });
        }
        Ok(Self(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DeviceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl FromStr for DeviceName {
    type Err = DeviceNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl TryFrom<String> for DeviceName {
    type Error = DeviceNameError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::new(s)
    }
}

impl From<DeviceName> for String {
    fn from(n: DeviceName) -> String {
        n.0
    }
}

impl AsRef<str> for DeviceName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn enums_round_trip_their_spelling() {
        for r in Role::ALL {
            assert_eq!(r.as_str().parse::<Role>().unwrap(), *r);
        }
        for p in Platform::ALL {
            assert_eq!(p.to_string().parse::<Platform>().unwrap(), *p);
        }
        let err = "junos".parse::<Platform>().unwrap_err();
        assert!(err.to_string().contains("sonic, eos, cumulus, ios, nxos"), "{err}");
        assert_eq!(serde_json::to_string(&Role::GpuNode).unwrap(), "\"gpu-node\"");
    }

    #[test]
    fn device_names() {
        assert!(DeviceName::new("gpu-node-01").is_ok());
        assert!(DeviceName::new("leaf1.backend").is_ok());
        assert_eq!(DeviceName::new(""), Err(DeviceNameError::Empty));
        assert!(matches!(DeviceName::new("GPU1"), Err(DeviceNameError::BadChar { at: 0, .. })));
        assert!(matches!(DeviceName::new("-x"), Err(DeviceNameError::BadStart { .. })));
        assert!(matches!(DeviceName::new("a".repeat(64)), Err(DeviceNameError::TooLong { .. })));
    }

    proptest! {
        #[test]
        fn valid_names_are_accepted(s in "[a-z0-9][a-z0-9._-]{0,62}") {
            let n = DeviceName::new(s.clone()).unwrap();
            prop_assert_eq!(n.as_str(), s.as_str());
        }

        #[test]
        fn name_check_never_panics(s in ".{0,80}") {
            let _ = DeviceName::new(s);
        }
    }
}
