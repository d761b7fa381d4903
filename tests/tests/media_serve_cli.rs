//! `lifeline media insert TARGET... --serve FILE` against a `lifeline sim` process: Lifeline serves the
//! image over HTTPS on the configured address with a token per BMC, the simulated BMCs mount it by range
//! requests (as a real BMC reads an ISO), `curl --range` from the BMC's address reads the same bytes, a
//! wrong token, an expired one and the right one from another address get 404 and nothing, and the audit names the token's id and what was served, never the
//! token.

use std::io::{BufRead, BufReader, Read};
use std::process::Command;
use std::time::{Duration, Instant};

use lifeline_test_utils::{output_json as json, output_text, unique_loopback};

/// An image that is an ISO 9660 as far as a reader's first look goes: a primary volume descriptor at
/// 32 KiB naming the volume, the other bytes each its offset mod 251.
fn iso(dir: &std::path::Path) -> std::path::PathBuf {
    let mut b: Vec<u8> = (0..1_048_576u32).map(|i| (i % 251) as u8).collect();
    b[32768] = 1;
    b[32769..32774].copy_from_slice(b"CD001");
    let mut vol = *b"UBUNTU_24_04_AUTOINSTALL        ";
    vol.make_ascii_uppercase();
    b[32768 + 40..32768 + 72].copy_from_slice(&vol);
    let p = dir.join("ubuntu-24.04-autoinstall.iso");
    std::fs::write(&p, b).unwrap();
    p
}

/// curl's status and body for a range of `url`, its request from the source address `from` (a BMC's
/// requests come from its own address: the image server answers a token from that BMC's only).
fn curl(url: &str, range: &str, from: &str) -> (u16, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("b");
    let o = Command::new("curl")
        .args(["-sk", "--max-time", "10", "--interface", from, "--range", range, "-w", "%{http_code}", "-o"])
        .arg(&body)
        .arg(url)
        .output()
        .unwrap();
    (String::from_utf8_lossy(&o.stdout).trim().parse().unwrap_or(0), std::fs::read(&body).unwrap_or_default())
}

