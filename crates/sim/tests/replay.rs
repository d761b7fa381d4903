//! The replay flavour: a BMC serving a captured Redfish tree with the simulator's power, sessions, SEL and
//! faults on top. A small tree written here (the shapes of iLO 5: oldest-first IML, `ResetType` allowable
//! values without `PowerCycle`, GPUs and an NVSwitch as Processors) checks each live part; the real-capture
//! corpus (`LIFELINE_REDFISH_CORPUS`, see docs/redfish-corpus.md) checks that every captured document is
//! served as captured.

mod common;

use std::path::{Path, PathBuf};

use common::{bmc, eventually};
use lifeline_sim::{BmcSpec, Fault, Fleet, FleetSpec, GpuSpec, RedfishFlavor, ServerSpec, SimOptions};
use serde_json::{Value, json};

fn write(root: &Path, path: &str, v: Value) {
    let dir = root.join(path.trim_start_matches("/redfish/v1").trim_start_matches('/'));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.json"), v.to_string()).unwrap();
}

fn members(ids: &[&str]) -> Value {
    Value::Array(ids.iter().map(|i| json!({ "@odata.id": i })).collect())
}

/// A small tree in iLO 5's shape (trailing slashes in links, as iLO writes them).
fn small_tree(root: &Path) {
    write(
        root,
        "/redfish/v1",
        json!({
            "@odata.id": "/redfish/v1/", "Id": "RootService", "RedfishVersion": "1.6.0", "Vendor": "HPE",
            "Systems": { "@odata.id": "/redfish/v1/Systems/" },
            "SessionService": { "@odata.id": "/redfish/v1/SessionService/" },
        }),
    );
    write(
        root,
        "/redfish/v1/Systems",
        json!({
            "@odata.id": "/redfish/v1/Systems/", "Members": members(&["/redfish/v1/Systems/1/"]), "Members@odata.count": 1,
        }),
    );
    write(
        root,
        "/redfish/v1/Systems/1",
        json!({
            "@odata.id": "/redfish/v1/Systems/1/", "Id": "1", "PowerState": "Off",
            "Status": { "Health": "OK", "HealthRollup": "OK", "State": "Enabled" },
            "Processors": { "@odata.id": "/redfish/v1/Systems/1/Processors/" },
            "LogServices": { "@odata.id": "/redfish/v1/Systems/1/LogServices/" },
            "Actions": { "#ComputerSystem.Reset": {
                "ResetType@Redfish.AllowableValues": ["On", "ForceOff", "ForceRestart", "GracefulShutdown"],
                "target": "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset/",
            }},
        }),
    );
    let procs = [
        "/redfish/v1/Systems/1/Processors/GPU0/",
        "/redfish/v1/Systems/1/Processors/NVSwitch0/",
        "/redfish/v1/Systems/1/Processors/GPU1/",
    ];
    write(
        root,
        "/redfish/v1/Systems/1/Processors",
        json!({
            "@odata.id": procs[0].rsplit_once("GPU0").unwrap().0, "Members": members(&procs), "Members@odata.count": 3,
        }),
    );
    for (p, name) in procs.iter().zip(["GPU 0", "NVSwitch 0", "GPU 1"]) {
        write(
            root,
            p,
            json!({ "@odata.id": p, "Name": name, "ProcessorType": "GPU",
            "Status": { "Health": "OK", "State": "Enabled" } }),
        );
    }
    write(
        root,
        "/redfish/v1/Systems/1/LogServices",
        json!({
            "Members": members(&["/redfish/v1/Systems/1/LogServices/IML/"]),
        }),
    );
    write(
        root,
        "/redfish/v1/Systems/1/LogServices/IML",
        json!({
            "Id": "IML", "Entries": { "@odata.id": "/redfish/v1/Systems/1/LogServices/IML/Entries/" },
        }),
    );
    let entries = [
        "/redfish/v1/Systems/1/LogServices/IML/Entries/1/",
        "/redfish/v1/Systems/1/LogServices/IML/Entries/2/",
    ];
    write(
        root,
        "/redfish/v1/Systems/1/LogServices/IML/Entries",
        json!({
            "Members": members(&entries), "Members@odata.count": 2,
        }),
    );
    for (i, e) in entries.iter().enumerate() {
        write(
            root,
            e,
            json!({ "@odata.id": e, "Id": (i + 1).to_string(), "Severity": "OK",
            "Created": format!("2021-03-0{}T10:00:00Z", i + 1), "Message": "captured" }),
        );
    }
}

