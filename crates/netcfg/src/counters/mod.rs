//! Switch-side evidence: interface error and drop counters, link flaps and PFC pause / watchdog counters,
//! read from the switches' own show commands (SONiC, EOS, Cumulus NVUE / `ethtool -S`, IOS / NX-OS
//! `show interfaces`) and compared between two reads. A counter that rose is evidence about one switch
//! port, which the fault correlation can set beside the rail faults of the nodes cabled to it.
//!
//! Why parsed leniently: a counters table differs by release (SONiC added RX_PPS and TRIM columns, EOS
//! prints `Et1/1` or `Ethernet1/1`), and one column or one port the parser does not know must cost that
//! value, never the whole read. Every parser is pure and property-tested; the fuzz target `counters`
//! runs them all on arbitrary text.

mod cumulus;
mod iface_blocks;
mod read;
mod sonic;
mod table;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use lifeline_types::Platform;
use serde::{Deserialize, Serialize};

pub use read::{CountersError, Read, read_counters};

/// One counter of a port. Monotonic on the switch until cleared; a value that went down was cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Counter {
    RxErrors,
    TxErrors,
    RxDrops,
    TxDrops,
    /// Frames with a bad FCS / CRC.
    Crc,
    /// Carrier transitions (link up/down changes, flaps).
    LinkFlaps,
    /// PFC pause frames received on a priority.
    PfcRx(u8),
    /// PFC pause frames sent on a priority.
    PfcTx(u8),
    /// PFC pause frames received, all priorities summed (platforms that print no split).
    PfcRxAll,
    PfcTxAll,
    /// Link-level (802.3x) pause frames.
    PauseRx,
    PauseTx,
    /// PFC watchdog: storms detected on a priority queue.
    PfcWatchdogStorms(u8),
}

impl fmt::Display for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Counter::RxErrors => f.write_str("rx-errors"),
            Counter::TxErrors => f.write_str("tx-errors"),
            Counter::RxDrops => f.write_str("rx-drops"),
            Counter::TxDrops => f.write_str("tx-drops"),
            Counter::Crc => f.write_str("crc"),
            Counter::LinkFlaps => f.write_str("link-flaps"),
            Counter::PfcRx(p) => write!(f, "pfc{p}-rx"),
            Counter::PfcTx(p) => write!(f, "pfc{p}-tx"),
            Counter::PfcRxAll => f.write_str("pfc-rx"),
            Counter::PfcTxAll => f.write_str("pfc-tx"),
            Counter::PauseRx => f.write_str("pause-rx"),
            Counter::PauseTx => f.write_str("pause-tx"),
            Counter::PfcWatchdogStorms(p) => write!(f, "pfc{p}-watchdog-storms"),
        }
    }
}

impl From<Counter> for String {
    fn from(c: Counter) -> String {
        c.to_string()
    }
}

impl TryFrom<String> for Counter {
    type Error = String;

    /// The name [`fmt::Display`] gives (a stored read is read back by the next replica to compare with).
    fn try_from(s: String) -> Result<Counter, String> {
        // A priority as Display writes it (no sign, no leading zero), so a name has one counter.
        let prio = |rest: &str, suffix: &str| {
            let digits = rest.strip_suffix(suffix)?;
            digits.parse::<u8>().ok().filter(|n| n.to_string() == digits)
        };
        Ok(match s.as_str() {
            "rx-errors" => Counter::RxErrors,
            "tx-errors" => Counter::TxErrors,
            "rx-drops" => Counter::RxDrops,
            "tx-drops" => Counter::TxDrops,
            "crc" => Counter::Crc,
            "link-flaps" => Counter::LinkFlaps,
            "pfc-rx" => Counter::PfcRxAll,
            "pfc-tx" => Counter::PfcTxAll,
            "pause-rx" => Counter::PauseRx,
            "pause-tx" => Counter::PauseTx,
            other => {
                let rest = other.strip_prefix("pfc").ok_or_else(|| format!("unknown counter `{other}`"))?;
                if let Some(p) = prio(rest, "-watchdog-storms") {
                    Counter::PfcWatchdogStorms(p)
                } else if let Some(p) = prio(rest, "-rx") {
                    Counter::PfcRx(p)
                } else if let Some(p) = prio(rest, "-tx") {
                    Counter::PfcTx(p)
                } else {
                    return Err(format!("unknown counter `{other}`"));
                }
            }
        })
    }
}

