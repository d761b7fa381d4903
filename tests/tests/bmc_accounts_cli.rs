//! BMC accounts and credential rotation, driven through the `lifeline` binary against `lifeline sim` (both
//! protocols) and a private OpenIPMI `ipmi_sim`: listing, crash-safe rotation with the process SIGKILLed at
//! every step, and disabling factory-default accounts until `audit bmc` finds none.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use lifeline_test_utils::{
    IpmiSims, SimProcess, lifeline_bin, output_json as json, output_text, unique_loopback,
};
use serde_json::Value;

/// The simulator serves this password for a `sealed:` reference it cannot read (see `lifeline sim`).
const SIM_PASSWORD: &str = "lifeline-sim";

fn inventory(ips: &[std::net::Ipv4Addr], offset: u16) -> String {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"sealed:bmc\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    for (i, ip) in ips.iter().enumerate() {
        let (proto, port) = if i % 2 == 0 { ("redfish", 443 + offset) } else { ("ipmi", 623 + offset) };
        t.push_str(&format!(
            "\n[[device]]\nname = \"n{}\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{ip}\", port = {port}, protocol = \"{proto}\" }}\n\
             gpus = {{ count = 8, model = \"NVIDIA H100 80GB HBM3\" }}\n",
            i + 1
        ));
    }
    t
}

