//! Virtual media and BIOS settings against real peers and the simulator:
//! - a private sushy-emulator (`tests/peers/sushy-private.conf`: its fake driver, one system, plain HTTP on a
//!   per-test loopback address): an insert makes it download the image from the test's own HTTP server,
//!   the slot reads back the image, a second insert of the same image sends nothing, a different image is
//!   ejected first; the one-time boot from the CD goes through the boot override (sushy keeps it
//!   Continuous, which the report says); BIOS attributes read, drift found against a profile, applied
//!   through `BIOS/Settings`, read back;
//! - every simulator flavour: the collection found under the System or the Manager, slots per vendor,
//!   a TransferProtocolType sent only where the BMC lists it, a protocol the BMC refuses said in words,
//!   IPMI said to be unsupported in words.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use lifeline_bmc::*;
use lifeline_redfish::media_model::MediaUrl;
use lifeline_sim::RedfishFlavor;
use lifeline_test_utils::unique_loopback;
use lifeline_types::BmcProtocol;

/// A private sushy-emulator; killed on drop.
pub struct PrivateSushy {
    child: Child,
    pub ip: std::net::Ipv4Addr,
    pub port: u16,
    _state: tempfile::TempDir,
}

impl Drop for PrivateSushy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PrivateSushy {
    pub fn start() -> Option<PrivateSushy> {
        let bin = std::env::var("OOB_PEERS_VENV")
            .map(|v| PathBuf::from(v).join("bin/sushy-emulator"))
            .ok()
            .filter(|p| p.is_file())
            .or_else(|| have("sushy-emulator").then(|| PathBuf::from("sushy-emulator")));
        let Some(bin) = bin else {
            return skip("sushy-emulator not found (set OOB_PEERS_VENV)".into());
        };
        let conf = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/sushy-private.conf");
        let state = tempfile::tempdir().unwrap();
        let ip = unique_loopback();
        let port = std::net::TcpListener::bind((ip, 0)).unwrap().local_addr().unwrap().port();
        let log = std::fs::File::create(state.path().join("emulator.log")).unwrap();
        let child = Command::new(&bin)
            .arg("--config")
            .arg(&conf)
            .env("LL_SUSHY_ADDR", ip.to_string())
            .env("LL_SUSHY_PORT", port.to_string())
            .env("LL_SUSHY_STATE", state.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn sushy-emulator");
        let s = PrivateSushy { child, ip, port, _state: state };
        for _ in 0..200 {
            if std::net::TcpStream::connect((ip, port)).is_ok() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("sushy-emulator did not listen on {ip}:{port}");
    }

    pub fn target(&self) -> BmcTarget {
        let mut t = http_target("sushy-private", &format!("http://{}:{}", self.ip, self.port));
        t.system = Some("node-1".into());
        t
    }
}

/// An HTTP image server on loopback that counts the GETs of its one image.
struct ImageServer {
    base: String,
    gets: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ImageServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn image_server() -> ImageServer {
    let gets = Arc::new(AtomicUsize::new(0));
    let g = gets.clone();
    let app = axum::Router::new().route(
        "/images/{name}",
        axum::routing::get(move || {
            let g = g.clone();
            async move {
                g.fetch_add(1, Ordering::SeqCst);
                vec![0x43u8; 64 * 1024]
            }
        }),
    );
    let l = tokio::net::TcpListener::bind((unique_loopback(), 0)).await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(l, app).await;
    });
    ImageServer { base, gets, task }
}

fn media(url: &str, boot_once: bool) -> MediaRequest {
    MediaRequest { image: MediaUrl::parse(url).unwrap(), boot_once, write_protected: true, credentials: None }
}

#[tokio::test]
async fn sushy_downloads_the_image_and_the_slot_reads_it_back() {
    let Some(s) = PrivateSushy::start() else { return };
    let img = image_server().await;
    let (pool, _) = pool_with(quick_options());
    let bmc = pool.bmc(s.target());

    let shown = bmc.media_show().await.unwrap();
    assert_eq!(shown.collection.owner, "system", "{shown:#?}");
    let ids: Vec<&str> = shown.slots.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["Cd", "Floppy"], "{shown:#?}");
    assert!(shown.slots.iter().all(|s| s.image.is_none() && s.inserted == Some(false)));

