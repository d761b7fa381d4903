//! Kept BMC sessions written to the store, so a process killed with sessions open (kill -9, a crash, a
//! host lost) leaves none on its BMCs for good: the bmc crate's [`SessionLedger`] over the store (the bmc
//! crate knows no store), and the reclaim a process runs when it starts keeping sessions.
//!
//! Why: a BMC has a small session table (an iDRAC holds 8, an iLO 4). A Redfish session left by a killed
//! process lives for the BMC's session timeout (often 30 to 60 minutes); a few crash-restarts in that time
//! fill the table and the BMC refuses every login, Lifeline's included. With the ledger, the next process
//! takes a dead owner's session over (kept for its next operation: no login at all) or deletes it, so a
//! BMC holds at most one Lifeline session whatever the number of crashes. A one-shot command (no kept
//! sessions) writes down each session it opens for as long as it holds it, so a command killed mid-operation
//! leaves its session findable too; a BMC that refuses a login at its session limit has the sessions dead
//! owners left there deleted first ([`SessionLedger::stale`]), then the login is tried once more.
//!
//! IPMI sessions go into the same ledger, by their BMC-side session id (`ipmi:0x…`, see
//! [`lifeline_store::ipmi_session_uri`]): every IPMI session a pool opens is written down when the BMC
//! grants it and struck off when the BMC confirms it closed (the bmc crate's `kept_ipmi`). They cannot be
//! taken over (their keys die with the process), so the next process closes them: Close Session naming
//! each id from one ADMINISTRATOR session of its own, at start and when a BMC refuses a login at its limit.
//! Their token is empty; it goes through the same sealing as a Redfish token (one path for every row).
//!
//! The token is sealed in the store (a live token is a credential), with the same key as the sealed BMC
//! credentials: replicas share it. An owner is dead when its process is gone from this host, or, on another
//! host, when no live replica runs as that process.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use lifeline_bmc::{Reclaimed, SessionLedger};
use lifeline_store::{BmcSessionRow, Store};
use serde::Serialize;

use crate::context::Lifeline;
use crate::error::Result;
use crate::lease::{holder_is_dead_here, holder_name};
use crate::seal::SealedFiles;

/// This process as the owner of the sessions it keeps (one name for every context of the process: they
/// share one BMC pool).
pub fn session_owner() -> &'static str {
    static OWNER: OnceLock<String> = OnceLock::new();
    OWNER.get_or_init(|| holder_name("sessions"))
}

/// The ledger every BMC pool of the engine gets ([`lifeline_bmc::BmcOptions::ledger`]): a one-shot command
/// writes each Redfish session down while it holds it, and any process at a BMC's session limit frees the
/// ones dead processes left (the server's kept sessions use it too, through [`Lifeline::record_kept_sessions`]).
pub(crate) fn store_ledger(store: Store, sealed: SealedFiles) -> Arc<dyn SessionLedger> {
    Arc::new(StoreLedger { store, sealed })
}

/// The store side of the kept sessions.
struct StoreLedger {
    store: Store,
    sealed: SealedFiles,
}

fn seal_context(bmc: &str, uri: &str) -> String {
    format!("bmc-session/{bmc}/{uri}")
}

