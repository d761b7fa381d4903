//! `lifeline serve`: build the shared state, bind (HTTPS by default; plain HTTP only on loopback), start
//! the scheduler, serve until SIGTERM or Ctrl-C, then shut down in order: stop taking requests and let
//! running ones finish (their leases are released as they end), end WebSocket sessions and scheduled jobs,
//! close every console session (SOL deactivated) and flush the console logs, close the store.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use lifeline_engine::{EngineError, Identity, Lifeline, Settings};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::state::{AppState, Clock, Inner, SystemClock};

pub const DEFAULT_LISTEN: &str = "127.0.0.1:7443";

#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    pub settings: Settings,
    /// `--listen ADDR:PORT`.
    pub listen: Option<String>,
    /// `--plain-http`: refused unless the address is loopback.
    pub plain_http: bool,
    /// Carries out the fault policy; default: the runbook executor ([`crate::runbooks::PolicyResponder`]).
    pub responder: Option<Arc<dyn crate::policy::FaultResponder>>,
    /// Where runbook runs find schedulers and agent reports (`--slurm-conf`, `--node-state`, …).
    pub runbook_env: lifeline_runbook::Env,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("listen address `{addr}`: expected ADDR:PORT (e.g. 127.0.0.1:7443)")]
    BadListen { addr: String },
    #[error(
        "--plain-http is only allowed on a loopback address, not {addr}: use TLS (the default) elsewhere"
    )]
    PlainNotLoopback { addr: SocketAddr },
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS")]
    Tls(#[from] crate::tls::TlsError),
    #[error("serving HTTP")]
    Serve(#[source] std::io::Error),
}

/// Builds the state every handler and job shares.
pub async fn state(
    base: Lifeline,
    clock: Arc<dyn Clock>,
    secure_cookies: bool,
) -> Result<AppState, EngineError> {
    // Opened (and migrated) now: a store that cannot open fails the start, not the first request.
    base.open_store().await?;
    let consoles = base.console_manager().await?;
    // Every engine context of the server (API, runbooks, fault policy) attaches to the always-on consoles
    // instead of opening a second SOL session on a BMC that allows one.
    let base = Arc::new(base.with_console_manager(consoles.clone()));
    let ttl = base
        .config
        .config
        .server
        .session_ttl
        .as_deref()
        .map(humantime::parse_duration)
        .transpose()
        .map_err(|e| EngineError::bad_argument(format!("[server] session-ttl: {e}")))?
        .unwrap_or(Duration::from_secs(12 * 3600));
    Ok(AppState(Arc::new(Inner {
        // The replica set shares the server's own context (its store and actor).
        replica: Arc::new(crate::replica::Replica::new(base.clone())),
        base,
        consoles,
        metrics: Default::default(),
        limiter: Default::default(),
        refused_logins: Default::default(),
        clock,
        secure_cookies,
        session_ttl: ttl,
        shutdown: CancellationToken::new(),
        ready: Default::default(),
        fleet_list: Default::default(),
        fleet_states: Default::default(),
        responder: std::sync::RwLock::new(Arc::new(crate::policy::RecordOnly)),
        runbooks: Default::default(),
        problems: Default::default(),
        streams: Default::default(),
    })))
}

/// The application: every route behind its access rule.
pub fn app(state: AppState) -> axum::Router {
    crate::web::secure(crate::access::router(state, crate::api::routes()))
}

async fn terminated() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// Runs the server until SIGTERM / Ctrl-C.
pub async fn serve(opts: ServeOptions) -> Result<(), ServeError> {
    let base = Lifeline::new(&opts.settings, Identity::new("server"))?;
    let running = start(base, &opts).await?;
    println!("lifeline serve: listening on {}", running.url);
    if let Some((fp, how)) = &running.certificate {
        println!("certificate: {fp} ({how})");
    }
    crate::sdnotify::started(&running.url, running.state.shutdown.clone());
    tokio::select! {
        _ = terminated() => {}
        _ = running.state.shutdown.cancelled() => {}
    }
    crate::sdnotify::stopping();
    running.stop().await
}

/// A server started by [`start`]: its address, state, and the task serving it.
#[derive(Debug)]
pub struct Running {
    /// `http://ADDR:PORT` or `https://ADDR:PORT`, with the port actually bound.
    pub url: String,
    pub addr: SocketAddr,
    /// The certificate's fingerprint and where it came from, under TLS.
    pub certificate: Option<(String, String)>,
    pub state: AppState,
    task: tokio::task::JoinHandle<Result<(), ServeError>>,
}

impl Running {
    /// Stops taking requests, lets running ones finish, then the ordered end ([`finish`]).
    pub async fn stop(self) -> Result<(), ServeError> {
        self.state.shutdown.cancel();
        match self.task.await {
            Ok(r) => r,
            Err(e) => Err(ServeError::Serve(std::io::Error::other(e))),
        }
    }
}

/// Binds and starts serving `base` (its inventory and store) in the background, with the scheduler.
/// The demo uses this with an inventory rewritten to the simulator's ports; `serve` with the operator's.
pub async fn start(base: Lifeline, opts: &ServeOptions) -> Result<Running, ServeError> {
    let text = opts
        .listen
        .clone()
        .or_else(|| base.config.config.server.listen.clone())
        .unwrap_or_else(|| DEFAULT_LISTEN.into());
    let addr: SocketAddr = text.parse().map_err(|_| ServeError::BadListen { addr: text.clone() })?;
    if opts.plain_http && !addr.ip().is_loopback() {
        return Err(ServeError::PlainNotLoopback { addr });
    }
    // Load the inventory now: a broken one fails the start, not the first request.
    base.inventory()?;
    let tls = if opts.plain_http {
        None
    } else {
        let srv = &base.config.config.server;
        Some(crate::tls::identity(
            srv.tls_cert.as_deref(),
            srv.tls_key.as_deref(),
            &base.paths.data_dir,
            &[addr.ip().to_string()],
        )?)
    };
    let settings = opts.settings.clone();
    // A long-lived process: sweeps keep one IPMI session per BMC between rounds (closed in `finish`).
    let base = base.with_bmc_options(|o| {
        o.kept.get_or_insert_with(|| lifeline_bmc::KeptSessions::new(lifeline_bmc::KeepOptions::default()));
    });
    // `[image-server]`: served images (the API's `served_image`, runbooks' `served-image`) for the life
    // of the server.
    let base = base.start_image_server().await?;
    let st = state(base, Arc::new(SystemClock), tls.is_some()).await?;
    // Kept Redfish sessions are written down from now on; those a killed predecessor left are taken over
    // or deleted before the first sweep logs in (a BMC's few session slots never fill with crashes).
    if let Err(e) = st.base.record_kept_sessions().await {
        tracing::warn!("kept BMC sessions are not recorded: {}", e.chain());
    }
    st.runbooks.configure(settings, opts.runbook_env.clone());
    st.set_responder(opts.responder.clone().unwrap_or_else(|| Arc::new(crate::runbooks::PolicyResponder)));
    let tcp =
        tokio::net::TcpListener::bind(addr).await.map_err(|source| ServeError::Bind { addr, source })?;
    let local = tcp.local_addr().map_err(|source| ServeError::Bind { addr, source })?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let certificate = tls.as_ref().map(|t| {
        let how = if t.self_signed { "self-signed, kept at" } else { "from" };
        (t.fingerprint.clone(), format!("{how} {}", t.cert_path.display()))
    });
    let mut jobs = JoinSet::new();
    crate::scheduler::start(&st, &mut jobs).await;
    crate::runbooks::resume_interrupted(&st);
    st.ready.store(true, Ordering::Relaxed);
    let app = app(st.clone()).into_make_service_with_connect_info::<crate::access::Peer>();
    let shutdown = {
        let st = st.clone();
        async move {
            st.shutdown.cancelled().await;
            tracing::info!("shutting down");
            st.ready.store(false, Ordering::Relaxed);
        }
    };
    let task = {
        let st = st.clone();
        tokio::spawn(async move {
            let served = match tls {
                Some(t) => {
                    let l = crate::tls::TlsListener::new(tcp, t.config).map_err(ServeError::Serve)?;
                    axum::serve(l, app).with_graceful_shutdown(shutdown).await
                }
                None => axum::serve(tcp, app).with_graceful_shutdown(shutdown).await,
            };
            finish(&st, jobs).await;
            served.map_err(ServeError::Serve)
        })
    };
    Ok(Running { url: format!("{scheme}://{local}"), addr: local, certificate, state: st, task })
}

/// The ordered end: runbook runs stop at their next step boundary (a step still in flight after the grace
/// period is journaled as interrupted, for the next start to resume), jobs stop (a scheduled backup in flight finishes its attempt or is abandoned after
/// the limit, its lease expiring), consoles close and flush, the kept BMC sessions are closed (Close
/// Session on each) and the store closes.
pub async fn finish(st: &AppState, mut jobs: JoinSet<()>) {
    st.shutdown.cancel();
    crate::runbooks::stop(st).await;
    let drain = async { while jobs.join_next().await.is_some() {} };
    if tokio::time::timeout(Duration::from_secs(20), drain).await.is_err() {
        tracing::warn!("scheduled jobs did not stop in 20 s; abandoning them");
        jobs.abort_all();
    }
    crate::api::session::audit_refused(st, st.refused_logins.due(true)).await;
    st.consoles.shutdown().await;
    st.replica.leave().await;
    st.base.close().await;
    tracing::info!("stopped");
}
