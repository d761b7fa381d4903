//! The `lifeline` binary over captured vendor trees replayed by `lifeline sim` (`flavor = "replay"`,
//! `tree = PATH` in the inventory): `health`, `sel`, `sweep`, `bmc info --gpus`, `power status` and a
//! confirmed `power cycle`, as an operator types them, with what they must say computed from the tree's own
//! files (an oracle reading the JSON directly, not through Lifeline).
//!
//! The trees are third-party data kept outside the repository (docs/redfish-corpus.md): found through
//! `LIFELINE_REDFISH_CORPUS` (or `../shared/redfish-corpus`, `../redfish-corpus`); without them the test
//! prints `SKIP:`, and fails with `LIFELINE_REDFISH_CORPUS_REQUIRED=1`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lifeline_test_utils::redfish_tree::{doc, link, members, node_system, norm};
use lifeline_test_utils::{SimProcess, output_json, output_text};
use serde_json::Value;

/// HPE iLO 5 (DL325: logs oldest first, 17 Critical IML entries), HPE iLO 5 with an HGX A100 board (GPUs as
/// iLO devices), Supermicro X10 (absent DIMM sensors), Dell iDRAC 9 (an absent PSU the BMC calls Critical,
/// its FaultList) and an NVIDIA GB300 tray (two systems, the GPUs on `HGX_Baseboard_0`).
const TREES: [&str; 5] = [
    "hpe-ilo5-dl325-gen10plus",
    "hpe-ilo5-xl675d-a100",
    "supermicro-x10sdv",
    "dell-idrac9-xr8620t",
    "nvidia-gb300-node2",
];

fn corpus_dir() -> Option<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = std::env::var_os("LIFELINE_REDFISH_CORPUS")
        .map(PathBuf::from)
        .into_iter()
        .chain([here.join("../../shared/redfish-corpus"), here.join("../../redfish-corpus")])
        .find(|c| TREES.iter().all(|t| c.join(format!("{t}.tar.gz")).is_file()));
    if found.is_none() {
        let why = format!(
            "Redfish capture corpus with {} not found (set LIFELINE_REDFISH_CORPUS to the folder of its .tar.gz trees)",
            TREES.join(", ")
        );
        if std::env::var("LIFELINE_REDFISH_CORPUS_REQUIRED").is_ok_and(|v| v == "1") {
            panic!("{why}");
        }
        eprintln!("SKIP: {why}");
    }
    found
}

/// What the tree says: its systems, the first system's power state, its GPUs with their health (`ok`,
/// `warning`, `critical`, `unknown`), and, for the logs Lifeline names, the newest entry and every
/// unresolved Critical one.
struct Truth {
    systems: Vec<String>,
    power: String,
    gpus: BTreeMap<String, String>,
}

fn health_word(v: &Value) -> String {
    match v.pointer("/Status/Health").and_then(Value::as_str) {
        Some("OK") => "ok",
        Some("Warning") => "warning",
        Some("Critical") => "critical",
        _ => "unknown",
    }
    .to_owned()
}

fn truth(root: &Path) -> Truth {
    let systems: Vec<(String, Value)> = members(root, "/redfish/v1/Systems");
    let power = systems[0].1.get("PowerState").and_then(Value::as_str).unwrap_or("").to_lowercase();
    let mut gpus = BTreeMap::new();
    // The target's system and the GPU baseboards listed as systems of their own (NVIDIA HGX/GB firmware).
    let node = systems.iter().enumerate().filter(|(i, (id, _))| node_system(*i, id));
    for (_, (_, sys)) in node {
        for (id, p) in link(sys, "Processors").map(|l| members(root, &l)).unwrap_or_default() {
            if p.get("ProcessorType").and_then(Value::as_str) == Some("GPU") {
                gpus.insert(norm(&id), health_word(&p));
            }
        }
    }
    for (_, c) in members(root, "/redfish/v1/Chassis") {
        if let Some(devices) = c.pointer("/Oem/Hpe/Links/Devices/@odata.id").and_then(Value::as_str) {
            for (id, d) in members(root, devices) {
                if d.get("DeviceType").and_then(Value::as_str) == Some("GPU") {
                    gpus.insert(norm(&id), health_word(&d));
                }
            }
        }
    }
    Truth { systems: systems.into_iter().map(|(id, _)| norm(&id)).collect(), power, gpus }
}

