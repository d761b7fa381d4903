//! `lifeline demo --replicas N --database-url postgres://…`: the demo's server started N times in this
//! process, each a replica with its own id, API listener, scheduler and console manager, all sharing the
//! one database (and the demo's data directory for blobs and console logs). The view shows each replica's
//! URL and how the console loggers are spread; every replica serves the same API and web console.

use lifeline_engine::{Identity, Lifeline};
use lifeline_server::Running;

use crate::exit::Exit;

/// Starts `n - 1` more replicas beside `first` (same configuration and simulated inventory), each on a
/// free loopback port.
pub(crate) async fn start_more(first: &Running, n: usize) -> Result<Vec<Running>, Exit> {
    let base = &first.state.base;
    let inv = base.inventory()?;
    let mut out = Vec::new();
    for _ in 1..n {
        let l = Lifeline::from_parts(base.config.clone(), base.paths.clone(), Identity::new("server"))
            .with_inventory((*inv).clone())
            .with_bmc_options(|o| o.fanout = 64);
        let opts = lifeline_server::ServeOptions {
            plain_http: true,
            listen: Some("127.0.0.1:0".into()),
            ..Default::default()
        };
        let r = lifeline_server::start(l, &opts).await.map_err(|e| match e {
            lifeline_server::ServeError::Engine(e) => Exit::from(e),
            e => Exit::usage(anyhow::anyhow!("{}", lifeline_engine::error_chain(&e))),
        })?;
        out.push(r);
    }
    Ok(out)
}

/// `--replicas` above 1 needs a database every replica reaches.
pub(crate) fn check(replicas: usize, database_url: Option<&str>) -> Result<(), Exit> {
    if replicas > 1 && !database_url.is_some_and(|u| u.starts_with("postgres")) {
        return Err(Exit::usage(anyhow::anyhow!(
            "--replicas {replicas} needs --database-url postgres://… (replicas share work through PostgreSQL)"
        )));
    }
    Ok(())
}

/// One line for the view: live replicas and how many console loggers each holds.
pub(crate) async fn status_line(st: &lifeline_server::AppState, urls: &[String]) -> String {
    let live = st.replica.live();
    let held = st.base.work_with_prefix("console:").await.unwrap_or_default();
    let per: Vec<String> = live
        .iter()
        .map(|id| {
            let n = held
                .iter()
                .filter(|w| &w.holder == id && w.expires_at_ms >= lifeline_engine::ops::runs::now_ms())
                .count();
            let tag = id.rsplit('#').next().unwrap_or(id);
            format!("#{tag}: {n} consoles")
        })
        .collect();
    format!("replicas: {} live on PostgreSQL ({}) — {}", live.len(), per.join(", "), urls.join(" "))
}
