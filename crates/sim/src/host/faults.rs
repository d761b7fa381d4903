//! Applying a fault to the host or its BMC and clearing it: each fault changes in-band state (GPUs,
//! rails), the SEL, the console and the BMC's switches the way the real failure would.

use std::sync::atomic::Ordering;

use lifeline_types::Health;

use super::power::Sequence;
use super::{Host, HostError, HostKind, HostState, Phase};
use crate::fault::Fault;
use crate::node_state::XidEvent;
use crate::sel::{NewSel, sensor_type};

impl Host {
    /// Applies a fault to this host or its BMC.
    pub fn inject(&self, fault: &Fault) -> Result<(), HostError> {
        let not_applicable =
            || HostError::FaultNotApplicable { host: self.name.clone(), fault: fault.to_string() };
        let server = self.kind == HostKind::Server;
        let mut st = self.lock();
        match fault {
            Fault::BmcUnresponsive => self.faults.unresponsive.store(true, Ordering::Relaxed),
            Fault::BmcSlow { ms } => self.faults.slow_ms.store(*ms, Ordering::Relaxed),
            Fault::UdpLoss { pct } => self.faults.udp_loss_pct.store(*pct, Ordering::Relaxed),
            Fault::TlsCertChange => {
                self.faults.cert_generation.fetch_add(1, Ordering::Relaxed);
            }
            Fault::SolStuck => self.faults.sol_stuck.store(true, Ordering::Relaxed),
            Fault::SessionsFull => self.faults.sessions_full.store(true, Ordering::Relaxed),
            Fault::RedfishDown => self.faults.redfish_down.store(true, Ordering::Relaxed),
            Fault::BootLoop => {
                st.faults.retain(|f| f != fault);
                st.faults.push(fault.clone());
                // A running machine crashes into the loop now; an off one loops at its next power on.
                if let Some(bc) = &st.boot_console {
                    bc.set_boot_loop(true);
                    bc.reset();
                } else if st.phase != Phase::Off {
                    self.console
                        .emit_line("\r\n[ 9102.000113] watchdog: BUG: soft lockup - CPU#3 stuck for 22s!");
                    self.start(&mut st, Sequence::Boot { cold: false });
                }
                self.faults.changed.notify_waiters();
                return Ok(());
            }
            Fault::GpuEcc { gpu } | Fault::GpuXid { gpu, .. } => {
                if !server {
                    return Err(not_applicable());
                }
                let count = st.node.get(&self.name).gpus.len();
                let up = st.phase == Phase::OsUp;
                let Some(g) = st.node.get(&self.name).gpus.get_mut(usize::from(*gpu)) else {
                    return Err(HostError::NoSuchGpu { host: self.name.clone(), gpu: *gpu, count });
                };
                let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                let bus = g.pci_bus_id[4..].to_lowercase();
                let (code, message) = match fault {
                    Fault::GpuEcc { .. } => {
                        g.ecc_volatile_uncorrected += 1;
                        g.ecc_aggregate_uncorrected += 1;
                        g.remapped_rows_pending = true;
                        (48, "DBE (Double Bit Error) ECC Error".to_owned())
                    }
                    Fault::GpuXid { code, .. } => {
                        match code {
                            79 => {
                                g.pcie_width_current = 0;
                                g.pcie_gen_current = 0;
                            }
                            74 => {
                                g.nvlinks_up = g.nvlinks_up.saturating_sub(1);
                                g.nvlinks_down += 1;
                            }
                            _ => {}
                        }
                        (*code, xid_message(*code).to_owned())
                    }
                    _ => unreachable!("outer match"),
                };
                g.xid_events.push(XidEvent { code, at: now, message: message.clone() });
                if up {
                    self.console.emit_line(&format!(
                        "[ 9231.551202] NVRM: Xid (PCI:{bus}): {code}, pid=48211, name=python3, {message}"
                    ));
                }
                let gpu_n = *gpu;
                if matches!(fault, Fault::GpuEcc { .. }) {
                    self.log_sel(
                        &mut st,
                        NewSel {
                            sensor_type: sensor_type::MEMORY,
                            sensor_number: 0x60 + gpu_n,
                            event_type: 0x6f,
                            deassertion: false,
                            event_data: [0x01, 0xff, gpu_n],
                            severity: Health::Critical,
                            message: format!("GPU{gpu_n}: uncorrectable ECC memory error detected"),
                            message_id: "Lifeline.1.0.GpuUncorrectableEcc",
                        },
                    );
                } else if code == 79 {
                    self.log_sel(
                        &mut st,
                        NewSel {
                            sensor_type: sensor_type::CRITICAL_INTERRUPT,
                            sensor_number: 0x60 + gpu_n,
                            event_type: 0x6f,
                            deassertion: false,
                            event_data: [0x08, 0xff, gpu_n],
                            severity: Health::Critical,
                            message: format!("GPU{gpu_n}: PCIe bus fatal error (device fell off the bus)"),
                            message_id: "Lifeline.1.0.GpuPcieFatal",
                        },
                    );
                }
            }
            Fault::RailDown { hca } | Fault::RailMtu { hca, .. } | Fault::PfcStorm { port: hca } => {
                if !server {
                    return Err(not_applicable());
                }
                let up = st.phase == Phase::OsUp;
                let Some(r) = st.node.get(&self.name).rail_mut(hca) else {
                    return Err(HostError::NoSuchRail { host: self.name.clone(), hca: hca.clone() });
                };
                let netdev = r.spec.netdev.clone();
                let hca_name = r.spec.hca.clone();
                match fault {
                    Fault::RailDown { .. } => {
                        if r.link_up {
                            r.link_up = false;
                            r.link_downed += 1;
                        }
                        if up {
                            // As mlx5_core prints them (en_main.c mlx5e_update_carrier, events.c port
                            // module event), so the console rules read the sim as they read a real host.
                            let pci = nic_pci(&hca_name);
                            self.console.emit_line(&format!(
                                "[ 9301.004411] mlx5_core {pci}: Port module event: module 0, Cable unplugged"
                            ));
                            self.console
                                .emit_line(&format!("[ 9301.004988] mlx5_core {pci} {netdev}: Link down"));
                        }
                        self.log_sel(
                            &mut st,
                            NewSel::asserted(
                                sensor_type::LAN,
                                0x80,
                                0x00,
                                Health::Warning,
                                format!("Network link down: {hca_name} ({netdev})"),
                                "Lifeline.1.0.NetworkLinkDown",
                            ),
                        );
                    }
                    Fault::RailMtu { mtu, .. } => r.mtu = *mtu,
                    _ => {
                        r.pfc_storm = true;
                        r.rx_pause_prio3 += 48_000_000;
                        r.tx_pause_prio3 += 120;
                    }
                }
            }
            Fault::PsuFail { psu } => {
                if *psu == 0 || *psu > crate::sensors::PSU_COUNT {
                    return Err(HostError::NoSuchPsu {
                        host: self.name.clone(),
                        psu: *psu,
                        count: crate::sensors::PSU_COUNT,
                    });
                }
                if !Self::has_fault(&st, fault) {
                    // Offset 01h: power supply failure detected.
                    self.log_sel(
                        &mut st,
                        NewSel::asserted(
                            sensor_type::POWER_SUPPLY,
                            crate::sensors::psu_sensor_number(*psu),
                            0x01,
                            Health::Critical,
                            format!("Power Supply Failure: PSU{psu} lost its input (AC lost)"),
                            "OpenBMC.0.1.PowerSupplyFailed",
                        ),
                    );
                }
            }
            Fault::ConfigChange
            | Fault::SshKeyChange
            | Fault::MgmtDown
            | Fault::Miscabled { .. }
            | Fault::LinkFlap { .. }
            | Fault::PortMtu { .. } => {
                return Err(not_applicable());
            }
            // Read by the Redfish front end (a replayed tree drops the GPU); the host itself runs on.
            Fault::GpuMissing { .. } if !server => return Err(not_applicable()),
            Fault::GpuMissing { .. } => {}
            Fault::OsHang => {
                if !server {
                    return Err(not_applicable());
                }
                if st.phase == Phase::OsUp && !Self::has_fault(&st, fault) {
                    self.console.emit_line(
                        "\r\n[ 9230.441870] INFO: task slurmctld:2214 blocked for more than 122 seconds.",
                    );
                }
            }
            // Read by the update service when a task starts.
            Fault::FirmwareFail => {}
            Fault::SelMarkup => {
                self.log_sel(
                    &mut st,
                    NewSel {
                        sensor_type: sensor_type::CRITICAL_INTERRUPT,
                        sensor_number: 0x70,
                        event_type: 0x6f,
                        deassertion: false,
                        event_data: [0x00, 0xff, 0xff],
                        severity: Health::Warning,
                        message: SEL_MARKUP.into(),
                        message_id: "Lifeline.1.0.MarkupInMessage",
                    },
                );
            }
        }
        st.faults.retain(|f| !same_slot(f, fault));
        st.faults.push(fault.clone());
        drop(st);
        self.faults.changed.notify_waiters();
        self.mark_export();
        Ok(())
    }

