//! The console WebSocket's Origin check. Browsers do not apply the same-origin policy to WebSocket
//! handshakes: a page on another site could open `wss://jumphost/api/v1/consoles/…/write` and the browser
//! would attach the session cookie were it not `SameSite=Strict`. That cookie attribute is the first
//! defence; this is the second (older browsers, a cookie policy changed later): a handshake whose `Origin`
//! is not this server's own host is refused. Clients that are not browsers (the CLI, scripts with a
//! bearer token) send no `Origin` and are not affected.

use axum::http::HeaderMap;
use axum::http::header::{HOST, ORIGIN};

/// `Ok` when the request has no `Origin` or one whose host and port are the `Host` it was sent to;
/// otherwise the offending origin.
pub fn same_origin(headers: &HeaderMap) -> Result<(), String> {
    let Some(origin) = headers.get(ORIGIN) else { return Ok(()) };
    let origin = origin.to_str().unwrap_or("(not text)");
    let host = headers.get(HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    let authority = origin.split_once("://").map(|(_, rest)| rest.trim_end_matches('/'));
    match authority {
        Some(a) if !host.is_empty() && a.eq_ignore_ascii_case(host) => Ok(()),
        _ => Err(origin.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(origin: Option<&str>, host: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        if let Some(o) = origin {
            m.insert(ORIGIN, o.parse().unwrap());
        }
        m.insert(HOST, host.parse().unwrap());
        m
    }

    #[test]
    fn only_the_servers_own_origin_or_none_passes() {
        assert!(same_origin(&h(None, "127.0.0.1:7443")).is_ok(), "no Origin: not a browser");
        assert!(same_origin(&h(Some("https://127.0.0.1:7443"), "127.0.0.1:7443")).is_ok());
        assert!(same_origin(&h(Some("http://Jump.example:7443/"), "jump.example:7443")).is_ok());
        for bad in ["https://evil.example", "https://127.0.0.1:7444", "null", "https://127.0.0.1:7443.evil"] {
            assert_eq!(same_origin(&h(Some(bad), "127.0.0.1:7443")), Err(bad.to_owned()), "{bad}");
        }
        assert!(same_origin(&h(Some("https://x"), "")).is_err(), "no Host: nothing to compare with");
    }
}
