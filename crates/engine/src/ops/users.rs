//! Users and API tokens as stored: the records behind the server's logins and the `user`/`token` verbs.
//!
//! Why only records here: the account rules (password length, hashing, a token's role ceiling) belong to
//! the server's auth, which the CLI shares; the engine owns the store, so those rules reach the records
//! through these operations and no front end holds a store of its own.

pub use lifeline_store::{TokenRow, UserRow};

use crate::context::Lifeline;
use crate::error::Result;

impl Lifeline {
    /// Adds a user with an already hashed password. `false`: a user of that name exists.
    pub async fn user_insert(&self, name: &str, role: &str, password_hash: &str) -> Result<bool> {
        Ok(self.store().await?.user_add(name, role, password_hash).await?)
    }

    pub async fn user_record(&self, name: &str) -> Result<Option<UserRow>> {
        Ok(self.store().await?.user(name).await?)
    }

    pub async fn users(&self) -> Result<Vec<UserRow>> {
        Ok(self.store().await?.users().await?)
    }

    /// Sets a user's password hash (their sessions end). `false`: no such user.
    pub async fn user_set_password_hash(&self, name: &str, password_hash: &str) -> Result<bool> {
        Ok(self.store().await?.user_set_password(name, password_hash).await?)
    }

    /// Disables or enables a user (disabling ends their sessions and revokes their tokens). `false`: no
    /// such user.
    pub async fn user_set_disabled(&self, name: &str, disabled: bool) -> Result<bool> {
        Ok(self.store().await?.user_set_disabled(name, disabled).await?)
    }

    /// Stores a new token (its hash; the secret is never stored).
    pub async fn token_insert(&self, t: &TokenRow) -> Result<()> {
        Ok(self.store().await?.token_create(t).await?)
    }

    pub async fn token_record(&self, id: &str) -> Result<Option<TokenRow>> {
        Ok(self.store().await?.token(id).await?)
    }

    /// Every token, or `user`'s.
    pub async fn tokens(&self, user: Option<&str>) -> Result<Vec<TokenRow>> {
        Ok(self.store().await?.tokens(user).await?)
    }

    /// Revokes a token. `false`: no such token, or revoked already.
    pub async fn token_revoke(&self, id: &str) -> Result<bool> {
        Ok(self.store().await?.token_revoke(id).await?)
    }
}
