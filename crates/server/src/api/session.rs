//! Logging in and out of the browser session; who am I.

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json};
use lifeline_types::AuditAction;
use serde::{Deserialize, Serialize};

use crate::access::{Access, Route, route, viewer};
use crate::api::model::LoggedOut;
use crate::auth::{self, CSRF_COOKIE, Caller, Role, SESSION_COOKIE, Via};
use crate::error::ApiResult;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::POST,
            "/api/v1/login",
            Access::Public,
            "session",
            "Log in: sets the session cookie and returns the CSRF token.",
            // A login is a user name and a password: nothing needs more than a few KiB.
            post(login).layer(axum::extract::DefaultBodyLimit::max(MAX_LOGIN_BODY)),
        )
        .body("LoginRequest")
        .returns::<LoginResponse>(),
        route(Method::POST, "/api/v1/logout", viewer(), "session", "End this session.", post(logout))
            .returns::<LoggedOut>(),
        route(Method::GET, "/api/v1/me", viewer(), "session", "The caller: user and role.", get(me))
            .returns::<Me>(),
    ]
}

/// The largest login request body read.
pub const MAX_LOGIN_BODY: usize = 4096;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct LoginRequest {
    pub username: String,
    pub password: String,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LoginResponse {
    pub user: String,
    pub role: Role,
    /// Send as `X-CSRF-Token` on every mutating request (also in the `lifeline_csrf` cookie).
    pub csrf_token: String,
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

fn cookie(name: &str, value: &str, http_only: bool, max_age: i64, secure: bool) -> HeaderValue {
    let mut c = format!("{name}={value}; Path=/; SameSite=Strict; Max-Age={max_age}");
    if http_only {
        c.push_str("; HttpOnly");
    }
    if secure {
        c.push_str("; Secure");
    }
    HeaderValue::from_str(&c).unwrap_or_else(|_| HeaderValue::from_static(""))
}

async fn login(
    State(s): State<AppState>,
    addr: Option<Extension<ConnectInfo<crate::access::Peer>>>,
    Json(req): Json<LoginRequest>,
) -> ApiResult<Response> {
    let ip = addr.map(|c| (c.0).0.0.ip());
    let res = auth::login(&s.base, &s.limiter, &req.username, &req.password, ip).await;
    s.metrics.logins.inc(&[("result", if res.is_ok() { "ok" } else { "failed" })]);
    let (user, role) = match res {
        Ok(v) => v,
        Err(e) => {
            let reason = match e {
                crate::error::ApiError::RateLimited { .. } => "backing off",
                _ => "wrong user name or password",
            };
            audit_refused(&s, s.refused_logins.refused(ip, &req.username, reason)).await;
            return Err(e);
        }
    };
    let audit = s.audit_as(&format!("web:{user}")).await?;
    let sid = auth::random_secret(32);
    let csrf = auth::random_secret(24);
    let ttl = s.session_ttl;
    let expires = chrono::Utc::now() + chrono::Duration::from_std(ttl).unwrap_or_default();
    s.base.web_session_create(&auth::sha256_hex(&sid), &user, &csrf, expires.timestamp_millis()).await?;
    audit
        .record(
            AuditAction::Login,
            "server",
            lifeline_engine::Outcome::Ok,
            None,
            serde_json::json!({ "from": ip }),
        )
        .await?;
    let max_age = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX);
    let mut resp =
        Json(LoginResponse { user, role, csrf_token: csrf.clone(), expires_at: expires }).into_response();
    let h = resp.headers_mut();
    h.append(header::SET_COOKIE, cookie(SESSION_COOKIE, &sid, true, max_age, s.secure_cookies));
    // Readable by the page's script: the double-submit half.
    h.append(header::SET_COOKIE, cookie(CSRF_COOKIE, &csrf, false, max_age, s.secure_cookies));
    Ok(resp)
}

async fn logout(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    if let Via::Session { .. } = caller.via
        && let Some(sid) = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == SESSION_COOKIE)
            .map(|(_, v)| v.to_owned())
    {
        s.base.web_session_end(&auth::sha256_hex(&sid)).await?;
    }
    let mut resp = Json(LoggedOut { logged_out: caller.user }).into_response();
    resp.headers_mut().append(header::SET_COOKIE, cookie(SESSION_COOKIE, "", true, 0, s.secure_cookies));
    resp.headers_mut().append(header::SET_COOKIE, cookie(CSRF_COOKIE, "", false, 0, s.secure_cookies));
    Ok(resp)
}

/// Writes refused-login rows (each a first refusal from a source, or a window's summary): actor `server`,
/// since the name an attacker typed is not an identity.
pub async fn audit_refused(s: &AppState, rows: Vec<crate::login_limit::RefusalRow>) {
    if rows.is_empty() {
        return;
    }
    let audit = match s.engine_as("server").audit().await {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!("refused login not audited: {}", e.chain());
            return;
        }
    };
    for detail in rows {
        if let Err(e) =
            audit.record(AuditAction::Login, "server", lifeline_engine::Outcome::Refused, None, detail).await
        {
            tracing::warn!("refused login not audited: {}", e.chain());
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Me {
    pub user: String,
    pub role: Role,
    pub via: SignedIn,
}

/// How the caller proved who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SignedIn {
    /// A browser session (cookie, with the CSRF token on mutating requests).
    Session,
    /// An API token (`Authorization: Bearer`).
    Token,
}

async fn me(Extension(c): Extension<Caller>) -> Json<Me> {
    let via = match c.via {
        Via::Session { .. } => SignedIn::Session,
        Via::Token { .. } => SignedIn::Token,
    };
    Json(Me { user: c.user, role: c.role, via })
}
