//! Boot device, BMC reset and BMC info against real peers and the simulator:
//! - a private OpenIPMI `ipmi_sim`: boot flags written by us read back by `ipmitool chassis bootparam get 5`
//!   (and the reverse), cold reset acknowledged and the BMC answering again, warm reset refused (ipmi_sim
//!   does not implement it), device id and LAN parameters as `ipmitool mc info` / `lan print` show them;
//! - the shared sushy-emulator: boot override from its AllowableValues (and `bios`, which it lacks, refused),
//!   no `#Manager.Reset` on its Managers (refused, nothing sent), no FirmwareInventory (a warning);
//! - sushy-static: FirmwareInventory versions, `Manager.Reset` chosen from the Manager's own list;
//! - every simulator flavour: boot over IPMI seen over Redfish and back, ETag/If-Match (a stale ETag gets
//!   412), a BMC reset over each protocol seen going away and coming back, recorded once in its action log,
//!   the same MAC over both protocols.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use lifeline_bmc::*;
use lifeline_sim::actions::ActionKind;
use lifeline_sim::{EndpointKind, RedfishFlavor};
use lifeline_types::BmcProtocol;

fn req(target: BootTarget, persistent: bool, mode: Option<BootMode>) -> BootRequest {
    BootRequest { target, persistent, mode }
}

/// `Boot parameter data: 0008000000` of `ipmitool chassis bootparam get 5`.
fn ipmitool_boot_data(sim: &IpmiSims) -> String {
    let out = sim.ipmitool(0, &["chassis", "bootparam", "get", "5"]);
    out.lines()
        .find_map(|l| l.strip_prefix("Boot parameter data: "))
        .unwrap_or_else(|| panic!("no boot parameter data in {out}"))
        .trim()
        .to_owned()
}

#[tokio::test]
async fn ipmi_sim_boot_flags_agree_with_ipmitool() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let (pool, _) = pool_with(quick_options());
    let bmc = pool.bmc(sim.target(0, "node1"));

    let r = bmc.boot_set(req(BootTarget::Pxe, false, None)).await.unwrap();
    assert!(r.applied(), "{r:#?}");
    assert_eq!(r.now.target, Some(BootTarget::Pxe));
    // What we read back is what ipmitool reads from the same BMC, byte for byte.
    assert_eq!(r.now.raw.as_deref(), Some(ipmitool_boot_data(&sim).as_str()), "{r:#?}");
    assert!(sim.ipmitool(0, &["chassis", "bootparam", "get", "5"]).contains("Force PXE"));
    // ipmi_sim keeps only the device selector: the report says so instead of claiming everything took.
    assert_eq!(r.confirmation, BootConfirmation::DeviceOnly, "{r:#?}");
    assert!(r.differences.iter().any(|d| d.contains("not-valid")), "{r:#?}");
    assert!(sim.chassis_log(0).iter().any(|l| l.contains("set boot pxe")), "{:?}", sim.chassis_log(0));

    // The other way round: ipmitool sets, we read.
    sim.ipmitool(0, &["chassis", "bootdev", "bios"]);
    let s = bmc.boot_show().await.unwrap();
    assert_eq!((s.protocol, s.settings.target), (BmcProtocol::Ipmi, Some(BootTarget::Bios)), "{s:#?}");
    assert_eq!(s.settings.raw.as_deref(), Some(ipmitool_boot_data(&sim).as_str()));

    let d = bmc.boot_set(req(BootTarget::Disk, true, Some(BootMode::Uefi))).await.unwrap();
    assert_eq!((d.before.target, d.now.target), (Some(BootTarget::Bios), Some(BootTarget::Disk)), "{d:#?}");
    assert!(
        sim.ipmitool(0, &["chassis", "bootparam", "get", "5"]).contains("Force Boot from default Hard-Drive")
    );
}

