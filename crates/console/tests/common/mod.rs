//! A private OpenIPMI `ipmi_sim` per test (the shared `lifeline-test-utils` harness): SOL is one payload per
//! BMC and ipmi_sim keeps SOL state across sessions, so tests never share one.

#![allow(dead_code)]

use std::net::SocketAddr;

use lifeline_test_utils::IpmiSims;
pub use lifeline_test_utils::{have, skip_or_fail};

pub struct IpmiSim {
    _sims: IpmiSims,
    pub addr: SocketAddr,
    /// Host side of the SOL serial line (TCP).
    pub serial: SocketAddr,
    pub user: String,
    pub password: String,
}

impl IpmiSim {
    /// Start one ipmi_sim; `None` (after a loud SKIP) when the peer cannot run here.
    pub fn start() -> Option<IpmiSim> {
        let sims = IpmiSims::start(1)?;
        Some(IpmiSim {
            addr: sims.addr(0),
            serial: sims.serial(0),
            _sims: sims,
            user: "admin".into(),
            password: "password".into(),
        })
    }

    /// `ipmitool -I lanplus -C 3` arguments for this BMC.
    pub fn ipmitool_args(&self) -> Vec<String> {
        ["-I", "lanplus", "-C", "3", "-H", &self.addr.ip().to_string(), "-p", &self.addr.port().to_string()]
            .iter()
            .map(|s| s.to_string())
            .chain(["-U".into(), self.user.clone(), "-P".into(), self.password.clone()])
            .collect()
    }
}

/// ipmitool, or a loud skip (a failure with `OOB_PEERS_REQUIRED=1`).
pub fn ipmitool() -> Option<&'static str> {
    if have("ipmitool") {
        return Some("ipmitool");
    }
    skip_or_fail("ipmitool not installed (apt-get install ipmitool)")
}
