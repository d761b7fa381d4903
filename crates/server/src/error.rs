//! The server's one error response. Every handler returns [`ApiError`]; the HTTP status comes from the
//! engine's [`ErrorClass`] here and nowhere else, so the CLI's exit codes and the API's statuses never
//! disagree about what kind of failure something is.
//!
//! | class         | status | why                                                                    |
//! |---------------|--------|------------------------------------------------------------------------|
//! | `usage`       | 400    | the request is wrong                                                   |
//! | `not-found`   | 404    | it names nothing that exists                                           |
//! | `refused`     | 422    | well-formed and authorised, but a rule of the engine said no (403 is    |
//! |               |        | kept for "your role may not", so a client can tell the two apart)      |
//! | `conflict`    | 409    | another actor holds the target, or a replay's outcome is unknown       |
//! | `failed`      | 502    | the work reached a BMC or switch and it did not succeed                 |
//! | `unavailable` | 503    | Lifeline itself cannot work (store, audit log)                          |

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use lifeline_engine::{EngineError, ErrorClass};
use serde::Serialize;

/// An API failure: an engine error, or one of the server's own (authentication, authorisation, limits).
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A runbook error carries its own class (an unknown runbook or run is not-found, a bad `vars` is
    /// usage, a run in the wrong state is a conflict), mapped like the engine's.
    #[error(transparent)]
    Runbook(#[from] lifeline_runbook::RunbookError),
    #[error("authentication required")]
    Unauthenticated,
    #[error("role `{role}` may not {what}")]
    Forbidden { role: &'static str, what: String },
    #[error(
        "missing or wrong CSRF token (send the `X-CSRF-Token` header with the value of the `lifeline_csrf` cookie)"
    )]
    Csrf,
    #[error("too many failed logins for {key}; retry in {retry_after_s} s")]
    RateLimited { key: String, retry_after_s: u64 },
    #[error("{message}")]
    BadRequest { message: String },
    #[error("{what} `{name}` not found")]
    NotFound { what: &'static str, name: String },
    #[error("{who} already holds {limit} open streams (live feeds, consoles); close one first")]
    TooManyStreams { who: String, limit: usize },
    /// A group action without the confirmation count: the devices it would hit, to be confirmed by
    /// sending their number back.
    #[error("{what} hits {} device(s) ({}): send \"confirm\": {} to go ahead", devices.len(), devices.join(", "), devices.len())]
    Unconfirmed { what: String, devices: Vec<String> },
}

/// The JSON body of every error.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// `usage`, `not-found`, `refused`, `conflict`, `failed`, `unavailable`, `unauthenticated`, `forbidden`,
    /// `rate-limited`, `unconfirmed`.
    pub class: String,
    pub message: String,
    /// For `unconfirmed`: the number to send back as `confirm`, and the devices it stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirm: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<String>>,
    /// For a re-pin that confirmed another fingerprint (409): what is presented now, what is pinned now
    /// (`null`: nothing), and what was confirmed. Nothing was stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprints: Option<Fingerprints>,
}

/// Both sides of a refused re-pin.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Fingerprints {
    pub presented: String,
    pub pinned: Option<String>,
    pub expected: String,
}

/// The one class → status mapping.
pub fn status_of(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::Usage => StatusCode::BAD_REQUEST,
        ErrorClass::NotFound => StatusCode::NOT_FOUND,
        ErrorClass::Refused => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorClass::Conflict => StatusCode::CONFLICT,
        ErrorClass::Failed => StatusCode::BAD_GATEWAY,
        ErrorClass::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
    }
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::BadRequest { message: message.into() }
    }

    pub fn status_and_class(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::Engine(e) => (status_of(e.class()), e.class().as_str()),
            ApiError::Runbook(e) => (status_of(e.class()), e.class().as_str()),
            ApiError::Unauthenticated => (StatusCode::UNAUTHORIZED, "unauthenticated"),
            ApiError::Forbidden { .. } | ApiError::Csrf => (StatusCode::FORBIDDEN, "forbidden"),
            ApiError::RateLimited { .. } | ApiError::TooManyStreams { .. } => {
                (StatusCode::TOO_MANY_REQUESTS, "rate-limited")
            }
            ApiError::BadRequest { .. } => (StatusCode::BAD_REQUEST, "usage"),
            ApiError::NotFound { .. } => (StatusCode::NOT_FOUND, "not-found"),
            ApiError::Unconfirmed { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "unconfirmed"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, class) = self.status_and_class();
        let message = match &self {
            ApiError::Engine(e) => e.chain(),
            ApiError::Runbook(e) => e.chain(),
            other => other.to_string(),
        };
        if status.is_server_error() {
            tracing::warn!(%status, "{message}");
        }
        let (confirm, devices) = match &self {
            ApiError::Unconfirmed { devices, .. } => (Some(devices.len()), Some(devices.clone())),
            _ => (None, None),
        };
        let fingerprints = match &self {
            ApiError::Engine(EngineError::NotConfirmed { expected, presented, pinned, .. }) => {
                Some(Fingerprints {
                    presented: presented.to_string(),
                    pinned: pinned.map(|p| p.to_string()),
                    expected: expected.to_string(),
                })
            }
            _ => None,
        };
        let body = ErrorBody { class: class.into(), message, confirm, devices, fingerprints };
        let mut resp = (status, axum::Json(body)).into_response();
        if let ApiError::RateLimited { retry_after_s, .. } = self
            && let Ok(v) = retry_after_s.to_string().parse()
        {
            resp.headers_mut().insert(axum::http::header::RETRY_AFTER, v);
        }
        if let ApiError::Engine(EngineError::InProgress { .. }) = &self {
            resp.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from_static("2"));
        }
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert(axum::http::header::WWW_AUTHENTICATE, axum::http::HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_its_status() {
        let pairs = [
            (ErrorClass::Usage, 400),
            (ErrorClass::NotFound, 404),
            (ErrorClass::Refused, 422),
            (ErrorClass::Conflict, 409),
            (ErrorClass::Failed, 502),
            (ErrorClass::Unavailable, 503),
        ];
        for (c, s) in pairs {
            assert_eq!(status_of(c).as_u16(), s, "{c:?}");
        }
    }
}
