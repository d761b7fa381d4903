//! The always-on console logger (conserver-style): every console of the inventory is registered with the
//! server's console manager and kept open, so every byte is logged whether or not anyone is attached. A
//! console that cannot be opened now is retried by the manager's own reconnect loop once started; one
//! that fails to start is retried here with backoff.

use std::sync::Arc;
use std::time::Duration;

use crate::state::AppState;

/// Registers and starts every SOL console of the inventory (in the background).
pub async fn start_all(s: &AppState) {
    let Ok(inv) = s.base.inventory() else { return };
    let names: Vec<String> =
        inv.devices.iter().filter(|d| d.bmc.is_some()).map(|d| d.name.to_string()).collect();
    for name in names {
        let s = s.clone();
        tokio::spawn(async move { keep_open(&s, &name).await });
    }
}

async fn keep_open(s: &AppState, name: &str) {
    let mut pause = Duration::from_secs(2);
    loop {
        match s.base.sol_transport(name).await {
            Ok(t) => {
                if let Err(e) = s.consoles.add(name, Arc::new(t)) {
                    tracing::warn!(console = %name, "not logged: {}", lifeline_engine::error_chain(&e));
                    return;
                }
                match s.consoles.start(name, false).await {
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