    let a = format!("{}/images/a.iso", img.base);
    let r = bmc.media_insert(media(&a, true)).await.unwrap();
    assert!(r.confirmed, "{r:#?}");
    assert_eq!(r.slot.as_deref(), Some("Cd"));
    let now = r.now.as_ref().unwrap();
    assert_eq!((now.image.as_deref(), now.inserted), (Some(a.as_str()), Some(true)), "{r:#?}");
    // sushy-emulator fetched the image from our server when it took the insert.
    assert!(img.gets.load(Ordering::SeqCst) >= 1, "sushy never fetched the image");
    // Its schema has no TransferProtocolType: none was sent.
    assert!(!r.sent[0].contains("TransferProtocolType"), "{:?}", r.sent);
    // Boot once from the CD: sushy keeps every override Continuous, and the report says so.
    let b = r.boot.as_ref().unwrap();
    assert_eq!(b.now.bmc_value, "Cd", "{b:#?}");
    assert!(r.differences.iter().any(|d| d.contains("asked for once, the BMC reports persistent")), "{r:#?}");

    // The same image again: nothing sent.
    let fetched = img.gets.load(Ordering::SeqCst);
    let again = bmc.media_insert(media(&a, false)).await.unwrap();
    assert!(again.confirmed && again.sent.is_empty(), "{again:#?}");
    assert_eq!(img.gets.load(Ordering::SeqCst), fetched);
    // A different image: the old one is ejected first.
    let b_url = format!("{}/images/b.iso", img.base);
    let other = bmc.media_insert(media(&b_url, false)).await.unwrap();
    assert!(other.confirmed, "{other:#?}");
    assert_eq!(other.sent.len(), 2, "{other:#?}");
    assert!(other.sent[0].contains("EjectMedia") && other.sent[1].contains("InsertMedia"), "{other:#?}");

    let e = bmc.media_eject().await.unwrap();
    assert!(e.confirmed && e.sent.len() == 1, "{e:#?}");
    assert_eq!(e.now.as_ref().unwrap().image, None, "{e:#?}");
    let shown = bmc.media_show().await.unwrap();
    assert!(shown.slots.iter().all(|s| s.image.is_none()), "{shown:#?}");
    // Nothing inserted: an eject sends nothing.
    let e = bmc.media_eject().await.unwrap();
    assert!(e.confirmed && e.sent.is_empty() && e.slot.is_none(), "{e:#?}");
}

