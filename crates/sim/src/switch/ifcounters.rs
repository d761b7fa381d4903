//! Interface counters and link flaps as each platform's CLI prints them, and the `link-flap=PORT` fault.
//!
//! Why: Lifeline reads a switch's interface, flap and PFC-watchdog counters on a schedule and treats a
//! counter that rose as evidence about that port. So the counters here move the way a real port's do:
//! a healthy port's packet counts grow slowly and its error counts stay put; a flapping port's carrier
//! transitions grow (about one flap a second, with a burst of CRC errors each time), and a port in a pause
//! storm (`pfc-storm=PORT`, [`super::counters`]) shows its PFC watchdog's storm detections.

use std::sync::Mutex;
use std::time::Instant;

use chrono::{DateTime, Utc};
use lifeline_types::Platform;

use super::counters::{PfcStorms, ports, same_port};

/// Flaps a flapping port makes per second.
const FLAPS_PER_SECOND: u64 = 1;

/// One port's interface counters now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortCounters {
    pub port: String,
    pub rx_ok: u64,
    pub rx_err: u64,
    pub rx_drp: u64,
    pub tx_ok: u64,
    pub tx_err: u64,
    pub crc: u64,
    pub flaps: u64,
    pub last_flap: Option<DateTime<Utc>>,
    /// PFC watchdog storms detected on priority 3 (the lossless RoCE class).
    pub wd_storms: u64,
}

/// Ports flapping, and since when.
#[derive(Debug)]
pub struct Flaps {
    started: Instant,
    flapping: Mutex<Vec<(String, Instant, DateTime<Utc>)>>,
}

impl Default for Flaps {
    fn default() -> Self {
        Flaps { started: Instant::now(), flapping: Mutex::new(Vec::new()) }
    }
}

impl Flaps {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, Instant, DateTime<Utc>)>> {
        self.flapping.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts flapping `port` (a second injection keeps the first start).
    pub fn start(&self, port: &str) {
        let mut f = self.lock();
        if !f.iter().any(|(p, _, _)| same_port(p, port)) {
            f.push((port.to_owned(), Instant::now(), Utc::now()));
        }
    }

    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Every front-panel port's counters now (plus a flapping or storming port the CLI does not list).
    pub fn counters(&self, platform: Platform, pfc: &PfcStorms) -> Vec<PortCounters> {
        let flapping = self.lock().clone();
        let storming = pfc.storming();
        let mut names = ports(platform);
        for p in flapping.iter().map(|(p, _, _)| p).chain(storming.iter()) {
            if !names.iter().any(|n| same_port(n, p)) {
                names.push(p.clone());
            }
        }
        let up_s = self.started.elapsed().as_secs();
        names
            .into_iter()
            .enumerate()
            .map(|(i, port)| {
                let i = i as u64;
                // Traffic grows with time; errors stay where they were (a healthy port).
                let mut c = PortCounters {
                    port: port.clone(),
                    rx_ok: 1_000_000 + 1000 * i + 5_000 * up_s,
                    rx_err: i % 3,
                    rx_drp: 10 * i,
                    tx_ok: 2_000_000 + 1000 * i + 5_000 * up_s,
                    tx_err: 0,
                    crc: i % 3,
                    flaps: 1,
                    last_flap: None,
                    wd_storms: 0,
                };
                if let Some((_, since, at)) = flapping.iter().find(|(p, _, _)| same_port(p, &port)) {
                    let n = 1 + since.elapsed().as_secs() * FLAPS_PER_SECOND;
                    c.flaps += n;
                    c.crc += 17 * n;
                    c.rx_err += 17 * n;
                    c.last_flap = Some(*at + chrono::Duration::seconds(i64::try_from(n - 1).unwrap_or(0)));
                }
                if storming.iter().any(|p| same_port(p, &port)) {
                    c.wd_storms = 1;
                }
                c
            })
            .collect()
    }
}

/// `tabulate`'s plain table: right-aligned cells, two spaces apart, a dash rule under the header.
fn tabulate(header: &[&str], rows: &[Vec<String>], left: &[usize]) -> String {
    let w: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r[i].len()).chain([header[i].len()]).max().unwrap_or(0))
        .collect();
    let line = |cells: Vec<&str>| -> String {
        let parts: Vec<String> =
            cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if left.contains(&i) {
                        format!("{c:<w$}", w = w[i])
                    } else {
                        format!("{c:>w$}", w = w[i])
                    }
                })
                .collect();
        parts.join("  ").trim_end().to_owned()
    };
    let mut out = line(header.to_vec());
    out.push('\n');
    out.push_str(&w.iter().map(|n| "-".repeat(*n)).collect::<Vec<_>>().join("  "));
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

