//! The always-on console logger (conserver-style): every console of the inventory is registered with the
//! server's console manager and kept open, so every byte is logged whether or not anyone is attached. A
//! console that cannot be opened now is retried by the manager's own reconnect loop once started; one
//! that fails to start is retried here with backoff.
//!
//! With several replicas each console has one logger: its preferred replica (rendezvous over the live
//! set) claims `console:NAME` ([`crate::replica`]) and logs it while the claim holds. A replica that dies
//! stops renewing; once its claim and membership expire (at once for a dead process on this host) the
//! consoles' new preferred replicas claim them and open their sessions. A replica that finds a claim lost
//! (it was paused) or no longer preferred (a replica joined) closes the session and gives the claim back.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::replica::WorkLease;
use crate::state::AppState;

/// How often the logger looks for consoles to take or hand over.
pub const CONSOLE_TICK: Duration = Duration::from_secs(3);

/// The unit of work of one console's logger.
pub fn console_key(name: &str) -> String {
    format!("console:{name}")
}

/// Logs this replica's share of the inventory's consoles until shutdown.
pub async fn run(s: AppState) {
    let Ok(inv) = s.base.inventory() else { return };
    let names: Vec<String> =
        inv.devices.iter().filter(|d| d.bmc.is_some()).map(|d| d.name.to_string()).collect();
    let mut held: HashMap<String, (WorkLease, tokio::task::JoinHandle<()>)> = HashMap::new();
    loop {
        for name in &names {
            let key = console_key(name);
            let want = s.replica.prefers(&key);
            if let Some((lease, _)) = held.get(name) {
                if lease.lost() || !want {
                    let Some((lease, task)) = held.remove(name) else { continue };
                    task.abort();
                    let _ = s.consoles.stop(name, true).await;
                    tracing::info!(console = %name, lost = lease.lost(), "console logger handed over");
                    lease.release().await;
                }
                continue;
            }
            if !want {
                continue;
            }
            match s.replica.claim(&key).await {
                Ok(Some(lease)) => {
                    if let Some(prev) = lease.previous() {
                        tracing::info!(console = %name, holder = %prev.holder, "taking over a console logger");
                    }
                    // Taken from a holder that died or hung: its SOL session may still be open on the
                    // BMC (until the BMC's own timeout), so ours takes the payload over.
                    let steal = lease.previous().is_some();
                    let (st, n) = (s.clone(), name.clone());
                    let task = tokio::spawn(async move { keep_open(&st, &n, steal).await });
                    held.insert(name.clone(), (lease, task));
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(console = %name, "cannot claim the console logger: {}", e.chain()),
            }
        }
        tokio::select! {
            _ = s.replica.nap(CONSOLE_TICK) => {}
            _ = s.shutdown.cancelled() => break,
        }
    }
    // Give the claims back so that the other replicas take the consoles at once; the sessions are closed
    // and their logs flushed by the server's ordered end.
    for (_, (lease, task)) in held {
        task.abort();
        lease.release().await;
    }
}

async fn keep_open(s: &AppState, name: &str, steal: bool) {
    let mut pause = Duration::from_secs(2);
    loop {
        match s.base.sol_transport(name).await {
            Ok(t) => {
                if let Err(e) = s.consoles.add(name, Arc::new(t)) {
                    tracing::warn!(console = %name, "not logged: {}", lifeline_engine::error_chain(&e));
                    return;
                }
                match s.consoles.start(name, steal).await {
                    Ok(_) => {
                        tracing::debug!(console = %name, "logging");
                        return;
                    }
                    Err(e) => {
                        tracing::debug!(console = %name, "cannot open yet: {}", lifeline_engine::error_chain(&e))
                    }
                }
            }
            Err(e) => {
                tracing::debug!(console = %name, "no console: {}", e.chain());
                return;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = s.shutdown.cancelled() => return,
        }
        pause = (pause * 2).min(Duration::from_secs(120));
    }
}
