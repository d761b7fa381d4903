//! `lifeline inventory check|show|sync`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use lifeline_inventory::{Device, Inventory, Severity};
use serde_json::{Value, json};

use crate::args::{Global, InventoryCmd};
use crate::cmd::lifeline;
use crate::cmd::print_json;
use crate::exit::{CmdResult, Code, Exit};
use crate::outln;

pub async fn run(g: &Global, cmd: InventoryCmd) -> CmdResult {
    match cmd {
        InventoryCmd::Check { files, strict } => check(g, files, strict),
        InventoryCmd::Show => show(g),
        InventoryCmd::Sync => sync(g).await,
        InventoryCmd::Import(a) => crate::cmd::import::run(g, a).await,
        InventoryCmd::VerifyCabling => crate::cmd::cabling::run(g).await,
    }
}

fn check(g: &Global, files: Vec<PathBuf>, strict: bool) -> CmdResult {
    let files = if files.is_empty() {
        let l = lifeline(g)?;
        vec![l.paths.inventory(&l.config)?.to_path_buf()]
    } else {
        files
    };
    let mut failed = false;
    let mut json_out = Vec::new();
    for f in &files {
        let report = match lifeline_inventory::check_file(f) {
            Ok(r) => r,
            Err(e) => return Err(Exit::usage(e)),
        };
        let errors = report.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
        let warnings = report.diagnostics.len() - errors;
        let bad = errors > 0 || (strict && warnings > 0);
        failed |= bad;
        if g.json {
            json_out.push(json!({
                "file": f,
                "valid": !bad,
                "errors": errors,
                "warnings": warnings,
                "devices": report.inventory.as_ref().map(|i| i.devices.len()),
                "diagnostics": report.diagnostics,
            }));
        } else {
            for d in &report.diagnostics {
                outln!("{d}");
            }
            match &report.inventory {
                Some(inv) if !bad => {
                    outln!("{}: ok ({} devices, {} warning(s))", f.display(), inv.devices.len(), warnings)
                }
                _ => outln!("{}: {errors} error(s), {warnings} warning(s)", f.display()),
            }
        }
    }
    if g.json {
        print_json(&json_out)?;
    }
    Ok(if failed { Code::Failed } else { Code::Ok })
}

/// Loads the configured inventory, mapping "invalid" to exit 1 and "unreadable" to exit 2.
pub fn load(g: &Global) -> Result<std::sync::Arc<Inventory>, Exit> {
    Ok(lifeline(g)?.inventory()?)
}

fn show(g: &Global) -> CmdResult {
    let inv = load(g)?;
    if g.json {
        print_json(&tree_json(&inv))?;
        return Ok(Code::Ok);
    }
    let c = &inv.cluster;
    let subnets: Vec<String> = c.oob_subnets.iter().map(|s| s.to_string()).collect();
    outln!("cluster {} — OOB {}", c.name, subnets.join(", "));
    if let Some(d) = &c.description {
        outln!("  {d}");
    }
    for site in &inv.sites {
        outln!("site {}", site.name);
        for rack in inv.racks.iter().filter(|r| r.site == site.name) {
            let row = rack.row.as_deref().map(|r| format!(" (row {r})")).unwrap_or_default();
            outln!("  rack {}{row}", rack.name);
            for d in inv.devices.iter().filter(|d| d.rack == rack.name) {
                outln!("    {}", device_line(d));
            }
        }
    }
    Ok(Code::Ok)
}

fn device_line(d: &Device) -> String {
    let fabrics: Vec<&str> = d.fabrics().iter().map(|f| f.as_str()).collect();
    let mut parts = vec![format!("{:<18} {:<15}", d.name, d.role)];
    if let Some(s) = &d.switch {
        let tier = s.tier.map(|t| format!(" {t}")).unwrap_or_default();
        parts.push(format!("{} {}{tier}", s.platform, s.fabric));
    }
    if let Some(b) = &d.bmc {
        parts.push(format!("bmc {} ({})", b.address, b.protocol));
    }
    if let Some(m) = &d.management {
        parts.push(format!("mgmt {}", m.address));
    }
    if let Some(gpus) = &d.gpus {
        parts.push(format!("{}× {}", gpus.count, gpus.model.as_deref().unwrap_or("GPU")));
    }
    let backend = d.backend_rails().count();
    let storage = d.storage_rails().count();
    if backend + storage > 0 {
        parts.push(format!("rails {backend} backend + {storage} storage"));
    }
    parts.push(format!("[{}]", fabrics.join(", ")));
    parts.join("  ")
}

use lifeline_engine::ops::inventory::device_json;

/// The site → rack → device tree, plus counts per role so scripts need not walk it.
pub fn tree_json(inv: &Inventory) -> Value {
    let sites: Vec<Value> = inv
        .sites
        .iter()
        .map(|s| {
            let racks: Vec<Value> = inv
                .racks
                .iter()
                .filter(|r| r.site == s.name)
                .map(|r| {
                    let devices: Vec<Value> =
                        inv.devices.iter().filter(|d| d.rack == r.name).map(device_json).collect();
                    json!({ "name": r.name, "row": r.row, "description": r.description, "devices": devices })
                })
                .collect();
            json!({ "name": s.name, "description": s.description, "location": s.location, "racks": racks })
        })
        .collect();
    let mut roles: BTreeMap<String, usize> = BTreeMap::new();
    for d in &inv.devices {
        *roles.entry(d.role.to_string()).or_default() += 1;
    }
    json!({
        "source": inv.source,
        "cluster": inv.cluster,
        "sites": sites,
        "summary": { "devices": inv.devices.len(), "by_role": roles },
    })
}

async fn sync(g: &Global) -> CmdResult {
    let l = lifeline(g)?;
    let r = l.inventory_sync().await?;
    if g.json {
        print_json(&json!({ "store": r.store, "summary": r.summary }))?;
    } else {
        outln!(
            "synced {} devices into {}: {} added, {} updated, {} unchanged, {} removed",
            r.devices,
            r.store,
            r.summary.added,
            r.summary.updated,
            r.summary.unchanged,
            r.summary.removed
        );
    }
    l.close().await;
    Ok(Code::Ok)
}
