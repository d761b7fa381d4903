//! `lifeline-agent` feeding a real `lifeline serve`: `watch` posts each report with a token from
//! `$LIFELINE_TOKEN`, a failing node becomes an `agent-report` fault in `lifeline fault list` and clears
//! when it passes again; `health-check` (Slurm `HealthCheckProgram`, NHC-style) exits non-zero and drains
//! with a `lifeline:` reason, and resumes only a drain that was its own.

mod common;

use std::process::{Command, Output, Stdio};

use common::{Server, add_user, token};
use lifeline_test_utils::{SimProcess, agent_bin, output_json, output_text, unique_loopback};
use serde_json::Value;

fn gpu_node_sim(offset: u16) -> SimProcess {
    let bmc = unique_loopback();
    let inv = format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"gpu-a\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{bmc}\", port = {}, protocol = \"redfish\" }}\n\
         gpus = {{ count = 8, model = \"NVIDIA H100 80GB HBM3\" }}\nrail = [\n{}]\n",
        443 + offset,
        (0..8)
            .map(|i| format!(
                "  {{ hca = \"mlx5_{i}\", netdev = \"rdma{i}\", subnet = \"127.100.{i}.0/24\", address = \"127.100.{i}.1\", rate-gbps = 400, mtu = 9000 }},\n"
            ))
            .collect::<String>()
    );
    SimProcess::start(&inv, offset, common::ENV)
}

/// The agent on "gpu-a", reading the simulator's export of the node's /sys and GPUs.
fn agent(sim: &SimProcess, args: &[&str], token: &str) -> Output {
    let tree = sim.node_state.join("gpu-a");
    Command::new(agent_bin())
        .args(args)
        .arg("--inventory")
        .arg(&sim.inventory)
        .args(["--node", "gpu-a", "--interval-ms", "20", "--sysfs-root"])
        .arg(tree.join("sysfs"))
        .arg("--gpu-snapshot")
        .arg(tree.join("gpus.json"))
        .env("LIFELINE_TOKEN", token)
        .env_remove("LIFELINE_TOKEN_FILE")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn agent_faults(sim: &SimProcess, state: &str) -> Vec<Value> {
    let o = sim.lifeline(&["fault", "list", "--state", state, "--json"]);
    assert!(o.status.success(), "{}", output_text(&o));
    output_json(&o).as_array().unwrap().iter().filter(|f| f["kind"] == "agent-report").cloned().collect()
}

#[test]
fn watch_posts_reports_and_a_failing_node_becomes_a_fault() {
    let sim = gpu_node_sim(28000);
    add_user(&sim, "bot", "operator", "agent password 1");
    let tok = token(&sim, "bot");
    let srv = Server::start(&sim);
    let url = format!("http://{}", srv.addr);

    let o = agent(&sim, &["watch", "--server", &url, "--interval", "1s", "--count", "1"], &tok);
    assert!(o.status.success(), "{}", output_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("gpu-a pass (0 failing) posted"),
        "{}",
        output_text(&o)
    );
    assert!(agent_faults(&sim, "open").is_empty());

    sim.fault("gpu-a", "gpu-ecc=5");
    let o = agent(&sim, &["watch", "--server", &url, "--interval", "1s", "--count", "2"], &tok);
    assert!(o.status.success(), "{}", output_text(&o));
    let open = agent_faults(&sim, "open");
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0]["device"], "gpu-a");
    assert_eq!(open[0]["count"], 2, "two failing reports bump one record: {open:?}");

    // Passing again resolves it.
    sim.fault("gpu-a", "clear");
    let o = agent(&sim, &["watch", "--server", &url, "--interval", "1s", "--count", "1"], &tok);
    assert!(o.status.success(), "{}", output_text(&o));
    assert!(agent_faults(&sim, "open").is_empty());
    assert_eq!(agent_faults(&sim, "resolved").len(), 1);

    // A bad token is refused by the server and said so; the agent keeps its exit code for the checks.
    let o = agent(&sim, &["watch", "--server", &url, "--interval", "1s", "--count", "1"], "nope");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("not posted: the server answered HTTP 401"),
        "{}",
        output_text(&o)
    );
    // No token at all: a usage error before any check runs.
    let mut c = Command::new(agent_bin());
    let o = c
        .args(["watch", "--server", &url, "--policy", "/dev/null"])
        .env_remove("LIFELINE_TOKEN")
        .env_remove("LIFELINE_TOKEN_FILE")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("LIFELINE_TOKEN"), "{}", output_text(&o));
}

