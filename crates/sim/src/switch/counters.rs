//! Priority-flow-control counters as each platform's CLI prints them, and the `pfc-storm=PORT` fault.
//!
//! Why: a PFC pause storm (a stuck NIC flooding pause frames) freezes a lossless RoCE fabric, and the
//! runbook that finds it reads the switch's PFC counters twice and looks for the port whose received
//! pause frames keep climbing. So the storming port's RX priority-3 count grows with time (about five
//! million frames a second), while every other port keeps small, fixed counts.

use std::sync::Mutex;
use std::time::Instant;

use lifeline_types::Platform;

/// Pause frames a storming port receives per second.
const STORM_RATE: u64 = 5_000_000;

/// The front-panel ports of a simulated switch, in its CLI's spelling.
pub fn ports(platform: Platform) -> Vec<String> {
    (1..=8u32)
        .map(|p| match platform {
            Platform::Ios | Platform::Nxos => format!("Ethernet1/{p}"),
            Platform::Eos => format!("Ethernet{p}/1"),
            Platform::Sonic => format!("Ethernet{}", (p - 1) * 8),
            Platform::Cumulus => format!("swp{p}"),
        })
        .collect()
}

/// EOS prints `Et1/1` for `Ethernet1/1`.
fn short(platform: Platform, port: &str) -> String {
    match platform {
        Platform::Eos => port.replacen("Ethernet", "Et", 1),
        _ => port.to_owned(),
    }
}

/// Same port, whatever the spelling (`Et1/1` = `Ethernet1/1`, case-insensitive).
pub(crate) fn same_port(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.to_ascii_lowercase().replacen("ethernet", "et", 1);
    norm(a) == norm(b)
}

/// One port's PFC frame counts per priority (0..=7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortPfc {
    pub port: String,
    pub rx: [u64; 8],
    pub tx: [u64; 8],
}

/// Ports in a pause storm, and since when.
#[derive(Debug, Default)]
pub struct PfcStorms {
    storms: Mutex<Vec<(String, Instant)>>,
}

impl PfcStorms {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, Instant)>> {
        self.storms.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a storm on `port` (a second injection on the same port keeps the first start time).
    pub fn start(&self, port: &str) {
        let mut s = self.lock();
        if !s.iter().any(|(p, _)| same_port(p, port)) {
            s.push((port.to_owned(), Instant::now()));
        }
    }

    pub fn clear(&self) {
        self.lock().clear();
    }

    /// The ports in a storm now.
    pub fn storming(&self) -> Vec<String> {
        self.lock().iter().map(|(p, _)| p.clone()).collect()
    }

    /// Counters of every port now (plus a storming port the CLI does not list, so it is never hidden).
    pub fn counters(&self, platform: Platform) -> Vec<PortPfc> {
        let storms = self.lock().clone();
        let mut names = ports(platform);
        for (p, _) in &storms {
            if !names.iter().any(|n| same_port(n, p)) {
                names.push(p.clone());
            }
        }
        names
            .into_iter()
            .enumerate()
            .map(|(i, port)| {
                // Small fixed background counts: a healthy lossless fabric pauses now and then.
                let base = 3 + 7 * i as u64;
                let mut rx = [0, 0, 0, base, base / 2, 0, 0, 0];
                let tx = [0, 0, 0, base * 2, base, 0, 0, 0];
                if let Some((_, since)) = storms.iter().find(|(p, _)| same_port(p, &port)) {
                    let ms = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
                    rx[3] += 48_000_000 + ms.saturating_mul(STORM_RATE / 1000);
                }
                PortPfc { port, rx, tx }
            })
            .collect()
    }
}

/// `1,234,567` (SONiC's counters style).
pub(crate) fn commas(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// SONiC `show pfc counters`.
pub fn sonic_pfc(c: &[PortPfc]) -> String {
    let mut out = String::new();
    for (title, pick) in [("Port Rx", true), ("Port Tx", false)] {
        out.push_str(&format!("{title:>11}"));
        for p in 0..8 {
            out.push_str(&format!("  {:>13}", format!("PFC{p}")));
        }
        out.push_str(&format!("\n{}", "-".repeat(11)));
        for _ in 0..8 {
            out.push_str(&format!("  {}", "-".repeat(13)));
        }
        out.push('\n');
        for row in c {
            out.push_str(&format!("{:>11}", row.port));
            for v in if pick { row.rx } else { row.tx } {
                out.push_str(&format!("  {:>13}", commas(v)));
            }
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

/// EOS `show priority-flow-control counters`.
pub fn eos_pfc(c: &[PortPfc]) -> String {
    let mut out = String::from(
        "                                Across all priorities\nPort                  RxPfc                TxPfc\n",
    );
    for row in c {
        let (rx, tx): (u64, u64) = (row.rx.iter().sum(), row.tx.iter().sum());
        out.push_str(&format!("{:<14}{rx:>13}{tx:>21}\n", short(Platform::Eos, &row.port)));
    }
    out
}

/// NX-OS `show interface priority-flow-control`.
pub fn nxos_pfc(c: &[PortPfc]) -> String {
    let rule = "=".repeat(60);
    let mut out = format!(
        "slot  1\n=======\n\n{rule}\nPort               Mode Oper(VL bmap)  RxPPP      TxPPP\n{rule}\n\n"
    );
    for row in c {
        let (rx, tx): (u64, u64) = (row.rx.iter().sum(), row.tx.iter().sum());
        out.push_str(&format!("{:<19}On   On  (18)       {rx:<10} {tx}\n", row.port));
    }
    out
}

/// Cumulus NVUE `nv show interface PORT counters qos pfc-stats`; `None` for an unknown port.
pub fn cumulus_pfc(c: &[PortPfc], port: &str) -> Option<String> {
    let row = c.iter().find(|r| same_port(&r.port, port))?;
    let mut out = String::from(
        "switch-priority  rx-pause-frames  rx-pause-duration  tx-pause-frames  tx-pause-duration\n\
         ---------------  ---------------  -----------------  ---------------  -----------------\n",
    );
    for p in 0..8 {
        let (rx, tx) = (row.rx[p], row.tx[p]);
        out.push_str(&format!("{p:<17}{rx:<17}{:<19}{tx:<17}{}\n", rx * 3, tx * 3));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_storming_port_climbs_and_the_others_do_not() {
        let s = PfcStorms::default();
        s.start("Et3/1");
        let a = s.counters(Platform::Eos);
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b = s.counters(Platform::Eos);
        assert_eq!(a.len(), 8, "the storm port is one of the front-panel ports");
        assert!(b[2].rx[3] > a[2].rx[3] + 100_000, "{:?} -> {:?}", a[2], b[2]);
        assert!(a[2].rx[3] > 48_000_000);
        for i in [0, 1, 3, 7] {
            assert_eq!(a[i], b[i]);
            assert!(a[i].rx[3] < 1000);
        }
        let text = eos_pfc(&b);
        assert!(text.lines().any(|l| l.starts_with("Et3/1 ")), "{text}");
        s.clear();
        assert!(s.counters(Platform::Eos)[2].rx[3] < 1000);
        assert_eq!(commas(48_000_123), "48,000,123");
        s.start("Ethernet200");
        let c = s.counters(Platform::Sonic);
        assert_eq!(c.last().unwrap().port, "Ethernet200", "an unlisted storming port is shown");
        assert!(sonic_pfc(&c).contains("Ethernet200"));
        assert!(cumulus_pfc(&s.counters(Platform::Cumulus), "swp9").is_none());
    }
}
