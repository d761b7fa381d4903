//! LLDP neighbours as the switches see them: the show command per platform, lenient parsers of each
//! output, the SSH read, and a comparison with the cabling the inventory describes ([`compare`]).
//!
//! Why: a node whose NIC 3 is cabled to the rail-5 leaf looks like a bad NIC; only the switch's own view
//! of who is plugged into which port tells the two apart. Parsers are pure and never fail: a line they do
//! not know is skipped, a record without a local port is dropped, so one odd neighbour (a phone, a
//! hypervisor with no system name) degrades that neighbour, never the whole read.

pub mod cisco;
pub mod compare;
pub mod eos;
pub mod lldpd;
pub mod ports;
pub mod read;
pub mod sides;
pub mod sonic;

use lifeline_types::Platform;
use serde::Serialize;

pub use compare::{CablingReport, Expected, Mismatch, MismatchKind, compare};
pub use ports::{same_host, same_port};
pub use read::{LldpError, Read, read_neighbors};
pub use sides::{NodeFinding, NodeFindingKind, NodeSideReport, compare_sides};

/// One neighbour seen on one local port (a port may list several).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Neighbor {
    /// The switch's own port, as its CLI spells it (`Ethernet0`, `Et1/1`, `Gi1/0/2`, `swp3`).
    pub local_port: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chassis_id: Option<String>,
    /// The neighbour's system name (a host name, possibly fully qualified).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_name: Option<String>,
    /// The neighbour's port id: an interface name, or a MAC address (lldpd's default on Linux hosts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_id: Option<String>,
    /// The neighbour's port description (lldpd puts the interface name here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_descr: Option<String>,
}

/// Which output format a platform's LLDP command prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// SONiC `show lldp table`.
    SonicTable,
    /// `lldpcli -f json show neighbors` (Cumulus Linux, any lldpd host).
    LldpdJson,
    /// lldpd's plain text (`lldpctl`, SONiC `show lldp neighbors`).
    LldpdText,
    /// EOS `show lldp neighbors detail`.
    EosDetail,
    /// IOS / NX-OS `show lldp neighbors detail`.
    CiscoDetail,
}

/// The command that lists a platform's LLDP neighbours, and the format it answers in.
pub fn command(platform: Platform) -> (&'static str, Format) {
    match platform {
        Platform::Sonic => ("show lldp table", Format::SonicTable),
        // Cumulus runs lldpd; NVUE's own view (`nv show interface lldp`) is built from the same daemon.
        Platform::Cumulus => ("sudo lldpcli -f json show neighbors details", Format::LldpdJson),
        Platform::Eos => ("show lldp neighbors detail", Format::EosDetail),
        Platform::Ios | Platform::Nxos => ("show lldp neighbors detail", Format::CiscoDetail),
    }
}

/// Parses `text` as `format` (never fails: what cannot be read is left out).
pub fn parse(format: Format, text: &str) -> Vec<Neighbor> {
    let mut out = match format {
        Format::SonicTable => sonic::parse_table(text),
        Format::LldpdJson => lldpd::parse_json(text),
        Format::LldpdText => lldpd::parse_text(text),
        Format::EosDetail => eos::parse_detail(text),
        Format::CiscoDetail => cisco::parse_detail(text),
    };
    out.retain(|n| !n.local_port.is_empty());
    out
}

/// A trimmed value, `None` when empty or one of the "nothing here" words devices print.
pub(crate) fn value(s: &str) -> Option<String> {
    let t = s.trim().trim_matches('"').trim();
    if t.is_empty() || t.eq_ignore_ascii_case("not advertised") || t.eq_ignore_ascii_case("n/a") {
        None
    } else {
        Some(t.to_owned())
    }
}

#[cfg(test)]
mod tests;
