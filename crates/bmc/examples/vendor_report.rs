//! What `lifeline sel`, `health` and `power cycle` see on one Redfish BMC, as JSON: for checking the client
//! against vendor-shaped services (the mockups under `crates/redfish/tests/mockups`, served by sushy-static)
//! before and after a change.
//!
//! ```text
//! cargo run -p lifeline-bmc --example vendor_report -- http://127.0.0.1:8081 [--no-cycle]
//! ```
//! The URL is plain HTTP (lab emulators); power options are short so that a BMC that never changes state
//! (sushy-static) answers within seconds.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use lifeline_bmc::{BmcOptions, BmcPool, BmcTarget, MemoryAuditSink, PowerOptions, error_chain};
use lifeline_types::{BmcProtocol, PowerAction};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args.first().cloned().unwrap_or_else(|| "http://127.0.0.1:8081".into());
    let hp = url.trim_start_matches("http://").split('/').next().unwrap_or_default().to_owned();
    let (host, port) = hp.rsplit_once(':').ok_or_else(|| anyhow::anyhow!("expected http://HOST:PORT"))?;
    let mut t = BmcTarget::new(hp.clone(), host, BmcProtocol::Redfish, "admin", "password");
    t.redfish_port = port.parse()?;
    t.redfish_tls = false;
    let mut opts = BmcOptions {
        power: PowerOptions {
            timeout: Duration::from_secs(6),
            poll_interval: Duration::from_millis(200),
            cycle_grace: Duration::from_secs(2),
            ..PowerOptions::default()
        },
        ..BmcOptions::default()
    };
    opts.redfish.power_off_wait = Duration::from_secs(3);
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    let bmc = pool.bmc(t);
    let show = |what: &str, v: Result<serde_json::Value, String>| match v {
        Ok(v) => println!("== {what}\n{}", serde_json::to_string_pretty(&v).unwrap_or_default()),
        Err(e) => println!("== {what}\nERROR: {e}"),
    };
    let json = |v: &dyn erased::Ser| v.json();
    show("sel", bmc.events(10).await.map(|l| json(&l)).map_err(|e| error_chain(&e)));
    show("health", bmc.health().await.map(|h| json(&h)).map_err(|e| error_chain(&e)));
    if !args.iter().any(|a| a == "--no-cycle") {
        show(
            "power cycle",
            bmc.power(PowerAction::Cycle, None).await.map(|r| json(&r)).map_err(|e| error_chain(&e)),
        );
    }
    Ok(())
}

mod erased {
    /// Serialise any report without naming its type (the example prints several).
    pub trait Ser {
        fn json(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Ser for T {
        fn json(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap_or_default()
        }
    }
}