#[tokio::test]
async fn sim_media_in_every_flavor_where_its_vendor_keeps_it() {
    let s = sim(&RedfishFlavor::EVERY).await;
    let pool = pin_pool();
    let url = "https://10.0.0.1/images/installer.iso";
    for f in RedfishFlavor::EVERY {
        let name = format!("n-{}", f.as_str());
        let host = s.fleet.host(&name).unwrap();
        let bmc = pool.bmc(s.target(&name, BmcProtocol::Redfish));
        let shown = bmc.media_show().await.unwrap();
        let (owner, cd) = match f {
            RedfishFlavor::Generic | RedfishFlavor::PowerSubsystem => ("system", "Cd"),
            RedfishFlavor::OpenbmcLike => ("manager", "Slot_0"),
            RedfishFlavor::IdracLike => ("manager", "CD"),
            RedfishFlavor::IloLike => ("manager", "2"),
            RedfishFlavor::SupermicroLike => ("manager", "CD1"),
        };
        assert_eq!(shown.collection.owner, owner, "{f}: {shown:#?}");
        assert_eq!(shown.slots.len(), 2, "{f}");
        let r = bmc.media_insert(media(url, true)).await.unwrap();
        assert!(r.confirmed, "{f}: {r:#?}");
        assert_eq!(r.slot.as_deref(), Some(cd), "{f}");
        assert_eq!(host.media().cd_image().as_deref(), Some(url), "{f}: the host's tray holds it");
        // The one-time boot from the CD, read back as once.
        let b = r.boot.as_ref().unwrap();
        assert_eq!(b.confirmation, BootConfirmation::Confirmed, "{f}: {b:#?}");
        assert_eq!(host.boot_override().target, "Cd", "{f}");
        // iLO's schema has no TransferProtocolType: sent only where the slot has it.
        let sent_protocol = r.sent.iter().any(|l| l.contains("\"TransferProtocolType\":\"HTTPS\""));
        assert_eq!(sent_protocol, f != RedfishFlavor::IloLike, "{f}: {:?}", r.sent);
        let e = bmc.media_eject().await.unwrap();
        assert!(e.confirmed, "{f}: {e:#?}");
        assert_eq!(host.media().cd_image(), None, "{f}");
    }
    // bmcweb takes only HTTPS and CIFS: an http image is refused by the BMC, and the error says which value.
    let name = format!("n-{}", RedfishFlavor::OpenbmcLike.as_str());
    let bmc = pool.bmc(s.target(&name, BmcProtocol::Redfish));
    let e = bmc.media_insert(media("http://10.0.0.1/x.iso", false)).await.unwrap_err();
    assert!(error_chain(&e).contains("400") && error_chain(&e).contains("Image"), "{}", error_chain(&e));
    assert_eq!(s.fleet.host(&name).unwrap().media().cd_image(), None);
    // Over IPMI: not supported, in words, and nothing is asked of the BMC's tray.
    let ipmi = pool.bmc(s.target(&name, BmcProtocol::Ipmi));
    for e in [ipmi.media_show().await.unwrap_err(), ipmi.media_insert(media(url, true)).await.unwrap_err()] {
        assert!(error_chain(&e).contains("virtual media is not supported over IPMI"), "{}", error_chain(&e));
    }
}

#[tokio::test]
async fn sushy_bios_attributes_drift_and_staged_changes_read_back() {
    let Some(s) = PrivateSushy::start() else { return };
    let (pool, _) = pool_with(quick_options());
    let bmc = pool.bmc(s.target());
    let shown = bmc.bios_show().await.unwrap();
    assert_eq!(shown.attributes.get("BootMode"), Some(&serde_json::json!("Uefi")), "{shown:#?}");
    assert!(shown.settings.ends_with("/BIOS/Settings"), "{shown:#?}");
    // A profile spelled differently ("10" as 10) does not drift; a different value does.
    let want: std::collections::BTreeMap<String, serde_json::Value> = [
        ("NumCores".to_owned(), serde_json::json!(10)),
        ("ProcTurboMode".to_owned(), serde_json::json!("Disabled")),
    ]
    .into_iter()
    .collect();
    let d = lifeline_bmc::bios::drift(&want, &shown.attributes, &shown.pending);
    assert_eq!(d.iter().map(|d| d.attribute.as_str()).collect::<Vec<_>>(), ["ProcTurboMode"]);
    // Staged through sushy-emulator's BIOS/Settings PATCH and read back.
    let staged =
        bmc.bios_stage([("ProcTurboMode".to_owned(), serde_json::json!("Disabled"))].into()).await.unwrap();
    assert!(staged.staged, "{staged:#?}");
    assert!(staged.sent.contains("/BIOS/Settings"), "{staged:#?}");
    let now = bmc.bios_show().await.unwrap();
    assert!(lifeline_bmc::bios::drift(&want, &now.attributes, &now.pending).is_empty(), "{now:#?}");
    // An attribute the BIOS does not have: refused before anything is sent.
    let e = bmc.bios_stage([("NoSuchKnob".to_owned(), serde_json::json!(1))].into()).await.unwrap_err();
    assert!(error_chain(&e).contains("no attribute NoSuchKnob"), "{}", error_chain(&e));
}

