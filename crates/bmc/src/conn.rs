//! An open connection to one BMC over whichever protocol it speaks, and the `auto` probe that decides.
//!
//! Why a closed enum rather than a trait object: there are exactly two protocols, each operation differs in
//! substance between them (chassis control vs. reset types), and the match keeps each difference visible in
//! one place. Every connection is closed explicitly (`close`), so no IPMI session or Redfish session is
//! left behind on the BMC; the protocol clients also close on drop as a last resort.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use lifeline_ipmi::client::{Mux, Timing};
use lifeline_ipmi::wire::Privilege;
use lifeline_ipmi::{CipherSuite, ClientConfig, Session};
use lifeline_redfish::model::ComputerSystem;
use lifeline_redfish::tls::TlsTrust;
use lifeline_redfish::{Client, ClientOptions, Credentials, RedfishError, ResetPlan};
use lifeline_types::{BmcProtocol, PowerAction, PowerState};

use crate::error::BmcError;
use crate::memory::ProtocolMemory;
use crate::options::{BmcOptions, PowerOptions, TlsPolicy};
use crate::sdr_cache::SdrCache;
use crate::target::BmcTarget;
use lifeline_ipmi::wire::chassis::ChassisOp;

pub(crate) enum Conn {
    Ipmi(IpmiConn),
    Redfish(RedfishConn),
}

pub(crate) struct IpmiConn {
    pub bmc: String,
    pub session: Session,
    /// SDR records, read once per connection (health and SEL naming both need them).
    pub sdr: Option<Arc<Vec<lifeline_ipmi::wire::sdr::SdrRecord>>>,
    /// The pool's SDR cache and this BMC's key in it.
    pub sdr_cache: Option<(Arc<SdrCache>, String)>,
}

pub(crate) struct RedfishConn {
    pub bmc: String,
    pub client: Client,
    pub system: Option<ComputerSystem>,
    /// `BmcTarget::system`.
    pub wanted: Option<String>,
    /// Where the wanted system was found last time (from the pool's path cache): tried before listing.
    pub known_system: Option<String>,
    /// Resources found by an earlier connection (event logs, the chassis the rollup needed): read directly,
    /// rediscovered when one fails.
    pub known: crate::memory::RedfishResourcePaths,
    /// What this connection read (to remember for the next one); `None` fields: not read this time.
    pub used_logs: Option<Vec<serde_json::Value>>,
    pub used_chassis: Option<Vec<String>>,
    /// `LastResetTime` as of the last power-state read (see [`crate::power`]: the BMC's own record of a
    /// reset whose off phase was too short to observe).
    pub last_reset: Option<String>,
}

/// What an earlier connection to one BMC discovered, kept by the pool so the next one skips discovery: the
/// service root document (no GET of the root) and the wanted system's path (no GET of the Systems
/// collection). Why it is safe to reuse: the TLS pin is still enforced on every handshake, and a stale path
/// (404, other id) falls back to discovery.
#[derive(Debug, Clone)]
pub(crate) struct RedfishPaths {
    /// The URL this was learnt from (a target whose address or port changed starts afresh).
    pub url: String,
    /// The root document as compact JSON. Why text: a parsed `serde_json::Value` of a typical root took
    /// 10.6 KiB of heap against 0.9 KiB of text, per BMC, for as long as the pool lives (the server's); a
    /// connection parses it again (microseconds) instead of a GET.
    pub root: Arc<str>,
    pub system: Option<String>,
    /// Event logs and chassis (see [`crate::memory::RedfishResourcePaths`]), shared with what was persisted.
    pub resources: Arc<crate::memory::RedfishResourcePaths>,
}

impl RedfishPaths {
    /// The root document for [`Client::connect_known`] (`None`: unreadable, so the root is fetched).
    pub fn root_document(&self) -> Option<Arc<serde_json::Value>> {
        serde_json::from_str(&self.root).ok().map(Arc::new)
    }
}

