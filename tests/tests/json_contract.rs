//! The `--json` output is a contract: scripts and dashboards read it. Each verb's output is reduced to its
//! shape (every key, and the JSON type of every value; arrays merged over their elements) and pinned by a
//! snapshot, so renaming, removing or retyping a field fails here. Adding a field changes the snapshot too,
//! on purpose: the reviewer accepts it (`cargo insta review`) as the compatible change it is. The rule is in
//! docs/cli.md ("The `--json` contract").
//!
//! Run against `lifeline sim` (a Redfish and an IPMI node on loopback), as an operator's script would.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use lifeline_test_utils::{SimProcess, output_json, unique_loopback};
use serde_json::{Map, Value};

fn inventory(ips: &[Ipv4Addr], offset: u16) -> String {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    for (i, ip) in ips.iter().enumerate() {
        let (proto, port) = if i == 0 { ("redfish", 443 + offset) } else { ("ipmi", 623 + offset) };
        t.push_str(&format!(
            "\n[[device]]\nname = \"n{}\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{ip}\", port = {port}, protocol = \"{proto}\" }}\n\
             gpus = {{ count = 8, model = \"NVIDIA H100 80GB HBM3\" }}\n",
            i + 1
        ));
    }
    t
}

/// The JSON type of a scalar, or the merged shape of a container.
fn shape(v: &Value) -> Value {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(items) => {
            let merged = items.iter().map(shape).reduce(|a, b| merge(&a, &b));
            Value::Array(merged.into_iter().collect())
        }
        Value::Object(m) => {
            // An audit row's `detail` is the action's own record, free-form by design: only its presence
            // is the contract.
            let field =
                |k: &str, v: &Value| if k == "detail" && v.is_object() { "object".into() } else { shape(v) };
            let sorted: BTreeMap<&String, Value> = m.iter().map(|(k, v)| (k, field(k, v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
    }
}

/// Two shapes as one: objects by key (a key missing from one side is `?`-optional), arrays by element,
/// differing types as `a|b`.
fn merge(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut out = Map::new();
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let v = match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => merge(p, q),
                    (Some(p), None) | (None, Some(p)) => optional(p),
                    (None, None) => unreachable!(),
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        (Value::Array(x), Value::Array(y)) => match (x.first(), y.first()) {
            (Some(p), Some(q)) => Value::Array(vec![merge(p, q)]),
            (Some(p), None) | (None, Some(p)) => Value::Array(vec![p.clone()]),
            (None, None) => Value::Array(vec![]),
        },
        (Value::String(p), Value::String(q)) if p == q => a.clone(),
        _ => {
            let mut kinds: Vec<String> = [a, b]
                .iter()
                .flat_map(|v| {
                    v.as_str()
                        .map(|s| s.split('|').map(str::to_owned).collect())
                        .unwrap_or_else(|| vec![v.to_string()])
                })
                .collect();
            kinds.sort();
            kinds.dedup();
            kinds.join("|").into()
        }
    }
}

fn optional(v: &Value) -> Value {
    match v {
        Value::String(s) if s.ends_with('?') => v.clone(),
        Value::String(s) => format!("{s}?").into(),
        other => other.clone(),
    }
}

#[test]
fn json_output_shapes_are_stable() {
    let ips = [unique_loopback(), unique_loopback()];
    let sim = SimProcess::start(&inventory(&ips, 21000), 21000, &[("LIFELINE_BMC_PASSWORD", "s3cret-pw")]);
    let verbs: &[(&str, &[&str])] = &[
        ("power_status", &["power", "status", "all", "--json"]),
        ("power_on", &["power", "on", "n1", "--yes", "--json"]),
        ("health", &["health", "all", "--json"]),
        ("sel", &["sel", "n1", "--json"]),
        ("sweep", &["sweep", "--json"]),
        ("inventory_show", &["inventory", "show", "--json"]),
        ("audit_log", &["audit", "log", "--json"]),
        ("fault_list", &["fault", "list", "--json"]),
    ];
    for (name, args) in verbs {
        let o = sim.lifeline(args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "lifeline {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr)
        );
        insta::assert_json_snapshot!(*name, shape(&output_json(&o)));
    }
}
