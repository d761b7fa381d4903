//! Who is calling: local users with argon2id password hashes, browser sessions (an HttpOnly,
//! SameSite=Strict cookie, `Secure` under TLS, with a double-submit CSRF token for every mutating request),
//! and API tokens (`Authorization: Bearer`, stored as SHA-256, shown once, with a role and an expiry).
//! Failed logins back off per (user, address), in memory (a restart forgets, which only helps the
//! legitimate user): see [`crate::login_limit`].

use std::net::IpAddr;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use axum::http::HeaderMap;
use base64::Engine as _;
use lifeline_engine::Lifeline;
use lifeline_engine::ops::runs::now_ms;
use lifeline_engine::ops::users::TokenRow;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::error::{ApiError, ApiResult};

pub const SESSION_COOKIE: &str = "lifeline_session";
pub const CSRF_COOKIE: &str = "lifeline_csrf";
pub const CSRF_HEADER: &str = "x-csrf-token";
const TOKEN_PREFIX: &str = "llt_";

/// What a caller may do; each role includes the ones below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Reads everything except users and tokens of others.
    Viewer,
    /// Acts: power, console write, backups run and restore, fault ack, agent reports.
    Operator,
    /// Manages users, tokens, BMC trust.
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "viewer" => Some(Role::Viewer),
            "operator" => Some(Role::Operator),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }
}

/// How the caller proved who they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// A browser session; mutating requests need the CSRF header.
    Session {
        csrf: String,
    },
    Token {
        id: String,
    },
}

/// An authenticated caller, put into the request's extensions by the access layer.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user: String,
    pub role: Role,
    pub via: Via,
    pub addr: Option<IpAddr>,
    /// Set for a node's agent token: the caller may only deliver that node's reports (the intake routes),
    /// never read or act on anything else. A compromised GPU node then holds no operator's power over
    /// the fleet, and cannot speak for another node.
    pub node: Option<String>,
}

impl Caller {
    /// The audit actor: `web:<user>`, or `agent:<node>` for a node's agent token.
    pub fn actor(&self) -> String {
        match &self.node {
            Some(node) => format!("agent:{node}"),
            None => format!("web:{}", self.user),
        }
    }
}

/// The role string a node's agent token is stored with: `agent:<node>`. Not a [`Role`]: such a token
/// passes no role check, only the intake routes' own (see [`Caller::node`]).
pub const AGENT_ROLE_PREFIX: &str = "agent:";

pub fn hash_password(password: &str) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
    Ok(argon2::Argon2::default().hash_password(password.as_bytes(), &salt)?.to_string())
}

pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash)
        .map(|h| argon2::Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
        .unwrap_or(false)
}

/// A hash a login for an unknown user is checked against, so that both take the same time.
fn dummy_hash() -> &'static str {
    static H: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    H.get_or_init(|| hash_password("lifeline-no-such-user").unwrap_or_default())
}