/// What a power request put on the wire.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sent {
    pub commands: Vec<String>,
    /// The BMC acknowledged every command (false: a reply was lost; the outcome must be read back).
    pub acked: bool,
    /// The off phase of a cycle can be watched for (IPMI chassis cycle, Redfish PowerCycle).
    pub expects_off: bool,
    /// The off phase was already confirmed while sending (Redfish ForceOff, wait for Off, On).
    pub off_confirmed: bool,
    /// When that Off was read (for the report's transitions).
    pub off_seen_at: Option<tokio::time::Instant>,
    /// Something went wrong after the first command was sent (the report carries it, with what was sent).
    pub failure: Option<String>,
    /// The sequence was abandoned half-way (Off never observed, so On was not sent): report at once
    /// instead of waiting for the requested state.
    pub gave_up: bool,
}

pub(crate) fn ipmi_err(bmc: &str) -> impl FnOnce(lifeline_ipmi::Error) -> BmcError + '_ {
    move |source| BmcError::Ipmi { bmc: bmc.to_owned(), source }
}

pub(crate) fn rf_err(bmc: &str) -> impl FnOnce(RedfishError) -> BmcError + '_ {
    move |source| BmcError::Redfish { bmc: bmc.to_owned(), source }
}

/// The socket address of a target's port (for a one-off login outside the pool's connections).
pub(crate) async fn resolve_addr(
    target: &BmcTarget,
    port: u16,
    limit: Duration,
) -> Result<SocketAddr, BmcError> {
    resolve(target, port, limit).await
}

async fn resolve(target: &BmcTarget, port: u16, limit: Duration) -> Result<SocketAddr, BmcError> {
    let bmc = &target.name;
    let host = target.address.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let lookup = tokio::net::lookup_host((host.to_owned(), port));
    let mut addrs = tokio::time::timeout(limit, lookup)
        .await
        .map_err(|_| BmcError::Timeout { bmc: bmc.clone(), what: "address lookup", after: limit })?
        .map_err(|source| BmcError::Resolve { bmc: bmc.clone(), address: target.address.clone(), source })?;
    addrs.next().ok_or_else(|| BmcError::Resolve {
        bmc: bmc.clone(),
        address: target.address.clone(),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
    })
}

pub(crate) fn ipmi_config(target: &BmcTarget, timing: &Timing) -> ClientConfig {
    let mut cfg = ClientConfig::new(target.username.clone(), target.password.clone());
    cfg.privilege = Privilege::Administrator;
    cfg.timing = timing.clone();
    if let Some(ids) = &target.cipher_suites {
        let suites: Vec<CipherSuite> = ids.iter().filter_map(|&i| CipherSuite::from_id(i)).collect();
        if !suites.is_empty() {
            cfg.cipher_suites = suites;
        }
    }
    cfg
}

pub(crate) fn tls_trust(target: &BmcTarget, policy: &TlsPolicy) -> TlsTrust {
    match policy {
        TlsPolicy::Pin(store) => TlsTrust::Pin { store: store.clone(), explicit: target.tls_pin },
        TlsPolicy::CaFile(p) => TlsTrust::CaFile(p.clone()),
    }
}

/// The cipher suite each BMC last accepted. Why: it is tried first next time without asking the BMC for its
/// suite list (one round trip less per connection), and silence on it then means loss, not refusal.
#[derive(Debug, Default)]
pub(crate) struct SuiteCache(std::sync::Mutex<std::collections::HashMap<String, CipherSuite>>);

impl SuiteCache {
    pub(crate) fn get(&self, bmc: &str) -> Option<CipherSuite> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).get(bmc).copied()
    }
    pub(crate) fn set(&self, bmc: &str, s: CipherSuite) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(bmc.to_owned(), s);
    }
    pub(crate) fn forget(&self, bmc: &str) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(bmc);
    }
}