#[async_trait]
impl SessionLedger for StoreLedger {
    async fn kept(&self, bmc: &str, uri: &str, token: &str) {
        let token = match self.sealed.seal_secret(&seal_context(bmc, uri), token) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(%bmc, "a kept session's token cannot be sealed; not recorded: {e}");
                return;
            }
        };
        let row = BmcSessionRow {
            bmc: bmc.into(),
            session_uri: uri.into(),
            token,
            owner: session_owner().into(),
            opened_at_ms: lifeline_store::now_ms(),
        };
        if let Err(e) = self.store.record_bmc_session(&row).await {
            tracing::warn!(%bmc, "a kept session cannot be recorded (a crash would leave it on the BMC): {e}");
        }
    }

    async fn closed(&self, bmc: &str, uri: &str) {
        if let Err(e) = self.store.forget_bmc_session(bmc, uri).await {
            tracing::warn!(%bmc, "a deleted session stays recorded: {e}");
        }
    }

    async fn ipmi_opened(&self, bmc: &str, session_id: u32) {
        self.kept(bmc, &lifeline_store::ipmi_session_uri(session_id), "").await;
    }

    async fn ipmi_closed(&self, bmc: &str, session_id: u32) {
        self.closed(bmc, &lifeline_store::ipmi_session_uri(session_id)).await;
    }

    /// A BMC refused an IPMI session at its limit: the IPMI sessions dead owners left there (reclaimed
    /// first, so two processes never close the same one).
    async fn stale_ipmi(&self, bmc: &str) -> Vec<u32> {
        let read = async {
            let live = live_replicas(&self.store).await?;
            let mut out = Vec::new();
            for row in self.store.bmc_sessions().await?.into_iter().filter(|r| r.bmc == bmc) {
                let Some(id) = lifeline_store::ipmi_session_id(&row.session_uri) else { continue };
                if owner_dead(&row.owner, &live)
                    && self
                        .store
                        .reclaim_bmc_session(bmc, &row.session_uri, &row.owner, session_owner())
                        .await?
                {
                    out.push(id);
                }
            }
            Ok::<_, lifeline_store::StoreError>(out)
        };
        read.await.unwrap_or_else(|e| {
            tracing::warn!(%bmc, "the recorded IPMI sessions cannot be read to free the BMC's session table: {e}");
            Vec::new()
        })
    }

    /// The BMC refused a login at its session limit: the Redfish sessions dead owners left there (reclaimed
    /// first, so two processes never delete the same one), with their tokens.
    async fn stale(&self, bmc: &str) -> Vec<(String, String)> {
        let read = async {
            let live = live_replicas(&self.store).await?;
            let mut out = Vec::new();
            let redfish =
                |r: &BmcSessionRow| r.bmc == bmc && lifeline_store::ipmi_session_id(&r.session_uri).is_none();
            for row in self.store.bmc_sessions().await?.into_iter().filter(redfish) {
                if !owner_dead(&row.owner, &live)
                    || !self
                        .store
                        .reclaim_bmc_session(bmc, &row.session_uri, &row.owner, session_owner())
                        .await?
                {
                    continue;
                }
                match self.sealed.unseal_secret(&seal_context(bmc, &row.session_uri), &row.token) {
                    Ok(token) => out.push((row.session_uri, token)),
                    // Unreadable: it cannot be deleted from here; it times out on the BMC.
                    Err(_) => self.store.forget_bmc_session(bmc, &row.session_uri).await?,
                }
            }
            Ok::<_, lifeline_store::StoreError>(out)
        };
        read.await.unwrap_or_else(|e| {
            tracing::warn!(%bmc, "the recorded sessions cannot be read to free the BMC's session table: {e}");
            Vec::new()
        })
    }
}

/// The replicas alive now (by holder name).
async fn live_replicas(store: &Store) -> std::result::Result<Vec<String>, lifeline_store::StoreError> {
    let now = lifeline_store::now_ms();
    Ok(store.replicas().await?.into_iter().filter(|r| r.expires_at_ms >= now).map(|r| r.id).collect())
}

/// What the reclaim at start did.
#[derive(Debug, Default, Clone, Serialize, PartialEq, Eq)]
pub struct SessionsReclaimed {
    /// Taken over and kept (the next operation adopts them).
    pub kept: usize,
    /// Deleted on their BMCs.
    pub deleted: usize,
    /// Forgotten without a DELETE (BMC no longer in the inventory, token unreadable): they time out there.
    pub forgotten: usize,
    /// Still recorded: the BMC did not answer the DELETE (tried again by the next process).
    pub failed: usize,
    /// IPMI sessions closed on their BMCs (Close Session naming their ids).
    pub ipmi_closed: usize,
    /// IPMI sessions the BMC no longer had (timed out there): struck off.
    pub ipmi_gone: usize,
    /// IPMI sessions still recorded: the BMC refused to close them, or no session could be opened to do it
    /// (logged per BMC; they time out there, and the next process tries again).
    pub ipmi_left: usize,
}

/// Whether `owner` (a holder name) is gone: its process left this host, or no live replica runs as it.
fn owner_dead(owner: &str, live_replicas: &[String]) -> bool {
    if owner == session_owner() {
        return false;
    }
    if holder_is_dead_here(owner) {
        return true;
    }
    let Some(proc_part) = process_part(owner) else { return false };
    let here = format!(" on {})", crate::lease::this_host());
    if proc_part.ends_with(&here) {
        return false; // alive on this host (the check above said so)
    }
    !live_replicas.iter().any(|r| process_part(r) == Some(proc_part))
}