#[tokio::test]
async fn ipmi_sim_refuses_both_resets_and_we_say_so() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let (pool, _) = pool_with(quick_options());
    let bmc = pool.bmc(sim.target(0, "node1"));
    // OpenIPMI's lanserv implements neither Cold nor Warm Reset: it answers 0xC1 (invalid command), which
    // `ipmitool raw 0x06 0x02` shows too (`ipmitool mc reset cold` prints "Sent" and ignores the code).
    // A refused reset is an error naming the code, never a reset reported as done.
    for warm in [false, true] {
        let e = bmc.reset_bmc(warm, Duration::from_secs(5)).await.unwrap_err();
        assert!(error_chain(&e).contains("0xc1"), "{}", error_chain(&e));
    }
    let raw = std::process::Command::new("ipmitool")
        .args(["-I", "lanplus", "-C", "3", "-H", &sim.ip.to_string(), "-p", &BASE_PORT.to_string()])
        .args(["-U", "admin", "-P", "password", "raw", "0x06", "0x02"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&raw.stderr).contains("rsp=0xc1"), "{raw:?}");
    // The BMC is untouched and still answers.
    assert!(sim.ipmitool(0, &["mc", "info"]).contains("Firmware Revision"));
    assert!(bmc.power_state().await.is_ok());
}

#[tokio::test]
async fn ipmi_sim_info_matches_mc_info_and_lan_print() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let (pool, _) = pool_with(quick_options());
    let bmc = pool.bmc(sim.target(0, "node1"));
    let i = bmc.info().await.unwrap();
    let mc = sim.ipmitool(0, &["mc", "info"]);
    let fw = mc.lines().find_map(|l| l.strip_prefix("Firmware Revision         : ")).unwrap().trim();
    assert_eq!(i.bmc_firmware.as_deref(), Some(fw), "{i:#?}\n{mc}");
    assert_eq!(i.ipmi_version.as_deref(), Some("2.0"));
    // `lan print 1` shows MAC 00:00:00:00:00:00 on ipmi_sim: read from channel 1, reported as missing.
    assert!(sim.ipmitool(0, &["lan", "print", "1"]).contains("00:00:00:00:00:00"));
    assert_eq!((i.lan_channel, i.bmc_mac.as_deref()), (Some(1), None), "{i:#?}");
    assert!(i.warnings.iter().any(|w| w.contains("all zero")), "{i:#?}");
    // The SDR view names the sensors `ipmitool sdr elist` names.
    let sdr = bmc.sdr_list().await.unwrap();
    let elist = sim.ipmitool(0, &["sdr", "elist"]);
    for s in &sdr.sensors {
        assert!(elist.contains(&s.name), "{} not in\n{elist}", s.name);
    }
    assert_eq!(sdr.sensors.len(), 6, "{sdr:#?}");
}

fn ca_pool(s: &Sushy) -> BmcPool {
    let mut o = quick_options();
    o.tls = TlsPolicy::CaFile(s.ca.clone());
    pool_with(o).0
}

#[tokio::test]
async fn sushy_boot_override_from_its_allowable_values() {
    let Some(s) = sushy() else { return };
    let pool = ca_pool(&s);
    // gpu-node-4: the other sushy tests use systems 1-3 for power.
    let bmc = pool.bmc(s.target("sushy-4", "gpu-node-4"));
    let shown = bmc.boot_show().await.unwrap();
    assert_eq!(shown.settings.allowed.as_deref().map(<[String]>::len), Some(4), "{shown:#?}");

    let r = bmc.boot_set(req(BootTarget::Cdrom, true, Some(BootMode::Uefi))).await.unwrap();
    assert_eq!(r.confirmation, BootConfirmation::Confirmed, "{r:#?}");
    assert_eq!((r.now.bmc_value.as_str(), r.now.enabled.as_str()), ("Cd", "persistent"));
    // sushy makes every override Continuous: a one-time request is reported as not fully taken.
    let once = bmc.boot_set(req(BootTarget::Pxe, false, None)).await.unwrap();
    assert_eq!(once.confirmation, BootConfirmation::DeviceOnly, "{once:#?}");
    assert_eq!(once.differences, ["asked for once, the BMC reports persistent"]);
    // BiosSetup is not among its values: refused before anything is sent.
    let e = bmc.boot_set(req(BootTarget::Bios, false, None)).await.unwrap_err();
    assert!(matches!(e, BmcError::NotOffered { .. }), "{e:?}");
    assert!(error_chain(&e).contains("Pxe, Cd, Hdd, UefiHttp"), "{}", error_chain(&e));
    bmc.boot_set(req(BootTarget::Disk, true, None)).await.unwrap();
}