/// How IPMI sessions are opened: the suite cache, and the privilege the operation needs. Reads use a
/// USER session (least privilege, and one round trip less: no Set Session Privilege Level); actions ask for
/// ADMINISTRATOR.
pub(crate) struct OpenCtx<'a> {
    pub suites: &'a SuiteCache,
    pub privilege: Privilege,
    /// Redfish discovery of an earlier connection to this BMC (see [`RedfishPaths`]).
    pub redfish: Option<RedfishPaths>,
    /// The pool's SDR repository cache.
    pub sdr_cache: Option<Arc<SdrCache>>,
    /// The pool's shared IPMI transport (`None`: each session gets a socket of its own).
    pub mux: Option<Mux>,
    /// What a Redfish first contact reads with HTTP Basic alongside the login (what the operation starts
    /// from; none after a failure: see the pool).
    pub first_contact_reads: &'static [&'static str],
    /// BMCs already cleared of dead owners' IPMI sessions by this pool (`None`: the pool does not, as a
    /// server's, which reclaims every BMC when it starts).
    pub swept: Option<&'a crate::kept_ipmi::Swept>,
}

/// The Redfish client options for this connection. `opts.redfish.first_contact_reads` empty turns the
/// first-contact reads off; otherwise the connection's own choice applies.
fn redfish_opts(opts: &BmcOptions, ctx: &OpenCtx<'_>) -> ClientOptions {
    let mut o = opts.redfish.clone();
    if !o.first_contact_reads.is_empty() {
        o.first_contact_reads = ctx.first_contact_reads;
    }
    o
}

pub(crate) async fn open_ipmi(
    target: &BmcTarget,
    opts: &BmcOptions,
    ipmi: &OpenCtx<'_>,
) -> Result<Conn, BmcError> {
    let addr = resolve(target, target.ipmi_port, opts.probe_timeout).await?;
    let suites = ipmi.suites;
    let mut cfg = ipmi_config(target, &opts.ipmi_timing);
    cfg.privilege = ipmi.privilege;
    cfg.known_suite = suites.get(&target.name);
    // Every session written down while it is open, so a process killed with it open leaves it findable.
    let ledger = crate::kept_ipmi::ledger_of(opts);
    cfg.record = ledger.clone().map(|l| crate::kept_ipmi::recorder(l, &target.name));
    // A one-shot process first closes what dead processes of ours left here (once per BMC), so crashes
    // never bring the BMC to its limit in the first place.
    if let (Some(l), Some(swept)) = (&ledger, ipmi.swept)
        && swept.first(&target.name)
    {
        let ids = l.stale_ipmi(&target.name).await;
        if !ids.is_empty() {
            crate::kept_ipmi::close_stale(target, opts, &ids, Some(l.clone())).await;
        }
    }
    // On the pool's mux: no socket, bind, connect and reader task per login (IPv6 BMCs: the mux is IPv4).
    let open = |cfg: ClientConfig| async move {
        match ipmi.mux.as_ref().filter(|_| addr.is_ipv4()) {
            Some(mux) => mux.open(addr, &cfg).await,
            None => Session::open(addr, &cfg).await,
        }
    };
    let mut opened = open(cfg.clone()).await;
    // Refused for want of a slot (or, as ipmi_sim and some firmware do at their limit, silent on Open Session
    // after answering the capabilities): close what dead processes of ours left there, then once more.
    if let (Err(e), Some(l)) = (&opened, &ledger)
        && (e.is_session_limit() || matches!(e, lifeline_ipmi::Error::Timeout { what: "Open Session", .. }))
    {
        let ids = l.stale_ipmi(&target.name).await;
        if !ids.is_empty() {
            let stale = crate::kept_ipmi::close_stale(target, opts, &ids, Some(l.clone())).await;
            if stale.freed() > 0 {
                opened = open(cfg.clone()).await;
            }
            if let Err(source) = opened {
                return Err(match source.is_session_limit() {
                    true => BmcError::IpmiSessionLimit { bmc: target.name.clone(), stale, source },
                    false => ipmi_err(&target.name)(source),
                });
            }
        }
    }
    let session = match opened {
        Ok(s) => s,
        Err(e) if e.is_session_limit() => {
            let stale = crate::StaleIpmi::default();
            return Err(BmcError::IpmiSessionLimit { bmc: target.name.clone(), stale, source: e });
        }
        Err(e) => {
            // The remembered suite may be gone (firmware change): ask the BMC next time.
            if cfg.known_suite.is_some() {
                suites.forget(&target.name);
            }
            return Err(ipmi_err(&target.name)(e));
        }
    };
    suites.set(&target.name, session.cipher_suite());
    let sdr_cache = ipmi.sdr_cache.clone().map(|c| (c, format!("{}@{addr}", target.name)));
    Ok(Conn::Ipmi(IpmiConn { bmc: target.name.clone(), session, sdr: None, sdr_cache }))
}