    /// Clears every injected fault and restores the in-band state to healthy (lifetime counters stay).
    pub fn clear_faults(&self) {
        let f = &self.faults;
        f.unresponsive.store(false, Ordering::Relaxed);
        f.slow_ms.store(0, Ordering::Relaxed);
        f.udp_loss_pct.store(0, Ordering::Relaxed);
        f.sessions_full.store(false, Ordering::Relaxed);
        f.sol_stuck.store(false, Ordering::Relaxed);
        f.redfish_down.store(false, Ordering::Relaxed);
        let mut st = self.lock();
        st.faults.clear();
        if let Some(bc) = &st.boot_console {
            bc.set_boot_loop(false);
            // Repaired by hand (the image or config that looped is fixed): a switch left in its bootloader
            // or rescue shell is rebooted into its NOS, as the technician would.
            if matches!(st.phase, Phase::Bootloader | Phase::Halted) {
                bc.reset();
            }
        }
        st.node.reboot();
        let up = st.phase == Phase::OsUp;
        for r in st.node.built_mut().into_iter().flat_map(|n| n.rails.iter_mut()) {
            let was_down = !r.link_up;
            r.link_up = true;
            r.mtu = r.spec.mtu;
            r.pfc_storm = false;
            if was_down && up {
                self.console.emit_line(&format!(
                    "[ 9400.100020] mlx5_core {} {}: Link up",
                    nic_pci(&r.spec.hca),
                    r.spec.netdev
                ));
            }
        }
        drop(st);
        f.changed.notify_waiters();
        self.mark_export();
    }

