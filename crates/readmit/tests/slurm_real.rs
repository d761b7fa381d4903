//! Against a REAL Slurm 22.05 (slurmctld + slurmd + slurmrestd from `shared/peers/start-slurm.sh`):
//! drain through Lifeline, refuse to touch an admin's drain, resume Lifeline's own drain only after a
//! passing report, and see `idle` in `sinfo`. One test function on purpose: one cluster per host, and the
//! scenarios share its nodes (gpu-node-03 for Lifeline's drain, gpu-node-04 for the admin's).

use std::process::Command;
use std::time::{Duration, Instant};

use lifeline_readmit::drain::parse_show_node;
use lifeline_readmit::slurm::{RestConfig, Slurm, SlurmConfig, SlurmError};
use lifeline_readmit::{Justification, Outcome};

fn peer_endpoints(kind: &str) -> Option<Vec<Vec<String>>> {
    let run = std::env::var("OOB_PEERS_RUN").unwrap_or_else(|_| "/tmp/oob-peers".into());
    match std::fs::read_to_string(format!("{run}/{kind}/endpoints.txt")) {
        Ok(s) => Some(
            s.lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
                .map(|l| l.split_whitespace().map(String::from).collect())
                .collect(),
        ),
        Err(_) if std::env::var("OOB_PEERS_REQUIRED").as_deref() == Ok("1") => {
            panic!("{kind} peer required but {run}/{kind}/endpoints.txt is missing")
        }
        Err(_) => {
            eprintln!("SKIP: no {kind} peer (run shared/peers/start-slurm.sh)");
            None
        }
    }
}

struct Cluster {
    conf: String,
    rest: Option<RestConfig>,
}

fn cluster() -> Option<Cluster> {
    let rows = peer_endpoints("slurm")?;
    let conf = rows.iter().find(|r| r[0] == "slurmctld")?.get(4)?.clone();
    let rest = rows.iter().find(|r| r[0] == "slurmrestd").map(|r| RestConfig {
        base_url: r[4].clone(),
        user: r[1].clone(),
        token: std::fs::read_to_string(&r[5]).unwrap().trim().to_owned(),
        timeout: Duration::from_secs(5),
    });
    Some(Cluster { conf, rest })
}