pub(crate) async fn open_redfish(
    target: &BmcTarget,
    opts: &BmcOptions,
    client_opts: ClientOptions,
    known: Option<&RedfishPaths>,
) -> Result<Conn, BmcError> {
    let url = target.redfish_url();
    let known = known.filter(|k| k.url == url);
    let rt = lifeline_redfish::BmcTarget::new(target.name.clone(), url);
    let creds = Credentials::new(target.username.clone(), target.password.clone());
    let root = known.and_then(RedfishPaths::root_document);
    let mut client_opts = client_opts;
    // A login refused at the BMC's session limit first deletes what our dead processes left there. A pool
    // that keeps sessions writes them down when kept; one that does not (a one-shot command) writes each
    // session down while its client holds it, so a command killed mid-operation leaves none unfindable.
    let (ledger, close_timeout) = match &opts.kept {
        Some(kept) => (
            kept.ledger().or_else(|| opts.ledger.as_ref().map(|l| l.0.clone())),
            kept.options().close_timeout,
        ),
        None => {
            let ledger = opts.ledger.as_ref().map(|l| l.0.clone());
            if let Some(l) = &ledger {
                client_opts.record_sessions = Some(crate::kept_redfish::session_recorder(l.clone()));
            }
            (ledger, crate::KeepOptions::default().close_timeout)
        }
    };
    if let Some(ledger) = ledger {
        let free = crate::kept_redfish::stale_session_freer(
            ledger,
            rt.clone(),
            tls_trust(target, &opts.tls),
            client_opts.clone(),
            close_timeout,
        );
        client_opts.free_stale_sessions = Some(free);
    }
    let client = Client::connect_known(rt, creds, tls_trust(target, &opts.tls), client_opts, root)
        .await
        .map_err(rf_err(&target.name))?;
    Ok(Conn::Redfish(RedfishConn {
        bmc: target.name.clone(),
        client,
        system: None,
        wanted: target.system.clone(),
        known_system: known.and_then(|k| k.system.clone()),
        known: known.map(|k| (*k.resources).clone()).unwrap_or_default(),
        used_logs: None,
        used_chassis: None,
        last_reset: None,
    }))
}

/// Is there an IPMI 2.0 BMC on the target's UDP port? Session-less Get Channel Authentication Capabilities:
/// no credentials are sent.
pub(crate) async fn probe_ipmi(
    target: &BmcTarget,
    opts: &BmcOptions,
    mux: Option<&Mux>,
) -> Result<(), BmcError> {
    let addr = resolve(target, target.ipmi_port, opts.probe_timeout).await?;
    let timing = probe_timing(opts.probe_timeout);
    let caps = match mux.filter(|_| addr.is_ipv4()) {
        Some(mux) => mux.get_channel_auth_caps(addr, &timing, Privilege::Administrator).await,
        None => {
            let bind: SocketAddr =
                if addr.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
            let io = |source| BmcError::Ipmi {
                bmc: target.name.clone(),
                source: lifeline_ipmi::Error::Io { bmc: target.name.clone(), source },
            };
            let socket = tokio::net::UdpSocket::bind(bind).await.map_err(io)?;
            socket.connect(addr).await.map_err(io)?;
            let bmc = &target.name;
            lifeline_ipmi::client::get_channel_auth_caps(&socket, bmc, &timing, Privilege::Administrator)
                .await
        }
    }
    .map_err(ipmi_err(&target.name))?;
    if !caps.supports_v2() {
        return Err(BmcError::Ipmi {
            bmc: target.name.clone(),
            source: lifeline_ipmi::Error::NoIpmi2 { bmc: target.name.clone() },
        });
    }
    Ok(())
}

