//! Fault names: the kebab-case vocabulary shared by the control API, `lifeline sim fault` and the tests.
//!
//! Parsing is a pure function so that a typo from an operator is a clear error rather than a silently
//! ignored fault, and so that every spelling round-trips (`Display` is the canonical form).
//!
//! What survives a host power cycle (what a real one would clear):
//! | fault | cleared by a host power cycle / reboot |
//! |---|---|
//! | `gpu-xid`, `gpu-ecc` (volatile count; pending row remaps are applied) | yes |
//! | `rail-down` (physical link), `rail-mtu` (host config), `boot-loop`, `pfc-storm`, `psu-fail`, `gpu-missing` | no |
//! | BMC faults (`bmc-*`, `udp-loss`, `tls-cert-change`, `sol-stuck`, `sessions-full`, `redfish-down`) | no (a BMC reset clears `sol-stuck`, `redfish-down` and sessions) |
//! | `miscabled` (two switch ports' cables swapped) | no (the switch's `clear` puts them back) |
//! | `link-flap` (a switch port's link going down and up) | no (the switch's `clear` ends it) |
//! | `mgmt-down` (switch management port) | a power cycle of the switch through its BMC does |
//! | `os-hang` (the host's OS stops answering) | yes (a host power reset or cycle) |

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One injectable fault.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The BMC accepts nothing: Redfish connections hang, IPMI datagrams are dropped.
    BmcUnresponsive,
    /// Every BMC reply is delayed by this many milliseconds.
    BmcSlow { ms: u32 },
    /// This percentage of IPMI datagrams is dropped (both directions).
    UdpLoss { pct: u8 },
    /// The BMC's TLS certificate is replaced (a pinning client must notice).
    TlsCertChange,
    /// The SOL payload stays "already active" even with no session holding it.
    SolStuck,
    /// The BMC's session table is full: new Redfish / IPMI sessions are refused.
    SessionsFull,
    /// The host (or switch) never finishes booting: its console loops through firmware and a crash.
    BootLoop,
    /// An uncorrectable (double-bit) ECC error on this GPU index.
    GpuEcc { gpu: u8 },
    /// An XID event with this code on this GPU index.
    GpuXid { gpu: u8, code: u16 },
    /// This GPU (index in the order the BMC lists GPUs) is gone from the BMC's view: a replayed tree no
    /// longer lists it (what a GPU that fell off the baseboard looks like out of band).
    GpuMissing { gpu: u8 },
    /// The rail on this HCA loses its link.
    RailDown { hca: String },
    /// The rail's netdev MTU is changed to this value (a mismatch with the fabric's 9000).
    RailMtu { hca: String, mtu: u32 },
    /// PFC pause frames flood this port (a switch port, or an HCA on a server).
    PfcStorm { port: String },
    /// A switch port whose link goes down and up about once a second (carrier transitions, CRC errors).
    LinkFlap { port: String },
    /// A switch port's MTU is changed in the running configuration (an operator's edit a later backup
    /// sees: SONiC `PORT|NAME mtu`, EOS / IOS `mtu N` under the interface, NVUE `link mtu`).
    PortMtu { port: String, mtu: u32 },
    /// The cables of two switch ports are in each other's ports: the switch's LLDP lists what was on one
    /// on the other (a port with nothing on it: one cable moved).
    Miscabled { a: String, b: String },
    /// Power supply N (1-based) loses its input: its output drops to 0, the other carries the load, the
    /// SEL gets a critical "Power Supply Failure" record, PowerSubsystem shows `LossOfInput` and the
    /// redundancy group degrades to Warning.
    PsuFail { psu: u8 },
    /// A switch's running configuration drifts from its backup.
    ConfigChange,
    /// A switch's management port stops answering SSH (connections get no banner); its BMC and SOL still
    /// work, so the way back is the console or a power cycle through the BMC.
    MgmtDown,
    /// The BMC's Redfish service hangs (connections get no TLS handshake) while IPMI still answers; a BMC
    /// reset (IPMI `mc reset cold`) brings it back.
    RedfishDown,
    /// A switch presents a new SSH host key (re-imaged or swapped): a pinned client must refuse it.
    SshKeyChange,
    /// The BMC logs a SEL entry whose message carries HTML (`<script>`, an `onerror` image): clients must
    /// show BMC text as text.
    SelMarkup,
    /// The host's OS hangs (a hung Slurm controller, a kernel soft lockup): power stays on, the BMC answers,
    /// but the OS answers nothing (its console is silent, its exported node state says down) until a host
    /// power reset or cycle.
    OsHang,
    /// The BMC's next firmware update tasks end in `Exception` (a flash that fails verification); the
    /// version stays as it was.
    FirmwareFail,
}