/// `sinfo` (a different Slurm client than ours) for one node: (state, reason).
fn sinfo(conf: &str, node: &str) -> (String, String) {
    let out = Command::new("sinfo")
        .env("SLURM_CONF", conf)
        .args(["-N", "-h", "-n", node, "-o", "%T|%E"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next().unwrap_or("").to_owned();
    let (s, r) = line.split_once('|').unwrap_or((&line, ""));
    (s.to_owned(), r.to_owned())
}

fn scontrol(conf: &str, args: &[&str]) -> bool {
    Command::new("scontrol").env("SLURM_CONF", conf).args(args).status().unwrap().success()
}

/// `scontrol ARGS` output.
fn scontrol_out(conf: &str, args: &[&str]) -> String {
    let o = Command::new("scontrol").env("SLURM_CONF", conf).args(args).output().unwrap();
    assert!(o.status.success(), "scontrol {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn wait_idle(conf: &str, node: &str) {
    let t = Instant::now();
    while sinfo(conf, node).0 != "idle" {
        assert!(t.elapsed() < Duration::from_secs(30), "{node} never idle: {:?}", sinfo(conf, node));
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn just(passed: bool) -> Justification {
    Justification {
        report_digest: format!("sha256:{}", if passed { "a".repeat(64) } else { "f".repeat(64) }),
        passed,
        summary: if passed { "69 checks passed".into() } else { "rail mlx5_3 down".into() },
    }
}

#[tokio::test]
async fn real_slurm_drain_and_resume_only_our_own() {
    let Some(c) = cluster() else { return };
    let (ours, admins) = ("gpu-node-03", "gpu-node-04");
    // Leftovers from an earlier run: start from idle nodes.
    for n in [ours, admins] {
        if sinfo(&c.conf, n).0.starts_with("drain") {
            scontrol(&c.conf, &["update", &format!("nodename={n}"), "state=resume"]);
        }
        wait_idle(&c.conf, n);
    }
    let mut cfg = SlurmConfig::new(&c.conf);
    cfg.rest = c.rest.clone();
    let rest = Slurm::new(cfg.clone());
    cfg.rest = None;
    let plain = Slurm::new(cfg);
    if c.rest.is_none() {
        eprintln!("note: no slurmrestd endpoint, REST reads not exercised");
    }

    // 1. Lifeline drains its node (the report that failed is named in the reason).
    let bad = just(false);
    let d = rest.drain(ours, "rail mlx5_3 down", &bad.report_digest).await.unwrap();
    assert_eq!(d.outcome, Outcome::Done, "{d:?}");
    assert_eq!(d.report_digest, bad.report_digest);
    let (state, reason) = sinfo(&c.conf, ours);
    assert_eq!(state, "drained");
    assert_eq!(reason, format!("lifeline: rail mlx5_3 down [report {}]", bad.report_digest));
    // Draining again changes nothing (the original reason and time are kept).
    let again = plain.drain(ours, "something else", &just(false).report_digest).await.unwrap();
    assert_eq!(again.outcome, Outcome::AlreadyDone);
    assert_eq!(sinfo(&c.conf, ours).1, reason);

    // 2. An admin's drain is never replaced and never resumed.
    assert!(scontrol(
        &c.conf,
        &["update", &format!("nodename={admins}"), "state=drain", "reason=admin: bad DIMM"]
    ));
    for s in [&rest, &plain] {
        let d = s.drain(admins, "rail down", &bad.report_digest).await.unwrap();
        assert_eq!(d.outcome, Outcome::RefusedForeignHold { holder: "admin: bad DIMM".into() });
        let d = s.resume(admins, &just(true)).await.unwrap();
        assert_eq!(d.outcome, Outcome::RefusedForeignHold { holder: "admin: bad DIMM".into() }, "{d:?}");
    }
    assert_eq!(sinfo(&c.conf, admins), ("drained".into(), "admin: bad DIMM".into()));

    // One rule for "ours", whichever layout real Slurm prints (lifeline-agent reads `-o`, the adapter
    // the multi-line one) and through slurmrestd.
    for (n, expect) in [(ours, true), (admins, false)] {
        let multi = parse_show_node(n, &scontrol_out(&c.conf, &["show", "node", n])).unwrap();
        let one = parse_show_node(n, &scontrol_out(&c.conf, &["show", "node", "-o", n])).unwrap();
        assert_eq!(multi, one, "{n}");
        assert_eq!(multi.drained_by_lifeline(), expect, "{n}: {multi:?}");
        let via_rest = rest.node(n).await.unwrap();
        assert_eq!((via_rest.drained_by_lifeline(), via_rest.reason), (expect, multi.reason), "{n}");
    }

    // 3. A failing report never resumes, even Lifeline's own drain.
    let d = rest.resume(ours, &just(false)).await.unwrap();
    assert_eq!(d.outcome, Outcome::RefusedReportNotPassing);
    assert_eq!(sinfo(&c.conf, ours).0, "drained");

    // 4. A passing report resumes Lifeline's drain; we return once Slurm says idle (not idle*).
    let good = just(true);
    let d = rest.resume(ours, &good).await.unwrap();
    assert_eq!(d.outcome, Outcome::Done, "{d:?}");
    assert_eq!(d.report_digest, good.report_digest);
    assert!(d.before.contains("drain") && d.after.starts_with("idle"), "{d:?}");
    assert_eq!(sinfo(&c.conf, ours), ("idle".into(), "none".into()));
    let d = plain.resume(ours, &good).await.unwrap();
    assert_eq!(d.outcome, Outcome::AlreadyDone);

    // 5. Unknown nodes are errors through both read paths.
    for s in [&rest, &plain] {
        assert!(matches!(s.node("gpu-node-99").await, Err(SlurmError::UnknownNode { .. })));
    }
    assert!(matches!(rest.drain(ours, "  lifeline:  ", "d").await, Err(SlurmError::EmptyReason)));

    // Clean up the admin's drain (the test's own setup, not Lifeline).
    assert!(scontrol(&c.conf, &["update", &format!("nodename={admins}"), "state=resume"]));
    wait_idle(&c.conf, admins);
}