pub(crate) fn probe_timing(limit: Duration) -> Timing {
    Timing { attempt_timeout: limit / 3, max_attempt_timeout: limit / 2, attempts: 2 }
}

/// Open a connection over the target's protocol; for `auto`, the remembered protocol or the probe's answer.
/// Returns the protocol actually used (never `Auto`).
pub(crate) async fn open(
    target: &BmcTarget,
    opts: &BmcOptions,
    memory: &dyn ProtocolMemory,
    ipmi: &OpenCtx<'_>,
) -> Result<(BmcProtocol, Conn), BmcError> {
    // Each protocol's connect is boxed: a caller's future is sized for the largest branch, and a sweep
    // holds one per BMC in flight (a fresh page for every few BMCs of a cold sweep), though a BMC only ever
    // runs one branch.
    match target.protocol {
        BmcProtocol::Ipmi => Ok((BmcProtocol::Ipmi, Box::pin(open_ipmi(target, opts, ipmi)).await?)),
        BmcProtocol::Redfish => {
            let known = ipmi.redfish.as_ref();
            let conn = Box::pin(open_redfish(target, opts, redfish_opts(opts, ipmi), known)).await?;
            Ok((BmcProtocol::Redfish, conn))
        }
        BmcProtocol::Auto => Box::pin(open_auto(target, opts, memory, ipmi)).await,
    }
}

async fn open_auto(
    target: &BmcTarget,
    opts: &BmcOptions,
    memory: &dyn ProtocolMemory,
    ipmi: &OpenCtx<'_>,
) -> Result<(BmcProtocol, Conn), BmcError> {
    let bmc = &target.name;
    let mem_err = |source| BmcError::ProtocolMemory { bmc: bmc.clone(), source };
    if let Some(p) = memory.recall(bmc).await.map_err(mem_err)? {
        let r = match p {
            BmcProtocol::Ipmi => open_ipmi(target, opts, ipmi).await,
            _ => open_redfish(target, opts, redfish_opts(opts, ipmi), ipmi.redfish.as_ref()).await,
        };
        match r {
            Ok(c) => return Ok((p, c)),
            // The remembered protocol is gone (firmware change, Redfish disabled): probe afresh.
            Err(e) if e.is_unreachable() => {
                tracing::info!(%bmc, remembered = %p, error = %e, "remembered protocol unreachable; probing again");
                memory.forget(bmc).await.map_err(mem_err)?;
            }
            Err(e) => return Err(e),
        }
    }
    let (protocol, conn) = probe(target, opts, ipmi).await?;
    memory.remember(bmc, protocol).await.map_err(mem_err)?;
    tracing::info!(%bmc, %protocol, "auto: protocol decided");
    Ok((protocol, conn))
}