/// Why a fault string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultParseError {
    #[error("unknown fault `{name}` (expected one of: {expected})")]
    Unknown { name: String, expected: &'static str },
    #[error("fault `{name}` needs a value: `{name}={usage}`")]
    MissingValue { name: &'static str, usage: &'static str },
    #[error("fault `{name}` takes no value (got `{value}`)")]
    UnexpectedValue { name: &'static str, value: String },
    #[error("fault `{name}`: bad value `{value}`, expected `{usage}`")]
    BadValue { name: &'static str, value: String, usage: &'static str },
}

const EXPECTED: &str = "bmc-unresponsive, bmc-slow=MS, udp-loss=PCT, tls-cert-change, sol-stuck, sessions-full, \
boot-loop, gpu-ecc=GPU, gpu-xid=GPU:CODE, gpu-missing=GPU, rail-down=HCA, rail-mtu=HCA:MTU, pfc-storm=PORT, link-flap=PORT, port-mtu=PORT:MTU, miscabled=PORT:PORT, psu-fail=N, config-change, ssh-key-change, mgmt-down, redfish-down, sel-markup, os-hang, firmware-fail";

impl Fault {
    /// The fault's name without its value (`rail-down`), used as the key when faults replace each other.
    pub fn name(&self) -> &'static str {
        match self {
            Fault::BmcUnresponsive => "bmc-unresponsive",
            Fault::BmcSlow { .. } => "bmc-slow",
            Fault::UdpLoss { .. } => "udp-loss",
            Fault::TlsCertChange => "tls-cert-change",
            Fault::SolStuck => "sol-stuck",
            Fault::SessionsFull => "sessions-full",
            Fault::BootLoop => "boot-loop",
            Fault::GpuEcc { .. } => "gpu-ecc",
            Fault::GpuXid { .. } => "gpu-xid",
            Fault::GpuMissing { .. } => "gpu-missing",
            Fault::RailDown { .. } => "rail-down",
            Fault::RailMtu { .. } => "rail-mtu",
            Fault::PfcStorm { .. } => "pfc-storm",
            Fault::LinkFlap { .. } => "link-flap",
            Fault::PortMtu { .. } => "port-mtu",
            Fault::Miscabled { .. } => "miscabled",
            Fault::PsuFail { .. } => "psu-fail",
            Fault::ConfigChange => "config-change",
            Fault::SshKeyChange => "ssh-key-change",
            Fault::MgmtDown => "mgmt-down",
            Fault::RedfishDown => "redfish-down",
            Fault::SelMarkup => "sel-markup",
            Fault::OsHang => "os-hang",
            Fault::FirmwareFail => "firmware-fail",
        }
    }

    /// Faults of the BMC itself (as opposed to the host or switch behind it).
    pub fn is_bmc_fault(&self) -> bool {
        matches!(
            self,
            Fault::BmcUnresponsive
                | Fault::BmcSlow { .. }
                | Fault::UdpLoss { .. }
                | Fault::TlsCertChange
                | Fault::SolStuck
                | Fault::SessionsFull
                | Fault::RedfishDown
        )
    }

    /// Whether a host power cycle (or reboot) clears it.
    pub fn cleared_by_power_cycle(&self) -> bool {
        matches!(self, Fault::GpuEcc { .. } | Fault::GpuXid { .. } | Fault::OsHang)
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        match self {
            Fault::BmcSlow { ms } => write!(f, "{name}={ms}"),
            Fault::UdpLoss { pct } => write!(f, "{name}={pct}"),
            Fault::GpuEcc { gpu } => write!(f, "{name}={gpu}"),
            Fault::GpuXid { gpu, code } => write!(f, "{name}={gpu}:{code}"),
            Fault::GpuMissing { gpu } => write!(f, "{name}={gpu}"),
            Fault::RailDown { hca } => write!(f, "{name}={hca}"),
            Fault::RailMtu { hca, mtu } => write!(f, "{name}={hca}:{mtu}"),
            Fault::PfcStorm { port } | Fault::LinkFlap { port } => write!(f, "{name}={port}"),
            Fault::PortMtu { port, mtu } => write!(f, "{name}={port}:{mtu}"),
            Fault::Miscabled { a, b } => write!(f, "{name}={a}:{b}"),
            Fault::PsuFail { psu } => write!(f, "{name}={psu}"),
            _ => f.write_str(name),
        }
    }
}