/// SONiC `show interfaces counters`.
pub fn sonic_counters(c: &[PortCounters]) -> String {
    let header = [
        "IFACE", "STATE", "RX_OK", "RX_BPS", "RX_UTIL", "RX_ERR", "RX_DRP", "RX_OVR", "TX_OK", "TX_BPS",
        "TX_UTIL", "TX_ERR", "TX_DRP", "TX_OVR",
    ];
    let n = |v: u64| super::counters::commas(v);
    let rows: Vec<Vec<String>> = c
        .iter()
        .map(|p| {
            vec![
                p.port.clone(),
                "U".into(),
                n(p.rx_ok),
                "1.20 MB/s".into(),
                "0.01%".into(),
                n(p.rx_err),
                n(p.rx_drp),
                "N/A".into(),
                n(p.tx_ok),
                "1.30 MB/s".into(),
                "0.01%".into(),
                n(p.tx_err),
                "0".into(),
                "N/A".into(),
            ]
        })
        .collect();
    tabulate(&header, &rows, &[])
}

/// SONiC `show interfaces flap`.
pub fn sonic_flap(c: &[PortCounters]) -> String {
    let when = |t: Option<DateTime<Utc>>| t.map(|t| t.format("%a %b %d %H:%M:%S %Y").to_string());
    let rows: Vec<Vec<String>> = c
        .iter()
        .map(|p| {
            let down = when(p.last_flap).unwrap_or_else(|| "Never".into());
            vec![p.port.clone(), p.flaps.to_string(), "Up".into(), "Up".into(), down.clone(), down]
        })
        .collect();
    tabulate(
        &["Interface", "Flap Count", "Admin", "Oper", "Link Down TimeStamp(UTC)", "Link Up TimeStamp(UTC)"],
        &rows,
        &[0, 1, 2, 3, 4, 5],
    )
}

/// SONiC `show pfcwd stats` (priority 3 of every port).
pub fn sonic_pfcwd(c: &[PortCounters]) -> String {
    let rows: Vec<Vec<String>> = c
        .iter()
        .map(|p| {
            let status = if p.wd_storms > 0 { "stormed" } else { "operational" };
            vec![
                format!("{}:3", p.port),
                status.into(),
                format!("{}/0", p.wd_storms),
                "0/0".into(),
                "0/0".into(),
                "0/0".into(),
                "0/0".into(),
            ]
        })
        .collect();
    tabulate(
        &[
            "QUEUE",
            "STATUS",
            "STORM DETECTED/RESTORED",
            "TX OK/DROP",
            "RX OK/DROP",
            "TX LAST OK/DROP",
            "RX LAST OK/DROP",
        ],
        &rows,
        &[],
    )
}

/// EOS `show interfaces counters errors`.
pub fn eos_errors(c: &[PortCounters]) -> String {
    let mut out = String::from("Port            FCS    Align   Symbol     Rx    Runts   Giants       Tx\n");
    for p in c {
        let port = p.port.replacen("Ethernet", "Et", 1);
        out.push_str(&format!(
            "{port:<12}{:>7}{:>9}{:>9}{:>7}{:>9}{:>9}{:>9}\n",
            p.crc, 0, 0, p.rx_err, 0, 0, p.tx_err
        ));
    }
    out
}

/// IOS / NX-OS / EOS `show interfaces`: the lines Lifeline reads, in each block.
pub fn show_interfaces(c: &[PortCounters]) -> String {
    let mut out = String::new();
    for p in c {
        out.push_str(&format!(
            "{} is up, line protocol is up (connected)\n  Hardware is Ethernet\n  {} link status changes since last clear\n     \
             {} packets input, {} bytes\n     {} input errors, {} CRC, 0 alignment, 0 symbol, {} input discards\n     \
             0 PAUSE input\n     {} packets output, {} bytes\n     {} output errors, 0 collisions\n     \
             0 late collision, 0 deferred, 0 output discards\n     0 PAUSE output\n",
            p.port,
            p.flaps,
            p.rx_ok,
            p.rx_ok * 1000,
            p.rx_err,
            p.crc,
            p.rx_drp,
            p.tx_ok,
            p.tx_ok * 1000,
            p.tx_err
        ));
    }
    out
}