/// `(pid P on HOST)` of a holder name.
fn process_part(holder: &str) -> Option<&str> {
    let start = holder.rfind(" (pid ")?;
    let end = holder[start..].find(')')? + start + 1;
    Some(&holder[start + 1..end])
}

impl Lifeline {
    /// Records every Redfish session this process keeps from now on, and takes over (or deletes) the ones
    /// dead processes left. Called once by a process that keeps sessions (the server), before its first
    /// sweep.
    pub async fn record_kept_sessions(&self) -> Result<SessionsReclaimed> {
        let store = self.store().await?.clone();
        let pool = self.bmc_pool().await?;
        let sealed = SealedFiles::new(&self.paths.data_dir, &self.paths.seal_key);
        if let Some(kept) = &pool.options().kept {
            kept.set_ledger(store_ledger(store.clone(), sealed.clone()));
        }
        let live = live_replicas(&store).await?;
        let mut out = SessionsReclaimed::default();
        // IPMI sessions of dead owners, per BMC: closed from one session there each.
        let mut ipmi: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
        for row in store.bmc_sessions().await? {
            if !owner_dead(&row.owner, &live) {
                continue;
            }
            if let Some(id) = lifeline_store::ipmi_session_id(&row.session_uri) {
                if store.reclaim_bmc_session(&row.bmc, &row.session_uri, &row.owner, session_owner()).await? {
                    ipmi.entry(row.bmc.clone()).or_default().push(id);
                }
                continue;
            }
            if !store.reclaim_bmc_session(&row.bmc, &row.session_uri, &row.owner, session_owner()).await? {
                continue; // another process took it first
            }
            let token = sealed.unseal_secret(&seal_context(&row.bmc, &row.session_uri), &row.token);
            let sel = self.select_bmcs(std::slice::from_ref(&row.bmc), &[], false);
            let (Ok(token), Ok(sel)) = (token, sel) else {
                store.forget_bmc_session(&row.bmc, &row.session_uri).await?;
                out.forgotten += 1;
                continue;
            };
            let Some(b) = sel.bmcs.into_iter().next() else { continue };
            match pool.bmc(b.target).reclaim_redfish(&row.session_uri, &token).await {
                Reclaimed::Kept => out.kept += 1,
                Reclaimed::Deleted => {
                    store.forget_bmc_session(&row.bmc, &row.session_uri).await?;
                    out.deleted += 1;
                }
                Reclaimed::Failed => out.failed += 1,
            }
        }
        for (bmc, ids) in ipmi {
            let Some(b) = self
                .select_bmcs(std::slice::from_ref(&bmc), &[], false)
                .ok()
                .and_then(|s| s.bmcs.into_iter().next())
            else {
                // Gone from the inventory: nowhere to send Close Session; it times out there.
                for id in ids {
                    store.forget_bmc_session(&bmc, &lifeline_store::ipmi_session_uri(id)).await?;
                    out.forgotten += 1;
                }
                continue;
            };
            let done = pool.bmc(b.target).close_stale_ipmi(&ids).await;
            out.ipmi_closed += done.closed;
            out.ipmi_gone += done.gone;
            out.ipmi_left += done.refused + done.failed;
        }
        if out != SessionsReclaimed::default() {
            tracing::info!(?out, "BMC sessions left by dead processes reclaimed");
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_dead_when_their_process_or_replica_is_gone() {
        let host = crate::lease::this_host();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(owner_dead(&format!("sessions (pid {pid} on {host}) #aaaaaa"), &[]));
        let alive = std::os::unix::process::parent_id();
        assert!(!owner_dead(&format!("sessions (pid {alive} on {host}) #aaaaaa"), &[]));
        assert!(!owner_dead(session_owner(), &[]));
        let far = "sessions (pid 7 on far-host) #bbbbbb";
        assert!(owner_dead(far, &[]));
        assert!(!owner_dead(far, &["server (pid 7 on far-host) #cccccc".into()]));
        assert!(owner_dead(far, &["server (pid 8 on far-host) #cccccc".into()]));
        assert_eq!(process_part(far), Some("(pid 7 on far-host)"));
    }
}
