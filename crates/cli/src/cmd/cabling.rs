//! `lifeline inventory verify-cabling`: renders the engine's cabling check (one line per switch read,
//! one per node report used, one per mismatch and per node-side finding, the fault records it changed). Exit 0 clean, 1 a mismatch or an unread switch.

use crate::args::Global;
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Code};
use crate::outln;

pub async fn run(g: &Global) -> CmdResult {
    let l = lifeline(g)?;
    let r = l.verify_cabling().await?;
    if g.json {
        print_json(&r)?;
    } else {
        for s in &r.switches {
            match (&s.error, s.neighbors) {
                (Some(e), _) => outln!("{}: not read: {e}", s.switch),
                (None, n) => outln!("{}: {} LLDP neighbour(s)", s.switch, n.unwrap_or(0)),
            }
        }
        for n in &r.nodes.reports {
            match (&n.error, n.neighbors) {
                (Some(e), _) => outln!("{} (agent): not used: {e}", n.device),
                (None, n2) => outln!("{} (agent): {} LLDP neighbour(s) heard", n.device, n2.unwrap_or(0)),
            }
        }
        for m in &r.mismatches {
            outln!("{}: {}", m.kind, m.message);
        }
        for f in &r.nodes.findings {
            outln!("{}: {}", f.kind, f.message);
        }
        outln!(
            "{} cable(s) in the inventory, {} checked: {} as described, {} mismatch(es)",
            r.cables,
            r.checked,
            r.ok,
            r.mismatches.len()
        );
        if !r.nodes.reports.is_empty() {
            outln!(
                "node side: {} cable(s) reported by their node's agent, {} as described, {} finding(s)",
                r.nodes.checked,
                r.nodes.ok,
                r.nodes.findings.len()
            );
        }
        if !r.faults.raised.is_empty() {
            outln!("cabling fault raised on: {}", r.faults.raised.join(", "));
        }
        if !r.faults.resolved.is_empty() {
            outln!("cabling fault resolved on: {}", r.faults.resolved.join(", "));
        }
    }
    l.close().await;
    Ok(if r.clean() { Code::Ok } else { Code::Failed })
}