/// Newest entry (id) and the unresolved Critical entries (log path, id) of the logs at `paths`.
fn log_truth(root: &Path, paths: &[String]) -> (Option<String>, Vec<(String, String)>) {
    let mut newest: Option<(chrono::DateTime<chrono::Utc>, u64, String)> = None;
    let mut critical = Vec::new();
    for l in paths {
        let entries =
            doc(root, l).and_then(|s| link(&s, "Entries")).map(|e| members(root, &e)).unwrap_or_default();
        for (path, e) in entries {
            let id = e.get("Id").and_then(Value::as_str).map(str::to_owned).unwrap_or(path);
            let time = e
                .get("Created")
                .and_then(Value::as_str)
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t.trim()).ok())
                .map(|t| t.with_timezone(&chrono::Utc));
            if let Some(t) = time {
                let key = (t, id.parse::<u64>().unwrap_or(0), id.clone());
                if newest.as_ref().is_none_or(|n| key > *n) {
                    newest = Some(key);
                }
            }
            let resolved = e.get("Resolved").and_then(Value::as_bool) == Some(true)
                || e.pointer("/Oem/Hpe/Repaired").and_then(Value::as_bool) == Some(true);
            if e.get("Severity").and_then(Value::as_str) == Some("Critical") && !resolved {
                critical.push((norm(l), id));
            }
        }
    }
    critical.sort();
    (newest.map(|n| n.2), critical)
}

fn inventory(corpus: &Path, dir: &Path) -> String {
    let mut t = String::from(
        "[cluster]\nname = \"replay\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    for name in TREES {
        let st = std::process::Command::new("tar")
            .arg("-xzf")
            .arg(corpus.join(format!("{name}.tar.gz")))
            .arg("-C")
            .arg(dir)
            .status()
            .expect("run tar");
        assert!(st.success(), "unpacking {name}");
        let ip = lifeline_test_utils::unique_loopback();
        // `tree` is relative to the inventory file's folder.
        t.push_str(&format!(
            "\n[[device]]\nname = \"{name}\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{ip}\", port = {}, protocol = \"redfish\", flavor = \"replay\", tree = \"{name}\" }}\n",
            443 + OFFSET
        ));
    }
    t
}

const OFFSET: u16 = 23000;

fn rows_by(v: &Value, key: &str) -> BTreeMap<String, Value> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v:#}"))
        .iter()
        .map(|r| (r[key].as_str().unwrap_or_default().to_owned(), r.clone()))
        .collect()
}

