//! Against the DMTF public mockup `public-rackmount1`, served by a real `sushy-static` that this test starts
//! on its own loopback address (the shared peer script serves one mockup per run directory).
//! Needs: sushy-static (pip sushy-tools; found in `$OOB_PEERS_VENV/bin` or PATH) and the mockup tree
//! (`$OOB_PEERS_DIR/redfish/dmtf-mockups/public-rackmount1`, else next to the project mockup the running
//! redfish peer serves). Skips loudly when missing, fails with `OOB_PEERS_REQUIRED=1`.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use lifeline_redfish::*;
use lifeline_test_utils::{peer_endpoints, peers_required, unique_loopback};
use lifeline_types::{Health, PowerAction, PowerState};

struct Static(Child);

impl Drop for Static {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn skip(why: &str) -> Option<(Static, String)> {
    if peers_required() {
        panic!("DMTF mockup peer required: {why}");
    }
    eprintln!("SKIP: {why}");
    None
}

fn start() -> Option<(Static, String)> {
    start_with(|m| m.to_path_buf())
}

/// [`start`] serving the mockup `edit` returns (given the pristine tree's path).
fn start_with(edit: impl FnOnce(&std::path::Path) -> PathBuf) -> Option<(Static, String)> {
    peer_endpoints("redfish")?;
    let run = std::env::var("OOB_PEERS_RUN").unwrap_or_else(|_| "/tmp/oob-peers".into());
    let mockup = match std::env::var("OOB_PEERS_DIR") {
        Ok(d) => PathBuf::from(d).join("redfish/dmtf-mockups/public-rackmount1"),
        Err(_) => {
            // `args` of the running peer ends with the project mockup path (shared/peers/redfish/mockup).
            let args = std::fs::read_to_string(format!("{run}/redfish/args")).unwrap_or_default();
            let project = PathBuf::from(args.split_whitespace().last().unwrap_or(""));
            project.parent().map(|p| p.join("dmtf-mockups/public-rackmount1")).unwrap_or_default()
        }
    };
    if !mockup.join("index.json").is_file() {
        return skip(&format!("DMTF mockup not found at {} (set OOB_PEERS_DIR)", mockup.display()));
    }
    let mockup = edit(&mockup);
    let bin = std::env::var("OOB_PEERS_VENV")
        .map(|v| PathBuf::from(v).join("bin/sushy-static"))
        .ok()
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("sushy-static"));
    let ip = unique_loopback();
    let port = std::net::TcpListener::bind((ip, 0)).unwrap().local_addr().unwrap().port();
    let child = match Command::new(&bin)
        .args(["-i", &ip.to_string(), "-p", &port.to_string(), "-m"])
        .arg(&mockup)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => Static(c),
        Err(e) => return skip(&format!("cannot run {}: {e}", bin.display())),
    };
    for _ in 0..100 {
        if TcpStream::connect((ip, port)).is_ok() {
            return Some((child, format!("http://{ip}:{port}")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("sushy-static did not listen on {ip}:{port}");
}

/// A client of the mockup served at `url`, as `name`, trusting its certificate on first use.
async fn connect(name: &str, url: String) -> Client {
    Client::connect(
        BmcTarget::new(name, url),
        Credentials::new("admin", "password"),
        TlsTrust::Pin { store: Arc::new(MemoryPinStore::new()), explicit: None },
        ClientOptions::default(),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn dmtf_rackmount_power_sensors_and_sel() {
    let Some((_server, url)) = start() else { return };
    let c = connect("dmtf-rackmount1", url).await;
    assert_eq!(c.profile().platform, "generic");

    let systems = c.systems().await.unwrap();
    let sys = systems
        .items
        .iter()
        .find(|s| s.odata_id.ends_with("/437XR1138R2"))
        .expect("system by link, not by id");
    assert_eq!(sys.power_state, Some(PowerState::On));
    assert_eq!(sys.model.as_deref(), Some("3500"));
    let (types, _) = c.reset_types(sys).await.unwrap();
    assert_eq!(
        plan_reset(PowerAction::Cycle, types.as_deref(), &[]),
        Some(ResetPlan::OffThenOn { off: "ForceOff".into(), on: "On".into() }),
        "no PowerCycle in {types:?}: a cycle removes power, ForceRestart does not"
    );

    let chassis = c.chassis().await.unwrap();
    let ch = chassis.items.iter().find(|c| c.sensors.is_some()).expect("a chassis with Sensors");
    let sensors = c.sensors(ch).await.unwrap();
    assert!(sensors.readings.len() >= 10, "{}", sensors.readings.len());
    let ambient = sensors.readings.iter().find(|r| r.name.as_deref() == Some("Ambient Temperature")).unwrap();
    assert_eq!(
        (ambient.reading, ambient.units.as_deref(), ambient.health),
        (Some(22.5), Some("Cel"), Some(Health::Ok))
    );

    // The System log holds SEL entries; its second page ($skiptoken) is a 404 on sushy-static: a warning, not
    // a failure, and not `truncated` either: `Members@odata.count` says the 2 entries read are all of them.
    let logs = c.log_services(sys.log_services.as_deref().unwrap()).await.unwrap();
    let log1 = logs.items.iter().find(|l| l.id.as_deref() == Some("Log1")).unwrap();
    let entries = c.log_entries(log1, 50).await.unwrap();
    assert_eq!(entries.entries.len(), 2);
    assert!(!entries.truncated);
    assert!(entries.warnings.iter().any(|w| w.at.contains("skiptoken")), "{:?}", entries.warnings);
    let e = &entries.entries[0];
    assert_eq!(e.entry_type.as_deref(), Some("SEL"));
    assert_eq!(e.severity, Some(Health::Critical));
    assert_eq!(e.message.as_deref(), Some("Temperature threshold exceeded"));
    assert_eq!(e.message_id.as_deref(), Some("0x592A28"));
    assert_eq!(e.created_at.unwrap().to_rfc3339(), "2012-03-07T14:44:00+00:00");

    let one = c.log_entries(log1, 1).await.unwrap();
    assert_eq!((one.entries.len(), one.truncated), (1, true));

    // `sel()` finds logs whose entries are SEL records even when the service is not named SEL.
    let sel = c.sel(10).await.unwrap();
    assert!(
        sel.items.iter().any(|l| l.log.ends_with("/Log1") && l.entries.len() == 2),
        "{:?} {:?}",
        sel.items,
        sel.warnings
    );
}

/// Copies `from` to `to`, moving every path under `old` to `new` and rewriting the links to it, as an
/// older BMC (before DSP0266 1.6 fixed resource URIs) may place a collection.
fn moved_tree(from: &std::path::Path, to: &std::path::Path, old: &str, new: &str) {
    for e in walk(from) {
        let rel = e.strip_prefix(from).unwrap().to_string_lossy().replace(old, new);
        let dst = to.join(rel);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        let text = std::fs::read_to_string(&e).unwrap();
        let url = |p: &str| format!("/redfish/v1/{p}");
        std::fs::write(dst, text.replace(&url(old), &url(new))).unwrap();
    }
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

/// The Manager's log services where its document says, not where the schema puts them today: the guessed
/// `Managers/BMC/LogServices` answers 404, the Manager is read for its link, and its event log is still
/// found (first contact skips the Manager only when the guessed collection answers).
#[tokio::test]
async fn manager_log_services_at_a_link_of_their_own_are_found_through_the_manager() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((_server, url)) = start_with(|m| {
        let to = tmp.path().join("mockup");
        moved_tree(m, &to, "Managers/BMC/LogServices", "Managers/BMC/Logs");
        to
    }) else {
        return;
    };
    let c = connect("dmtf-moved-logs", url).await;
    let sel = c.sel(10).await.unwrap();
    let logs: Vec<&str> = sel.items.iter().map(|l| l.log.as_str()).collect();
    assert!(logs.iter().any(|l| l.ends_with("/Managers/BMC/Logs/Log")), "{logs:?} {:?}", sel.warnings);
    assert!(logs.iter().any(|l| l.ends_with("/Systems/437XR1138R2/LogServices/Log1")), "{logs:?}");
    assert!(!logs.iter().any(|l| l.contains("/Managers/BMC/LogServices")), "{logs:?}");
}
