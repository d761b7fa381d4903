//! The node page's virtual-media bar in headless Chromium, under `lifeline serve` with its image server
//! (`[image-server] images`): an operator picks an image the server serves by name from the list the page
//! reads from the API, confirms the dialog that names the image and the BMC, and sees the insert read back
//! from the simulated Redfish BMC, which mounted it from the server's image server; the eject reads back
//! too. Both are audited as the operator through the web console (`web:ann`); a viewer's node page has no media bar.

mod web_support;

use lifeline_test_utils::unique_loopback;
use serde_json::{Value, json};
use web_support::{Browser, PASSWORD, Stack, browser_available, http};

const OFFSET: u16 = 44800;
const IMAGE: &str = "rocky-9.5-minimal.iso";

fn inventory() -> String {
    format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"g1\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{}\", port = {}, protocol = \"redfish\", flavor = \"idrac-like\" }}\n",
        unique_loopback(),
        443 + OFFSET
    )
}

/// An ISO 9660 as far as a reader's first look goes: a primary volume descriptor at 32 KiB.
fn iso(path: &std::path::Path) {
    let mut b: Vec<u8> = (0..131_072u32).map(|i| (i % 251) as u8).collect();
    b[32768] = 1;
    b[32769..32774].copy_from_slice(b"CD001");
    std::fs::write(path, b).unwrap();
}

/// The audit rows of `action` on g1 that say how it ended (not the intent written before acting).
fn audited(stack: &Stack, auth: &str, action: &str) -> Vec<Value> {
    let (st, text) = http(
        &stack.addr,
        "GET",
        &format!("/api/v1/audit?target=g1&action={action}&limit=50"),
        &[("Authorization", auth)],
        None,
    );
    assert_eq!(st, 200, "{text}");
    let rows: Value = serde_json::from_str(&text).unwrap();
    rows.as_array().unwrap().iter().filter(|r| r["outcome"] != "started").cloned().collect()
}

#[test]
fn an_operator_inserts_a_served_image_from_the_node_page_and_ejects_it() {
    if browser_available().is_none() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("{}:{port}", unique_loopback());
    let stack = Stack::start_inventory(&inventory(), OFFSET, |sim| {
        let images = sim.dir.path().join("images");
        std::fs::create_dir(&images).unwrap();
        iso(&images.join(IMAGE));
        format!(
            "[server]\nsweep-interval = \"0s\"\n\n[image-server]\nlisten = \"{listen}\"\nimages = \"{}\"\n",
            images.display()
        )
    });
    let o = stack.sim.lifeline(&["token", "create", "--user", "ada"]);
    let auth = format!("Bearer {}", String::from_utf8_lossy(&o.stdout).trim());

    let b = Browser::start("media");
    b.login(&stack, "ann", PASSWORD);
    b.wait("the landing page", 30, |b| (b.path() != "/ui/login").then_some(()));
    b.goto(&stack.url("/ui/node/g1"));
    let listed = b.wait("the served images in the media bar", 30, |b| {
        let v = b
            .js("return [...document.querySelectorAll('#media-image option')].map(o => o.value);", json!([]));
        v.as_array().is_some_and(|a| a.iter().any(|x| x == IMAGE)).then_some(v)
    });
    assert_eq!(listed, json!(["", IMAGE]), "one served image after the placeholder");
    let label = b.text("#media-image");
    assert!(label.contains(&format!("{IMAGE} (0 MiB)")), "{label}");

    // Nothing picked: the page says so and sends nothing.
    b.click("#media-insert");
    b.wait_text("#media-result", "pick a served image or give a URL", 10);
    assert!(audited(&stack, &auth, "media.insert").is_empty());

    b.js(
        "const s = document.querySelector('#media-image'); s.value = arguments[0]; s.dispatchEvent(new Event('change'));",
        json!([IMAGE]),
    );
    b.click("#media-insert");
    b.confirm(&format!("served image {IMAGE}"));
    let t = b.wait_text("#media-result", "read back", 90);
    assert!(t.starts_with("insert: read back") && t.contains("/image/token:") && t.ends_with(IMAGE), "{t}");
    let rows = audited(&stack, &auth, "media.insert");
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(
        (rows[0]["actor"].as_str(), rows[0]["outcome"].as_str()),
        (Some("web:ann"), Some("ok")),
        "{rows:#?}"
    );

    b.click("#media-eject");
    b.confirm("g1");
    let t = b.wait_text("#media-result", "eject: read back", 60);
    assert!(t.starts_with("eject: read back"), "{t}");
    let rows = audited(&stack, &auth, "media.eject");
    assert_eq!((rows.len(), rows[0]["actor"].as_str()), (1, Some("web:ann")), "{rows:#?}");
    // The BMC read the image from the server (range requests under the token the eject ended).
    let served = audited(&stack, &auth, "media.serve");
    assert_eq!(served.len(), 1, "{served:#?}");
    assert_eq!(served[0]["detail"]["revoked"], true, "{served:#?}");
    assert!(served[0]["detail"]["served"][0]["ranges"].as_u64().unwrap_or(0) >= 1, "{served:#?}");

    // A viewer's node page has no media bar.
    let v = Browser::start("media-viewer");
    v.login(&stack, "vic", PASSWORD);
    v.wait("the landing page", 30, |b| (b.path() != "/ui/login").then_some(()));
    v.goto(&stack.url("/ui/node/g1"));
    v.find("#node-state");
    assert!(!v.exists("#media") && !v.exists("#power-buttons"), "a viewer sees no media bar");
}
