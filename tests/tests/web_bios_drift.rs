//! BIOS drift per node under `lifeline serve`: the scheduled read (`[server] bios-drift-interval`) finds the
//! one node of eight whose BIOS drifted from its role's `[[bios-profile]]`, `GET /api/v1/bios/drift` and the
//! web console (fleet table and grid in headless Chromium, the node page) show exactly that node and the
//! attributes that differ; after `lifeline bios apply` (staged, the host reset, read back) the next
//! scheduled read shows it clean, on the open fleet page without a reload.

mod web_support;

use lifeline_test_utils::{output_text, unique_loopback, wait_until};
use serde_json::{Value, json};
use std::time::Duration;
use web_support::{Browser, PASSWORD, Stack, browser_available, http};

const OFFSET: u16 = 20000;

/// Eight Redfish nodes of role `gpu-node`, four BMC flavours.
fn inventory() -> String {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    for i in 1..=8 {
        let flavor = ["generic", "idrac-like", "ilo-like", "openbmc-like"][i % 4];
        t.push_str(&format!(
            "\n[[device]]\nname = \"g{i}\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{}\", port = {}, protocol = \"redfish\", flavor = \"{flavor}\" }}\n",
            unique_loopback(),
            443 + OFFSET
        ));
    }
    t
}

const CONFIG: &str = "[server]\nsweep-interval = \"0s\"\nbios-drift-interval = \"1s\"\nbios-drift-concurrency = 3\n\n\
    [[bios-profile]]\nattributes = { SriovGlobalEnable = \"Enabled\", MmioAbove4Gb = \"Enabled\", NumaNodesPerSocket = \"1\" }\n\n\
    [[bios-profile]]\nrole = \"gpu-node\"\nattributes = { AcsControl = \"Disabled\", WorkloadProfile = \"HighPerformance\" }\n";

