//! A CSV of devices → imported devices. Columns (header row required, any order, names case-insensitive):
//!
//! | column | required | meaning |
//! |---|---|---|
//! | `name` | yes | device name |
//! | `bmc` | for servers | `HOST[:PORT]` (`[v6]:PORT` for IPv6) |
//! | `protocol` | no | `ipmi`, `redfish` or `auto` |
//! | `role` | yes | `gpu-node`, `head-node`, `storage-server` or `switch` |
//! | `rack` | yes | rack name (racks not in the inventory are added) |
//! | `site` | no | the rack's site (default: the importer's `--site`) |
//! | `model` | no | hardware model |
//! | `gpus` | no | GPU count |
//! | `gpu-model` | no | GPU model |
//! | `groups` | no | group names separated by spaces or `;` |
//! | `description` | no | free text |
//!
//! An unknown column is an error with the nearest known one, not a silently empty field.

use lifeline_types::{BmcProtocol, DeviceName, Role};

use super::{BmcAddr, ImportProblem, Imported};

pub const COLUMNS: &[&str] = &[
    "name",
    "bmc",
    "protocol",
    "role",
    "rack",
    "site",
    "model",
    "gpus",
    "gpu-model",
    "groups",
    "description",
];

/// Reads a CSV; every problem is reported with its line, and good rows are kept.
pub fn parse(text: &str) -> (Vec<Imported>, Vec<ImportProblem>) {
    let mut problems = Vec::new();
    let mut out = Vec::new();
    let mut reader =
        ::csv::ReaderBuilder::new().trim(::csv::Trim::All).flexible(false).from_reader(text.as_bytes());
    let headers: Vec<String> = match reader.headers() {
        Ok(h) => h.iter().map(|c| c.to_ascii_lowercase().replace('_', "-")).collect(),
        Err(e) => {
            problems.push(ImportProblem { line: 1, message: format!("header: {e}") });
            return (out, problems);
        }
    };
    for h in &headers {
        if !COLUMNS.contains(&h.as_str()) {
            let hint = crate::suggest::nearest(h, COLUMNS.iter().copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_else(|| format!(" (known: {})", COLUMNS.join(", ")));
            problems.push(ImportProblem { line: 1, message: format!("unknown column `{h}`{hint}") });
        }
    }
    for required in ["name", "role", "rack"] {
        if !headers.iter().any(|h| h == required) {
            problems.push(ImportProblem { line: 1, message: format!("missing column `{required}`") });
        }
    }
    if !problems.is_empty() {
        return (out, problems);
    }
    let col = |name: &str| headers.iter().position(|h| h == name);
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line() as usize);
                problems.push(ImportProblem { line, message: e.to_string() });
                continue;
            }
        };
        let line = record.position().map_or(0, |p| p.line() as usize);
        let get = |name: &str| col(name).and_then(|i| record.get(i)).filter(|v| !v.is_empty());
        let mut bad = |message: String| problems.push(ImportProblem { line, message });
        let name = get("name").unwrap_or("");
        if let Err(e) = DeviceName::new(name.to_owned()) {
            bad(format!("column `name`: {e}"));
            continue;
        }
        let role = match get("role").map(str::parse::<Role>) {
            Some(Ok(r)) => Some(r),
            Some(Err(e)) => {
                bad(format!("`{name}`: column `role`: {e}"));
                continue;
            }
            None => {
                bad(format!("`{name}`: column `role` is empty"));
                continue;
            }
        };
        let protocol = match get("protocol").map(str::parse::<BmcProtocol>) {
            Some(Ok(p)) => Some(p),
            Some(Err(e)) => {
                bad(format!("`{name}`: column `protocol`: {e}"));
                continue;
            }
            None => None,
        };
        let bmc = match get("bmc").map(BmcAddr::parse) {
            Some(Ok(b)) => Some(b),
            Some(Err(e)) => {
                bad(format!("`{name}`: column `bmc`: {e}"));
                continue;
            }
            None => None,
        };
        let gpus = match get("gpus").map(str::parse::<u32>) {
            Some(Ok(n)) => Some(n),
            Some(Err(_)) => {
                bad(format!("`{name}`: column `gpus` is not a count"));
                continue;
            }
            None => None,
        };
        let Some(rack) = get("rack") else {
            bad(format!("`{name}`: column `rack` is empty"));
            continue;
        };
        out.push(Imported {
            name: name.to_owned(),
            role,
            rack: Some(rack.to_owned()),
            site: get("site").map(str::to_owned),
            bmc,
            protocol,
            model: get("model").map(str::to_owned),
            gpus,
            gpu_model: get("gpu-model").map(str::to_owned),
            groups: get("groups")
                .map(|g| g.split([' ', ';']).filter(|s| !s.is_empty()).map(str::to_owned).collect())
                .unwrap_or_default(),
            description: get("description").map(str::to_owned),
            frontend: None,
            line,
        });
    }
    (out, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_header_and_every_problem_with_its_line() {
        let text = "name,bmc,protocol,role,rack\n\
                    gpu01,10.0.0.1,redfish,gpu-node,r1\n\
                    gpu02,10.0.0.2:8443,,gpu-node,r1\n\
                    gpu03,[fd00::3]:623,ipmi,gpu-node,r2\n\
                    gpu04,10.0.0.4,snmp,gpu-node,r2\n\
                    Bad Name,10.0.0.5,ipmi,gpu-node,r2\n\
                    gpu06,10.0.0.6:99999,ipmi,gpu-node,r2\n";
        let (devs, problems) = parse(text);
        assert_eq!(devs.len(), 3);
        assert_eq!(devs[1].bmc, Some(BmcAddr { host: "10.0.0.2".into(), port: Some(8443) }));
        assert_eq!(devs[2].bmc, Some(BmcAddr { host: "fd00::3".into(), port: Some(623) }));
        assert_eq!(devs[1].protocol, None);
        let lines: Vec<usize> = problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [5, 6, 7], "{problems:?}");
        assert!(problems[0].message.contains("protocol"), "{problems:?}");
        assert!(problems[2].message.contains("bmc"), "{problems:?}");
    }

    proptest::proptest! {
        /// Any text under the minimal header: rows or problems, never a panic.
        #[test]
        fn never_panics(body in "([a-z0-9:.\\[\\]\",-]{0,30}\n){0,5}") {
            let _ = parse(&format!("name,bmc,protocol,role,rack\n{body}"));
        }

        #[test]
        fn bmc_addresses_never_panic(s in "[0-9a-f:.\\[\\]]{0,24}") {
            let _ = BmcAddr::parse(&s);
        }
    }

    #[test]
    fn unknown_columns_get_a_suggestion() {
        let (devs, problems) = parse("name,bmc,protocl,role,rack,colour\n");
        assert!(devs.is_empty());
        assert_eq!(problems[0].message, "unknown column `protocl` (did you mean `protocol`?)");
        assert!(problems[1].message.starts_with("unknown column `colour` (known: name, bmc"), "{problems:?}");
    }
}