#[tokio::test]
async fn sushy_has_no_manager_reset_and_no_firmware_inventory() {
    let Some(s) = sushy() else { return };
    let pool = ca_pool(&s);
    let bmc = pool.bmc(s.target("sushy-4", "gpu-node-4"));
    let e = bmc.reset_bmc(false, Duration::from_secs(5)).await.unwrap_err();
    assert!(error_chain(&e).contains("offers no #Manager.Reset"), "{}", error_chain(&e));
    let i = bmc.info().await.unwrap();
    assert_eq!(i.bmc_firmware.as_deref(), Some("1.00"), "{i:#?}");
    assert!(i.firmware.is_empty() && i.warnings.iter().any(|w| w.contains("404")), "{i:#?}");
}

#[tokio::test]
async fn sushy_static_firmware_inventory_and_manager_reset() {
    let Some(s) = sushy() else { return };
    let Some(url) = s.static_url.clone() else { return };
    let (pool, _) = pool_with(quick_options());
    let bmc = pool.bmc(http_target("static", &url));
    let i = bmc.info().await.unwrap();
    let fw: Vec<(&str, &str)> =
        i.firmware.iter().map(|f| (f.id.as_str(), f.version.as_deref().unwrap_or(""))).collect();
    assert!(fw.contains(&("BMC", "2.14.0")) && fw.contains(&("BIOS", "1.8.2")), "{i:#?}");
    assert_eq!((i.bmc_firmware.as_deref(), i.bios_version.as_deref()), (Some("2.14.0"), Some("1.8.2")));
    // Its Manager lists GracefulRestart and ForceRestart: a cold reset is ForceRestart; a warm one Graceful.
    let r = bmc.reset_bmc(false, Duration::from_secs(10)).await.unwrap();
    assert_eq!(r.sent, "Manager.Reset ForceRestart (/redfish/v1/Managers/bmc)");
    assert!(r.answering, "{r:#?}");
    let w = bmc.reset_bmc(true, Duration::from_secs(10)).await.unwrap();
    assert!(w.sent.starts_with("Manager.Reset GracefulRestart"), "{w:#?}");
}

