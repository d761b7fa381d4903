//! `lifeline bmc users|rotate`: BMC accounts and crash-safe password rotation into the sealed store.

use clap::Args;
use lifeline_engine::ops::accounts::RotateOptions;

use crate::args::{BmcArgs, Global};
use crate::cmd::bmc::{row_error, select, table};
use crate::cmd::{lifeline, print_json};
use crate::exit::{CmdResult, verdict};
use crate::outln;

#[derive(Debug, Args)]
pub struct RotateArgs {
    /// Device names, racks, roles, groups or globs whose credential is `sealed:NAME` in the inventory.
    #[arg(required = true)]
    pub targets: Vec<String>,
    /// The account to rotate (default: the inventory's user of each BMC).
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// Only finish or undo an interrupted rotation (decided by logins); start no new one.
    #[arg(long)]
    pub resume: bool,
    /// Then disable factory-default accounts the hygiene audit finds (after proving another admin login).
    #[arg(long)]
    pub disable_defaults: bool,
}

pub async fn users(g: &Global, a: BmcArgs) -> CmdResult {
    let l = lifeline(g)?;
    let sel = select(&l, &a.sel, false)?;
    let rows = l.bmc_users(&sel).await?;
    let mut failed = false;
    let mut t = table(&["bmc", "id", "user", "enabled", "role", "locked"]);
    for r in &rows {
        failed |= row_error(g, r)?;
        if let Ok(list) = &r.result {
            for a in &list.accounts {
                let yn = |v: Option<bool>| v.map(|b| if b { "yes" } else { "no" }).unwrap_or("?");
                t.add_row(vec![
                    list.bmc.clone(),
                    a.id.clone(),
                    a.name.clone(),
                    yn(a.enabled).into(),
                    a.role.clone().unwrap_or_default(),
                    yn(a.locked).into(),
                ]);
            }
        }
    }
    if g.json {
        print_json(&rows)?;
    } else {
        outln!("{t}");
    }
    l.close().await;
    Ok(verdict(failed))
}

pub async fn rotate(g: &Global, a: RotateArgs) -> CmdResult {
    let l = lifeline(g)?;
    let opts = RotateOptions { user: a.user, resume_only: a.resume, disable_defaults: a.disable_defaults };
    let rows = l.bmc_rotate(&a.targets, &opts).await?;
    let mut failed = false;
    for r in &rows {
        failed |= row_error(g, r)?;
        if let (Ok(o), false) = (&r.result, g.json) {
            let Some(o) = o.fresh() else {
                outln!("{}: replayed an earlier request", r.target);
                continue;
            };
            let what = match (o.rotated, o.resumed.as_deref()) {
                (true, _) => "rotated".to_owned(),
                (false, Some(x)) => format!("interrupted rotation {x}"),
                (false, None) => "nothing to resume".to_owned(),
            };
            outln!("{}: {what} ({} `{}` over {}, in {})", o.bmc, "user", o.user, o.protocol, o.reference);
            for s in &o.steps {
                outln!("  {s}");
            }
            for d in &o.disabled_defaults {
                outln!("  default account `{d}` disabled");
            }
        }
    }
    if g.json {
        print_json(&rows)?;
    }
    l.close().await;
    Ok(verdict(failed))
}
