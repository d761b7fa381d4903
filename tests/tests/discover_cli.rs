//! `lifeline discover` as an operator runs it: over a simulated fleet (Redfish and IPMI BMCs on their own
//! loopback addresses), with the inventory's credentials and without, its diff against an inventory that
//! lacks two devices and lists one that is not there; and against the real peers of `shared/peers`
//! (OpenIPMI `ipmi_sim`, cross-checked with freeipmi's `rmcpping`, and `sushy-static`).

use std::net::Ipv4Addr;
use std::process::{Command, Output};

use lifeline_test_utils::{SimProcess, lifeline_bin, output_json, output_text, unique_loopback};
use serde_json::Value;

const PASSWORD: &str = "discover-pw";

/// Six BMCs (Redfish and IPMI alternating) at .1 … .6 of a /28 of their own.
fn fleet(net: Ipv4Addr, offset: u16, skip: &[usize], extra: Option<Ipv4Addr>) -> String {
    let mut t = String::from(
        "[cluster]\nname = \"d\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    let mut add = |name: String, ip: Ipv4Addr, i: usize| {
        let (proto, port) =
            if i.is_multiple_of(2) { ("redfish", 443 + offset) } else { ("ipmi", 623 + offset) };
        t.push_str(&format!(
            "\n[[device]]\nname = \"{name}\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{ip}\", port = {port}, protocol = \"{proto}\" }}\n\
             gpus = {{ count = 8, model = \"NVIDIA H100 80GB HBM3\" }}\n"
        ));
    };
    for i in 0..6 {
        if !skip.contains(&i) {
            add(format!("n{}", i + 1), host(net, i as u8 + 1), i);
        }
    }
    if let Some(ip) = extra {
        add("ghost".into(), ip, 0);
    }
    t
}

fn host(net: Ipv4Addr, n: u8) -> Ipv4Addr {
    let o = net.octets();
    Ipv4Addr::new(o[0], o[1], o[2], o[3] + n)
}