#[tokio::test]
async fn sim_boot_over_ipmi_is_the_redfish_override_and_etags_guard_patches() {
    let s = sim(&RedfishFlavor::ALL).await;
    let pool = pin_pool();
    for f in RedfishFlavor::ALL {
        let name = format!("n-{}", f.as_str());
        let ipmi = pool.bmc(s.target(&name, BmcProtocol::Ipmi));
        let rf = pool.bmc(s.target(&name, BmcProtocol::Redfish));
        let r = ipmi.boot_set(req(BootTarget::Pxe, true, Some(BootMode::Legacy))).await.unwrap();
        assert_eq!(r.confirmation, BootConfirmation::Confirmed, "{f}: {r:#?}");
        assert!(r.sent[0].contains("set in progress"), "{f}: the handshake is used: {:?}", r.sent);
        let seen = rf.boot_show().await.unwrap().settings;
        assert_eq!(
            (seen.bmc_value.as_str(), seen.enabled.as_str(), seen.mode),
            ("Pxe", "persistent", Some(BootMode::Legacy)),
            "{f}"
        );
        let r = rf.boot_set(req(BootTarget::Usb, false, Some(BootMode::Uefi))).await.unwrap();
        assert_eq!(r.confirmation, BootConfirmation::Confirmed, "{f}: {r:#?}");
        assert!(r.sent[0].contains("If-Match"), "{f}: {:?}", r.sent);
        let seen = ipmi.boot_show().await.unwrap().settings;
        assert_eq!((seen.target, seen.enabled.as_str()), (Some(BootTarget::Usb), "once"), "{f}: {seen:#?}");
    }
    // A PATCH on a stale ETag is refused with 412.
    let e =
        s.fleet.endpoint(&format!("n-{}", RedfishFlavor::Generic.as_str()), EndpointKind::Redfish).unwrap();
    let url = format!("https://{}:{}", e.address, e.port);
    let rt = lifeline_redfish::BmcTarget::new("raw", url);
    let creds = lifeline_redfish::Credentials::new("admin", "password");
    let trust = lifeline_redfish::TlsTrust::Pin {
        store: Arc::new(lifeline_redfish::MemoryPinStore::new()),
        explicit: None,
    };
    let c = lifeline_redfish::Client::connect(rt, creds, trust, Default::default()).await.unwrap();
    let sys = c.systems().await.unwrap().items.remove(0);
    let (_, etag) = c.get_json_etag(&sys.odata_id).await.unwrap();
    let etag = etag.expect("the sim gives an ETag");
    let body = serde_json::json!({ "Boot": { "BootSourceOverrideTarget": "Hdd", "BootSourceOverrideEnabled": "Once" } });
    c.patch_json(&sys.odata_id, &body, Some(&etag)).await.unwrap();
    let stale = c.patch_json(&sys.odata_id, &body, Some(&etag)).await.unwrap_err();
    assert!(matches!(stale, lifeline_redfish::RedfishError::Status { status: 412, .. }), "{stale:?}");
    let _ = c.close().await;
}

#[tokio::test]
async fn sim_bmc_reset_goes_away_and_comes_back_on_each_protocol() {
    let s = sim(&[RedfishFlavor::OpenbmcLike]).await;
    let name = &format!("n-{}", RedfishFlavor::OpenbmcLike.as_str());
    let host = s.fleet.host(name).unwrap();
    host.set_bmc_reset_downtime(Duration::from_millis(2500));
    let pool = pin_pool();
    for (i, p) in [BmcProtocol::Ipmi, BmcProtocol::Redfish].into_iter().enumerate() {
        let bmc = pool.bmc(s.target(name, p));
        let r = bmc.reset_bmc(false, Duration::from_secs(30)).await.unwrap();
        assert!(r.answering && r.went_away, "{p}: {r:#?}");
        assert!(r.answered_after_ms.unwrap() >= 2000, "{p}: back only after the downtime: {r:#?}");
        let resets = host.actions().entries().iter().filter(|a| a.action == ActionKind::BmcReset).count();
        assert_eq!(resets, i + 1, "{p}: one reset recorded per request");
    }
    // The same MAC over both doors, and the firmware versions of the inventory.
    let a = pool.bmc(s.target(name, BmcProtocol::Ipmi)).info().await.unwrap();
    let b = pool.bmc(s.target(name, BmcProtocol::Redfish)).info().await.unwrap();
    assert!(a.bmc_mac.is_some() && a.bmc_mac == b.bmc_mac, "{a:#?}\n{b:#?}");
    // IPMI carries major.minor only; Redfish the full string.
    assert_eq!((a.bmc_firmware.as_deref(), b.bmc_firmware.as_deref()), (Some("2.14"), Some("2.14.0-dev")));
    assert!(b.firmware.iter().any(|f| f.id == "BIOS" && f.version.as_deref() == Some("1.0")), "{b:#?}");
}