/// Redfish service root over HTTPS with a short timeout; else IPMI Get Channel Auth Caps. A Redfish BMC that
/// answers but refuses us (changed certificate, bad password) is an error, not a reason to fall back: falling
/// back would hide a security event behind a weaker protocol.
async fn probe(
    target: &BmcTarget,
    opts: &BmcOptions,
    ipmi: &OpenCtx<'_>,
) -> Result<(BmcProtocol, Conn), BmcError> {
    let quick = ClientOptions {
        request_timeout: opts.probe_timeout,
        connect_timeout: opts.probe_timeout,
        // The probe is closed at once: a session would be made only to be deleted, and reads thrown away.
        speculative_login: false,
        first_contact_reads: &[],
        ..opts.redfish.clone()
    };
    let redfish_err = match open_redfish(target, opts, quick, None).await {
        Ok(Conn::Redfish(probe)) => {
            // The probe client has probe-length timeouts; sessions are created lazily, so it holds none.
            let _ = probe.client.close().await;
            return Ok((
                BmcProtocol::Redfish,
                open_redfish(target, opts, redfish_opts(opts, ipmi), None).await?,
            ));
        }
        Ok(Conn::Ipmi(_)) => unreachable!("open_redfish returns a Redfish connection"),
        Err(e) if e.is_unreachable() => e,
        Err(e) => return Err(e),
    };
    tracing::debug!(bmc = %target.name, error = %redfish_err, "auto: no Redfish; probing IPMI");
    match probe_ipmi(target, opts, ipmi.mux.as_ref()).await {
        Ok(()) => Ok((BmcProtocol::Ipmi, open_ipmi(target, opts, ipmi).await?)),
        Err(e) => {
            tracing::debug!(bmc = %target.name, error = %e, "auto: no IPMI either");
            Err(BmcError::NoProtocol {
                bmc: target.name.clone(),
                redfish_port: target.redfish_port,
                ipmi_port: target.ipmi_port,
                source: Box::new(redfish_err),
            })
        }
    }
}

impl Conn {
    /// Log out / Close Session. Errors are reported but the connection is gone either way.
    pub async fn close(self) -> Result<(), BmcError> {
        match self {
            Conn::Ipmi(c) => c.session.close().await.map_err(ipmi_err(&c.bmc)),
            Conn::Redfish(c) => c.client.close().await.map(|_| ()).map_err(rf_err(&c.bmc)),
        }
    }

    pub async fn power_state(&mut self) -> Result<PowerState, BmcError> {
        match self {
            Conn::Ipmi(c) => c.session.power_state().await.map_err(ipmi_err(&c.bmc)),
            Conn::Redfish(c) => {
                let sys = c.system().await?;
                let now = c.client.system(&sys.odata_id).await.map_err(rf_err(&c.bmc))?;
                c.last_reset = now.last_reset_time;
                Ok(now.power_state.unwrap_or(PowerState::Unknown))
            }
        }
    }

    /// The BMC's record of the last reset as of the last power-state read (Redfish `LastResetTime`).
    pub fn reset_marker(&self) -> Option<String> {
        match self {
            Conn::Ipmi(_) => None,
            Conn::Redfish(c) => c.last_reset.clone(),
        }
    }

    /// Send `action` once. Lost replies are reported as `acked: false`, never resent blindly.
    pub async fn send_power(&mut self, action: PowerAction, p: &PowerOptions) -> Result<Sent, BmcError> {
        match self {
            Conn::Ipmi(c) if action == PowerAction::Cycle => c.cycle(p).await,
            Conn::Ipmi(c) => {
                let op = ChassisOp::from(action);
                let mut sent = Sent { commands: vec![chassis_cmd(op)], acked: true, ..Default::default() };
                match c.session.chassis_control(op).await {
                    Ok(()) => Ok(sent),
                    Err(lifeline_ipmi::Error::Unconfirmed { .. }) => {
                        sent.acked = false;
                        Ok(sent)
                    }
                    Err(e) => Err(ipmi_err(&c.bmc)(e)),
                }
            }
            Conn::Redfish(c) => c.send_power(action, p.timeout).await,
        }
    }
}

/// Sendings of the power-down of an IPMI cycle when every retransmission of a request was lost.
const POWER_DOWN_TRIES: u32 = 3;

