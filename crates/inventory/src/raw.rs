//! The inventory file as written: serde structs that keep every value's span.
//!
//! Values that need a semantic check (addresses, credentials, enum words) are kept as spanned strings and
//! checked in `check.rs`, so one bad value is one diagnostic and does not hide the others. Unknown keys are
//! collected with `serde_ignored` across the whole file instead of stopping at the first one.

use serde::Deserialize;
use toml::Spanned;

pub type S<T> = Spanned<T>;

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct RawFile {
    pub cluster: Option<S<RawCluster>>,
    pub defaults: Option<RawDefaults>,
    #[serde(default)]
    pub site: Vec<S<RawSite>>,
    #[serde(default)]
    pub rack: Vec<S<RawRack>>,
    // Devices are deserialized one by one in `check.rs` so that a type error in one device does not
    // hide the problems of the others.
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RawCluster {
    pub name: S<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub oob_subnets: Vec<S<String>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct RawDefaults {
    pub bmc: Option<RawBmcDefaults>,
    pub management: Option<RawMgmtDefaults>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct RawBmcDefaults {
    pub protocol: Option<S<String>>,
    pub username: Option<S<String>>,
    pub credential: Option<S<String>>,
    pub flavor: Option<S<String>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct RawMgmtDefaults {
    pub username: Option<S<String>>,
    pub credential: Option<S<String>>,
    pub timeouts: Option<S<RawTimeouts>>,
}

/// `30s`, `2m`, `500ms`… or a bare number of seconds.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawDuration {
    Seconds(i64),
    Text(String),
}

/// SSH step timeouts of a switch (see `timeouts.rs`).
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct RawTimeouts {
    pub connect: Option<S<RawDuration>>,
    pub auth: Option<S<RawDuration>>,
    pub prompt: Option<S<RawDuration>>,
    pub command: Option<S<RawDuration>>,
    pub total: Option<S<RawDuration>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RawSite {
    pub name: S<String>,
    pub description: Option<String>,
    pub location: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RawRack {
    pub name: S<String>,
    pub site: S<String>,
    pub row: Option<String>,
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RawDevice {
    pub name: S<String>,
    pub role: S<String>,
    pub rack: S<String>,
    pub model: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub groups: Vec<S<String>>,
    pub fabric: Option<S<String>>,
    pub tier: Option<S<String>>,
    pub platform: Option<S<String>>,
    /// Switches: which text is the configuration (`running`, SONiC `saved`, Cumulus `files`).
    pub config_source: Option<S<String>>,
    pub bmc: Option<S<RawBmc>>,
    pub management: Option<S<RawManagement>>,
    pub frontend: Option<S<RawFrontend>>,
    pub gpus: Option<S<RawGpus>>,
    #[serde(default)]
    pub rail: Vec<S<RawRail>>,
    /// Topology (`check/topology.rs`): the PDUs feeding the device, its NVLink domain, its OOB switch.
    #[serde(default)]
    pub pdus: Vec<S<String>>,
    pub nvlink_domain: Option<S<String>>,
    pub oob_switch: Option<S<String>>,
    pub oob_port: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RawBmc {
    pub address: S<String>,
    pub port: Option<S<u16>>,
    pub protocol: Option<S<String>>,
    pub username: Option<S<String>>,
    pub credential: Option<S<String>>,
    /// Plaintext secrets are refused, but the key is recognised so the message says why.
    pub password: Option<S<String>>,
    pub tls_fingerprint: Option<S<String>>,
    /// `false`: Redfish over plain HTTP (lab emulators, some BMCs on an isolated OOB network).
    pub tls: Option<S<bool>>,
    pub flavor: Option<S<String>>,
    /// Simulator only: the captured Redfish tree a `flavor = "replay"` BMC serves.
    pub tree: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RawManagement {
    pub address: S<String>,
    pub port: Option<S<u16>>,
    pub username: Option<S<String>>,
    pub credential: Option<S<String>>,
    pub password: Option<S<String>>,
    pub ssh_host_key: Option<S<String>>,
    /// Allow old SSH algorithms (diffie-hellman-group14-sha1, ssh-rsa, CBC) for this switch only.
    pub legacy_ssh: Option<bool>,
    pub timeouts: Option<S<RawTimeouts>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RawFrontend {
    pub address: Option<S<String>>,
    pub interface: Option<S<String>>,
    pub ssh_user: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RawGpus {
    pub count: S<u32>,
    pub model: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RawRail {
    pub hca: S<String>,
    pub netdev: Option<S<String>>,
    pub fabric: Option<S<String>>,
    pub address: Option<S<String>>,
    pub subnet: Option<S<String>>,
    pub rate_gbps: Option<S<u32>>,
    pub mtu: Option<S<u32>>,
    pub link_layer: Option<S<String>>,
    /// The leaf switch (a device of the file) and its port this rail is cabled to.
    pub leaf: Option<S<String>>,
    pub port: Option<S<String>>,
}