impl FromStr for Fault {
    type Err = FaultParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (name, value) = match s.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (s, None),
        };
        fn need<'a>(
            name: &'static str,
            usage: &'static str,
            v: Option<&'a str>,
        ) -> Result<&'a str, FaultParseError> {
            match v {
                Some(v) if !v.is_empty() => Ok(v),
                _ => Err(FaultParseError::MissingValue { name, usage }),
            }
        }
        fn none(name: &'static str, v: Option<&str>, f: Fault) -> Result<Fault, FaultParseError> {
            match v {
                None => Ok(f),
                Some(v) => Err(FaultParseError::UnexpectedValue { name, value: v.to_owned() }),
            }
        }
        fn num<T: FromStr>(name: &'static str, usage: &'static str, v: &str) -> Result<T, FaultParseError> {
            v.parse().map_err(|_| FaultParseError::BadValue { name, value: v.to_owned(), usage })
        }
        fn ident(name: &'static str, usage: &'static str, v: &str) -> Result<String, FaultParseError> {
            let ok = !v.is_empty()
                && v.len() <= 64
                && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
            if ok {
                Ok(v.to_owned())
            } else {
                Err(FaultParseError::BadValue { name, value: v.to_owned(), usage })
            }
        }
        fn pair<'a>(
            name: &'static str,
            usage: &'static str,
            v: &'a str,
        ) -> Result<(&'a str, &'a str), FaultParseError> {
            v.rsplit_once(':').ok_or_else(|| FaultParseError::BadValue { name, value: v.to_owned(), usage })
        }
        match name {
            "bmc-unresponsive" => none("bmc-unresponsive", value, Fault::BmcUnresponsive),
            "tls-cert-change" => none("tls-cert-change", value, Fault::TlsCertChange),
            "sol-stuck" => none("sol-stuck", value, Fault::SolStuck),
            "sessions-full" => none("sessions-full", value, Fault::SessionsFull),
            "boot-loop" => none("boot-loop", value, Fault::BootLoop),
            "config-change" => none("config-change", value, Fault::ConfigChange),
            "ssh-key-change" => none("ssh-key-change", value, Fault::SshKeyChange),
            "mgmt-down" => none("mgmt-down", value, Fault::MgmtDown),
            "redfish-down" => none("redfish-down", value, Fault::RedfishDown),
            "sel-markup" => none("sel-markup", value, Fault::SelMarkup),
            "os-hang" => none("os-hang", value, Fault::OsHang),
            "firmware-fail" => none("firmware-fail", value, Fault::FirmwareFail),
            "bmc-slow" => {
                let (n, u) = ("bmc-slow", "MS");
                Ok(Fault::BmcSlow { ms: num(n, u, need(n, u, value)?)? })
            }
            "udp-loss" => {
                let (n, u) = ("udp-loss", "PCT (0-100)");
                let v = need(n, u, value)?;
                let pct: u8 = num(n, u, v)?;
                if pct > 100 {
                    return Err(FaultParseError::BadValue { name: n, value: v.to_owned(), usage: u });
                }
                Ok(Fault::UdpLoss { pct })
            }
            "gpu-ecc" => {
                let (n, u) = ("gpu-ecc", "GPU (index)");
                Ok(Fault::GpuEcc { gpu: num(n, u, need(n, u, value)?)? })
            }
            "gpu-missing" => {
                let (n, u) = ("gpu-missing", "GPU (index)");
                Ok(Fault::GpuMissing { gpu: num(n, u, need(n, u, value)?)? })
            }
            "gpu-xid" => {
                let (n, u) = ("gpu-xid", "GPU:CODE");
                let (g, c) = pair(n, u, need(n, u, value)?)?;
                Ok(Fault::GpuXid { gpu: num(n, u, g)?, code: num(n, u, c)? })
            }
            "rail-down" => {
                let (n, u) = ("rail-down", "HCA");
                Ok(Fault::RailDown { hca: ident(n, u, need(n, u, value)?)? })
            }
            "rail-mtu" => {
                let (n, u) = ("rail-mtu", "HCA:MTU");
                let (h, m) = pair(n, u, need(n, u, value)?)?;
                Ok(Fault::RailMtu { hca: ident(n, u, h)?, mtu: num(n, u, m)? })
            }
            "miscabled" => {
                let (n, u) = ("miscabled", "PORT:PORT");
                let (a, b) = pair(n, u, need(n, u, value)?)?;
                Ok(Fault::Miscabled { a: ident(n, u, a)?, b: ident(n, u, b)? })
            }
            "pfc-storm" => {
                let (n, u) = ("pfc-storm", "PORT");
                Ok(Fault::PfcStorm { port: ident(n, u, need(n, u, value)?)? })
            }
            "link-flap" => {
                let (n, u) = ("link-flap", "PORT");
                Ok(Fault::LinkFlap { port: ident(n, u, need(n, u, value)?)? })
            }
            "port-mtu" => {
                let (n, u) = ("port-mtu", "PORT:MTU");
                let (p, m) = pair(n, u, need(n, u, value)?)?;
                Ok(Fault::PortMtu { port: ident(n, u, p)?, mtu: num(n, u, m)? })
            }
            "psu-fail" => {
                let (n, u) = ("psu-fail", "N (PSU number, from 1)");
                let v = need(n, u, value)?;
                let psu: u8 = num(n, u, v)?;
                if psu == 0 {
                    return Err(FaultParseError::BadValue { name: n, value: v.to_owned(), usage: u });
                }
                Ok(Fault::PsuFail { psu })
            }
            other => Err(FaultParseError::Unknown { name: other.to_owned(), expected: EXPECTED }),
        }
    }
}