#[test]
fn served_image_is_mounted_by_range_requests_and_a_wrong_or_expired_token_gets_nothing() {
    let sim = lifeline_test_utils::three_flavour_sim();
    let dir = tempfile::tempdir().unwrap();
    let image = iso(dir.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("{}:{port}", unique_loopback());
    let config = dir.path().join("lifeline.toml");
    std::fs::write(&config, format!("[image-server]\nlisten = \"{listen}\"\ntoken-ttl = \"8s\"\n")).unwrap();
    let cfg = config.to_str().unwrap();

    // Without [image-server]: a usage error saying what to add, nothing inserted.
    let o = sim.lifeline(&["media", "insert", "n1", "--serve", image.to_str().unwrap(), "--yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(output_text(&o).contains("[image-server] listen"), "{}", output_text(&o));

    let started = Instant::now();
    let mut child = sim.spawn_lifeline(&[
        "media",
        "insert",
        "n1",
        "n2",
        "--serve",
        image.to_str().unwrap(),
        "--boot-once",
        "--yes",
        "--json",
        "--config",
        cfg,
    ]);
    // The rows come out as soon as the inserts are read back; the command then keeps serving.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut text = String::new();
    let rows: serde_json::Value = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "no JSON rows: {text}");
        text.push_str(&line);
        if let Ok(v) = serde_json::from_str(&text) {
            break v;
        }
    };
    let mut urls = Vec::new();
    for (i, slot) in [(0, "Cd"), (1, "CD")] {
        assert_eq!(rows[i]["confirmed"], true, "{rows:#}");
        assert_eq!(rows[i]["slot"], slot, "{rows:#}");
        let url = rows[i]["now"]["image"].as_str().unwrap().to_owned();
        assert!(url.starts_with(&format!("https://{listen}/image/")), "{url}");
        assert!(url.ends_with("/ubuntu-24.04-autoinstall.iso"), "{url}");
        urls.push(url);
    }
    assert_ne!(urls[0], urls[1], "a token per insert");
    let token = urls[0].split('/').nth(4).unwrap().to_owned();
    assert_eq!(token.len(), 64);

    // curl from n1's address reads the range a BMC reads first, byte for byte.
    let (n1, n2) = (bmc_address(&sim, "n1"), bmc_address(&sim, "n2"));
    let (code, body) = curl(&urls[0], "32768-34815", &n1);
    assert_eq!(code, 206);
    assert_eq!(&body[1..6], b"CD001");
    assert_eq!(&body[2048 - 10..], &(34806..34816u32).map(|i| (i % 251) as u8).collect::<Vec<_>>()[..]);
    // A token one digit off: 404 and nothing.
    let wrong = urls[0]
        .replace(&token, &format!("{}{}", if token.starts_with('0') { "1" } else { "0" }, &token[1..]));
    assert_eq!(curl(&wrong, "0-2047", &n1), (404, Vec::new()));
    // n1's URL from n2's address, or from the jump host: 404 and nothing (the token is n1's).
    assert_eq!(curl(&urls[0], "0-2047", &n2), (404, Vec::new()));
    assert_eq!(curl(&urls[0], "0-2047", "127.0.0.1"), (404, Vec::new()));

    // Each simulated BMC mounted its image with range requests (the volume descriptor read).
    let mut mounted = Vec::new();
    while started.elapsed() < Duration::from_secs(6) && mounted.len() < 2 {
        std::thread::sleep(Duration::from_millis(200));
        mounted = sim_mounts(&sim);
    }
    assert_eq!(mounted.len(), 2, "{mounted:#?}");
    for m in &mounted {
        assert_eq!(m["VolumeId"], "UBUNTU_24_04_AUTOINSTALL", "{m}");
        assert_eq!((m["Size"].as_u64(), m["RangeRequests"].as_u64()), (Some(1_048_576), Some(2)), "{m}");
    }

    // A BMC given a URL with a wrong token mounts nothing: the server answered 404.
    let o = sim.lifeline(&["media", "insert", "n1", &wrong, "--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let mut m: Vec<serde_json::Value> = Vec::new();
    while started.elapsed() < Duration::from_secs(7)
        && m.first().is_none_or(|m: &serde_json::Value| m["Error"].is_null())
    {
        std::thread::sleep(Duration::from_millis(200));
        m = sim_mounts(&sim);
    }
    assert_eq!(m[0]["Error"], "the image server answered 404 Not Found", "{m:#?}");

    // The tokens expire: the command stops serving, revokes them and audits what was served.
    let status = child.wait().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(started.elapsed() >= Duration::from_secs(7), "served until the tokens expired");
    assert!(err.contains("stopped serving"), "{err}");
    assert!(err.contains("5 requests (5 ranges), 10240 bytes, 4 refused"), "{err}");
    let (code, body) = curl(&urls[0], "0-2047", &n1);
    assert!(code == 0 || code == 404, "{code}");
    assert!(body.is_empty());

    let o = sim.lifeline(&["audit", "log", "--json"]);
    let log = output_text(&o);
    assert!(!log.contains(&token), "the token is not audited");
    let log = json(&o);
    let rows = log.as_array().unwrap();
    let served = rows.iter().find(|r| r["action"] == "media.serve").expect("media.serve audited");
    assert_eq!(served["detail"]["refused"], 4, "{served:#}");
    assert_eq!(served["detail"]["served"].as_array().unwrap().len(), 2, "{served:#}");
    let inserts: Vec<_> =
        rows.iter().filter(|r| r["action"] == "media.insert" && r["outcome"] == "started").collect();
    // Two served inserts, then the wrong token's plain one (its URL named the same way: no token is kept).
    assert_eq!(inserts.len(), 3);
    assert_eq!(inserts.iter().filter(|r| !r["detail"]["served"].is_null()).count(), 2);
    for r in inserts.iter().filter(|r| !r["detail"]["served"].is_null()) {
        let id = r["detail"]["served"]["token"].as_str().unwrap();
        // Each token names the one BMC address it answers.
        let from = r["detail"]["served"]["from"].clone();
        assert!(from == serde_json::json!([n1]) || from == serde_json::json!([n2]), "{r:#}");
        assert_eq!(id.len(), 12);
        assert!(r["detail"]["image"].as_str().unwrap().contains(&format!("/image/token:{id}/")), "{r:#}");
    }
}

/// The BMC address of `node` in the simulator's inventory.
fn bmc_address(sim: &lifeline_test_utils::SimProcess, node: &str) -> String {
    let text = std::fs::read_to_string(&sim.inventory).unwrap();
    let at = text.find(&format!("name = \"{node}\"")).unwrap();
    let rest = &text[at..];
    let a = rest.find("address = \"").unwrap() + "address = \"".len();
    rest[a..a + rest[a..].find('"').unwrap()].to_owned()
}

/// The `Oem.Lifeline.Mount` of each Redfish BMC's CD, read from the simulator over Redfish.
fn sim_mounts(sim: &lifeline_test_utils::SimProcess) -> Vec<serde_json::Value> {
    let inv = std::fs::read_to_string(&sim.inventory).unwrap();
    let mut out = Vec::new();
    for (line, path) in inv.lines().filter(|l| l.contains("protocol = \"redfish\"")).zip([
        "/redfish/v1/Systems/Self/VirtualMedia/Cd",
        "/redfish/v1/Managers/iDRAC.Embedded.1/VirtualMedia/CD",
    ]) {
        let addr = line.split("address = \"").nth(1).unwrap().split('"').next().unwrap();
        let port = line.split("port = ").nth(1).unwrap().split(',').next().unwrap().trim();
        let o = Command::new("curl")
            .args(["-sk", "--max-time", "5", "-u", "admin:s3cret-pw"])
            .arg(format!("https://{addr}:{port}{path}"))
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(&o.stdout).into()));
        if std::env::var_os("MEDIA_DEBUG").is_some() {
            eprintln!("{addr}:{port}{path}: {v}");
        }
        if !v["Oem"]["Lifeline"]["Mount"].is_null() {
            out.push(v["Oem"]["Lifeline"]["Mount"].clone());
        }
    }
    out
}
