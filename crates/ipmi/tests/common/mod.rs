//! A private OpenIPMI `ipmi_sim` per test (the shared `lifeline-test-utils` harness), so tests that
//! power-cycle, clear the SEL, fill the session table or steal SOL never disturb each other under nextest.

#![allow(dead_code)]

use lifeline_ipmi::ClientConfig;
use lifeline_ipmi::client::Timing;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use lifeline_test_utils::IpmiSims;

pub struct IpmiSim {
    sims: IpmiSims,
    pub ip: IpAddr,
    pub addr: SocketAddr,
    /// Host side of the SOL serial line (TCP).
    pub serial: SocketAddr,
    /// ipmi_sim emulator console (TCP).
    pub emucon: SocketAddr,
    /// `$OOB_PEERS_RUN/ipmi/bmc1`: chassis.log, power, ...
    pub dir: PathBuf,
}

impl IpmiSim {
    /// Start one ipmi_sim; `None` (after a loud SKIP) when the peer cannot run here.
    pub fn start() -> Option<Self> {
        let sims = IpmiSims::start(1)?;
        Some(Self {
            ip: sims.ip,
            addr: sims.addr(0),
            serial: sims.serial(0),
            emucon: sims.emucon_addr(0),
            dir: sims.dir(0),
            sims,
        })
    }

    pub fn chassis_log(&self) -> String {
        self.sims.chassis_log_raw(0)
    }

    pub fn run_dir(&self) -> &Path {
        self.sims.run_dir()
    }

    /// `ipmitool -I lanplus -C 3 ... ARGS` (blocking; call from spawn_blocking or before the runtime).
    pub fn ipmitool(&self, args: &[&str]) -> String {
        self.sims.ipmitool(0, args)
    }
}

pub fn admin() -> ClientConfig {
    ClientConfig::new("admin", "password")
}

/// Timing for lossy links: quick first retransmit, many attempts.
pub fn lossy_timing() -> Timing {
    Timing {
        attempt_timeout: Duration::from_millis(50),
        max_attempt_timeout: Duration::from_millis(250),
        attempts: 16,
    }
}

/// SOL data until `needle` was seen (at most 10 s); returns the text read.
pub async fn read_until(sol: &mut lifeline_ipmi::Sol, needle: &str) -> String {
    let mut got = Vec::new();
    let r = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(ev) = sol.read().await {
            if let lifeline_ipmi::SolEvent::Data(d) = ev {
                got.extend_from_slice(&d);
                if String::from_utf8_lossy(&got).contains(needle) {
                    return;
                }
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&got).into_owned();
    assert!(r.is_ok(), "did not see {needle:?} on SOL; got {text:?}");
    text
}