impl Serialize for Fault {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Fault {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_every_documented_fault() {
        let cases = [
            ("bmc-unresponsive", Fault::BmcUnresponsive),
            ("bmc-slow=250", Fault::BmcSlow { ms: 250 }),
            ("udp-loss=30", Fault::UdpLoss { pct: 30 }),
            ("tls-cert-change", Fault::TlsCertChange),
            ("sol-stuck", Fault::SolStuck),
            ("sessions-full", Fault::SessionsFull),
            ("boot-loop", Fault::BootLoop),
            ("gpu-ecc=3", Fault::GpuEcc { gpu: 3 }),
            ("gpu-xid=0:79", Fault::GpuXid { gpu: 0, code: 79 }),
            ("rail-down=mlx5_3", Fault::RailDown { hca: "mlx5_3".into() }),
            ("rail-mtu=mlx5_1:1500", Fault::RailMtu { hca: "mlx5_1".into(), mtu: 1500 }),
            ("pfc-storm=Ethernet8", Fault::PfcStorm { port: "Ethernet8".into() }),
            ("link-flap=Ethernet16", Fault::LinkFlap { port: "Ethernet16".into() }),
            (
                "miscabled=Ethernet0:Ethernet8",
                Fault::Miscabled { a: "Ethernet0".into(), b: "Ethernet8".into() },
            ),
            ("psu-fail=2", Fault::PsuFail { psu: 2 }),
            ("config-change", Fault::ConfigChange),
            ("ssh-key-change", Fault::SshKeyChange),
            ("mgmt-down", Fault::MgmtDown),
            ("redfish-down", Fault::RedfishDown),
            ("sel-markup", Fault::SelMarkup),
            ("os-hang", Fault::OsHang),
            ("firmware-fail", Fault::FirmwareFail),
            ("gpu-missing=3", Fault::GpuMissing { gpu: 3 }),
        ];
        for (text, fault) in cases {
            assert_eq!(text.parse::<Fault>().unwrap(), fault, "{text}");
            assert_eq!(fault.to_string(), text);
        }
    }

