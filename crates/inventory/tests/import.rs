//! `inventory import`: CSV and slurm.conf sources merged into a new inventory and into the example one.
//! The merged text must pass the inventory checker, match its expected file, and a second import of the
//! same source must change nothing. Hostlist expansion is checked against Slurm's own `scontrol`.

use std::path::{Path, PathBuf};

use lifeline_inventory::import::{self, Options, hostlist, slurm};
use lifeline_inventory::{Severity, check_str};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import").join(name)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn example() -> String {
    read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../inventory/example-cluster.toml"))
}

fn errors(text: &str) -> Vec<String> {
    check_str(Path::new("merged.toml"), text)
        .diagnostics
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.to_string())
        .collect()
}

/// Compares with an expected file; `LIFELINE_BLESS=1` writes it.
fn expect_file(name: &str, got: &str) {
    let p = data(name);
    if std::env::var_os("LIFELINE_BLESS").is_some() {
        std::fs::write(&p, got).unwrap();
    }
    assert_eq!(got, read(&p), "{name} differs (LIFELINE_BLESS=1 rewrites it after review)");
}

fn csv_devices() -> Vec<import::Imported> {
    let (devs, problems) = import::csv::parse(&read(&data("fleet.csv")));
    assert!(problems.is_empty(), "{problems:?}");
    devs
}

#[test]
fn csv_makes_a_new_inventory_that_passes_the_check() {
    let devs = csv_devices();
    let m = import::merge(None, &devs, &Options { cluster: "fleet".into(), ..Options::default() }).unwrap();
    assert_eq!(errors(&m.text), Vec::<String>::new(), "{}", m.text);
    assert_eq!(m.added.len(), 6);
    assert_eq!(m.racks_added, ["a01", "b01"]);
    expect_file("fleet.expected.toml", &m.text);
    let inv = check_str(Path::new("x"), &m.text).inventory.expect("valid");
    let a03 = inv.device("gpu-a03").unwrap();
    assert_eq!(a03.bmc.as_ref().unwrap().port, Some(8443));
    assert_eq!(a03.groups, ["training", "pod-a"]);
    assert_eq!(a03.description.as_deref(), Some("spare PSU, see ticket 4411"));
    assert_eq!(inv.device("store-01").unwrap().bmc.as_ref().unwrap().address.to_string(), "fd00:250::21");
    let subnets: Vec<String> = inv.cluster.oob_subnets.iter().map(|n| n.to_string()).collect();
    assert_eq!(
        subnets,
        ["10.250.0.0/23", "10.250.2.0/24", "fd00:250::/64"],
        "the /24s of the BMCs, aggregated"
    );

    // The same source again changes nothing.
    let again = import::merge(Some(&m.text), &devs, &Options::default()).unwrap();
    assert_eq!(again.text, m.text);
    assert_eq!((again.added.len(), again.updated.len(), again.unchanged), (0, 0, 6));
    assert_eq!(import::diff(&m.text, &again.text, "fleet.toml"), "");
}

#[test]
fn csv_into_the_example_changes_only_what_the_source_says() {
    let base = example();
    let text = "name,bmc,protocol,role,rack\n\
                gpu-node-01,127.10.1.1,redfish,gpu-node,r01\n\
                gpu-node-02,127.10.1.99,redfish,gpu-node,r01\n\
                gpu-node-09,127.10.1.9,ipmi,gpu-node,r03\n";
    let (devs, problems) = import::csv::parse(text);
    assert!(problems.is_empty(), "{problems:?}");
    let m =
        import::merge(Some(&base), &devs, &Options { site: "sim-dc1".into(), ..Options::default() }).unwrap();
    assert_eq!(m.added, ["gpu-node-09"]);
    assert_eq!(m.updated, ["gpu-node-02"]);
    assert_eq!(m.unchanged, 1);
    assert_eq!(m.racks_added, ["r03"]);
    assert!(m.not_in_source.contains(&"backend-leaf-01".to_string()), "{:?}", m.not_in_source);
    // gpu-node-09 has no [device.gpus]: a warning, not an error.
    assert_eq!(errors(&m.text), Vec::<String>::new());
    let d = import::diff(&base, &m.text, "example-cluster.toml");
    let changed: Vec<&str> = d
        .lines()
        .filter(|l| {
            (l.starts_with('+') || l.starts_with('-')) && !l.starts_with("+++") && !l.starts_with("---")
        })
        .collect();
    assert!(changed.iter().any(|l| l.starts_with("-bmc = { address = \"127.10.1.2\"")), "{d}");
    assert!(changed.iter().any(|l| l.starts_with("+bmc = { address = \"127.10.1.99\"")), "{d}");
    assert!(changed.contains(&"+name = \"gpu-node-09\""), "{d}");
    assert!(changed.contains(&"+name = \"r03\""), "{d}");
    // Nothing else of the file moved: credentials, rails, comments and the other devices are as written.
    let removed = changed.iter().filter(|l| l.starts_with('-')).count();
    assert_eq!(removed, 1, "{d}");
    assert!(m.text.contains("credential = \"env:LIFELINE_BMC_PASSWORD\""));
    assert!(m.text.starts_with("# Example cluster"));
}