fn chassis_cmd(op: ChassisOp) -> String {
    format!("Chassis Control {op:?} ({:#04x})", op as u8)
}

impl IpmiConn {
    /// A power cycle as fence agents do it (fence_ipmilan's reboot): power down, confirm Off, pause, power
    /// up. Chassis Control 0x02 is not used: when its reply is lost, the power state cannot tell a lost
    /// request from a cycle whose off phase was too short to see, so it could be neither confirmed nor safely
    /// retried. Power down and power up are idempotent and confirmed by state, so lost datagrams are resolved
    /// by reading the state and the cycle still runs exactly once.
    async fn cycle(&mut self, p: &PowerOptions) -> Result<Sent, BmcError> {
        let mut sent = Sent { acked: true, off_confirmed: true, ..Default::default() };
        sent.commands.push(chassis_cmd(ChassisOp::PowerDown));
        // Power down is idempotent like power up: when even the state read that decides a lost reply was
        // lost (a very lossy link), sending it again cannot double anything.
        let mut tries = 0;
        loop {
            tries += 1;
            match self.session.chassis_control(ChassisOp::PowerDown).await {
                Ok(()) => {}
                Err(lifeline_ipmi::Error::Unconfirmed { .. }) => sent.acked = false,
                Err(lifeline_ipmi::Error::Timeout { .. }) if tries < POWER_DOWN_TRIES => {
                    sent.acked = false;
                    continue;
                }
                Err(e) => return Err(ipmi_err(&self.bmc)(e)),
            }
            break;
        }
        let t0 = tokio::time::Instant::now();
        let deadline = t0 + p.timeout;
        loop {
            match self.session.chassis_status().await {
                Ok(st) if !st.power_on() => {
                    sent.off_seen_at = Some(tokio::time::Instant::now());
                    break;
                }
                Ok(_) | Err(lifeline_ipmi::Error::Timeout { .. }) => {}
                Err(e) => {
                    // Power down was sent: the report says so, with what went wrong.
                    sent.failure = Some(format!("power state unreadable after power down: {e}"));
                    sent.gave_up = true;
                    return Ok(sent);
                }
            }
            if tokio::time::Instant::now() >= deadline {
                sent.failure = Some(format!(
                    "Off not observed within {}s after power down; power up was not sent",
                    p.timeout.as_secs()
                ));
                sent.gave_up = true;
                sent.off_confirmed = false;
                return Ok(sent);
            }
            tokio::time::sleep(p.poll_interval).await;
        }
        tokio::time::sleep(p.cycle_off_time).await;
        sent.commands.push(chassis_cmd(ChassisOp::PowerUp));
        match self.session.chassis_control(ChassisOp::PowerUp).await {
            Ok(()) => {}
            Err(lifeline_ipmi::Error::Unconfirmed { .. }) => sent.acked = false,
            // Off was confirmed; power up is idempotent, so confirming resends it while the host stays off.
            Err(e) => {
                sent.acked = false;
                sent.failure = Some(format!("power up failed: {e}"));
            }
        }
        Ok(sent)
    }
}