pub fn random_secret(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    rand::fill(&mut b[..]);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// Equal without an early exit (timing does not tell how much of a secret matched).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub fn sha256_hex(s: &str) -> String {
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

/// A new API token: the row to store and the secret to show once. `role`: a [`Role`] name, or
/// [`AGENT_ROLE_PREFIX`] and a node.
pub fn new_token(username: &str, role: &str, expires_at_ms: Option<i64>) -> (TokenRow, String) {
    let mut idb = [0u8; 5];
    rand::fill(&mut idb);
    let id = hex::encode(idb);
    let secret = format!("{TOKEN_PREFIX}{id}_{}", random_secret(32));
    let row = TokenRow {
        id,
        token_hash: sha256_hex(&secret),
        username: username.into(),
        role: role.into(),
        created_at_ms: now_ms(),
        expires_at_ms,
        revoked_at_ms: None,
    };
    (row, secret)
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Resolves the caller from a bearer token or the session cookie; `None` when neither is present. `l`:
/// the server's own context (the records are read through it; the caller is not known yet).
pub async fn authenticate(
    l: &Lifeline,
    headers: &HeaderMap,
    addr: Option<IpAddr>,
) -> ApiResult<Option<Caller>> {
    if let Some(auth) = headers.get(axum::http::header::AUTHORIZATION) {
        let token = auth
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .ok_or(ApiError::Unauthenticated)?;
        return token_caller(l, token, addr).await.map(Some);
    }
    let Some(sid) = cookie(headers, SESSION_COOKIE) else { return Ok(None) };
    let Some(s) = l.web_session(&sha256_hex(sid)).await? else { return Err(ApiError::Unauthenticated) };
    let user = l.user_record(&s.username).await?.filter(|u| !u.disabled).ok_or(ApiError::Unauthenticated)?;
    let role = Role::parse(&user.role).ok_or(ApiError::Unauthenticated)?;
    Ok(Some(Caller { user: user.name, role, via: Via::Session { csrf: s.csrf }, addr, node: None }))
}

async fn token_caller(l: &Lifeline, token: &str, addr: Option<IpAddr>) -> ApiResult<Caller> {
    let id = token
        .strip_prefix(TOKEN_PREFIX)
        .and_then(|r| r.split_once('_'))
        .map(|(id, _)| id)
        .ok_or(ApiError::Unauthenticated)?;
    let row = l.token_record(id).await?.ok_or(ApiError::Unauthenticated)?;
    let now = now_ms();
    // Constant-time comparison of the hashes (the id lookup already leaked only the public part).
    let same = constant_time_eq(row.token_hash.as_bytes(), sha256_hex(token).as_bytes());
    if !same || row.revoked_at_ms.is_some() || row.expires_at_ms.is_some_and(|e| e <= now) {
        return Err(ApiError::Unauthenticated);
    }
    let user =
        l.user_record(&row.username).await?.filter(|u| !u.disabled).ok_or(ApiError::Unauthenticated)?;
    if let Some(node) = row.role.strip_prefix(AGENT_ROLE_PREFIX) {
        // Dead with its user (disabled above, or no longer an operator) like any token. The lowest role,
        // so a rule that forgot the node binding still lets it do nothing that matters.
        if Role::parse(&user.role).is_none_or(|r| r < Role::Operator) {
            return Err(ApiError::Unauthenticated);
        }
        let node = Some(node.to_owned());
        return Ok(Caller {
            user: user.name,
            role: Role::Viewer,
            via: Via::Token { id: row.id },
            addr,
            node,
        });
    }
    // A token never carries more than its user has now.
    let role = Role::parse(&row.role).min(Role::parse(&user.role)).ok_or(ApiError::Unauthenticated)?;
    Ok(Caller { user: user.name, role, via: Via::Token { id: row.id }, addr, node: None })
}

/// The double-submit check for a cookie-authenticated mutating request.
pub fn check_csrf(caller: &Caller, headers: &HeaderMap) -> ApiResult<()> {
    let Via::Session { csrf } = &caller.via else { return Ok(()) };
    let sent = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("");
    let cookie_val = cookie(headers, CSRF_COOKIE).unwrap_or("");
    let ok = !sent.is_empty() && constant_time_eq(sent.as_bytes(), csrf.as_bytes()) && sent == cookie_val;
    if ok { Ok(()) } else { Err(ApiError::Csrf) }
}

pub use crate::login_limit::LoginLimiter;

/// The longest password checked (argon2 over megabytes is work an attacker should not get for free).
pub const MAX_PASSWORD: usize = 1024;

/// Checks a username and password; the limiter sees every failure.
pub async fn login(
    l: &Lifeline,
    limiter: &LoginLimiter,
    user: &str,
    password: &str,
    addr: Option<IpAddr>,
) -> ApiResult<(String, Role)> {
    limiter.check(user, addr)?;
    if !crate::accounts::valid_username(user) || password.len() > MAX_PASSWORD {
        limiter.failed(user, addr);
        return Err(ApiError::Unauthenticated);
    }
    let row = l.user_record(user).await?;
    let hash = row.as_ref().map(|u| u.password_hash.clone()).unwrap_or_else(|| dummy_hash().to_owned());
    let password = password.to_owned();
    let ok = tokio::task::spawn_blocking(move || verify_password(&password, &hash)).await.unwrap_or(false);
    match row {
        Some(u) if ok && !u.disabled => {
            limiter.succeeded(user, addr);
            let role = Role::parse(&u.role).ok_or(ApiError::Unauthenticated)?;
            Ok((u.name, role))
        }
        _ => {
            limiter.failed(user, addr);
            Err(ApiError::Unauthenticated)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_round_trip_and_wrong_password() {
        let h = hash_password("s3cret").unwrap();
        assert!(h.starts_with("$argon2id$"), "{h}");
        assert!(verify_password("s3cret", &h));
        assert!(!verify_password("s3cre", &h));
        assert!(!verify_password("s3cret", "not a hash"));
    }

    #[test]
    fn csrf_needs_header_equal_to_cookie_and_session() {
        let c = Caller {
            user: "a".into(),
            role: Role::Operator,
            via: Via::Session { csrf: "tok".into() },
            addr: None,
            node: None,
        };
        let mut h = HeaderMap::new();
        assert!(check_csrf(&c, &h).is_err());
        h.insert(CSRF_HEADER, "tok".parse().unwrap());
        assert!(check_csrf(&c, &h).is_err(), "no cookie");
        h.insert(axum::http::header::COOKIE, "lifeline_csrf=tok; other=1".parse().unwrap());
        assert!(check_csrf(&c, &h).is_ok());
        h.insert(CSRF_HEADER, "nope".parse().unwrap());
        assert!(check_csrf(&c, &h).is_err());
        let t = Caller { via: Via::Token { id: "x".into() }, ..c };
        assert!(check_csrf(&t, &HeaderMap::new()).is_ok(), "bearer tokens are not ambient");
    }
}