impl Counter {
    /// What a rise of this counter is evidence of.
    pub fn evidence(self) -> Evidence {
        match self {
            Counter::LinkFlaps => Evidence::LinkFlap,
            Counter::PfcRx(_)
            | Counter::PfcTx(_)
            | Counter::PfcRxAll
            | Counter::PfcTxAll
            | Counter::PauseRx
            | Counter::PauseTx => Evidence::Pause,
            Counter::PfcWatchdogStorms(_) => Evidence::PfcWatchdog,
            Counter::RxErrors | Counter::TxErrors | Counter::Crc => Evidence::Errors,
            Counter::RxDrops | Counter::TxDrops => Evidence::Drops,
        }
    }
}

/// The kinds of switch-port evidence, as observation kinds (`switch-link-flap`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Evidence {
    LinkFlap,
    /// Pause frames at storm rate.
    Pause,
    PfcWatchdog,
    Errors,
    Drops,
}

impl Evidence {
    pub fn kind(self) -> &'static str {
        match self {
            Evidence::LinkFlap => "switch-link-flap",
            Evidence::Pause => "switch-pfc-storm",
            Evidence::PfcWatchdog => "switch-pfc-watchdog",
            Evidence::Errors => "switch-port-errors",
            Evidence::Drops => "switch-port-drops",
        }
    }
}

/// What one read said about one port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortCounters {
    pub port: String,
    pub counters: BTreeMap<Counter, u64>,
    /// When the link last went down or changed, as the switch prints it (not parsed: formats vary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_flap: Option<String>,
}

/// One show command's output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// SONiC `show interfaces counters`.
    SonicCounters,
    /// SONiC `show pfc counters`.
    SonicPfc,
    /// SONiC `show pfcwd stats`.
    SonicPfcWatchdog,
    /// SONiC `show interfaces flap`.
    SonicFlap,
    /// EOS `show interfaces counters errors`.
    EosErrors,
    /// EOS `show priority-flow-control counters`.
    EosPfc,
    /// IOS / NX-OS `show interface priority-flow-control`.
    NxosPfc,
    /// EOS, IOS or NX-OS `show interfaces`: one block per interface.
    ShowInterfaces,
    /// Cumulus `nv show interface PORT counters` or Linux `ethtool -S PORT` (key and value per line).
    CumulusCounters,
    /// Cumulus `nv show interface PORT counters qos pfc-stats`.
    CumulusPfc,
}

pub const FORMATS: [Format; 10] = [
    Format::SonicCounters,
    Format::SonicPfc,
    Format::SonicPfcWatchdog,
    Format::SonicFlap,
    Format::EosErrors,
    Format::EosPfc,
    Format::NxosPfc,
    Format::ShowInterfaces,
    Format::CumulusCounters,
    Format::CumulusPfc,
];

/// Parses one command's output. `port` names the port for the per-port Cumulus commands (their output
/// does not); other formats ignore it. Unknown columns, lines and values are skipped.
pub fn parse(format: Format, text: &str, port: Option<&str>) -> Vec<PortCounters> {
    match format {
        Format::SonicCounters => sonic::counters(text),
        Format::SonicPfc => sonic::pfc(text),
        Format::SonicPfcWatchdog => sonic::pfc_watchdog(text),
        Format::SonicFlap => sonic::flap(text),
        Format::EosErrors => table::eos_errors(text),
        Format::EosPfc => table::eos_pfc(text),
        Format::NxosPfc => table::nxos_pfc(text),
        Format::ShowInterfaces => iface_blocks::parse(text),
        Format::CumulusCounters => port.map(|p| cumulus::counters(text, p)).into_iter().flatten().collect(),
        Format::CumulusPfc => port.map(|p| cumulus::pfc(text, p)).into_iter().flatten().collect(),
    }
}

/// The commands that read a platform's counters, with their formats; `{port}` is replaced per port for
/// the per-port commands (`per_port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub line: &'static str,
    pub format: Format,
    pub per_port: bool,
}