fn drift(stack: &Stack, auth: &str, query: &str) -> Value {
    let (st, text) =
        http(&stack.addr, "GET", &format!("/api/v1/bios/drift{query}"), &[("Authorization", auth)], None);
    assert_eq!(st, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// The API's answer once every node was read 2 s after `since` (a read that began before a change may
/// still show the state before it; one read of the simulated BMC takes a few milliseconds).
fn read_after(stack: &Stack, auth: &str, since: chrono::DateTime<chrono::Utc>) -> Value {
    let since = since + chrono::Duration::seconds(2);
    wait_until("a BIOS read of all eight nodes after the change", Duration::from_secs(90), || {
        let v = drift(stack, auth, "");
        let nodes = v["nodes"].as_array()?;
        let fresh = nodes.iter().filter(|n| {
            n["read_at"]
                .as_str()
                .and_then(|t| t.parse::<chrono::DateTime<chrono::Utc>>().ok())
                .is_some_and(|t| t > since)
        });
        (nodes.len() == 8 && fresh.count() == 8).then_some(v)
    })
}

/// The devices the fleet page marks as drifted: table rows and grid cells.
fn page_drifted(b: &Browser) -> Value {
    b.js(
        "const rows = [...document.querySelectorAll('#fleet-table tr[data-device]')].filter(r => r.querySelector('td.bios')?.dataset.bios === 'drift').map(r => r.dataset.device);\
         const cells = [...document.querySelectorAll('#grid a.c[data-bios=\"drift\"]')].map(c => c.dataset.device);\
         const ok = [...document.querySelectorAll('#fleet-table td.bios[data-bios=\"ok\"]')].length;\
         return { rows, cells, ok };",
        json!([]),
    )
}

#[test]
fn bios_drift_on_one_node_of_eight_in_the_api_and_the_fleet_view_then_clean_after_apply() {
    let stack = Stack::start_inventory(&inventory(), OFFSET, |_| CONFIG.to_owned());
    let o = stack.sim.lifeline(&["token", "create", "--user", "vic"]);
    let auth = format!("Bearer {}", String::from_utf8_lossy(&o.stdout).trim());

    // At first every node holds the profile.
    let v = read_after(&stack, &auth, chrono::Utc::now());
    assert_eq!(v["drifted"], json!([]), "{v:#}");
    assert_eq!(v["interval"], "1s", "{v:#}");
    assert!(
        v["nodes"].as_array().unwrap().iter().all(|n| n["checked"] == 5 && n["error"].is_null()),
        "{v:#}"
    );

    // Someone turns SR-IOV off and ACS on on g5 (staged, applied at its reset).
    let bad = stack.sim.dir.path().join("bad.toml");
    std::fs::write(&bad, "[attributes]\nSriovGlobalEnable = \"Disabled\"\nAcsControl = \"Enabled\"\n")
        .unwrap();
    let o = stack.sim.lifeline(&[
        "bios",
        "apply",
        "g5",
        "--profile",
        bad.to_str().unwrap(),
        "--yes",
        "--timeout",
        "60",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v = read_after(&stack, &auth, chrono::Utc::now());
    assert_eq!(v["drifted"], json!(["g5"]), "exactly g5 drifted: {v:#}");
    let g5 = v["nodes"].as_array().unwrap().iter().find(|n| n["device"] == "g5").unwrap().clone();
    let attrs: Vec<&str> =
        g5["drift"].as_array().unwrap().iter().map(|d| d["attribute"].as_str().unwrap()).collect();
    assert_eq!(attrs, ["AcsControl", "SriovGlobalEnable"], "{g5:#}");
    assert_eq!(
        (g5["drift"][1]["current"].as_str(), g5["drift"][1]["want"].as_str()),
        (Some("Disabled"), Some("Enabled"))
    );
    let one = drift(&stack, &auth, "?device=g5");
    assert_eq!(one["nodes"].as_array().map(Vec::len), Some(1), "{one:#}");

    if browser_available().is_some() {
        let b = Browser::start("bios-drift");
        b.login(&stack, "vic", PASSWORD);
        b.wait("the landing page", 30, |b| (b.path() != "/ui/login").then_some(()));
        b.goto(&stack.url("/ui/fleet"));
        b.find("#fleet-table");
        let p = b.wait("the fleet page's BIOS column", 30, |b| {
            let p = page_drifted(b);
            (p["ok"] == 7).then_some(p)
        });
        assert_eq!((p["rows"].clone(), p["cells"].clone()), (json!(["g5"]), json!(["g5"])), "{p:#}");
        let cell = b.text("#fleet-table tr[data-device='g5'] td.bios");
        assert!(cell.contains("AcsControl") && cell.contains("SriovGlobalEnable"), "{cell}");
        let summary = b.text("#bios-drifted");
        assert!(summary.contains("1 with BIOS drift: g5"), "{summary}");
        // The node page names what differs and what the profile wants.
        b.goto(&stack.url("/ui/node/g5"));
        let t = b.wait_text("#bios", "SriovGlobalEnable", 30);
        assert!(
            t.contains("2 of 5 attribute(s) differ")
                && t.contains("\"Disabled\"")
                && t.contains("\"Enabled\""),
            "{t}"
        );
        b.goto(&stack.url("/ui/node/g1"));
        b.wait_text("#bios", "5 attribute(s) as the profile wants", 30);

        // Fixed by apply (the configuration's profiles): the open fleet page shows it clean without a reload.
        b.goto(&stack.url("/ui/fleet"));
        b.wait("the drift on the fleet page", 30, |b| {
            (page_drifted(b)["rows"] == json!(["g5"])).then_some(())
        });
        apply_and_check_clean(&stack, &auth);
        let p = b.wait("g5 clean on the open fleet page (its 15 s refresh)", 45, |b| {
            let p = page_drifted(b);
            (p["ok"] == 8).then_some(p)
        });
        assert_eq!((p["rows"].clone(), p["cells"].clone()), (json!([]), json!([])), "{p:#}");
        assert_eq!(
            b.js("return performance.getEntriesByType('navigation').length", json!([])),
            1,
            "no reload"
        );
    } else {
        apply_and_check_clean(&stack, &auth);
    }
}

fn apply_and_check_clean(stack: &Stack, auth: &str) {
    let cfg = stack.sim.dir.path().join("lifeline.toml");
    let o = stack.sim.lifeline(&[
        "bios",
        "apply",
        "all",
        "--config",
        cfg.to_str().unwrap(),
        "--yes",
        "--timeout",
        "60",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let applied = lifeline_test_utils::output_json(&o);
    let changed: Vec<&str> = applied
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["changes"].as_object().unwrap().is_empty())
        .map(|r| r["bmc"].as_str().unwrap())
        .collect();
    assert_eq!(changed, ["g5"], "only g5 changed and reset: {applied:#}");
    let v = read_after(stack, auth, chrono::Utc::now());
    assert_eq!(v["drifted"], json!([]), "the next read shows g5 clean: {v:#}");
}