    #[test]
    fn rejects_with_useful_errors() {
        assert!(matches!("rail-down".parse::<Fault>(), Err(FaultParseError::MissingValue { .. })));
        assert!(matches!("boot-loop=1".parse::<Fault>(), Err(FaultParseError::UnexpectedValue { .. })));
        assert!(matches!("udp-loss=101".parse::<Fault>(), Err(FaultParseError::BadValue { .. })));
        assert!(matches!("gpu-xid=3".parse::<Fault>(), Err(FaultParseError::BadValue { .. })));
        assert!(matches!("rail-down=a b".parse::<Fault>(), Err(FaultParseError::BadValue { .. })));
        assert!(matches!("psu-fail=0".parse::<Fault>(), Err(FaultParseError::BadValue { .. })));
        let e = "gpu-fire".parse::<Fault>().unwrap_err().to_string();
        assert!(e.contains("rail-mtu=HCA:MTU"), "{e}");
    }

    #[test]
    fn serde_uses_the_kebab_text() {
        let f = Fault::GpuXid { gpu: 1, code: 48 };
        assert_eq!(serde_json::to_string(&f).unwrap(), "\"gpu-xid=1:48\"");
        assert_eq!(serde_json::from_str::<Fault>("\"gpu-xid=1:48\"").unwrap(), f);
    }

    fn arb_fault() -> impl Strategy<Value = Fault> {
        let id = "[a-zA-Z0-9_.-]{1,20}";
        prop_oneof![
            Just(Fault::BmcUnresponsive),
            any::<u32>().prop_map(|ms| Fault::BmcSlow { ms }),
            (0u8..=100).prop_map(|pct| Fault::UdpLoss { pct }),
            Just(Fault::TlsCertChange),
            Just(Fault::SolStuck),
            Just(Fault::SessionsFull),
            Just(Fault::BootLoop),
            any::<u8>().prop_map(|gpu| Fault::GpuEcc { gpu }),
            (any::<u8>(), any::<u16>()).prop_map(|(gpu, code)| Fault::GpuXid { gpu, code }),
            any::<u8>().prop_map(|gpu| Fault::GpuMissing { gpu }),
            id.prop_map(|hca| Fault::RailDown { hca }),
            (id, any::<u32>()).prop_map(|(hca, mtu)| Fault::RailMtu { hca, mtu }),
            id.prop_map(|port| Fault::PfcStorm { port }),
            id.prop_map(|port| Fault::LinkFlap { port }),
            (1u8..).prop_map(|psu| Fault::PsuFail { psu }),
            Just(Fault::ConfigChange),
            Just(Fault::SshKeyChange),
            Just(Fault::MgmtDown),
            Just(Fault::RedfishDown),
            Just(Fault::OsHang),
            Just(Fault::FirmwareFail),
        ]
    }

    proptest! {
        #[test]
        fn display_then_parse_round_trips(f in arb_fault()) {
            prop_assert_eq!(f.to_string().parse::<Fault>().unwrap(), f);
        }

        #[test]
        fn parser_never_panics(s in ".{0,64}") {
            let _ = s.parse::<Fault>();
        }
    }
}
