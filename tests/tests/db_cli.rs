//! Lifeline's own state as an operator handles it: `lifeline db backup` of a SQLite store while
//! `lifeline serve` writes to it (sweeps every second), each copy restored into a fresh data directory and
//! read back; `lifeline db status|migrate` on an old schema; and `lifeline serve` under systemd's
//! `Type=notify` protocol (READY=1, WATCHDOG=1 pings, STOPPING=1) on a socket the test listens on.

mod common;

use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Server, two_node_sim};
use lifeline_test_utils::{SimProcess, lifeline_bin, output_json, output_text};

/// `lifeline ARGS --data-dir DIR` (inventory from the simulator).
fn lifeline_on(sim: &SimProcess, data: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(lifeline_bin())
        .args(args)
        .arg("--inventory")
        .arg(&sim.inventory)
        .arg("--data-dir")
        .arg(data)
        .env_remove("LIFELINE_DATABASE_URL")
        .env_remove("LIFELINE_CONFIG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn backup_of_a_live_store_while_the_server_writes_restores() {
    let sim = two_node_sim(33500);
    let srv = Server::start_with(&sim, "[server]\nsweep-interval = \"1s\"\n");
    let mut copies = Vec::new();
    for n in 0..3 {
        std::thread::sleep(Duration::from_millis(1500));
        let file = sim.dir.path().join(format!("backup-{n}.db"));
        let o = sim.lifeline(&["db", "backup", file.to_str().unwrap(), "--json"]);
        assert!(o.status.success(), "{}", output_text(&o));
        let b = output_json(&o);
        assert!(b["bytes"].as_u64().unwrap() > 0 && b["schema_version"].as_i64().unwrap() > 0, "{b}");
        copies.push((file, b));
    }
    // The server kept running and serving through the backups.
    let o = sim.lifeline(&["db", "status"]);
    assert!(o.status.success(), "{}", output_text(&o));
    drop(srv);
    // A named file is never overwritten (usage error).
    let o = sim.lifeline(&["db", "backup", copies[0].0.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));

    for (n, (file, b)) in copies.iter().enumerate() {
        let restored = sim.dir.path().join(format!("restored-{n}"));
        std::fs::create_dir(&restored).unwrap();
        std::fs::copy(file, restored.join("lifeline.db")).unwrap();
        let o = lifeline_on(&sim, &restored, &["db", "status", "--json"]);
        assert!(o.status.success(), "restored copy {n} is current: {}", output_text(&o));
        let o = lifeline_on(&sim, &restored, &["audit", "log", "--limit", "100000", "--json"]);
        assert!(o.status.success(), "{}", output_text(&o));
        let rows = output_json(&o).as_array().unwrap().len() as i64;
        // The copy holds what it held when taken; `db backup` itself adds a row to the live store only.
        assert_eq!(rows, b["audit_rows"].as_i64().unwrap(), "restored copy {n}");
    }
}

#[test]
fn status_and_migrate_upgrade_an_old_schema() {
    let sim = two_node_sim(33600);
    // No store yet: said, and nothing created.
    let o = sim.lifeline(&["db", "status"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(output_text(&o).contains("no store at"), "{}", output_text(&o));
    assert!(!sim.data.join("lifeline.db").exists());
    let o = sim.lifeline(&["db", "migrate", "--to", "5"]);
    assert!(o.status.success(), "{}", output_text(&o));
    let o = sim.lifeline(&["db", "status", "--json"]);
    assert_eq!(o.status.code(), Some(1), "pending migrations: {}", output_text(&o));
    let s = output_json(&o);
    assert_eq!(s["database_version"], 5);
    let pending: Vec<_> =
        s["migrations"].as_array().unwrap().iter().filter(|m| m["state"] == "pending").collect();
    assert!(!pending.is_empty());
    let o = sim.lifeline(&["db", "migrate", "--json"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(output_json(&o)["applied"].as_array().unwrap().len(), pending.len());
    let o = sim.lifeline(&["db", "status"]);
    assert!(o.status.success() && output_text(&o).contains("up to date"), "{}", output_text(&o));
    let o = sim.lifeline(&["audit", "log", "--json"]);
    assert!(
        output_json(&o).as_array().unwrap().iter().any(|r| r["action"] == "db.migrate"),
        "{}",
        output_text(&o)
    );
}

/// Waits for the next datagram that starts with `prefix`, returning it.
fn expect(sock: &UnixDatagram, prefix: &str, within: Duration) -> String {
    let end = Instant::now() + within;
    let mut buf = [0u8; 512];
    while Instant::now() < end {
        sock.set_read_timeout(Some(end - Instant::now())).unwrap();
        match sock.recv(&mut buf) {
            Ok(n) => {
                let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
                if msg.starts_with(prefix) {
                    return msg;
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
            }
            Err(e) => panic!("recv: {e}"),
        }
    }
    panic!("no `{prefix}` notification within {within:?}");
}

#[test]
fn serve_speaks_systemd_notify_ready_watchdog_stopping() {
    let sim = two_node_sim(33700);
    let sock_path = sim.dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = sim.dir.path().join("lifeline.toml");
    std::fs::write(&cfg, "[server]\nsweep-interval = \"0s\"\n").unwrap();
    let mut child = Command::new(lifeline_bin())
        .args(["serve", "--plain-http", "--listen", &format!("127.0.0.1:{port}"), "--config"])
        .arg(&cfg)
        .arg("--inventory")
        .arg(&sim.inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .envs(sim.env().iter().map(|(k, v)| (k, v)))
        .env("NOTIFY_SOCKET", &sock_path)
        .env("WATCHDOG_USEC", "400000")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let ready = expect(&sock, "READY=1", Duration::from_secs(30));
    assert!(ready.contains(&format!("STATUS=listening on http://127.0.0.1:{port}")), "{ready}");
    assert!(ready.contains(&format!("MAINPID={}", child.id())), "{ready}");
    // Pings at half the 400 ms period.
    let t = Instant::now();
    for _ in 0..3 {
        expect(&sock, "WATCHDOG=1", Duration::from_secs(2));
    }
    assert!(t.elapsed() < Duration::from_secs(2), "three pings took {:?}", t.elapsed());
    let kill = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    expect(&sock, "STOPPING=1", Duration::from_secs(10));
    let st = child.wait().unwrap();
    assert!(st.success(), "lifeline serve after SIGTERM: {st}");
}
