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
//! The window that remains: a BMC whose table is already full (of other tools' sessions, or of ours from
//! before the ledger was readable) cannot be given even the one session that closes the others; the login
//! then fails naming the session limit and what was recorded there, and the BMC's timeout frees it.

use std::sync::Arc;
use std::time::Duration;

use lifeline_ipmi::client::{RecordFuture, SessionRecord, SessionRecorder};
use lifeline_ipmi::wire::app::CloseOutcome;
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
        tracing::info!(%bmc, closed = out.closed, gone = out.gone, "IPMI sessions left by dead processes of ours closed");
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
}
