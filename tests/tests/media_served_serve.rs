//! `lifeline serve` serving installer images itself (`[image-server] images`): over the API a served image
//! is listed and inserted by name (a name outside the directory refused, naming it), and the `reinstall`
//! runbook, which takes a served image by default, runs end to end on a simulated node: the simulated BMC
//! mounts the image from the server's own image server by range requests from its own address, under a
//! token that ends with the eject; what each token served is audited, the token itself never.

#[path = "runbook_support/mod.rs"]
mod support;

mod common;

use std::time::Duration;

use common::login;
use lifeline_test_utils::{ServeProcess, add_user, unique_loopback, wait_until};
use serde_json::{Value, json};
use support::*;

const PASSWORD: &str = "correct horse battery";
const IMAGE: &str = "ubuntu-24.04-autoinstall.iso";

/// An ISO 9660 as far as a reader's first look goes: a primary volume descriptor at 32 KiB naming the
/// volume, the other bytes each its offset mod 251.
fn iso(path: &std::path::Path) {
    let mut b: Vec<u8> = (0..262_144u32).map(|i| (i % 251) as u8).collect();
    b[32768] = 1;
    b[32769..32774].copy_from_slice(b"CD001");
    b[32768 + 40..32768 + 72].copy_from_slice(b"UBUNTU_24_04_AUTOINSTALL        ");
    std::fs::write(path, b).unwrap();
}

/// The `media.serve` audit rows of `target`: what each revoked token served.
fn served(s: &common::Session<'_>, target: &str) -> Vec<Value> {
    let (st, log) =
        s.call("GET", &format!("/api/v1/audit?target={target}&action=media.serve&limit=100"), None);
    assert_eq!(st, 200, "{log}");
    log.as_array().unwrap().clone()
}

