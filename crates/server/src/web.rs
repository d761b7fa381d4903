//! The web console's pages, embedded in the binary at build time (`web/` at the workspace root): jump hosts
//! are often air-gapped, so nothing is fetched from a CDN or the disk at run time. Every page is the same
//! small HTML shell; its ES module reads the URL and renders the page from the JSON API, so a page's data
//! is always behind the API's login and role rules (the shell itself holds nothing secret).
//!
//! Every response of the server (pages and API) carries a strict Content-Security-Policy — scripts and
//! styles only from this origin, no inline script or style, no framing — and `nosniff`, so that a BMC
//! string that slipped into markup could still not run; HSTS on every response, and `no-store` on every
//! API answer (the token-creation answer carries the secret).

use axum::extract::Path;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

use crate::access::{Access, Route, route};

/// `Content-Security-Policy` for every response. `style-src 'self'` without `'unsafe-inline'`: the
/// terminal's computed styles go through constructable stylesheets (see `web/xterm-csp.js`).
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// One embedded file: its name under `/assets/`, its type and its bytes.
struct Asset {
    name: &'static str,
    mime: &'static str,
    body: &'static [u8],
}

macro_rules! assets {
    ($($name:literal => $path:literal, $mime:expr;)*) => {
        &[$(Asset { name: $name, mime: $mime, body: include_bytes!(concat!("../../../web/", $path)) }),*]
    };
}

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

static ASSETS: &[Asset] = assets! {
    "app.css" => "app.css", CSS;
    "lib.js" => "js/lib.js", JS;
    "app.js" => "js/app.js", JS;
    "login.js" => "js/login.js", JS;
    "next.js" => "js/next.js", JS;
    "overview.js" => "js/overview.js", JS;
    "keys.js" => "js/keys.js", JS;
    "fleet.js" => "js/fleet.js", JS;
    "fabrics.js" => "js/fabrics.js", JS;
    "node.js" => "js/node.js", JS;
    "node_media.js" => "js/node_media.js", JS;
    "incident.js" => "js/incident.js", JS;
    "console.js" => "js/console.js", JS;
    "backups.js" => "js/backups.js", JS;
    "runbooks.js" => "js/runbooks.js", JS;
    "faults.js" => "js/faults.js", JS;
    "audit.js" => "js/audit.js", JS;
    "hygiene.js" => "js/hygiene.js", JS;
    "admin.js" => "js/admin.js", JS;
    "xterm-csp.js" => "js/xterm-csp.js", JS;
    "xterm.mjs" => "vendor/xterm.mjs", JS;
    "xterm.css" => "vendor/xterm.css", CSS;
};

static SHELL: &[u8] = include_bytes!("../../../web/index.html");

/// The pages a URL may name (`/ui/<page>` or `/ui/<page>/<name>`); anything else is a 404.
pub const PAGES: &[&str] = &[
    "login", "overview", "fleet", "fabrics", "node", "console", "backups", "runbooks", "faults", "audit",
    "hygiene", "admin", "incident",
];

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/",
            Access::Public,
            "web",
            "The web console: redirects to the overview page.",
            get(root),
        )
        .redirects(),
        route(
            Method::GET,
            "/ui/{page}",
            Access::Public,
            "web",
            "A web console page (the shell; its data comes from the API behind login).",
            get(page),
        )
        .returns_text("text/html"),
        route(
            Method::GET,
            "/ui/{page}/{name}",
            Access::Public,
            "web",
            "A web console page about one device or switch.",
            get(page_of),
        )
        .returns_text("text/html"),
        route(
            Method::GET,
            "/assets/{file}",
            Access::Public,
            "web",
            "The web console's scripts and styles, embedded in the binary.",
            get(asset),
        )
        .returns_text("text/*"),
    ]
}

async fn root() -> Redirect {
    Redirect::to("/ui/overview")
}

fn shell(page: &str) -> Response {
    if !PAGES.contains(&page) {
        return (StatusCode::NOT_FOUND, "no such page").into_response();
    }
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], SHELL)
        .into_response()
}

async fn page(Path(page): Path<String>) -> Response {
    shell(&page)
}

async fn page_of(Path((page, _name)): Path<(String, String)>) -> Response {
    shell(&page)
}

async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|a| a.name == file) {
        Some(a) => {
            ([(header::CONTENT_TYPE, a.mime), (header::CACHE_CONTROL, "no-cache")], a.body).into_response()
        }
        None => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}

/// `Strict-Transport-Security`: a year, this host only (browsers ignore it over plain HTTP, which the
/// server serves only on loopback).
pub const HSTS: &str = "max-age=31536000";

/// Adds the security headers to every response of `app`; API answers (some carry secrets: a new token)
/// are never stored by a browser or a proxy.
pub fn secure(app: axum::Router) -> axum::Router {
    app.layer(axum::middleware::from_fn(
        |req: axum::extract::Request, next: axum::middleware::Next| async move {
            let api = req.uri().path().starts_with("/api/");
            let mut resp = next.run(req).await;
            let h = resp.headers_mut();
            h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
            h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
            h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
            h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
            h.insert(header::STRICT_TRANSPORT_SECURITY, HeaderValue::from_static(HSTS));
            if api {
                h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            }
            resp
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_embedded_and_typed() {
        for a in ASSETS {
            assert!(!a.body.is_empty(), "{} is empty", a.name);
            let want = if a.name.ends_with(".css") { CSS } else { JS };
            assert_eq!(a.mime, want, "{}", a.name);
        }
        let shell = std::str::from_utf8(SHELL).unwrap();
        // No inline script or style in the shell: the CSP would refuse it anyway.
        assert!(!shell.contains("<script>") && !shell.contains("<style") && !shell.contains("style="));
    }
}
