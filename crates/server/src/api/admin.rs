//! Users and API tokens (admin only).

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::Method;
use axum::routing::{delete, get, post};
use axum::{Extension, Json};
use serde::Deserialize;

use crate::access::{Route, admin, route};
use crate::accounts::{self, CreatedToken};
use crate::api::model::{PasswordChanged, Token, TokenRevoked, User, UserDisabled};
use crate::auth::{Caller, Role};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(Method::GET, "/api/v1/users", admin(), "admin", "Local users.", get(users))
            .returns_list::<User>(),
        route(Method::POST, "/api/v1/users", admin(), "admin", "Add a user.", post(user_add))
            .body("UserCreate")
            .returns::<User>(),
        route(
            Method::POST,
            "/api/v1/users/{name}/password",
            admin(),
            "admin",
            "Set a user's password (ends their sessions).",
            post(passwd),
        )
        .body("PasswordRequest")
        .returns::<PasswordChanged>(),
        route(
            Method::POST,
            "/api/v1/users/{name}/disable",
            admin(),
            "admin",
            "Disable a user (ends sessions, revokes tokens).",
            post(disable),
        )
        .returns::<UserDisabled>(),
        route(
            Method::GET,
            "/api/v1/tokens",
            admin(),
            "admin",
            "API tokens (never their secrets).",
            get(tokens),
        )
        .returns_list::<Token>(),
        route(
            Method::POST,
            "/api/v1/tokens",
            admin(),
            "admin",
            "Create a token: its secret is in this response only.",
            post(token_create),
        )
        .body("TokenCreate")
        .returns::<CreatedToken>(),
        route(
            Method::DELETE,
            "/api/v1/tokens/{id}",
            admin(),
            "admin",
            "Revoke a token.",
            delete(token_revoke),
        )
        .returns::<TokenRevoked>(),
    ]
}

async fn users(State(s): State<AppState>) -> ApiResult<Json<Vec<User>>> {
    Ok(Json(s.base.users().await?.into_iter().map(User::from_row).collect::<ApiResult<_>>()?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct UserCreate {
    pub name: String,
    pub role: Role,
    pub password: String,
}

async fn user_add(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Json(r): Json<UserCreate>,
) -> ApiResult<Json<User>> {
    let audit = s.audit_as(&c.actor()).await?;
    Ok(Json(User::from_row(accounts::user_add(&s.base, &audit, &r.name, r.role, &r.password).await?)?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct PasswordRequest {
    pub password: String,
}

async fn passwd(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Path(name): Path<String>,
    Json(r): Json<PasswordRequest>,
) -> ApiResult<Json<PasswordChanged>> {
    let audit = s.audit_as(&c.actor()).await?;
    accounts::user_passwd(&s.base, &audit, &name, &r.password).await?;
    Ok(Json(PasswordChanged { user: name, password: "changed".into() }))
}

async fn disable(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Path(name): Path<String>,
) -> ApiResult<Json<UserDisabled>> {
    let audit = s.audit_as(&c.actor()).await?;
    accounts::user_disable(&s.base, &audit, &name, true).await?;
    Ok(Json(UserDisabled { user: name, disabled: true }))
}

async fn tokens(State(s): State<AppState>) -> ApiResult<Json<Vec<Token>>> {
    Ok(Json(s.base.tokens(None).await?.into_iter().map(Token::from).collect()))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct TokenCreate {
    pub user: String,
    pub role: Option<Role>,
    /// A node's agent token instead: it may deliver only this node's reports (no `role` with it).
    pub agent: Option<String>,
    /// e.g. `90d`, `12h`; none: no expiry.
    pub expires: Option<String>,
}

async fn token_create(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Json(r): Json<TokenCreate>,
) -> ApiResult<Json<CreatedToken>> {
    let expires: Option<Duration> = r
        .expires
        .as_deref()
        .map(humantime::parse_duration)
        .transpose()
        .map_err(|e| ApiError::bad_request(format!("expires: {e}")))?;
    let audit = s.audit_as(&c.actor()).await?;
    if let Some(node) = &r.agent {
        if r.role.is_some() {
            return Err(ApiError::bad_request(
                "an agent token has no role: give `agent` or `role`, not both",
            ));
        }
        if !s.base.inventory()?.devices.iter().any(|d| d.name.as_str() == node) {
            return Err(lifeline_engine::EngineError::UnknownDevice { name: node.clone() }.into());
        }
        return Ok(Json(accounts::agent_token_create(&s.base, &audit, &r.user, node, expires).await?));
    }
    Ok(Json(accounts::token_create(&s.base, &audit, &r.user, r.role, expires).await?))
}

async fn token_revoke(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<Json<TokenRevoked>> {
    let audit = s.audit_as(&c.actor()).await?;
    accounts::token_revoke(&s.base, &audit, &id).await?;
    Ok(Json(TokenRevoked { id, revoked: true }))
}