fn discover(
    sim: &SimProcess,
    inventory: &std::path::Path,
    net: Ipv4Addr,
    offset: u16,
    extra: &[&str],
) -> Output {
    let range = format!("{net}/28");
    let (ipmi, redfish) = ((623 + offset).to_string(), (443 + offset).to_string());
    Command::new(lifeline_bin())
        .args(["discover", &range, "--ipmi-port", &ipmi, "--redfish-port", &redfish, "--timeout", "1"])
        .args(extra)
        .arg("--inventory")
        .arg(inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .env("LIFELINE_BMC_PASSWORD", PASSWORD)
        .env_remove("LIFELINE_CONFIG")
        .env_remove("LIFELINE_DATABASE_URL")
        .output()
        .expect("run lifeline discover")
}

#[test]
fn finds_and_identifies_every_simulated_bmc_and_diffs_the_inventory() {
    let base = unique_loopback().octets();
    let net = Ipv4Addr::new(base[0], base[1], base[2], base[3] & 0xf0);
    let offset = 20_000 + (std::process::id() % 20_000) as u16;
    let sim =
        SimProcess::start(&fleet(net, offset, &[], None), offset, &[("LIFELINE_BMC_PASSWORD", PASSWORD)]);

    // Every BMC, with vendor, model and serial read with the inventory's credentials.
    let out = discover(&sim, &sim.inventory, net, offset, &["--json"]);
    assert!(out.status.success(), "{}", output_text(&out));
    let found_all = output_json(&out);
    let found = found_all.as_array().expect("a list of BMCs");
    assert_eq!(found.len(), 6, "{found:#?}");
    for (i, f) in found.iter().enumerate() {
        assert_eq!(f["address"], host(net, i as u8 + 1).to_string());
        assert_eq!(f["device"], format!("n{}", i + 1));
        assert_eq!(f["identified_by"], "credentials", "{f:#}");
        for key in ["vendor", "model", "serial", "bmc_mac", "firmware"] {
            assert!(f[key].as_str().is_some_and(|s| !s.is_empty()), "{key} of {f:#}");
        }
        let protocols: Vec<&str> =
            f["protocols"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(protocols.contains(&"redfish") && protocols.contains(&"ipmi"), "{f:#}");
    }
    // Serials differ per BMC: each answer is its own.
    let mut serials: Vec<&str> = found.iter().filter_map(|f| f["serial"].as_str()).collect();
    serials.dedup();
    assert_eq!(serials.len(), 6);

    // Without credentials: what the BMC says to anyone.
    let out = discover(&sim, &sim.inventory, net, offset, &["--json", "--no-identify", "--protocol", "ipmi"]);
    let found = output_json(&out);
    assert_eq!(found.as_array().unwrap().len(), 6, "{found:#}");
    assert!(found.as_array().unwrap().iter().all(|f| f["protocol"] == "ipmi" && f["ipmi_v2"] == true));

    // The inventory without n2 and n5, with a device whose address answers nothing.
    let ghost = host(net, 9);
    let partial = sim.dir.path().join("partial.toml");
    std::fs::write(&partial, fleet(net, offset, &[1, 4], Some(ghost))).unwrap();
    let out = discover(&sim, &partial, net, offset, &["--diff"]);
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(1), "--diff exits 1 when they differ: {text}");
    assert!(text.contains(&format!("+ {}: answers, not in the inventory", host(net, 2))), "{text}");
    assert!(text.contains(&format!("+ {}: answers, not in the inventory", host(net, 5))), "{text}");
    assert!(text.contains("- ghost: in the inventory, does not answer"), "{text}");
    assert!(
        text.contains("2 BMC(s) answer that the inventory lacks; 1 inventory BMC(s) do not answer"),
        "{text}"
    );
    assert_eq!(text.matches(": answers, not in the inventory").count(), 2, "{text}");

    // With a credential reference of the operator's own, the two BMCs the inventory lacks are identified
    // too: over Redfish where it answers (pinned to the certificate seen anonymously), over IPMI alone.
    let by_addr = |v: &Value, ip: Ipv4Addr| -> Value {
        v.as_array().unwrap().iter().find(|f| f["address"] == ip.to_string()).cloned().unwrap()
    };
    let full = found_all.clone();
    for (proto, protocol) in [("both", "redfish"), ("ipmi", "ipmi")] {
        let out = discover(
            &sim,
            &partial,
            net,
            offset,
            &[
                "--json",
                "--protocol",
                proto,
                "--credentials",
                "env:LIFELINE_BMC_PASSWORD",
                "--username",
                "admin",
            ],
        );
        assert!(out.status.success(), "{}", output_text(&out));
        let found = output_json(&out);
        assert_eq!(found.as_array().unwrap().len(), 6, "{found:#}");
        for ip in [host(net, 2), host(net, 5)] {
            let f = by_addr(&found, ip);
            assert!(f["device"].is_null(), "{f:#}");
            assert_eq!(f["identified_by"], "given-credentials", "{f:#}");
            assert_eq!(f["protocol"], protocol, "{f:#}");
            for key in ["vendor", "model", "serial", "bmc_mac", "firmware"] {
                assert!(f[key].as_str().is_some_and(|s| !s.is_empty()), "{key} of {f:#}");
            }
            // The same identity as the inventory's credential read when the BMC was listed.
            let listed = by_addr(&full, ip);
            for key in ["serial", "bmc_mac", "model"] {
                assert_eq!(f[key], listed[key], "{key}: {f:#} vs {listed:#}");
            }
        }
        // The listed ones are still read with the inventory's own credentials.
        assert_eq!(by_addr(&found, host(net, 1))["identified_by"], "credentials");
    }

    // A wrong password: each unknown BMC says why, its anonymous answers kept, the run still succeeds.
    let out = Command::new(lifeline_bin())
        .args(["discover", &format!("{net}/28"), "--json", "--timeout", "1", "--protocol", "ipmi"])
        .args(["--ipmi-port", &(623 + offset).to_string(), "--redfish-port", &(443 + offset).to_string()])
        .args(["--credentials", "env:DISCOVER_OTHER_PW", "--username", "admin", "--inventory"])
        .arg(&partial)
        .arg("--data-dir")
        .arg(&sim.data)
        .env("LIFELINE_BMC_PASSWORD", PASSWORD)
        .env("DISCOVER_OTHER_PW", "not-the-password")
        .env_remove("LIFELINE_CONFIG")
        .env_remove("LIFELINE_DATABASE_URL")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", output_text(&out));
    let f = by_addr(&output_json(&out), host(net, 2));
    assert_eq!(f["identified_by"], "anonymous", "{f:#}");
    assert!(f["identify_error"].as_str().is_some_and(|e| !e.is_empty()), "{f:#}");
    assert!(f["serial"].is_null(), "{f:#}");

    // A password on the command line is refused as one; an unset variable fails before any packet.
    let out = discover(&sim, &partial, net, offset, &["--credentials", "hunter2", "--username", "admin"]);
    assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
    assert!(output_text(&out).contains("--credentials"), "{}", output_text(&out));
    let out = discover(
        &sim,
        &partial,
        net,
        offset,
        &["--credentials", "env:DISCOVER_UNSET_PW", "--username", "admin"],
    );
    assert_ne!(out.status.code(), Some(0), "{}", output_text(&out));
    assert!(output_text(&out).contains("DISCOVER_UNSET_PW"), "{}", output_text(&out));
}

fn peer_lines(kind: &str) -> Option<Vec<Vec<String>>> {
    let run = std::env::var("OOB_PEERS_RUN").unwrap_or_else(|_| "/tmp/oob-peers".into());
    match std::fs::read_to_string(format!("{run}/{kind}/endpoints.txt")) {
        Ok(s) => Some(
            s.lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| l.split_whitespace().map(String::from).collect())
                .collect(),
        ),
        Err(_) if std::env::var("OOB_PEERS_REQUIRED").as_deref() == Ok("1") => {
            panic!("{kind} peer required but {run}/{kind}/endpoints.txt is missing")
        }
        Err(_) => {
            eprintln!("SKIP: no {kind} peer (run shared/peers/start-*.sh)");
            None
        }
    }
}