#[test]
fn serve_reinstalls_a_node_from_an_image_it_serves_and_refuses_names_outside_its_directory() {
    let Some(conf) = slurm_conf() else { return };
    let _lock = lock_slurm_node("gpu-node-02");
    // `auto` on the standard ports: Redfish for the virtual media, IPMI SOL for the console.
    let fleet = nodes(&[("gpu-node-02", "r1", "auto")]);
    let sim = start(&fleet, 0);
    let _sshd: Vec<Sshd> = fleet.iter().map(|n| sshd(n, &sim.node_state)).collect();
    scontrol(&conf, &["update", "nodename=gpu-node-02", "state=resume"]);
    add_user(&sim, "ann", "operator", PASSWORD);

    let images = sim.dir.path().join("images");
    std::fs::create_dir(&images).unwrap();
    iso(&images.join(IMAGE));
    std::fs::write(sim.dir.path().join("secret.iso"), b"outside the images directory").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("{}:{port}", unique_loopback());
    let runbooks = lifeline_test_utils::workspace_root().join("runbooks");
    let config = format!(
        "[server]\nsweep-interval = \"0s\"\n\n[runbooks]\ndir = \"{}\"\n\n[image-server]\nlisten = \"{listen}\"\nimages = \"{}\"\n",
        runbooks.display(),
        images.display()
    );
    let (node_state, slurm) = (sim.node_state.to_str().unwrap(), conf.to_str().unwrap());
    let srv = ServeProcess::start_args(
        &sim,
        &config,
        &["--node-state", node_state, "--interval-ms", "20", "--slurm-conf", slurm],
    );
    let s = login(&srv.addr, "ann", PASSWORD);

    // The served images, by name.
    let (st, v) = s.call("GET", "/api/v1/media/images", None);
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["serving"], true, "{v}");
    assert_eq!(v["listen"], listen.as_str(), "{v}");
    assert_eq!(v["images"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(
        (v["images"][0]["name"].as_str(), v["images"][0]["size"].as_u64()),
        (Some(IMAGE), Some(262_144))
    );

    // A name that is not a file of the directory is refused, naming it; nothing is inserted.
    for (name, why) in [
        ("../secret.iso", "file name alone"),
        ("/etc/passwd", "file name alone"),
        ("..", "file name alone"),
        ("missing.iso", "no such image"),
    ] {
        let (st, v) =
            s.call("POST", "/api/v1/devices/gpu-node-02/media", Some(json!({ "served_image": name })));
        assert_eq!(st, 400, "{name}: {v}");
        let msg = v["message"].as_str().unwrap_or_default();
        assert!(msg.contains(&format!("`{name}`")) && msg.contains(why), "{name}: {v}");
    }
    let both = json!({ "served_image": IMAGE, "url": "https://images.example/x.iso" });
    assert_eq!(s.call("POST", "/api/v1/devices/gpu-node-02/media", Some(both)).0, 400);
    // A run whose image is not in the directory is refused before anything is touched.
    let (st, v) = s.call(
        "POST",
        "/api/v1/runbooks/reinstall/runs",
        Some(json!({ "targets": ["gpu-node-02"], "vars": { "image": "secret.iso" } })),
    );
    assert!(st == 400 || v.to_string().contains("no such image"), "{st} {v}");
    assert!(served(&s, "gpu-node-02").is_empty());

    // The reinstall runbook with its default: the served image.
    let (st, v) =
        s.call("POST", "/api/v1/runbooks/reinstall/runs", Some(json!({ "targets": ["gpu-node-02"] })));
    assert_eq!(st, 200, "{v}");
    let run = v[0]["run"].as_str().unwrap_or_else(|| panic!("{v}")).to_owned();
    let done = wait_until("the reinstall run to end", Duration::from_secs(300), || {
        let (_, r) = s.call("GET", &format!("/api/v1/runs/{run}"), None);
        (!matches!(r["state"].as_str(), Some("running" | "pending"))).then_some(r)
    });
    assert_eq!(done["state"], "succeeded", "{done:#}");
    let steps: Vec<(&str, &str)> = done["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["name"].as_str().unwrap(), x["state"].as_str().unwrap()))
        .collect();
    assert!(steps.iter().all(|(_, st)| *st == "ok"), "{steps:?}");
    let insert = done["steps"].as_array().unwrap().iter().find(|x| x["name"] == "insert").unwrap();
    let image = insert["outputs"]["image"].as_str().unwrap_or_else(|| panic!("{insert:#}"));
    assert!(image.starts_with(&format!("https://{listen}/image/token:")), "{image}");
    assert!(image.ends_with(IMAGE), "{image}");
    assert_eq!(sinfo(&conf, "gpu-node-02").0, "idle", "readmitted");

    // The BMC read the image from the server's image server by range requests, under a token that the
    // eject ended: what it served is audited with the token's id, never the token.
    let rows = served(&s, "gpu-node-02");
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let d = &rows[0]["detail"];
    assert_eq!(d["revoked"], true, "{d}");
    let t = &d["served"][0];
    assert!(t["ranges"].as_u64().unwrap() >= 2 && t["bytes"].as_u64().unwrap() >= 4096, "{d}");
    assert_eq!(t["from"][0], fleet[0].bmc.to_string(), "the token answered the BMC's address only: {d}");
    let all = s.call("GET", "/api/v1/audit?target=gpu-node-02&limit=500", None).1.to_string();
    assert!(!regex_like_token(&all), "no token in the audit log");

    // Inserted by hand over the API, ejected: the eject ends its token too.
    let (st, v) = s.call(
        "POST",
        "/api/v1/devices/gpu-node-02/media",
        Some(json!({ "served_image": IMAGE, "boot_once": false })),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!((v["action"].as_str(), v["confirmed"].as_bool()), (Some("insert"), Some(true)), "{v}");
    assert!(v["image"].as_str().unwrap().contains("/image/token:"), "the answer names the token: {v}");
    let (st, v) = s.call("POST", "/api/v1/devices/gpu-node-02/media/eject", None);
    assert_eq!(st, 200, "{v}");
    assert_eq!((v["action"].as_str(), v["confirmed"].as_bool()), (Some("eject"), Some(true)), "{v}");
    assert_eq!(served(&s, "gpu-node-02").len(), 2, "the eject audited the second token");
}

/// Whether `text` holds something shaped like a token (64 hex digits after `/image/`).
fn regex_like_token(text: &str) -> bool {
    text.match_indices("/image/").any(|(i, m)| {
        let rest = &text[i + m.len()..];
        rest.len() >= 64 && rest[..64].bytes().all(|b| b.is_ascii_hexdigit())
    })
}
