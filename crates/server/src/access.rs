//! The route table and the one access rule per route. Every route of the API is declared here with its
//! method, path, the least role that may call it, and its documentation; the router, the access layer and
//! the OpenAPI document are all built from this one table, so a route cannot exist without a rule (and the
//! role-matrix test lists every route a second time, so a new route without an expectation fails it).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;

use utoipa::ToSchema;
use utoipa::openapi::{RefOr, Schema};

use crate::auth::{self, Caller, Role};
use crate::error::ApiError;
use crate::state::AppState;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No credentials (health probes, login, the OpenAPI document).
    Public,
    /// Any authenticated caller whose role is at least this.
    AtLeast(Role),
}

/// One route: where, who, what it does, and its handler.
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    pub access: Access,
    pub tag: &'static str,
    pub summary: &'static str,
    /// The request body's schema (a component name), for the OpenAPI document.
    pub body: Option<&'static str>,
    /// What a success answers, for the OpenAPI document.
    pub answer: Answer,
    /// An intake of automated causes: what arrives here can open a fault or start recovery without a
    /// person deciding (agent reports). The role matrix requires every intake to be authenticated.
    pub intake: bool,
    pub handler: MethodRouter<AppState>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} ({:?}{})",
            self.method,
            self.path,
            self.access,
            if self.intake { ", intake" } else { "" }
        )
    }
}

/// What a route answers on success. Every route declares one (`Undeclared` fails the OpenAPI test), so
/// the document says what each operation returns.
#[derive(Debug, Clone)]
pub enum Answer {
    Undeclared,
    /// `application/json` of the component `schema` (an array of it when `list`); `collect` adds the
    /// schema and the schemas it names to the document's components.
    Json {
        schema: String,
        list: bool,
        collect: fn(&mut Schemas),
    },
    Text {
        content_type: &'static str,
    },
    WebSocket {
        frames: &'static str,
    },
    Redirect,
}

/// Named schemas, as utoipa collects them.
pub type Schemas = Vec<(String, RefOr<Schema>)>;

fn collect<T: ToSchema>(out: &mut Schemas) {
    out.push((T::name().into_owned(), T::schema()));
    T::schemas(out);
}

/// Shorthand for the tables in `api/`.
pub fn route(
    method: Method,
    path: &'static str,
    access: Access,
    tag: &'static str,
    summary: &'static str,
    handler: MethodRouter<AppState>,
) -> Route {
    Route {
        method,
        path,
        access,
        tag,
        summary,
        body: None,
        answer: Answer::Undeclared,
        intake: false,
        handler,
    }
}

impl Route {
    pub fn body(mut self, schema: &'static str) -> Route {
        self.body = Some(schema);
        self
    }

    /// A JSON body of type `T` (its schema and every schema it names go into the document).
    pub fn returns<T: ToSchema>(mut self) -> Route {
        self.answer = Answer::Json { schema: T::name().into_owned(), list: false, collect: collect::<T> };
        self
    }

    /// A JSON array of `T`.
    pub fn returns_list<T: ToSchema>(mut self) -> Route {
        self.answer = Answer::Json { schema: T::name().into_owned(), list: true, collect: collect::<T> };
        self
    }

    /// A body that is not JSON (a probe's words, metrics, a CSV download, a page, a script).
    pub fn returns_text(mut self, content_type: &'static str) -> Route {
        self.answer = Answer::Text { content_type };
        self
    }

    /// A WebSocket (`101 Switching Protocols`); `frames` says what travels over it.
    pub fn upgrades(mut self, frames: &'static str) -> Route {
        self.answer = Answer::WebSocket { frames };
        self
    }

    /// A redirect (`303 See Other`) to a page.
    pub fn redirects(mut self) -> Route {
        self.answer = Answer::Redirect;
        self
    }

    /// Marks the route as an intake of automated causes (see [`Route::intake`]).
    pub fn intake(mut self) -> Route {
        self.intake = true;
        self
    }
}

pub const fn viewer() -> Access {
    Access::AtLeast(Role::Viewer)
}
pub const fn operator() -> Access {
    Access::AtLeast(Role::Operator)
}
pub const fn admin() -> Access {
    Access::AtLeast(Role::Admin)
}

/// The client's address, for rate limits and audit rows (the same type over TCP and TLS listeners).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, tokio::net::TcpListener>>
    for Peer
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        Peer(*stream.remote_addr())
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, crate::tls::TlsListener>>
    for Peer
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, crate::tls::TlsListener>) -> Self {
        Peer(*stream.remote_addr())
    }
}

/// Each route's rule, and whether it is an intake (the only routes a node's agent token may call).
type Rules = Arc<HashMap<(Method, &'static str), (Access, bool)>>;

/// The router over a route table, each route behind its access rule.
pub fn router(state: AppState, routes: Vec<Route>) -> Router {
    let mut rules = HashMap::new();
    let mut r: Router<AppState> = Router::new();
    for rt in routes {
        if rules.insert((rt.method.clone(), rt.path), (rt.access, rt.intake)).is_some() {
            panic!("route {} {} is declared twice", rt.method, rt.path);
        }
        r = r.route(rt.path, rt.handler);
    }
    let rules: Rules = Arc::new(rules);
    r.route_layer(axum::middleware::from_fn_with_state((state.clone(), rules), enforce)).with_state(state)
}

/// Authenticates, checks the route's rule (and CSRF on cookie-authenticated mutating requests), and puts
/// the [`Caller`] into the request for the handler.
async fn enforce(State((state, rules)): State<(AppState, Rules)>, mut req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let path = req.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned()).unwrap_or_default();
    // HEAD is answered by GET routes.
    let key_method = if method == Method::HEAD { Method::GET } else { method.clone() };
    let resp = match rules.get(&(key_method, path.as_str())).copied() {
        None => ApiError::Forbidden { role: "anyone", what: format!("{method} {path} (no access rule)") }
            .into_response(),
        Some((Access::Public, _)) => next.run(req).await,
        Some((Access::AtLeast(min), intake)) => {
            let addr = req.extensions().get::<ConnectInfo<Peer>>().map(|c| c.0.0.ip());
            match auth::authenticate(&state.base, req.headers(), addr).await {
                Ok(Some(caller)) => match allowed(&caller, min, intake, &method, req.headers()) {
                    Ok(()) => {
                        req.extensions_mut().insert(caller);
                        next.run(req).await
                    }
                    Err(e) => e.into_response(),
                },
                Ok(None) => ApiError::Unauthenticated.into_response(),
                Err(e) => e.into_response(),
            }
        }
    };
    state.metrics.http_requests.inc(&[("route", &path), ("status", resp.status().as_str())]);
    resp
}

fn allowed(
    caller: &Caller,
    min: Role,
    intake: bool,
    method: &Method,
    headers: &axum::http::HeaderMap,
) -> Result<(), ApiError> {
    if let Some(node) = &caller.node {
        // A node's agent token: its node's reports and nothing else (the handler checks the node).
        return if intake {
            Ok(())
        } else {
            Err(ApiError::Forbidden { role: "agent", what: format!("do this (an agent token of {node})") })
        };
    }
    if caller.role < min {
        return Err(ApiError::Forbidden {
            role: caller.role.as_str(),
            what: format!("do this (needs {})", min.as_str()),
        });
    }
    if !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        auth::check_csrf(caller, headers)?;
    }
    Ok(())
}
