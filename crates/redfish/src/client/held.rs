//! Sessions that outlive their client: a long-lived caller (the server's sweeps) takes a client's session
//! token out instead of deleting it, and hands it to the next client of the same BMC, which then sends no
//! login. A sweep every minute over a session-based BMC otherwise logs in and out on every visit: two
//! requests and, at the BMC's latency, two sequential round trips of a warm visit's four.
//!
//! Why these rules:
//! - A held session is only a token and the URI that deletes it (a few hundred bytes, no connection): a
//!   server holding one for each of 10,000 BMCs keeps no socket open between sweeps.
//! - Adopting never fails a connection: a token the BMC has since dropped (expired, BMC reset) is answered
//!   with 401, and the client's session pool then logs in once, as it does for any expired token.
//! - A token that cannot be adopted (the client already has a session, or uses HTTP Basic) is deleted at
//!   once, so handing sessions around never leaves one behind on the BMC.

use crate::client::{BmcTarget, Client, ClientOptions};
use crate::error::RedfishError;
use crate::session::{Session, logout};
use crate::tls::TlsTrust;

/// A session taken out of a client by [`Client::release_session`], still open on the BMC. Whoever holds it
/// either gives it to a client of the same BMC ([`Client::adopt_session`]) or deletes it
/// ([`HeldSession::logout`]); dropping it leaves it on the BMC until its session timeout.
pub struct HeldSession {
    session: Session,
}

impl std::fmt::Debug for HeldSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldSession")
            .field("uri", &self.session.uri.as_ref().map(|u| u.as_str()))
            .field("token", &"***")
            .finish()
    }
}

impl HeldSession {
    /// Where the session is deleted (`None`: the BMC named no URI; the session then times out there).
    pub fn uri(&self) -> Option<&str> {
        self.session.uri.as_ref().map(|u| u.as_str())
    }

    /// The token, for a caller that records its sessions so that a process that dies leaves none behind
    /// (the caller seals it: a live token is a credential).
    pub fn token(&self) -> &str {
        &self.session.token
    }

    /// A session recorded earlier ([`HeldSession::uri`], [`HeldSession::token`]), by a process that has
    /// since died: adopted by a client, or deleted. `None` when `uri` is not a URL.
    pub fn from_recorded(uri: &str, token: &str) -> Option<HeldSession> {
        let uri = reqwest::Url::parse(uri).ok()?;
        Some(HeldSession { session: Session { token: token.to_owned(), uri: Some(uri) } })
    }

    /// Deletes the session on `target` without a client (no service root is read): the transport is built
    /// as a client's would be, with the same TLS trust, and one DELETE is sent.
    pub async fn logout(
        self,
        target: &BmcTarget,
        trust: &TlsTrust,
        opts: &ClientOptions,
    ) -> Result<(), RedfishError> {
        let (t, _) = Client::build_transport(target, trust, opts).await?;
        logout(&t, &self.session).await
    }
}

impl Client {
    /// Uses `held` (a session an earlier client of this BMC released) for this client's requests instead of
    /// logging in. Call it before the client's first request. Returns whether the session was adopted; when
    /// it was not (this client already holds a session, or authenticates with HTTP Basic), `held` is deleted
    /// on the BMC before this returns, so it is never left behind.
    pub async fn adopt_session(&self, held: HeldSession) -> bool {
        let inner = &self.inner;
        let refused = match &inner.sessions {
            Some(pool) if self.auth_in_use() == crate::client::AuthInUse::Session => {
                match pool.adopt_held(held.session) {
                    Ok(()) => return true,
                    Err(s) => s,
                }
            }
            _ => held.session,
        };
        tracing::debug!(bmc = %self.bmc(), "held session not adopted; deleting it");
        if let Err(e) = logout(&inner.t, &refused).await {
            tracing::debug!(bmc = %self.bmc(), error = %e, "deleting a held session failed");
        }
        false
    }

    /// Like [`Client::close`] (requests in flight are waited for, up to the queue timeout, and no request is
    /// sent afterwards), but the session is handed to the caller instead of deleted. `None`: the client
    /// holds no session (HTTP Basic, or none was needed), or it was already closed.
    pub async fn release_session(&self) -> Option<HeldSession> {
        let inner = &self.inner;
        let mut sessions = self.take_sessions().await?;
        let session = sessions.pop()?;
        // At most one by construction; should a second ever appear, it is not left on the BMC.
        for extra in sessions {
            if let Err(e) = logout(&inner.t, &extra).await {
                tracing::debug!(bmc = %self.bmc(), error = %e, "logout failed");
            }
        }
        Some(HeldSession { session })
    }
}