#[tokio::test]
async fn sim_bios_pending_until_the_host_boots_again_and_ipmi_says_unsupported() {
    let s = sim(&[RedfishFlavor::SupermicroLike]).await;
    let name = format!("n-{}", RedfishFlavor::SupermicroLike.as_str());
    let pool = pin_pool();
    let bmc = pool.bmc(s.target(&name, BmcProtocol::Redfish));
    let staged =
        bmc.bios_stage([("AcsControl".to_owned(), serde_json::json!("Enabled"))].into()).await.unwrap();
    assert!(staged.staged, "{staged:#?}");
    assert_eq!(staged.after.pending.get("AcsControl"), Some(&serde_json::json!("Enabled")), "{staged:#?}");
    assert_eq!(staged.after.attributes.get("AcsControl"), Some(&serde_json::json!("Disabled")));
    let r = bmc.power(lifeline_types::PowerAction::Reset, None).await.unwrap();
    assert!(r.action_sent, "{r:#?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let b = bmc.bios_show().await.unwrap();
        if b.attributes.get("AcsControl") == Some(&serde_json::json!("Enabled")) {
            assert!(b.pending.is_empty(), "{b:#?}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never applied: {b:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let ipmi = pool.bmc(s.target(&name, BmcProtocol::Ipmi));
    let e = ipmi.bios_show().await.unwrap_err();
    assert!(error_chain(&e).contains("BIOS settings are not supported over IPMI"), "{}", error_chain(&e));
}

/// sushy-emulator's UpdateService as it is: `SimpleUpdate` does not fetch the image; it bumps the
/// System's `BiosVersion` minor number (with the versions store the private config gives its fake driver,
/// as the libvirt driver keeps them) and answers 204 with a `Location` to `Tasks/42`, a fixed document that
/// says Completed; the `FirmwareInventory` its UpdateService links answers 404. Tested as it is: the
/// inventory's 404 reported (not an empty fleet), the action accepted, the task link kept and read, the
/// new version read back from the System (the minor number moved, not the image's version).
#[tokio::test]
async fn sushy_simple_update_bumps_the_bios_version_and_nothing_else() {
    let Some(s) = PrivateSushy::start() else { return };
    let (pool, _) = pool_with(quick_options());
    let bmc = pool.bmc(s.target());
    let e = bmc.firmware_show().await.unwrap_err();
    assert!(
        error_chain(&e).contains("FirmwareInventory") && error_chain(&e).contains("404"),
        "{}",
        error_chain(&e)
    );
    let before = bmc.info().await.unwrap().bios_version.expect("BiosVersion");
    let r = bmc
        .firmware_push(lifeline_bmc::firmware::FirmwarePush {
            target: "/redfish/v1/Systems/node-1".into(),
            image: lifeline_bmc::firmware::FirmwareImage::Url(format!("http://{}:9/bios-9.9.0.bin", s.ip)),
            within: Duration::from_secs(10),
        })
        .await
        .unwrap();
    assert_eq!((r.method, r.accepted.status), ("SimpleUpdate", 204), "{r:#?}");
    assert_eq!(r.accepted.task.as_deref(), Some("/redfish/v1/TaskService/Tasks/42"), "{r:#?}");
    let after = bmc.info().await.unwrap().bios_version.expect("BiosVersion");
    let minor = |v: &str| v.split('.').nth(1).and_then(|m| m.parse::<u32>().ok()).unwrap();
    assert_eq!(minor(&after), minor(&before) + 1, "{before} -> {after}: only the minor number moves");
    assert_ne!(after, "9.9.0", "the image named is not what it installs");
    // The task is a fixed document: Completed at 100 % whatever was asked, so only the version read back
    // tells what happened (as Lifeline's apply does).
    let t = bmc.firmware_task("/redfish/v1/TaskService/Tasks/42".into()).await.unwrap();
    assert_eq!((t.task.state.as_deref(), t.task.percent), (Some("Completed"), Some(100)), "{t:#?}");
}