fn plain(args: &[&str]) -> Output {
    let data = tempfile::tempdir().unwrap();
    Command::new(lifeline_bin())
        .args(args)
        .arg("--data-dir")
        .arg(data.path())
        .env_remove("LIFELINE_CONFIG")
        .env_remove("LIFELINE_INVENTORY")
        .env_remove("LIFELINE_DATABASE_URL")
        .output()
        .expect("run lifeline")
}

#[test]
fn finds_the_ipmi_sim_peers_as_rmcpping_does() {
    let Some(lines) = peer_lines("ipmi") else { return };
    for l in &lines {
        let (addr, port) = (&l[1], &l[2]);
        let out =
            plain(&["discover", &format!("{addr}/32"), "--protocol", "ipmi", "--ipmi-port", port, "--json"]);
        let found = output_json(&out);
        let found = found.as_array().expect("list");
        assert_eq!(found.len(), 1, "{addr}:{port}: {found:#?}");
        assert_eq!(found[0]["address"], addr.as_str());
        assert_eq!(found[0]["ipmi_v2"], true, "ipmi_sim offers RMCP+");
        // freeipmi's rmcpping, where installed, gets a pong from the same address.
        if port == "623"
            && let Ok(o) = Command::new("rmcpping").args(["-c", "1", addr]).output()
        {
            let t = String::from_utf8_lossy(&o.stdout);
            assert!(t.contains("pong received from"), "rmcpping {addr}: {t}");
        }
    }
}

#[test]
fn reads_sushy_static_without_credentials() {
    let Some(lines) = peer_lines("redfish") else { return };
    let Some(l) = lines.iter().find(|l| l[0] == "sushy-static") else { return };
    let url = l[1].trim_end_matches("/redfish/v1");
    let (host, port) = url.trim_start_matches("http://").rsplit_once(':').unwrap();
    let out = plain(&[
        "discover",
        &format!("{host}/32"),
        "--protocol",
        "redfish",
        "--http",
        "--redfish-port",
        port,
        "--json",
    ]);
    let found = output_json(&out);
    let f = &found.as_array().expect("list")[0];
    // Expected values from the mockup's own files.
    let mockup = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/peers/redfish/mockup");
    let mockup =
        if mockup.exists() { mockup } else { std::path::PathBuf::from("/work/shared/peers/redfish/mockup") };
    let read = |p: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(mockup.join(p)).unwrap()).unwrap()
    };
    let root = read("index.json");
    let systems = read("Systems/index.json");
    let first =
        systems["Members"][0]["@odata.id"].as_str().unwrap().trim_start_matches("/redfish/v1/").to_owned();
    let system = read(&format!("{first}/index.json"));
    assert_eq!(f["redfish_version"], root["RedfishVersion"]);
    assert_eq!(f["serial"], system["SerialNumber"]);
    assert_eq!(f["model"], system["Model"]);
    assert_eq!(f["vendor"], system["Manufacturer"]);
    assert_eq!(f["identified_by"], "anonymous");
}