#[test]
fn slurm_conf_into_the_example_adds_features_and_new_gpu_nodes() {
    let (nodes, problems) = slurm::parse(&read(&data("slurm.conf")));
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(nodes.len(), 11);
    let gpu = slurm::gpu_nodes(&nodes);
    assert_eq!(gpu.len(), 10, "login-01 has no GPU gres");
    let opts =
        Options { rack: "r02".into(), bmc_host: Some("{name}-bmc.oob.example".into()), ..Options::default() };
    let m = import::merge(Some(&example()), &gpu, &opts).unwrap();
    assert_eq!(m.added, ["gpu-node-09", "gpu-node-10"]);
    assert_eq!(m.updated.len(), 8, "features h100 and ib join the local groups");
    let errs = errors(&m.text);
    assert_eq!(errs, Vec::<String>::new());
    let inv = check_str(Path::new("x"), &m.text).inventory.unwrap();
    let n1 = inv.device("gpu-node-01").unwrap();
    assert_eq!(n1.groups, ["training", "pod-1", "h100", "ib"]);
    assert_eq!(
        n1.gpus.as_ref().unwrap().model.as_deref(),
        Some("NVIDIA H100 80GB HBM3"),
        "the specific name stays"
    );
    assert_eq!(n1.backend_rails().count(), 8, "rails are not the source's to drop");
    let n9 = inv.device("gpu-node-09").unwrap();
    assert_eq!(n9.bmc.as_ref().unwrap().address.to_string(), "gpu-node-09-bmc.oob.example");
    assert_eq!(n9.gpus.as_ref().unwrap().count, 8);
    assert_eq!(n9.frontend.as_ref().unwrap().address.as_ref().unwrap().to_string(), "127.20.0.9");
    // Twice is once.
    let again = import::merge(Some(&m.text), &gpu, &opts).unwrap();
    assert_eq!(again.text, m.text);
}

/// `scontrol show hostnames` of the Slurm in `shared/peers` (needs only its slurm.conf, not a running
/// slurmctld). Skips loudly without it; `OOB_PEERS_REQUIRED=1` makes that a failure.
fn scontrol() -> Option<impl Fn(&str) -> Vec<String>> {
    let run = std::env::var("OOB_PEERS_RUN").unwrap_or_else(|_| "/tmp/oob-peers".into());
    let conf = PathBuf::from(format!("{run}/slurm/slurm.conf"));
    let have = conf.exists()
        && std::process::Command::new("scontrol")
            .arg("--version")
            .env("SLURM_CONF", &conf)
            .output()
            .is_ok_and(|o| o.status.success());
    if !have {
        if std::env::var("OOB_PEERS_REQUIRED").as_deref() == Ok("1") {
            panic!("slurm peer required but scontrol or {} is missing", conf.display());
        }
        eprintln!("SKIP: no Slurm peer (scontrol and {}; run shared/peers/start-slurm.sh)", conf.display());
        return None;
    }
    Some(move |expr: &str| {
        let out = std::process::Command::new("scontrol")
            .args(["show", "hostnames", expr])
            .env("SLURM_CONF", &conf)
            .output()
            .expect("scontrol runs");
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
    })
}

#[test]
fn hostlists_expand_as_scontrol_does() {
    let Some(scontrol) = scontrol() else { return };
    let mut exprs: Vec<String> = [
        "gpu[01-16]",
        "n[1-3,7],login01",
        "rack[1-2]-node[08-11]",
        "n[098-101]",
        "a[0-1]b[00-02]c",
        "x1,x2,x[3-4]",
        "gpu-node-[01-08]",
        "dgx[001-004,010]",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // And some generated ones: prefixes, paddings, lists and products.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    };
    for _ in 0..40 {
        let parts = 1 + next(3);
        let mut e = String::new();
        for p in 0..parts {
            let lo = next(120);
            let hi = lo + next(12);
            let w = 1 + next(3) as usize;
            e.push_str(["n", "-r", "gpu"][p as usize % 3]);
            if next(2) == 0 {
                e.push_str(&format!("[{lo:0w$}-{hi},{}]", hi + 2 + next(5)));
            } else {
                e.push_str(&format!("[{lo:0w$}-{hi}]"));
            }
        }
        exprs.push(e);
    }
    // An expression this Slurm rejects ("Invalid hostlist", no output: 22.05 takes no text after a second
    // bracket) is not compared; ours may accept more, never expand differently.
    let mut compared = 0;
    for e in &exprs {
        let theirs = scontrol(e);
        if theirs.is_empty() {
            eprintln!("scontrol rejects `{e}`: not compared");
            continue;
        }
        // The same names; with three brackets or more Slurm 22.05 lists them in another order (the first
        // bracket varies before the middle ones), which an inventory does not depend on.
        let mut ours = hostlist::expand(e).unwrap();
        let mut theirs = theirs;
        if e.matches('[').count() >= 3 {
            ours.sort();
            theirs.sort();
        }
        assert_eq!(ours, theirs, "`{e}`");
        compared += 1;
    }
    assert!(compared >= 40, "only {compared} of {} expressions compared", exprs.len());
}

#[test]
fn the_slurm_peers_own_conf_gives_its_gpu_nodes() {
    let run = std::env::var("OOB_PEERS_RUN").unwrap_or_else(|_| "/tmp/oob-peers".into());
    let Ok(text) = std::fs::read_to_string(format!("{run}/slurm/slurm.conf")) else {
        assert_ne!(std::env::var("OOB_PEERS_REQUIRED").as_deref(), Ok("1"), "slurm peer required");
        eprintln!("SKIP: no {run}/slurm/slurm.conf (run shared/peers/start-slurm.sh)");
        return;
    };
    let (nodes, problems) = slurm::parse(&text);
    assert!(problems.is_empty(), "{problems:?}");
    // start-slurm.sh writes one NodeName line per slurmd it starts (endpoints.txt lists them).
    let endpoints = read(Path::new(&format!("{run}/slurm/endpoints.txt")));
    let slurmds: Vec<&str> = endpoints
        .lines()
        .filter(|l| l.starts_with("slurmd "))
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, slurmds);
    assert!(nodes.iter().all(|n| n.gpus == 8 && n.gpu_model.as_deref() == Some("h100")), "{nodes:?}");
}
