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

#[derive(Debug, Args)]
pub struct CredentialsArgs {
    /// Device names (all when none).
    pub devices: Vec<String>,
    /// Include the secrets (break-glass; audited as `bmc.credentials.reveal`).
    #[arg(long)]
    pub reveal: bool,
}

pub async fn credentials(g: &Global, a: CredentialsArgs) -> CmdResult {
    let l = lifeline(g)?;
    let rows = l.bmc_credentials(&a.devices, a.reveal).await?;
    if g.json {
        print_json(&rows)?;
    } else {
        let mut t = table(&["bmc", "reference", "user", "generation", "state", "updated", "note", "secret"]);
        for r in &rows {
            let at = chrono::DateTime::from_timestamp_millis(r.row.updated_at_ms)
                .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
                .unwrap_or_default();
            t.add_row(vec![
                r.row.device.clone(),
                format!("sealed:{}", r.row.name),
                r.row.username.clone(),
                r.row.id.to_string(),
                r.row.state.clone(),
                at,
                r.row.note.clone().unwrap_or_default(),
                r.secret.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
        outln!("{t}");
    }
    l.close().await;
    Ok(verdict(false))
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

#[derive(Debug, Args)]
pub struct SubscribeArgs {
    #[command(flatten)]
    pub sel: crate::args::BmcSel,
    /// Where the BMCs POST events (a running `lifeline events --follow --listen ADDR` prints its URL).
    #[arg(long, value_name = "URL", required_unless_present_any = ["remove", "list"])]
    pub destination: Option<String>,
    /// Remove Lifeline's subscriptions (found by the `lifeline:` marker in their Context).
    #[arg(long, conflicts_with_all = ["destination", "list"])]
    pub remove: bool,
    /// List every subscription (Lifeline's marked `ours`).
    #[arg(long, conflicts_with = "destination")]
    pub list: bool,
}

pub async fn subscribe(g: &Global, a: SubscribeArgs) -> CmdResult {
    let l = lifeline(g)?;
    let sel = select(&l, &a.sel, false)?;
    let mut failed = false;
    if a.list {
        let rows = l.bmc_subscriptions(&sel).await?;
        let mut t = table(&["bmc", "subscription", "destination", "context", "ours"]);
        for r in &rows {
            failed |= row_error(g, r)?;
            if let Ok(s) = &r.result {
                for x in &s.subscriptions {
                    t.add_row(vec![
                        s.bmc.clone(),
                        x.link.clone(),
                        x.destination.clone().unwrap_or_default(),
                        x.context.clone().unwrap_or_default(),
                        if x.ours { "yes" } else { "no" }.into(),
                    ]);
                }
            }
        }
        if g.json { print_json(&rows)? } else { outln!("{t}") }
    } else {
        let rows = l.bmc_subscribe(&sel, a.destination.as_deref()).await?;
        for r in &rows {
            failed |= row_error(g, r)?;
            if let (Ok(c), false) = (&r.result, g.json) {
                for x in &c.removed {
                    outln!("{}: removed {x}", c.bmc);
                }
                if let Some(x) = &c.created {
                    outln!("{}: subscribed {x}", c.bmc);
                }
            }
        }
        if g.json {
            print_json(&rows)?;
        }
    }
    l.close().await;
    Ok(verdict(failed))
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Devices whose event logs are polled (all when none).
    pub targets: Vec<String>,
    /// Keep running: receive pushed events and poll event logs until Ctrl-C.
    #[arg(long)]
    pub follow: bool,
    /// Address of the event receiver with --follow.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// With --follow: subscribe the Redfish BMCs to the receiver, and remove the subscriptions on exit.
    #[arg(long, requires = "follow")]
    pub subscribe: bool,
    /// With --follow: also read each Redfish BMC's SSE stream (`ServerSentEventUri`), for BMCs that cannot
    /// reach the receiver.
    #[arg(long, requires = "follow")]
    pub sse: bool,
    /// Seconds between event log polls with --follow.
    #[arg(long, default_value_t = 30)]
    pub poll_interval: u64,
    /// Entries read per BMC per poll.
    #[arg(long, default_value_t = 50)]
    pub newest: usize,
}

fn print_event(g: &Global, e: &lifeline_engine::ops::event_log::EventRow) -> Result<(), crate::exit::Exit> {
    if g.json {
        outln!("{}", serde_json::to_string(e).unwrap_or_default());
    } else {
        let at = chrono::DateTime::from_timestamp_millis(e.at_ms)
            .map(|t| t.format("%H:%M:%S").to_string())
            .unwrap_or_default();
        let dev = e.event.device.clone().unwrap_or_default();
        outln!("{at} {dev} [{}] {} {}", e.event.source, e.event.severity, e.event.message);
    }
    Ok(())
}

pub async fn events(g: &Global, a: EventsArgs) -> CmdResult {
    let l = lifeline(g)?;
    let sel = l.select_bmcs(&a.targets, &[], true)?;
    let polled = l.poll_sel_events(&sel, a.newest).await?;
    for r in &polled {
        if let Err(e) = &r.result {
            eprintln!("{}: event log not read: {}", r.target, e.chain());
        }
    }
    if !a.follow {
        let rows = l.bmc_events(0, 10_000).await?;
        if g.json {
            print_json(&rows)?;
        } else {
            for e in &rows {
                print_event(g, e)?;
            }
        }
        l.close().await;
        return Ok(verdict(false));
    }
    let redfish = redfish_only(&sel);
    // Deliveries are accepted from these BMCs only, each with its own secret, and only prompt a read of
    // that BMC's log (never stored as pushed).
    let (gate, unresolved) = lifeline_engine::event_gate::EventGate::for_selection(&redfish).await;
    for p in &unresolved {
        eprintln!("{p}: its pushed events are refused");
    }
    let (listener, mut prompts) =
        lifeline_engine::event_listener::EventListener::bind(a.listen, std::sync::Arc::new(gate))
            .await
            .map_err(|e| crate::exit::Exit::usage(anyhow::anyhow!("cannot listen on {}: {e}", a.listen)))?;
    let url = listener.url().map_err(crate::exit::Exit::usage)?;
    let gate = listener.gate();
    eprintln!("receiving BMC events at {url}");
    tokio::spawn(listener.run());
    if a.subscribe {
        for b in &redfish.bmcs {
            let one = lifeline_engine::BmcSelection { bmcs: vec![b.clone()], skipped: Vec::new() };
            for r in l.bmc_subscribe(&one, Some(&gate.destination(&url, b.name()))).await? {
                if let Err(e) = &r.result {
                    eprintln!("{}: not subscribed: {}", r.target, e.chain());
                }
            }
        }
    }
    let (sse_tx, mut streamed) = tokio::sync::mpsc::channel(1024);
    if a.sse {
        l.stream_events(&redfish, sse_tx.clone()).await?;
    }
    let mut last = 0;
    for e in l.bmc_events(0, 10_000).await? {
        last = e.id;
        print_event(g, &e)?;
    }
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(a.poll_interval.max(1)));
    tick.tick().await;
    let stop = shutdown_signal();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            Some(p) = prompts.recv() => {
                let mut one = redfish.clone();
                one.bmcs.retain(|b| b.name() == p.device);
                l.poll_sel_events(&one, a.newest).await?;
            }
            Some(r) = streamed.recv() => { l.record_received(&r).await?; }
            _ = tick.tick() => { l.poll_sel_events(&sel, a.newest).await?; }
        }
        for e in l.bmc_events(last, 1000).await? {
            last = e.id;
            print_event(g, &e)?;
        }
    }
    drop(sse_tx);
    if a.subscribe {
        // No orphan subscription left behind.
        l.bmc_subscribe(&redfish, None).await?;
    }
    l.close().await;
    Ok(verdict(false))
}

/// Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// The part of a selection that may speak Redfish (subscriptions are a Redfish feature).
fn redfish_only(sel: &lifeline_engine::BmcSelection) -> lifeline_engine::BmcSelection {
    let mut s = sel.clone();
    s.bmcs.retain(|b| b.target.protocol != lifeline_types::BmcProtocol::Ipmi);
    s
}