    pub(super) fn has_fault(st: &HostState, f: &Fault) -> bool {
        st.faults.iter().any(|x| x == f)
    }
}

/// Faults of the same name and target replace each other (a second `rail-mtu=mlx5_0:X` updates X).
pub(super) fn same_slot(a: &Fault, b: &Fault) -> bool {
    match (a, b) {
        (Fault::RailDown { hca: x }, Fault::RailDown { hca: y })
        | (Fault::RailMtu { hca: x, .. }, Fault::RailMtu { hca: y, .. })
        | (Fault::PfcStorm { port: x }, Fault::PfcStorm { port: y })
        | (Fault::LinkFlap { port: x }, Fault::LinkFlap { port: y })
        | (Fault::PortMtu { port: x, .. }, Fault::PortMtu { port: y, .. }) => x == y,
        (Fault::GpuEcc { gpu: x }, Fault::GpuEcc { gpu: y })
        | (Fault::GpuMissing { gpu: x }, Fault::GpuMissing { gpu: y })
        | (Fault::PsuFail { psu: x }, Fault::PsuFail { psu: y }) => x == y,
        (Fault::GpuXid { .. }, Fault::GpuXid { .. }) => a == b,
        _ => a.name() == b.name(),
    }
}

/// The `sel-markup` fault's message: what a hostile or broken BMC could put in a SEL entry.
pub const SEL_MARKUP: &str = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\"> BMC says <b>hi</b>";

pub(super) fn xid_message(code: u16) -> &'static str {
    match code {
        13 => "Graphics Engine Exception",
        31 => "GPU memory page fault",
        43 => "GPU stopped processing",
        45 => "Preemptive cleanup, due to previous errors",
        48 => "DBE (Double Bit Error) ECC Error",
        61 => "Internal micro-controller breakpoint/warning",
        63 => "ECC page retirement or row remapping recording event",
        64 => "ECC page retirement or row remapper recording failure",
        74 => "NVLink Error",
        79 => "GPU has fallen off the bus",
        92 => "High single-bit ECC error rate",
        94 => "Contained ECC error",
        95 => "Uncontained ECC error",
        _ => "GPU error",
    }
}

/// The PCI function of a ConnectX port, `dddd:bb:dd.f`, from its HCA index (`mlx5_3` → the fourth NIC):
/// the buses of an HGX H100 board's eight NICs, then two storage NICs.
pub(crate) fn nic_pci(hca: &str) -> String {
    const BUSES: [u8; 10] = [0x0c, 0x12, 0x45, 0x4b, 0x8c, 0x92, 0xc5, 0xcb, 0xa1, 0xa2];
    let i: usize = hca.rsplit('_').next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let bus = BUSES.get(i).copied().unwrap_or(0xe0u8.wrapping_add(i as u8));
    format!("0000:{bus:02x}:00.0")
}