impl RedfishConn {
    /// The ComputerSystem named by the target, else the first member.
    pub async fn system(&mut self) -> Result<ComputerSystem, BmcError> {
        if let Some(s) = &self.system {
            return Ok(s.clone());
        }
        if let Some(path) = self.known_system.take() {
            match self.client.system(&path).await {
                Ok(s) if s.reset.is_some() || s.power_state.is_some() || s.status.overall().is_some() => {
                    self.system = Some(s.clone());
                    return Ok(s);
                }
                Ok(_) => {
                    tracing::debug!(bmc = %self.bmc, %path, "cached system path answers no system; listing")
                }
                // Gone or renamed (404, a different document): discover again. Anything else (certificate
                // changed, unreachable, refused) would fail the listing too and is the caller's to see.
                Err(e @ (RedfishError::Status { .. } | RedfishError::Json { .. })) => {
                    tracing::debug!(bmc = %self.bmc, %path, error = %e, "cached system path failed; listing")
                }
                Err(e) => return Err(rf_err(&self.bmc)(e)),
            }
        }
        let list = self.client.systems().await.map_err(rf_err(&self.bmc))?;
        let wanted = self.wanted.as_deref();
        let is_wanted = |s: &ComputerSystem| match wanted {
            None => true,
            Some(w) => {
                s.id.as_deref() == Some(w)
                    || s.name.as_deref() == Some(w)
                    || s.odata_id.trim_end_matches('/') == w.trim_end_matches('/')
                    || s.odata_id.trim_end_matches('/').rsplit('/').next() == Some(w)
            }
        };
        let s = list
            .items
            .into_iter()
            .find(is_wanted)
            .ok_or_else(|| BmcError::NoSystem { bmc: self.bmc.clone(), wanted: self.wanted.clone() })?;
        self.system = Some(s.clone());
        Ok(s)
    }

    async fn send_power(&mut self, action: PowerAction, off_wait: Duration) -> Result<Sent, BmcError> {
        let sys = self.system().await?;
        let bmc = self.bmc.clone();
        let (allowed, _warnings) = self.client.reset_types(&sys).await.map_err(rf_err(&bmc))?;
        let unsupported = self.client.profile().unsupported_reset_types();
        // The planner never substitutes a restart for a cycle (PowerCycle, else ForceOff + On).
        let plan =
            lifeline_redfish::plan_reset(action, allowed.as_deref(), &unsupported).ok_or_else(|| {
                BmcError::Redfish {
                    bmc: bmc.clone(),
                    source: RedfishError::NoResetType {
                        bmc: bmc.clone(),
                        action,
                        allowed: allowed.clone().unwrap_or_default(),
                        unsupported: unsupported.clone(),
                    },
                }
            })?;
        let mut sent = Sent { acked: true, ..Default::default() };
        let post = |t: &str, sent: &mut Sent| sent.commands.push(format!("ComputerSystem.Reset {t}"));
        match plan {
            ResetPlan::Single(t) => {
                post(&t, &mut sent);
                sent.expects_off = t == "PowerCycle";
                match self.client.reset(&sys, &t).await {
                    Ok(()) => {}
                    Err(RedfishError::ActionOutcomeUnknown { .. }) => sent.acked = false,
                    Err(e) => return Err(rf_err(&bmc)(e)),
                }
            }
            ResetPlan::OffThenOn { off, on } => {
                post(&off, &mut sent);
                match self.client.reset(&sys, &off).await {
                    Ok(()) => {}
                    // Whether it landed is read from the state below, never by resending.
                    Err(RedfishError::ActionOutcomeUnknown { .. }) => sent.acked = false,
                    Err(e) => return Err(rf_err(&bmc)(e)),
                }
                // From here on something was sent: every outcome is a report saying what, never a bare error.
                if let Err(e) = self.client.wait_for(&sys, PowerState::Off, off_wait).await {
                    sent.failure = Some(match e {
                        RedfishError::PowerWait { last, after, .. } => format!(
                            "{off} sent, but Off was not observed within {}s (last seen {last}); {on} was not sent",
                            after.as_secs()
                        ),
                        e => format!(
                            "{off} sent, then the power state was unreadable ({e}); {on} was not sent"
                        ),
                    });
                    sent.gave_up = true;
                    return Ok(sent);
                }
                sent.off_confirmed = true;
                sent.off_seen_at = Some(tokio::time::Instant::now());
                post(&on, &mut sent);
                match self.client.reset(&sys, &on).await {
                    Ok(()) => {}
                    Err(RedfishError::ActionOutcomeUnknown { .. }) => sent.acked = false,
                    Err(e) => {
                        sent.acked = false;
                        sent.failure = Some(format!("{on} failed after Off was observed: {e}"));
                    }
                }
            }
        }
        Ok(sent)
    }
}