#[test]
fn every_verb_over_replayed_vendor_trees_says_what_the_trees_hold() {
    let Some(corpus) = corpus_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let inv = dir.path().join("inventory.toml");
    std::fs::write(&inv, inventory(&corpus, dir.path())).unwrap();
    let sim = SimProcess::start_file(&inv, OFFSET, &[("LIFELINE_BMC_PASSWORD", "password")]);
    let run = |args: &[&str]| {
        let t0 = std::time::Instant::now();
        let o = sim.lifeline(args);
        eprintln!("lifeline {} ({:.1} s)", args.join(" "), t0.elapsed().as_secs_f64());
        assert!(o.status.code().is_some_and(|c| c <= 1), "{args:?}: {}", output_text(&o));
        o
    };
    let truths: BTreeMap<&str, Truth> = TREES.iter().map(|t| (*t, truth(&dir.path().join(t)))).collect();

    // health: every system listed, a verdict with its reasons, never `unknown`.
    let o = run(&["health", "all", "--json"]);
    let health = rows_by(&output_json(&o), "bmc");
    // sel: the newest entry is the tree's newest; every Critical entry is in `critical`.
    let sel = rows_by(&output_json(&run(&["sel", "all", "--json", "--newest", "5"])), "bmc");
    // sweep: the words of health for what it reads, and health's verdict where the parts below the system
    // (which a sweep does not walk) add nothing.
    let sweep = rows_by(&output_json(&run(&["sweep", "all", "--json"])), "name");
    // bmc info --gpus: every GPU with its health.
    let gpus = rows_by(&output_json(&run(&["bmc", "info", "all", "--gpus", "--json"])), "target");
    let power = rows_by(&output_json(&run(&["power", "status", "all", "--json"])), "bmc");
    for name in TREES {
        let t = &truths[name];
        let root = dir.path().join(name);
        let h = &health[name];
        let listed: Vec<String> =
            h["systems"].as_array().unwrap().iter().map(|s| norm(s.as_str().unwrap())).collect();
        assert_eq!(listed, t.systems, "{name}: systems {h:#}");
        let verdict = h["health"].as_str().unwrap();
        assert_ne!(verdict, "unknown", "{name}: {h:#}");
        assert_eq!(verdict == "ok", h["reasons"].as_array().unwrap().is_empty(), "{name}: {h:#}");

        let s = &sel[name];
        let paths: Vec<String> = s["logs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l["path"].as_str().map(str::to_owned))
            .collect();
        let (newest, critical) = log_truth(&root, &paths);
        assert_eq!(s["entries"][0]["id"].as_str().map(str::to_owned), newest, "{name}: newest entry {s:#}");
        let log_path = |label: &Value| {
            s["logs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["id"] == *label)
                .and_then(|l| l["path"].as_str())
                .map(norm)
        };
        let mut shown: Vec<(String, String)> = s["critical"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| (log_path(&e["log"]).unwrap_or_default(), e["id"].as_str().unwrap().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        shown.sort();
        assert_eq!(shown, critical, "{name}: Critical entries");

        let w = &sweep[name];
        let none = |k: &str| h[k].as_array().is_none_or(|a| a.is_empty());
        if none("components") && none("conditions") {
            assert_eq!(w["health"].as_str(), Some(verdict), "{name}: sweep {w:#} health {h:#}");
        }
        let reasons: Vec<&Value> = h["reasons"].as_array().unwrap().iter().collect();
        for a in w["alerts"].as_array().unwrap() {
            let own = a.as_str().unwrap().starts_with("the BMC's own rollup");
            assert!(
                own || reasons.contains(&a),
                "{name}: sweep alert {a} not among health's reasons {reasons:?}"
            );
        }

        let listed: BTreeMap<String, String> = gpus[name]["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| (norm(g["resource"].as_str().unwrap()), g["health"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            listed, t.gpus,
            "{name}: GPUs (NVSwitches and baseboards an iLO lists as GPU devices too)"
        );

        assert_eq!(power[name]["power"].as_str(), Some(t.power.as_str()), "{name}: power {:#}", power[name]);
        eprintln!(
            "{name}: health {verdict} ({} reasons), {} systems, {} GPUs, newest entry {newest:?}, {} Critical entries",
            reasons.len(),
            t.systems.len(),
            t.gpus.len(),
            critical.len()
        );
    }

    // Each GPU's logged driver events (`bmc info --gpus`) are those of its own XID log where the tree has one
    // (NVIDIA GB300: `Chassis/HGX_GPU_N/LogServices/XID`, the entries its baseboard's event log holds too),
    // and `health` says them in words.
    let mut checked = 0;
    for name in TREES {
        let root = dir.path().join(name);
        for g in gpus[name]["gpus"].as_array().unwrap() {
            let resource = g["resource"].as_str().unwrap();
            let Some(chassis) = doc(&root, resource).and_then(|p| link(&p, "Links/Chassis")) else {
                continue;
            };
            let own = members(&root, &format!("{chassis}/LogServices/XID/Entries"));
            if own.is_empty() {
                continue;
            }
            let mut want: BTreeMap<u64, u64> = BTreeMap::new();
            for (_, e) in own {
                let words: Vec<&str> = e["Message"].as_str().unwrap_or("").split_whitespace().collect();
                let n = words.windows(2).find(|w| w[0] == "XID").and_then(|w| w[1].parse().ok());
                *want.entry(n.expect("an XID in the entry")).or_default() += 1;
            }
            let logged: BTreeMap<u64, u64> = g["logged_events"]
                .as_array()
                .map(|a| {
                    a.iter().map(|t| (t["number"].as_u64().unwrap(), t["count"].as_u64().unwrap())).collect()
                })
                .unwrap_or_default();
            assert_eq!(logged, want, "{name}: {resource}: logged driver events {g:#}");
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "the GB300 tray's four GPUs have XID logs");
    let text = output_text(&run(&["health", "nvidia-gb300-node2"]));
    assert!(
        text.contains(
            "gpu GPU_0: ok; logged XID 45 ×92, XID 149 ×70, XID 94 ×15, XID 145 ×14, XID 137 ×9 \
             (newest XID 149 at 2026-07-08T18:32:27+00:00)"
        ),
        "{text}"
    );

    // A confirmed power cycle of each, with the ResetTypes its tree offers; the host's power-on is then the
    // newest entry of its log, and the verdict is what it was.
    for name in TREES {
        let o = run(&["power", "cycle", name, "--yes", "--json"]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", output_text(&o));
        let v = output_json(&o);
        assert_eq!(
            (v[0]["confirmed"].as_bool(), v[0]["observed"].as_str()),
            (Some(true), Some("on")),
            "{name}: {v:#}"
        );
        let s = output_json(&run(&["sel", name, "--json", "--newest", "1"]));
        let paths: Vec<String> = s[0]["logs"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| l["path"].as_str().map(str::to_owned))
            .collect();
        let (before, _) = log_truth(&dir.path().join(name), &paths);
        assert_ne!(
            s[0]["entries"][0]["id"].as_str().map(str::to_owned),
            before,
            "{name}: the power-on is newest: {s:#}"
        );
        let h = output_json(&run(&["health", name, "--json"]));
        assert_eq!(h[0]["health"], health[name]["health"], "{name}: verdict after the cycle");
    }
}
