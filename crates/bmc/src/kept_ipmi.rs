//! IPMI sessions written to the ledger while they are open, and closed by id when their process died.
//!
//! Why: a process killed with an IPMI session open (a kept read session of the server, a power action's
//! ADMINISTRATOR session, a one-shot command mid-operation) cannot send Close Session, and the BMC keeps the
//! session until its inactivity timeout; a few crash-restarts in that time fill a small session table
//! (many BMCs hold 4 to 16 RMCP+ sessions) and every login is refused, Lifeline's included. So every IPMI
//! session a pool opens is written down by its BMC-side session id when the BMC grants it and struck off
//! when the BMC confirms it closed (the client's [`lifeline_ipmi::client::SessionRecord`] hook, which sees
//! every close: explicit, on drop, after a failed first request). The next process closes what dead owners
//! left: it opens one ADMINISTRATOR session and sends Close Session naming each stale id (IPMI v2 §22.19;
//! OpenIPMI closes another session's id for an ADMINISTRATOR session only, and answers 0x87 for one it no
//! longer has). A BMC that refuses leaves the session to its timeout, and the log line says so.
//!
//! A one-shot process (no kept sessions) also closes what dead owners left on a BMC before its first session
//! there ([`Swept`]), not only when the BMC refuses a login at its limit: a few crash-restarts must not
//! bring a BMC to its limit first. A stale session that holds the SOL payload (a killed process's console)
//! has the payload deactivated before it is closed: the next console activates at once instead of being
//! answered "payload already active" until the BMC's timeout, and a BMC that keeps a payload past its
//! session's close (or, as ipmi_sim does for its history instance, crashes on such a close) never sees one.
//!
//! The window that remains: a BMC whose table is already full (of other tools' sessions, or of ours from
//! before the ledger was readable) cannot be given even the one session that closes the others; the login
//! then fails naming the session limit and what was recorded there, and the BMC's timeout frees it.

use std::sync::Arc;
use std::time::Duration;

use lifeline_ipmi::client::{RecordFuture, SessionRecord, SessionRecorder};
use lifeline_ipmi::wire::app::CloseOutcome;
use lifeline_ipmi::wire::payload::PAYLOAD_SOL;
use lifeline_ipmi::{Privilege, Session};
use serde::Serialize;

use crate::conn::{ipmi_config, resolve_addr};
use crate::error::BmcError;
use crate::kept_redfish::SessionLedger;
use crate::options::BmcOptions;
use crate::target::BmcTarget;

/// The ledger a pool's IPMI sessions are written to: the kept sessions' own (the server's), else the pool's
/// ([`BmcOptions::ledger`], one-shot commands).
pub(crate) fn ledger_of(opts: &BmcOptions) -> Option<Arc<dyn SessionLedger>> {
    opts.kept.as_ref().and_then(|k| k.ledger()).or_else(|| opts.ledger.as_ref().map(|l| l.0.clone()))
}

/// One BMC's sessions as the IPMI client's record.
struct LedgerRecord {
    ledger: Arc<dyn SessionLedger>,
    bmc: String,
}

impl SessionRecord for LedgerRecord {
    fn opened(&self, id: u32) -> RecordFuture<'_> {
        Box::pin(self.ledger.ipmi_opened(&self.bmc, id))
    }
    fn closed(&self, id: u32) -> RecordFuture<'_> {
        Box::pin(self.ledger.ipmi_closed(&self.bmc, id))
    }
}

pub(crate) fn recorder(ledger: Arc<dyn SessionLedger>, bmc: &str) -> SessionRecorder {
    SessionRecorder(Arc::new(LedgerRecord { ledger, bmc: bmc.to_owned() }))
}

/// The BMCs on which a pool has closed what dead owners left, once per process: a one-shot command
/// does it before its first session there (the server does it for every BMC when it starts).
#[derive(Debug, Default)]
pub(crate) struct Swept(std::sync::Mutex<std::collections::HashSet<String>>);

impl Swept {
    /// Whether `bmc` is still to be swept (and from now on counted as swept).
    pub(crate) fn first(&self, bmc: &str) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(bmc.to_owned())
    }
}

/// The SOL instance a console activates (the live one; instance 2, ipmi_sim's history, is never held).
const SOL_LIVE: u8 = 1;

/// What closing the IPMI sessions dead processes left on one BMC did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StaleIpmi {
    /// Closed by Close Session naming their ids.
    pub closed: usize,
    /// The BMC no longer had them (timed out, closed by someone else): struck off.
    pub gone: usize,
    /// The BMC refused to close them (completion code logged): left to its session timeout, still recorded.
    pub refused: usize,
    /// Not tried: no session could be opened to close them, or the BMC did not answer.
    pub failed: usize,
    /// Of those, held the SOL payload (a dead process's console): deactivated before the close.
    pub sol_freed: usize,
}

impl StaleIpmi {
    /// Slots freed or found free.
    pub fn freed(&self) -> usize {
        self.closed + self.gone
    }
}