/// One row of a `Counter  Receive  Transmit` table: its name and both cells.
type Row = (&'static str, String, String);

/// Cumulus NVUE `nv show interface PORT counters`; `None` for an unknown port.
pub fn cumulus_counters(c: &[PortCounters], port: &str) -> Option<String> {
    let p = c.iter().find(|p| same_port(&p.port, port))?;
    // Cumulus Linux 5.5 and later (the simulator says 5.9): the carrier transitions, then one
    // `Counter  Receive  Transmit` table per section, as NVIDIA's documentation prints it.
    let na = || "n/a".to_owned();
    let n = |v: u64| v.to_string();
    let sections: [(&str, Vec<Row>); 3] = [
        (
            "Detailed Counters",
            vec![
                ("Broadcast Packets", n(0), n(0)),
                ("Multicast Packets", n(0), n(0)),
                ("Total Octets", n(p.rx_ok * 1000), n(p.tx_ok * 1000)),
                ("Total Packets", n(p.rx_ok), n(p.tx_ok)),
                ("Unicast Packets", n(p.rx_ok), n(p.tx_ok)),
            ],
        ),
        (
            "Drop Counters",
            vec![
                ("ACL Drops", n(0), na()),
                ("Buffer Drops", n(p.rx_drp), na()),
                ("Non-Queue Drops", na(), n(0)),
                ("Queue Drops", na(), n(0)),
                ("Total Drops", n(p.rx_drp), n(0)),
            ],
        ),
        (
            "Error Counters",
            vec![
                ("Alignment Errors", n(0), na()),
                ("FCS Errors", n(p.crc), na()),
                ("Jabber Errors", n(0), na()),
                ("Length Errors", n(0), na()),
                ("Oversize Errors", n(0), na()),
                ("Symbol Errors", n(0), na()),
                ("Total Errors", n(p.rx_err), n(p.tx_err)),
                ("Undersize Errors", n(0), na()),
            ],
        ),
    ];
    let mut out = format!(
        "                     operational  applied\n-------------------  -----------  -------\n\
         carrier-transitions  {:<11}\n",
        p.flaps
    );
    for (title, rows) in sections {
        let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(7).max(7);
        out.push_str(&format!("\n{title}\n{}\n", "=".repeat(title.len() + 3)));
        out.push_str(&format!("    {:<w$}  Receive  Transmit\n", "Counter"));
        out.push_str(&format!("    {}  -------  --------\n", "-".repeat(w)));
        for (name, rx, tx) in rows {
            out.push_str(&format!("    {name:<w$}  {rx:<7}  {tx:<8}\n"));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flapping_port_counts_flaps_and_errors_and_the_others_stay_put() {
        let f = Flaps::default();
        let pfc = PfcStorms::default();
        let a = f.counters(Platform::Sonic, &pfc);
        f.start("Ethernet16");
        pfc.start("Ethernet8");
        let b = f.counters(Platform::Sonic, &pfc);
        assert_eq!(a.len(), 8);
        assert_eq!((a[2].flaps, b[2].flaps), (1, 2), "one flap at once");
        assert!(b[2].crc > a[2].crc && b[2].last_flap.is_some());
        assert_eq!((a[0].flaps, b[0].flaps, a[0].rx_err, b[0].rx_err), (1, 1, a[0].rx_err, a[0].rx_err));
        assert_eq!((b[1].wd_storms, b[0].wd_storms), (1, 0), "the storming port's watchdog fired");
        assert!(
            sonic_flap(&b).lines().any(|l| l.starts_with("Ethernet16") && l.contains(" 2 ")),
            "{}",
            sonic_flap(&b)
        );
        assert!(sonic_pfcwd(&b).contains("Ethernet8:3"));
        assert!(sonic_counters(&b).lines().nth(1).unwrap().starts_with("-----"));
        assert!(eos_errors(&f.counters(Platform::Eos, &pfc)).contains("Et1/1"));
        assert!(
            cumulus_counters(&f.counters(Platform::Cumulus, &pfc), "swp3")
                .unwrap()
                .contains("carrier-transitions")
        );
        f.clear();
        assert_eq!(f.counters(Platform::Sonic, &pfc)[2].flaps, 1);
    }
}