pub fn commands(platform: Platform) -> Vec<Command> {
    let c = |line, format, per_port| Command { line, format, per_port };
    match platform {
        Platform::Sonic => vec![
            c("show interfaces counters", Format::SonicCounters, false),
            c("show interfaces flap", Format::SonicFlap, false),
            c("show pfc counters", Format::SonicPfc, false),
            c("show pfcwd stats", Format::SonicPfcWatchdog, false),
        ],
        Platform::Eos => vec![
            c("show interfaces", Format::ShowInterfaces, false),
            c("show interfaces counters errors", Format::EosErrors, false),
            c("show priority-flow-control counters", Format::EosPfc, false),
        ],
        Platform::Ios | Platform::Nxos => vec![
            c("show interfaces", Format::ShowInterfaces, false),
            c("show interface priority-flow-control", Format::NxosPfc, false),
        ],
        Platform::Cumulus => vec![
            c("nv show interface {port} counters", Format::CumulusCounters, true),
            c("nv show interface {port} counters qos pfc-stats", Format::CumulusPfc, true),
        ],
    }
}

/// One switch's counters from several commands, by port (the port's spelling from the first command
/// that named it; later spellings of the same port merge into it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub ports: BTreeMap<String, PortCounters>,
}

impl Snapshot {
    pub fn merge(&mut self, rows: Vec<PortCounters>) {
        for r in rows {
            let key = port_key(&r.port);
            let e = self
                .ports
                .entry(key)
                .or_insert_with(|| PortCounters { port: r.port.clone(), ..PortCounters::default() });
            e.counters.extend(r.counters);
            if r.last_flap.is_some() {
                e.last_flap = r.last_flap;
            }
        }
    }

    pub fn port(&self, name: &str) -> Option<&PortCounters> {
        self.ports.get(&port_key(name))
    }
}

/// Same port whatever the spelling (`Et1/1`, `Ethernet1/1`): the LLDP module's rule, one definition.
pub fn port_key(p: &str) -> String {
    crate::lldp::ports::port_key(p)
}

/// How much a counter must rise between two reads to be evidence. Errors, drops, flaps and watchdog
/// storms count from the first; pause frames only at storm rates, because a lossless fabric pauses all
/// the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    pub errors: u64,
    pub drops: u64,
    pub flaps: u64,
    pub pause: u64,
    pub watchdog: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds { errors: 1, drops: 1_000, flaps: 1, pause: 100_000, watchdog: 1 }
    }
}

impl Thresholds {
    fn of(&self, e: Evidence) -> u64 {
        match e {
            Evidence::LinkFlap => self.flaps,
            Evidence::Pause => self.pause,
            Evidence::PfcWatchdog => self.watchdog,
            Evidence::Errors => self.errors,
            Evidence::Drops => self.drops,
        }
    }
}

/// A counter that rose between two reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rising {
    pub port: String,
    pub counter: Counter,
    pub evidence: Evidence,
    pub before: u64,
    pub after: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_flap: Option<String>,
}

impl Rising {
    pub fn delta(&self) -> u64 {
        self.after - self.before
    }

    /// `Ethernet8: pfc3-rx rose by 5,000,000 (48,000,021 -> 53,000,021)`.
    pub fn describe(&self) -> String {
        let flap = self.last_flap.as_deref().map(|f| format!(", last flap {f}")).unwrap_or_default();
        format!(
            "{}: {} rose by {} ({} -> {}){flap}",
            self.port,
            self.counter,
            self.delta(),
            self.before,
            self.after
        )
    }
}

/// The counters that rose from `before` to `now` by at least their threshold, port by port in order.
/// A counter that went down was cleared on the switch: no evidence either way. A port or counter only in
/// one read is not compared.
pub fn rising(before: &Snapshot, now: &Snapshot, t: &Thresholds) -> Vec<Rising> {
    let mut out = Vec::new();
    for (key, p) in &now.ports {
        let Some(old) = before.ports.get(key) else { continue };
        for (c, &after) in &p.counters {
            let Some(&was) = old.counters.get(c) else { continue };
            let e = c.evidence();
            if after > was && after - was >= t.of(e).max(1) {
                out.push(Rising {
                    port: p.port.clone(),
                    counter: *c,
                    evidence: e,
                    before: was,
                    after,
                    last_flap: p.last_flap.clone(),
                });
            }
        }
    }
    out
}

/// A counter value as switches print it: `1,234`, `1234`; `N/A`, `Never` and the like are none.
pub(crate) fn number(s: &str) -> Option<u64> {
    let t: String = s.trim().chars().filter(|c| *c != ',').collect();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}
