//! Where a session's id is written down while it lives (the caller's ledger: Lifeline's store), so that a
//! process killed with sessions open (kill -9, a crash, a lost host) leaves them findable: the next process
//! sends Close Session with each id ([`super::Session::close_other`]) instead of leaving the BMC's small
//! session table to its inactivity timeout.
//!
//! Why a callback in the client rather than calls around it: the session is open on the BMC from RAKP 3
//! on, before the caller has a handle, and it is closed from three places (`close`, the drop-time close,
//! a failed first request); only the client sees each of them. What is written is the BMC-side session id
//! (the managed system's id from the Open Session Response): it is what Close Session names, and nothing
//! secret (the keys never leave the session).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A record's write (the caller bounds and logs its own failures: a ledger never fails a session).
pub type RecordFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// The ledger side of a session's life.
pub trait SessionRecord: Send + Sync {
    /// A session with this BMC-side id is open (called before the session is used).
    fn opened(&self, bmc_session_id: u32) -> RecordFuture<'_>;
    /// The BMC confirmed the session closed (or said it no longer exists): strike it off.
    fn closed(&self, bmc_session_id: u32) -> RecordFuture<'_>;
}

/// A [`SessionRecord`] in a [`super::ClientConfig`].
#[derive(Clone)]
pub struct SessionRecorder(pub Arc<dyn SessionRecord>);

impl std::fmt::Debug for SessionRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionRecorder")
    }
}
