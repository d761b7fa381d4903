//! Browser sessions as stored: the records behind the web console's session cookie (the SHA-256 of its
//! id, the user, the CSRF token, the expiry).
//!
//! Why only records here: the session rules (a random id sent once as an HttpOnly cookie, the
//! double-submit CSRF check, constant-time comparisons, argon2 for the password) belong to the server's
//! auth; the engine owns the store, so those rules reach the records through these operations and the
//! server holds no store of its own.

pub use lifeline_store::SessionRow as WebSessionRow;

use crate::context::Lifeline;
use crate::error::Result;

impl Lifeline {
    /// Stores a new session, live until `expires_at_ms`. `id_hash`: the SHA-256 of the cookie's value
    /// (the value itself is never stored).
    pub async fn web_session_create(
        &self,
        id_hash: &str,
        username: &str,
        csrf: &str,
        expires_at_ms: i64,
    ) -> Result<()> {
        Ok(self.store().await?.session_create(id_hash, username, csrf, expires_at_ms).await?)
    }

    /// The session whose id hashes to `id_hash`, only while it is live: an expired one is `None`, as is
    /// one never created or ended.
    pub async fn web_session(&self, id_hash: &str) -> Result<Option<WebSessionRow>> {
        Ok(self.store().await?.session(id_hash).await?)
    }

    /// Ends a session (logout); ending one that is gone already is not an error.
    pub async fn web_session_end(&self, id_hash: &str) -> Result<()> {
        Ok(self.store().await?.session_end(id_hash).await?)
    }
}
