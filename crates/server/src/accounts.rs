//! Account management shared by the API (`/api/v1/users`, `/api/v1/tokens`) and the CLI (`lifeline user
//! …`, `lifeline token …`, which work through the engine's user and token records, without a running
//! server). Every change is audited as whoever made it.

use std::time::Duration;

use lifeline_engine::ops::users::{TokenRow, UserRow};
use lifeline_engine::{AuditService, EngineError, Lifeline, Outcome};
use lifeline_types::AuditAction;
use serde::Serialize;

use crate::auth::{self, Role};

/// Usernames: what fits an audit actor and a URL path.
pub fn valid_username(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
}

fn check_password(pw: &str) -> Result<(), EngineError> {
    if pw.chars().count() < 8 {
        return Err(EngineError::bad_argument("a password needs at least 8 characters"));
    }
    Ok(())
}

async fn hash(pw: &str) -> Result<String, EngineError> {
    let pw = pw.to_owned();
    tokio::task::spawn_blocking(move || auth::hash_password(&pw))
        .await
        .map_err(|e| EngineError::internal("hashing a password", e))?
        .map_err(|e| EngineError::internal("hashing a password", e.to_string()))
}

pub async fn user_add(
    l: &Lifeline,
    audit: &AuditService,
    name: &str,
    role: Role,
    password: &str,
) -> Result<UserRow, EngineError> {
    if !valid_username(name) {
        return Err(EngineError::bad_argument(format!(
            "user name `{name}`: letters, digits, `-_.@`, at most 64"
        )));
    }
    check_password(password)?;
    let h = hash(password).await?;
    if !l.user_insert(name, role.as_str(), &h).await? {
        audit
            .record(
                AuditAction::UserAdd,
                name,
                Outcome::Refused,
                None,
                serde_json::json!({ "reason": "exists" }),
            )
            .await?;
        return Err(EngineError::Refused {
            target: name.into(),
            reason: "a user of that name exists".into(),
        });
    }
    audit.record(AuditAction::UserAdd, name, Outcome::Ok, None, serde_json::json!({ "role": role })).await?;
    l.user_record(name)
        .await?
        .ok_or_else(|| EngineError::NotFound { target: name.into(), what: "user".into() })
}

pub async fn user_passwd(
    l: &Lifeline,
    audit: &AuditService,
    name: &str,
    password: &str,
) -> Result<(), EngineError> {
    check_password(password)?;
    let h = hash(password).await?;
    if !l.user_set_password_hash(name, &h).await? {
        return Err(EngineError::NotFound { target: name.into(), what: "no such user".into() });
    }
    audit.record(AuditAction::UserPasswd, name, Outcome::Ok, None, serde_json::json!({})).await
}

pub async fn user_disable(
    l: &Lifeline,
    audit: &AuditService,
    name: &str,
    disabled: bool,
) -> Result<(), EngineError> {
    if !l.user_set_disabled(name, disabled).await? {
        return Err(EngineError::NotFound { target: name.into(), what: "no such user".into() });
    }
    let action = if disabled { AuditAction::UserDisable } else { AuditAction::UserEnable };
    audit.record(action, name, Outcome::Ok, None, serde_json::json!({})).await
}

/// A created token: the secret is in this value only.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedToken {
    pub id: String,
    pub user: String,
    pub role: Role,
    /// A node's agent token: the node whose reports it alone may deliver.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Shown once; Lifeline keeps only its hash.
    pub token: String,
}

/// A token for `user` with `role` (default and ceiling: the user's role) expiring after `expires`.
pub async fn token_create(
    l: &Lifeline,
    audit: &AuditService,
    user: &str,
    role: Option<Role>,
    expires: Option<Duration>,
) -> Result<CreatedToken, EngineError> {
    let user_role = token_owner(l, user).await?;
    let role = role.unwrap_or(user_role);
    if role > user_role {
        return Err(EngineError::Refused {
            target: user.into(),
            reason: format!("a token cannot have more than its user's role ({})", user_role.as_str()),
        });
    }
    issue(l, audit, user, role, None, expires).await
}

/// A node's agent token, owned by `user` (at least an operator: the reports it delivers open and close
/// faults): it may deliver only `node`'s reports (`POST /api/v1/agent/reports`), nothing else, and dies with
/// its user like any token. `node` must be in the inventory (the caller checks; this crate has no inventory).
pub async fn agent_token_create(
    l: &Lifeline,
    audit: &AuditService,
    user: &str,
    node: &str,
    expires: Option<Duration>,
) -> Result<CreatedToken, EngineError> {
    if token_owner(l, user).await? < Role::Operator {
        return Err(EngineError::Refused {
            target: user.into(),
            reason: "an agent token's user must be an operator or an admin".into(),
        });
    }
    issue(l, audit, user, Role::Viewer, Some(node), expires).await
}

/// The role of the enabled user a token is made for.
async fn token_owner(l: &Lifeline, user: &str) -> Result<Role, EngineError> {
    let u = l
        .user_record(user)
        .await?
        .ok_or_else(|| EngineError::NotFound { target: user.into(), what: "no such user".into() })?;
    if u.disabled {
        return Err(EngineError::Refused { target: user.into(), reason: "the user is disabled".into() });
    }
    Role::parse(&u.role).ok_or_else(|| EngineError::internal("user role", u.role.clone()))
}

/// Stores and audits a new token: with `role`, or bound to `node`'s agent (stored as `agent:<node>`).
async fn issue(
    l: &Lifeline,
    audit: &AuditService,
    user: &str,
    role: Role,
    node: Option<&str>,
    expires: Option<Duration>,
) -> Result<CreatedToken, EngineError> {
    let expires_at =
        expires.map(|d| chrono::Utc::now() + chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX));
    let stored_role = match node {
        Some(n) => format!("{}{n}", auth::AGENT_ROLE_PREFIX),
        None => role.as_str().to_owned(),
    };
    let (row, secret): (TokenRow, String) =
        auth::new_token(user, &stored_role, expires_at.map(|t| t.timestamp_millis()));
    l.token_insert(&row).await?;
    let detail = match node {
        Some(n) => serde_json::json!({ "id": row.id, "agent": n, "expires_at": expires_at }),
        None => serde_json::json!({ "id": row.id, "role": role, "expires_at": expires_at }),
    };
    audit.record(AuditAction::TokenCreate, user, Outcome::Ok, None, detail).await?;
    Ok(CreatedToken {
        id: row.id,
        user: user.into(),
        role,
        node: node.map(Into::into),
        expires_at,
        token: secret,
    })
}

pub async fn token_revoke(l: &Lifeline, audit: &AuditService, id: &str) -> Result<(), EngineError> {
    let t = l
        .token_record(id)
        .await?
        .ok_or_else(|| EngineError::NotFound { target: id.into(), what: "no such token".into() })?;
    l.token_revoke(id).await?;
    audit
        .record(AuditAction::TokenRevoke, &t.username, Outcome::Ok, None, serde_json::json!({ "id": id }))
        .await
}
