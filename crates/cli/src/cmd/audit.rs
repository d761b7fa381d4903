//! `lifeline audit log`: who did what, when, and how it ended.

use chrono::{TimeZone, Utc};

use crate::args::{AuditCmd, Global};
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, Code};
use crate::outln;

pub async fn run(g: &Global, cmd: AuditCmd) -> CmdResult {
    match cmd {
        AuditCmd::Bmc { sel, max_attempts } => crate::cmd::bmc::hygiene(g, sel, max_attempts).await,
        AuditCmd::Log { target, limit } => {
            let l = lifeline(g)?;
            let rows = l.audit_view(target.as_deref(), limit).await?;
            if g.json {
                print_json(&rows)?;
            } else if rows.is_empty() {
                outln!("no audit rows");
            } else {
                for r in rows {
                    let at = Utc
                        .timestamp_millis_opt(r.at_ms)
                        .single()
                        .map(|t| t.to_rfc3339())
                        .unwrap_or_default();
                    outln!(
                        "{:>6}  {at}  {:<18} {:<20} {:<18} {:<11} {}",
                        r.id,
                        r.actor,
                        r.action,
                        r.target,
                        r.outcome,
                        r.detail
                    );
                }
            }
            l.close().await;
            Ok(Code::Ok)
        }
    }
}