/// A stand-in `scontrol` that keeps one node's state in a file and logs every call: the agent's side of
/// the NHC contract (what it asks Slurm, and when). `crates/readmit` covers real Slurm's replies.
fn fake_scontrol(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("scontrol");
    let state = dir.join("state");
    let log = dir.join("calls");
    std::fs::write(&state, "State=IDLE Reason=(null)").unwrap();
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\necho \"$*\" >> {log}\ncase \"$1\" in\n\
             show) echo \"NodeName=gpu-a Arch=x86_64 $(cat {state})\" ;;\n\
             update) case \"$3\" in\n  state=drain) echo \"State=IDLE+DRAIN Reason=${{4#reason=}}\" > {state} ;;\n\
               state=resume) echo 'State=IDLE Reason=(null)' > {state} ;;\n  esac ;;\nesac\n",
            log = log.display(),
            state = state.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

#[test]
fn health_check_drains_a_failing_node_and_resumes_only_its_own_drain() {
    let sim = gpu_node_sim(28500);
    add_user(&sim, "bot", "operator", "agent password 1");
    let tok = token(&sim, "bot");
    let srv = Server::start(&sim);
    let url = format!("http://{}", srv.addr);
    let dir = tempfile::tempdir().unwrap();
    let sc = fake_scontrol(dir.path());
    let sc = sc.to_str().unwrap();
    let calls = || std::fs::read_to_string(dir.path().join("calls")).unwrap_or_default();

    let o = agent(&sim, &["health-check", "--scontrol", sc, "--server", &url], &tok);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(!calls().contains("update"), "a healthy node is left alone: {}", calls());

    sim.fault("gpu-a", "gpu-ecc=5");
    let o = agent(&sim, &["health-check", "--scontrol", sc, "--server", &url], &tok);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    let c = calls();
    assert!(c.contains("update nodename=gpu-a state=drain reason=lifeline: "), "{c}");
    assert_eq!(agent_faults(&sim, "open").len(), 1, "posted too");
    // Still failing: already drained, no second drain.
    let o = agent(&sim, &["health-check", "--scontrol", sc], &tok);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(calls().matches("state=drain").count(), 1, "{}", calls());

    sim.fault("gpu-a", "clear");
    let o = agent(&sim, &["health-check", "--scontrol", sc], &tok);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(calls().contains("update nodename=gpu-a state=resume"), "{}", calls());

    // An admin's drain is not ours to lift.
    std::fs::write(dir.path().join("state"), "State=IDLE+DRAIN Reason=admin: bad DIMM [ops@x]").unwrap();
    let o = agent(&sim, &["health-check", "--scontrol", sc], &tok);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(calls().matches("state=resume").count(), 1, "{}", calls());
}

/// Over HTTPS (the server's default, self-signed): the agent pins the fingerprint `lifeline serve`
/// prints, and refuses a server whose certificate does not match it.
#[test]
fn watch_posts_over_https_pinned_by_fingerprint() {
    use std::io::BufRead;
    let sim = gpu_node_sim(28700);
    add_user(&sim, "bot", "operator", "agent password 1");
    let tok = token(&sim, "bot");
    let cfg = sim.dir.path().join("lifeline.toml");
    std::fs::write(&cfg, "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(lifeline_test_utils::lifeline_bin())
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--config"])
        .arg(&cfg)
        .arg("--inventory")
        .arg(&sim.inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .envs(common::ENV.iter().copied())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut srv = Server { child, addr: format!("127.0.0.1:{port}") };
    let mut lines = std::io::BufReader::new(srv.child.stdout.take().unwrap()).lines();
    let fp = lines
        .by_ref()
        .take(5)
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("certificate: ").map(|r| r.split_whitespace().next().unwrap().to_owned())
        })
        .expect("lifeline serve prints its certificate's fingerprint");
    let url = format!("https://127.0.0.1:{port}");
    let watch = |fp: &str| {
        agent(
            &sim,
            &["watch", "--server", &url, "--server-fingerprint", fp, "--interval", "1s", "--count", "1"],
            &tok,
        )
    };
    let o = watch(&fp);
    assert!(o.status.success(), "{}", output_text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("pass (0 failing) posted"), "{}", output_text(&o));
    let wrong = format!("sha256:{}", "00:".repeat(31) + "00");
    let o = watch(&wrong);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("not posted") && out.contains("does not match the pinned fingerprint"),
        "{}",
        output_text(&o)
    );
}