/// Closes `ids` on `target` from one ADMINISTRATOR session of ours (itself written down while open),
/// striking off each one closed or gone.
pub(crate) async fn close_stale(
    target: &BmcTarget,
    opts: &BmcOptions,
    ids: &[u32],
    ledger: Option<Arc<dyn SessionLedger>>,
) -> StaleIpmi {
    let bmc = &target.name;
    let mut out = StaleIpmi::default();
    if ids.is_empty() {
        return out;
    }
    let work = async {
        let addr = resolve_addr(target, target.ipmi_port, opts.probe_timeout).await?;
        let mut cfg = ipmi_config(target, &opts.ipmi_timing);
        cfg.privilege = Privilege::Administrator;
        cfg.record = ledger.clone().map(|l| recorder(l, bmc));
        let session = Session::open(addr, &cfg).await.map_err(crate::conn::ipmi_err(bmc))?;
        // A dead console's SOL payload first: deactivated only when its holder is one of these ids (an
        // operator's console is never touched). A BMC without the command simply has nothing freed here.
        match session.payload_holder(PAYLOAD_SOL, SOL_LIVE).await {
            Ok(Some(holder)) if ids.contains(&holder) => {
                match session.deactivate_payload(PAYLOAD_SOL, SOL_LIVE).await {
                    Ok(()) => out.sol_freed += 1,
                    Err(e) => tracing::warn!(
                        %bmc,
                        session = format_args!("{holder:#010x}"),
                        error = %e,
                        "the SOL payload a dead process of ours held could not be deactivated; its session is closed next"
                    ),
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(%bmc, error = %e, "who holds SOL is unknown (Get Payload Instance Info)")
            }
        }
        for &id in ids {
            match session.close_other(id).await {
                Ok(CloseOutcome::Closed) => out.closed += 1,
                Ok(CloseOutcome::Gone) => out.gone += 1,
                Ok(CloseOutcome::Refused(code)) => {
                    out.refused += 1;
                    tracing::warn!(
                        %bmc,
                        session = format_args!("{id:#010x}"),
                        "the BMC refused to close an IPMI session a dead process of ours left (completion code \
                         {code:#04x}: {}); it stays open there until the BMC's session timeout",
                        lifeline_ipmi::wire::cc::describe(code)
                    );
                    continue;
                }
                Err(e) => {
                    out.failed += 1;
                    tracing::warn!(%bmc, session = format_args!("{id:#010x}"), error = %e, "closing an IPMI session a dead process of ours left failed; tried again by the next process");
                    continue;
                }
            }
            if let Some(l) = &ledger {
                l.ipmi_closed(bmc, id).await;
            }
        }
        if let Err(e) = session.close().await {
            tracing::debug!(%bmc, error = %e, "closing the session that closed the stale ones failed");
        }
        Ok::<_, BmcError>(())
    };
    match tokio::time::timeout(opts.op_timeout.max(Duration::from_secs(1)), work).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(%bmc, error = %crate::error_chain(&e), stale = ids.len(), "no session to close the IPMI sessions dead processes of ours left; they stay open there until the BMC's session timeout");
        }
        Err(_) => {
            tracing::warn!(%bmc, stale = ids.len(), "closing the IPMI sessions dead processes of ours left timed out")
        }
    }
    out.failed = ids.len() - out.closed - out.gone - out.refused;
    if out.freed() > 0 {
        tracing::info!(%bmc, closed = out.closed, gone = out.gone, sol_freed = out.sol_freed, "IPMI sessions left by dead processes of ours closed");
    }
    out
}

impl crate::Bmc {
    /// Closes IPMI sessions dead processes of ours left on this BMC (ids from the ledger, already taken
    /// over there), from one ADMINISTRATOR session; each closed or gone one is struck off the pool's ledger.
    pub async fn close_stale_ipmi(&self, ids: &[u32]) -> StaleIpmi {
        let opts = &self.pool().opts;
        close_stale(self.target(), opts, ids, ledger_of(opts)).await
    }

    /// Closes every IPMI session the pool's ledger holds for this BMC from owners that are provably dead
    /// (a live replica's are never touched), SOL payloads included. Called before a console opens, so a
    /// restarted process gets its console back at once; nothing (no ledger, nothing stale) costs one read.
    pub async fn close_dead_owners_ipmi(&self) -> StaleIpmi {
        let opts = &self.pool().opts;
        let Some(ledger) = ledger_of(opts) else { return StaleIpmi::default() };
        let ids = ledger.stale_ipmi(&self.target().name).await;
        close_stale(self.target(), opts, &ids, Some(ledger)).await
    }
}

impl crate::BmcPool {
    /// What an IPMI session opened outside the pool (a console's SOL session) records itself with: the
    /// pool's ledger under `bmc`'s name, so the next process closes it when this one dies with it open.
    pub fn ipmi_recorder(&self, bmc: &str) -> Option<SessionRecorder> {
        ledger_of(&self.inner.opts).map(|l| recorder(l, bmc))
    }
}