/// `lifeline ARGS` against the test's data dir and `inventory`, with extra environment.
fn run(sim: &SimProcess, inventory: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(lifeline_bin())
        .args(args)
        .arg("--inventory")
        .arg(inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .env("LIFELINE_SEAL_KEY", sim.dir.path().join("seal.key"))
        .env_remove("LIFELINE_DATABASE_URL")
        .env_remove("LIFELINE_CONFIG")
        .env_remove("LIFELINE_TEST_ROTATE_KILL_AT")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run lifeline")
}

/// Whether the BMC accepts `password` for admin (one login through an ad-hoc `--bmc` URL).
fn accepts(sim: &SimProcess, url: &str, password: &str) -> bool {
    let o = Command::new(lifeline_bin())
        .args(["power", "status", "--json", "--bmc", url, "--data-dir"])
        .arg(&sim.data)
        .env("LIFELINE_BMC_PASSWORD", password)
        .env_remove("LIFELINE_INVENTORY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let ok = json(&o)[0].get("power").is_some();
    if !ok {
        eprintln!("{url}: {}", output_text(&o));
    }
    ok
}

fn generations(sim: &SimProcess, inv: &Path, device: &str) -> Vec<Value> {
    let o = run(sim, inv, &["bmc", "credentials", device, "--reveal", "--json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    json(&o).as_array().unwrap().clone()
}

#[test]
fn users_and_rotation_survive_sigkill_at_every_step() {
    let ips = [unique_loopback(), unique_loopback()];
    let offset = 21000;
    let sim = SimProcess::start(&inventory(&ips, offset), offset, &[]);
    let inv = sim.inventory.clone();
    let urls = [
        format!("redfish://admin@{}:{}", ips[0], 443 + offset),
        format!("ipmi://admin@{}:{}", ips[1], 623 + offset),
    ];

    // Accounts over both protocols: the configured user in slot 2, an administrator.
    let o = run(&sim, &inv, &["bmc", "users", "all", "--json"], &[]);
    assert_eq!(o.status.code(), Some(2), "nothing sealed yet: {}", output_text(&o));
    assert!(output_text(&o).contains("LIFELINE_BMC_PASSWORD"), "{}", output_text(&o));
    // The first rotation imports the current password (proven by a login) and rotates it.
    let o = run(&sim, &inv, &["bmc", "rotate", "all", "--json"], &[("LIFELINE_BMC_PASSWORD", SIM_PASSWORD)]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    for r in json(&o).as_array().unwrap() {
        assert_eq!((r["imported"].as_bool(), r["rotated"].as_bool()), (Some(true), Some(true)), "{r}");
    }
    let o = run(&sim, &inv, &["bmc", "users", "all", "--json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    for r in json(&o).as_array().unwrap() {
        let admin = r["accounts"].as_array().unwrap().iter().find(|a| a["name"] == "admin").unwrap();
        assert_eq!((admin["id"].as_str(), admin["enabled"].as_bool()), (Some("2"), Some(true)), "{r}");
        assert!(admin["role"].as_str().unwrap().eq_ignore_ascii_case("administrator"), "{r}");
    }
    for (i, url) in urls.iter().enumerate() {
        assert!(!accepts(&sim, url, SIM_PASSWORD), "n{}: the old password is gone", i + 1);
    }

    // 20 runs: SIGKILL at each of the 5 steps, on each protocol, twice.
    let mut outcomes = Vec::new();
    for round in 0..2 {
        for step in 1..=5u32 {
            for (i, url) in urls.iter().enumerate() {
                let dev = format!("n{}", i + 1);
                let kill = step.to_string();
                let o = run(&sim, &inv, &["bmc", "rotate", &dev], &[("LIFELINE_TEST_ROTATE_KILL_AT", &kill)]);
                assert_eq!(
                    o.status.signal(),
                    Some(9),
                    "round {round} step {step} {dev}: {}",
                    output_text(&o)
                );
                let o = run(&sim, &inv, &["bmc", "rotate", &dev, "--resume", "--json"], &[]);
                assert_eq!(o.status.code(), Some(0), "resume {dev} after step {step}: {}", output_text(&o));
                outcomes.push(json(&o)[0]["resumed"].clone());
                // The store holds exactly one active generation and nothing pending, and the BMC accepts
                // exactly one of the known passwords: the active one.
                let gens = generations(&sim, &inv, &dev);
                let active: Vec<&Value> = gens.iter().filter(|g| g["state"] == "active").collect();
                assert_eq!(active.len(), 1, "{dev} step {step}: {gens:?}");
                assert!(gens.iter().all(|g| g["state"] != "pending"), "{dev} step {step}: {gens:?}");
                let newest_others: Vec<&Value> =
                    gens.iter().filter(|g| g["state"] != "active").take(2).collect();
                for g in &newest_others {
                    assert!(!accepts(&sim, url, g["secret"].as_str().unwrap()), "{dev} step {step}: {g}");
                }
                assert!(
                    accepts(&sim, url, active[0]["secret"].as_str().unwrap()),
                    "{dev} step {step}: locked out"
                );
                // Lifeline's own commands work with the sealed reference.
                let o = run(&sim, &inv, &["power", "status", &dev, "--json"], &[]);
                assert_eq!(o.status.code(), Some(0), "{dev} step {step}: {}", output_text(&o));
            }
        }
    }
    // Per protocol and round: killed before anything was sealed (1) or after activation (5): nothing to
    // settle; sealed but the BMC untouched (2): rolled back; set on the BMC (3, 4): rolled forward.
    let count = |v: Value| outcomes.iter().filter(|o| **o == v).count();
    assert_eq!(count(Value::Null), 2 * 2 * 2, "{outcomes:?}");
    assert_eq!(count(Value::from("rolled-back")), 2 * 2, "{outcomes:?}");
    assert_eq!(count(Value::from("rolled-forward")), 2 * 2 * 2, "{outcomes:?}");
}

/// The example cluster, served with the factory default `admin`/`admin` and a planted `root`/`calvin`
/// account on two BMCs (set with ipmitool, a third-party client): after `rotate --disable-defaults`,
/// `audit bmc` finds no default credential anywhere.
#[test]
fn rotate_disable_defaults_clears_the_example_cluster_audit() {
    let example = lifeline_test_utils::workspace_root().join("inventory/example-cluster.toml");
    let offset = 22000;
    // The example's BMCs with explicit ports (the simulator serves them at the offset ports) and `auto`
    // pinned to Redfish, so that clients and simulator agree on where each BMC listens.
    let text = std::fs::read_to_string(&example).unwrap();
    let ported: String = text
        .lines()
        .map(|l| {
            if !l.starts_with("bmc = {") {
                return format!("{l}\n");
            }
            let l = l.replace("protocol = \"auto\"", "protocol = \"redfish\"");
            let port = if l.contains("\"ipmi\"") { 623 + offset } else { 443 + offset };
            format!("{}, port = {port} }}\n", l.trim_end().trim_end_matches('}').trim_end())
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let example = dir.path().join("example.toml");
    std::fs::write(&example, &ported).unwrap();
    // The simulator reads the (env:) reference: every BMC starts with admin/admin, a factory default.
    let sim = SimProcess::start_file(&example, offset, &[("LIFELINE_BMC_PASSWORD", "admin")]);
    let sealed =
        ported.replacen("credential = \"env:LIFELINE_BMC_PASSWORD\"", "credential = \"sealed:bmc\"", 1);
    assert_ne!(sealed, ported);
    let inv = sim.dir.path().join("sealed.toml");
    std::fs::write(&inv, sealed).unwrap();
    let eps: Value = serde_json::from_str(&std::fs::read_to_string(&sim.endpoints).unwrap()).unwrap();
    let ipmi: Vec<&Value> = eps.as_array().unwrap().iter().filter(|e| e["kind"] == "ipmi").take(2).collect();
    assert_eq!(ipmi.len(), 2);
    for e in &ipmi {
        let (addr, port) = (e["address"].as_str().unwrap(), e["port"].to_string());
        for args in [
            &["user", "set", "name", "3", "root"][..],
            &["user", "set", "password", "3", "calvin"],
            &["user", "priv", "3", "4", "1"],
            &["user", "enable", "3"],
        ] {
            let o = Command::new("ipmitool")
                .args(["-I", "lanplus", "-C", "3", "-H", addr, "-p", &port, "-U", "admin", "-P", "admin"])
                .args(args)
                .output()
                .unwrap();
            assert!(o.status.success(), "ipmitool {args:?}: {}", output_text(&o));
        }
    }
    let audit = |label: &str| {
        let o = run(
            &sim,
            &example,
            // Every default (7 with a password) over both protocols.
            &["audit", "bmc", "--json", "--max-attempts", "14"],
            &[("LIFELINE_BMC_PASSWORD", "admin")],
        );
        let rows = json(&o);
        let found: Vec<String> = rows
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| {
                r["accepted_defaults"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| format!("{} {}", r["bmc"], a["username"]))
            })
            .collect();
        eprintln!("{label}: {found:?}");
        found
    };
    let before = audit("before");
    assert!(before.len() >= 10, "admin/admin is a factory default everywhere: {before:?}");

    let o = run(
        &sim,
        &inv,
        &["bmc", "rotate", "all", "--disable-defaults", "--json"],
        &[("LIFELINE_BMC_PASSWORD", "admin")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let rows = json(&o);
    let disabled: usize =
        rows.as_array().unwrap().iter().map(|r| r["disabled_defaults"].as_array().unwrap().len()).sum();
    assert_eq!(disabled, 2, "{rows}");
    for e in &ipmi {
        let (addr, port) = (e["address"].as_str().unwrap(), e["port"].to_string());
        let o = Command::new("ipmitool")
            .args([
                "-I", "lanplus", "-C", "3", "-H", addr, "-p", &port, "-U", "root", "-P", "calvin", "power",
                "status",
            ])
            .output()
            .unwrap();
        assert!(!o.status.success(), "root/calvin is disabled: {}", output_text(&o));
    }
    let after = audit("after");
    assert!(after.is_empty(), "{after:?}");
    // Lifeline still reaches every BMC, through the sealed store.
    let o = run(&sim, &inv, &["power", "status", "all", "--json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
}

/// The basic set/verify against OpenIPMI's `ipmi_sim`, cross-checked with `ipmitool user list` on the same
/// BMC: the rotated password is what ipmitool must now use.
#[test]
fn rotation_against_openipmi_ipmi_sim() {
    let Some(sims) = IpmiSims::start(1) else { return };
    let addr = sims.addr(0);
    let dir = tempfile::tempdir().unwrap();
    let inv = dir.path().join("inv.toml");
    std::fs::write(
        &inv,
        format!(
            "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
             [[device]]\nname = \"peer\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{}\", port = {}, protocol = \"ipmi\", username = \"operator\", credential = \"sealed:bmc\" }}\n",
            addr.ip(),
            addr.port()
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    let lifeline = |args: &[&str], env: &[(&str, &str)]| {
        Command::new(lifeline_bin())
            .args(args)
            .arg("--inventory")
            .arg(&inv)
            .arg("--data-dir")
            .arg(&data)
            .env("LIFELINE_SEAL_KEY", dir.path().join("seal.key"))
            .envs(env.iter().copied())
            .env_remove("LIFELINE_DATABASE_URL")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let ipmitool = |user: &str, pw: &str, args: &[&str]| {
        Command::new("ipmitool")
            .args(["-I", "lanplus", "-C", "3", "-H", &addr.ip().to_string(), "-p", &addr.port().to_string()])
            .args(["-U", user, "-P", pw])
            .args(args)
            .output()
            .unwrap()
    };
    // `operator` is rotated (admin stays as ipmi_sim's other tests expect it).
    let o = lifeline(&["bmc", "rotate", "peer", "--json"], &[("LIFELINE_BMC_PASSWORD", "operator")]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let o = lifeline(&["bmc", "credentials", "peer", "--reveal", "--json"], &[]);
    let gens = json(&o);
    let active = gens.as_array().unwrap().iter().find(|g| g["state"] == "active").unwrap();
    let pw = active["secret"].as_str().unwrap();
    assert!(
        !ipmitool("operator", "operator", &["chassis", "power", "status"]).status.success(),
        "old refused"
    );
    assert!(ipmitool("operator", pw, &["chassis", "power", "status"]).status.success(), "new accepted");
    // Lifeline's account list and ipmitool's agree on names and slots.
    let users = ipmitool("admin", "password", &["user", "list", "1"]);
    let text = String::from_utf8_lossy(&users.stdout).into_owned();
    let o = lifeline(&["bmc", "users", "peer", "--json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v = json(&o);
    for a in v[0]["accounts"].as_array().unwrap() {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == a["id"].as_str())
            .unwrap_or_else(|| panic!("slot {} not in ipmitool's list:\n{text}", a["id"]));
        assert!(line.contains(a["name"].as_str().unwrap()), "{line} vs {a}");
    }
    assert!(v[0]["accounts"].as_array().unwrap().iter().any(|a| a["name"] == "operator"), "{v}");
    let o = lifeline(&["power", "status", "peer", "--json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
}

/// `events --follow --subscribe`: the BMC's EventService delivers a fault to Lifeline's receiver, the
/// same record found again by the SEL poll is not shown twice, and the subscription is removed on exit.
#[test]
fn events_follow_receives_pushed_events_once_and_leaves_no_subscription() {
    let ips = [unique_loopback()];
    let offset = 23000;
    let sim = SimProcess::start(&inventory(&ips, offset), offset, &[]);
    let inv = sim.inventory.clone();
    let o = run(&sim, &inv, &["bmc", "rotate", "n1"], &[("LIFELINE_BMC_PASSWORD", SIM_PASSWORD)]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let listen = format!("{}:0", unique_loopback());
    let (mut child, rx) =
        follow_events(&sim, &inv, &["--subscribe", "--poll-interval", "1", "--listen", &listen]);
    // Subscribed: Lifeline's marker is on the BMC.
    lifeline_test_utils::wait_until("subscription", std::time::Duration::from_secs(20), || {
        let o = run(&sim, &inv, &["bmc", "subscribe", "n1", "--list", "--json"], &[]);
        let v = json(&o);
        v[0]["subscriptions"].as_array().is_some_and(|s| s.iter().any(|x| x["ours"] == true)).then_some(())
    });
    sim.fault("n1", "gpu-xid=6:79");
    // Collect until the push arrived, then through three more SEL polls (1 s apart), which find the same
    // record and must not show it again.
    let mut deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut seen = false;
    let mut lines = Vec::new();
    while std::time::Instant::now() < deadline {
        if let Ok(l) = rx.recv_timeout(std::time::Duration::from_millis(200)) {
            lines.push(l);
        }
        if !seen && lines.iter().any(|l| l.contains("redfish-event") && l.contains(XID)) {
            seen = true;
            deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        }
    }
    let pushed: Vec<&String> = lines.iter().filter(|l| l.contains(XID)).collect();
    assert_eq!(pushed.len(), 1, "the XID arrives once (push and poll deduplicated): {lines:#?}");
    // SIGTERM: the subscription is removed before the process exits.
    nix_kill(child.id());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let o = run(&sim, &inv, &["bmc", "subscribe", "n1", "--list", "--json"], &[]);
    let v = json(&o);
    assert!(v[0]["subscriptions"].as_array().unwrap().iter().all(|x| x["ours"] != true), "{v}");
    // The stored view shows it once too.
    let o = run(&sim, &inv, &["events", "n1", "--json"], &[]);
    assert!(!output_text(&o).contains("not read"), "the SEL poll ran: {}", output_text(&o));
    let v = json(&o);
    let xid =
        v.as_array().unwrap().iter().filter(|e| e["message"].as_str().unwrap_or("").contains(XID)).count();
    assert_eq!(xid, 1, "{v}");
}

/// The SEL message of the simulator's XID 79 on GPU 6.
const XID: &str = "GPU6: PCIe bus fatal error";

/// `lifeline events n1 --follow --json ARGS` running, its stdout lines on a channel.
fn follow_events(
    sim: &SimProcess,
    inv: &Path,
    args: &[&str],
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut child = Command::new(lifeline_bin())
        .args(["events", "n1", "--follow", "--json"])
        .args(args)
        .arg("--inventory")
        .arg(inv)
        .arg("--data-dir")
        .arg(&sim.data)
        .env("LIFELINE_SEAL_KEY", sim.dir.path().join("seal.key"))
        .env_remove("LIFELINE_DATABASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    (child, rx)
}

fn nix_kill(pid: u32) {
    let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
}

/// A third-party Redfish service (sushy-static serving the project's mockup, GET only): the account list
/// and the subscription list are read leniently from its AccountService and EventService.
#[test]
fn accounts_and_subscriptions_from_the_sushy_static_mockup() {
    let Some(rows) = lifeline_test_utils::peer_endpoints("redfish") else { return };
    let Some(row) = rows.iter().find(|r| r[0] == "sushy-static") else {
        let _: Option<()> = lifeline_test_utils::skip_or_fail("no sushy-static row in redfish/endpoints.txt");
        return;
    };
    let base = row[1].trim_end_matches("/redfish/v1").trim_start_matches("http://");
    let url = format!("redfish+http://admin@{base}");
    let dir = tempfile::tempdir().unwrap();
    let lifeline = |args: &[&str]| {
        Command::new(lifeline_bin())
            .args(args)
            .args(["--bmc", &url, "--json", "--data-dir"])
            .arg(dir.path())
            .env("LIFELINE_BMC_PASSWORD", "unused")
            .env_remove("LIFELINE_INVENTORY")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let o = lifeline(&["bmc", "users"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let v = json(&o);
    let accounts = v[0]["accounts"].as_array().unwrap();
    assert!(accounts.iter().any(|a| a["name"] == "admin" && a["role"] == "Administrator"), "{v}");
    let o = lifeline(&["bmc", "subscribe", "--list"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(json(&o)[0]["subscriptions"].is_array(), "{}", output_text(&o));
}

/// `events --follow --sse`: no subscription, the BMC's `ServerSentEventUri` stream brings the fault.
#[test]
fn events_follow_reads_the_sse_stream() {
    let ips = [unique_loopback()];
    let offset = 24000;
    let sim = SimProcess::start(&inventory(&ips, offset), offset, &[]);
    let inv = sim.inventory.clone();
    let o = run(&sim, &inv, &["bmc", "rotate", "n1"], &[("LIFELINE_BMC_PASSWORD", SIM_PASSWORD)]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let (mut child, rx) = follow_events(&sim, &inv, &["--sse", "--poll-interval", "60"]);
    // The stream must be open before the fault: retry the fault until its event shows (each injection
    // of the same XID logs one more SEL record).
    std::thread::sleep(std::time::Duration::from_secs(2));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut got = None;
    while got.is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(700));
        sim.fault("n1", "gpu-xid=6:79");
        while let Ok(l) = rx.recv_timeout(std::time::Duration::from_millis(500)) {
            if l.contains(XID) && l.contains("redfish-event") {
                got = Some(l);
                break;
            }
        }
    }
    nix_kill(child.id());
    let _ = child.wait();
    let line = got.expect("an XID event from the SSE stream");
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["device"], "n1", "{v}");
}