fn spec(name: &str, tree: PathBuf) -> ServerSpec {
    ServerSpec {
        name: name.into(),
        role: "gpu-node".into(),
        bmc: BmcSpec {
            address: std::net::IpAddr::V4(lifeline_test_utils::unique_loopback()),
            redfish_port: None,
            ipmi_port: None,
            username: "admin".into(),
            password: "password".into(),
            flavor: RedfishFlavor::Generic,
            cipher_suites: Vec::new(),
            session_limit: None,
            replay: Some(tree),
        },
        gpus: GpuSpec { count: 2, ..GpuSpec::default() },
        rails: Vec::new(),
        // The tree says Off: the host starts as captured.
        powered_on: true,
    }
}

async fn get(c: &reqwest::Client, url: &str) -> (u16, Value) {
    let r = c.get(url).basic_auth("admin", Some("password")).send().await.unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

async fn reset(c: &reqwest::Client, base: &str, rt: &str) -> u16 {
    c.post(format!("{base}/redfish/v1/Systems/1/Actions/ComputerSystem.Reset/"))
        .basic_auth("admin", Some("password"))
        .json(&json!({ "ResetType": rt }))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn replay_serves_the_tree_with_live_power_sel_sessions_and_gpu_faults() {
    let dir = tempfile::tempdir().unwrap();
    small_tree(dir.path());
    let fleet = Fleet::start(
        FleetSpec { servers: vec![spec("r1", dir.path().to_owned())], switches: vec![] },
        SimOptions::for_tests(),
    )
    .await
    .unwrap();
    let (base, c) = bmc(&fleet, "r1");
    let sys = format!("{base}/redfish/v1/Systems/1/");
    assert_eq!(get(&c, &sys).await.1["PowerState"], "Off", "starts as captured");

    // Only the ResetTypes the tree offers.
    assert_eq!(reset(&c, &base, "PowerCycle").await, 400);
    assert_eq!(reset(&c, &base, "On").await, 204);
    assert!(eventually(10, async || get(&c, &sys).await.1["PowerState"] == "On").await);

    // The power-on is logged by the host and appended to the tree's oldest-first IML after its entries.
    let entries = format!("{base}/redfish/v1/Systems/1/LogServices/IML/Entries/");
    let (_, coll) = get(&c, &entries).await;
    let ids: Vec<&str> =
        coll["Members"].as_array().unwrap().iter().map(|m| m["@odata.id"].as_str().unwrap()).collect();
    assert!(ids.len() >= 3, "{coll}");
    assert_eq!(coll["Members@odata.count"], ids.len());
    assert_eq!(
        &ids[..2],
        [
            "/redfish/v1/Systems/1/LogServices/IML/Entries/1/",
            "/redfish/v1/Systems/1/LogServices/IML/Entries/2/"
        ]
    );
    let (st, e) = get(&c, &format!("{base}{}", ids[2])).await;
    assert_eq!(st, 200);
    assert_eq!(e["Id"], "3");
    assert!(e["Created"].as_str().unwrap() > "2021-03-02", "{e}");

    // gpu-missing counts GPUs only (not the NVSwitch): GPU 1 is the third processor.
    fleet.devices().inject("r1", &Fault::GpuMissing { gpu: 1 }).await.unwrap();
    let procs = format!("{base}/redfish/v1/Systems/1/Processors/");
    let (_, p) = get(&c, &procs).await;
    assert_eq!(p["Members@odata.count"], 2, "{p}");
    assert!(!p.to_string().contains("GPU1"), "{p}");
    assert_eq!(get(&c, &format!("{base}/redfish/v1/Systems/1/Processors/GPU1/")).await.0, 404);
    fleet.devices().clear("r1").await.unwrap();
    assert_eq!(get(&c, &procs).await.1["Members@odata.count"], 3);

    // Sessions are the simulator's: login, use the token, log out.
    let r = c
        .post(format!("{base}/redfish/v1/SessionService/Sessions"))
        .json(&json!({ "UserName": "admin", "Password": "password" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let token = r.headers()["X-Auth-Token"].to_str().unwrap().to_owned();
    let loc = r.headers()["Location"].to_str().unwrap().to_owned();
    let r = c.get(&sys).header("X-Auth-Token", &token).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = c.delete(format!("{base}{loc}")).header("X-Auth-Token", &token).send().await.unwrap();
    assert_eq!(r.status(), 204);
    // No credentials, no document; a document the tree lacks is 404; writes to captured documents are refused.
    assert_eq!(c.get(&sys).send().await.unwrap().status(), 401);
    assert_eq!(get(&c, &format!("{base}/redfish/v1/Chassis/9")).await.0, 404);
    let r = c.patch(&sys).basic_auth("admin", Some("password")).json(&json!({})).send().await.unwrap();
    assert_eq!(r.status(), 405);
    fleet.shutdown().await;
}

#[tokio::test]
async fn a_tree_without_a_service_root_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let started = Fleet::start(
        FleetSpec { servers: vec![spec("r2", dir.path().join("nowhere"))], switches: vec![] },
        SimOptions::for_tests(),
    )
    .await;
    let Err(e) = started else { panic!("a tree without a service root was served") };
    let msg = format!("{e}: {}", std::error::Error::source(&e).unwrap());
    assert!(msg.contains("r2") && msg.contains("no service root"), "{msg}");
}

/// The corpus folder, or `None` (skipped loudly; fails with `LIFELINE_REDFISH_CORPUS_REQUIRED=1`).
fn corpus() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = std::env::var_os("LIFELINE_REDFISH_CORPUS")
        .map(PathBuf::from)
        .into_iter()
        .chain([manifest.join("../../../shared/redfish-corpus"), manifest.join("../../../redfish-corpus")])
        .find(|c| c.join("hpe-ilo5-xl675d-a100.tar.gz").is_file());
    if found.is_none() {
        let why = "Redfish capture corpus not found (set LIFELINE_REDFISH_CORPUS to the folder of its .tar.gz trees)";
        if std::env::var("LIFELINE_REDFISH_CORPUS_REQUIRED").is_ok_and(|v| v == "1") {
            panic!("{why}");
        }
        eprintln!("SKIP: {why}");
    }
    found
}

/// Every captured document of the HGX A100 iLO 5 tree is served as captured (the host system's
/// `PowerState` is the host's, which starts as captured).
#[tokio::test]
async fn replay_of_a_captured_tree_serves_every_document_as_captured() {
    let Some(corpus) = corpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let st = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(corpus.join("hpe-ilo5-xl675d-a100.tar.gz"))
        .arg("-C")
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(st.success());
    let root = dir.path().join("hpe-ilo5-xl675d-a100");
    let fleet = Fleet::start(
        FleetSpec { servers: vec![spec("hgx", root.clone())], switches: vec![] },
        SimOptions::for_tests(),
    )
    .await
    .unwrap();
    let (base, c) = bmc(&fleet, "hgx");
    let mut n = 0;
    for e in walk(&root) {
        let rel = e.parent().unwrap().strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        // The session collection is the simulator's own.
        if rel.starts_with("SessionService/Sessions") {
            continue;
        }
        let want: Value = serde_json::from_str(&std::fs::read_to_string(&e).unwrap()).unwrap();
        let path = if rel.is_empty() { "/redfish/v1/".to_owned() } else { format!("/redfish/v1/{rel}/") };
        let (st, got) = get(&c, &format!("{base}{path}")).await;
        assert_eq!(st, 200, "{path}");
        assert_eq!(got, want, "{path}");
        n += 1;
    }
    assert!(n > 400, "{n} documents");
    eprintln!("replayed {n} documents of hpe-ilo5-xl675d-a100 as captured");
    fleet.shutdown().await;
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "index.json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
