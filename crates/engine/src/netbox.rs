//! Reading devices from NetBox for `lifeline inventory import --netbox URL`: every page of
//! `/api/dcim/devices/`, within NetBox's rate limit.
//!
//! A NetBox behind a proxy answers 429 with `Retry-After` when a client pages too fast; an importer that
//! gave up there would import half a fleet. So a 429 waits what the server asks (up to a bound) and asks
//! again, a 5xx is retried with backoff, and every request has a timeout. The `next` link is followed only
//! on the URL's own scheme, host and port: a page cannot send the token elsewhere. What a page means is
//! `lifeline_inventory::import::netbox`'s.

use std::time::Duration;

use lifeline_inventory::import::Imported;
use lifeline_inventory::import::netbox::{self, RoleMap};
use reqwest::Url;

use crate::error::{EngineError, Result};

/// Where NetBox is and how patiently to read it.
#[derive(Debug, Clone)]
pub struct Source {
    /// NetBox's base URL (`https://netbox.example`); the API path is added.
    pub url: String,
    /// The API token (`NETBOX_TOKEN`), sent as `Authorization: Token …`.
    pub token: Option<String>,
    pub page_size: u32,
    pub timeout: Duration,
    /// Retries of one page after a 429 or a 5xx.
    pub retries: u32,
    /// The longest `Retry-After` obeyed; a longer one fails the import with the server's wait named.
    pub max_retry_after: Duration,
}

impl Default for Source {
    fn default() -> Self {
        Source {
            url: String::new(),
            token: None,
            page_size: 200,
            timeout: Duration::from_secs(30),
            retries: 5,
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// Every server NetBox lists, and what was skipped.
#[derive(Debug, Default)]
pub struct Fetched {
    pub devices: Vec<Imported>,
    /// (device, role slug) of devices whose role maps to no Lifeline role.
    pub skipped: Vec<(String, String)>,
    pub pages: usize,
    /// Requests repeated after a 429 or a 5xx.
    pub retried: usize,
}

/// A NetBox list page is a few MiB at most (1,000 devices); more is not a NetBox answer.
const MAX_PAGE_BYTES: usize = 64 << 20;
/// A loop of `next` links must end.
const MAX_PAGES: usize = 10_000;

/// Reads every page of `/api/dcim/devices/`.
pub async fn fetch_devices(src: &Source, roles: &RoleMap) -> Result<Fetched> {
    let base = Url::parse(&src.url)
        .map_err(|e| EngineError::bad_argument(format!("--netbox `{}` is not a URL: {e}", src.url)))?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err(EngineError::bad_argument(format!(
            "--netbox `{}`: expected http:// or https://",
            src.url
        )));
    }
    let mut url = base
        .join(&format!("api/dcim/devices/?limit={}", src.page_size.max(1)))
        .map_err(|e| EngineError::bad_argument(format!("--netbox `{}`: {e}", src.url)))?;
    // reqwest is built without a default crypto provider (ring is the workspace's); a no-op when installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(src.timeout)
        .connect_timeout(src.timeout.min(Duration::from_secs(10)))
        .build()
        .map_err(|e| EngineError::failed_by(&src.url, "NetBox client", e))?;
    let mut out = Fetched::default();
    loop {
        let doc = get_page(&client, &url, src, &mut out.retried).await?;
        let page = netbox::page(&doc, roles).map_err(|e| EngineError::failed(url.as_str(), e))?;
        out.pages += 1;
        out.devices.extend(page.devices);
        out.skipped.extend(page.skipped);
        let Some(next) = page.next else { break };
        let next = url
            .join(&next)
            .map_err(|e| EngineError::failed(url.as_str(), format!("bad `next` link: {e}")))?;
        if (next.scheme(), next.host_str(), next.port_or_known_default())
            != (base.scheme(), base.host_str(), base.port_or_known_default())
        {
            return Err(EngineError::failed(
                url.as_str(),
                format!("`next` points to another server ({next}); the token is not sent there"),
            ));
        }
        if out.pages >= MAX_PAGES {
            return Err(EngineError::failed(url.as_str(), format!("more than {MAX_PAGES} pages")));
        }
        url = next;
    }
    Ok(out)
}

async fn get_page(
    client: &reqwest::Client,
    url: &Url,
    src: &Source,
    retried: &mut usize,
) -> Result<serde_json::Value> {
    let mut attempt = 0;
    loop {
        let mut req = client.get(url.clone()).header("Accept", "application/json");
        if let Some(t) = &src.token {
            req = req.header("Authorization", format!("Token {t}"));
        }
        let wait = match req.send().await {
            Ok(r) if r.status().is_success() => return read_json(r, url).await,
            Ok(r) if r.status().as_u16() == 429 => {
                let asked = r
                    .headers()
                    .get("Retry-After")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs)
                    .unwrap_or(Duration::from_secs(1 << attempt.min(5)));
                if asked > src.max_retry_after {
                    return Err(EngineError::failed(
                        url.as_str(),
                        format!("NetBox asks to wait {asked:?} (429), longer than {:?}", src.max_retry_after),
                    ));
                }
                asked
            }
            Ok(r) if r.status().is_server_error() => Duration::from_millis(500 << attempt.min(6)),
            Ok(r) => {
                let status = r.status();
                let body = r.text().await.unwrap_or_default();
                let detail = serde_json::from_str::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.get("detail").and_then(|d| d.as_str()).map(str::to_owned))
                    .unwrap_or_default();
                return Err(EngineError::failed(url.as_str(), format!("NetBox answered {status} {detail}")));
            }
            Err(e) if attempt < src.retries => {
                tracing::warn!(url = %url, error = %crate::error::error_chain(&e), "NetBox request failed; retrying");
                Duration::from_millis(500 << attempt.min(6))
            }
            Err(e) => return Err(EngineError::failed(url.as_str(), crate::error::error_chain(&e))),
        };
        if attempt >= src.retries {
            return Err(EngineError::failed(
                url.as_str(),
                format!("still refused after {} retries", src.retries),
            ));
        }
        attempt += 1;
        *retried += 1;
        tokio::time::sleep(wait).await;
    }
}

async fn read_json(mut r: reqwest::Response, url: &Url) -> Result<serde_json::Value> {
    let mut body = Vec::new();
    while let Some(chunk) =
        r.chunk().await.map_err(|e| EngineError::failed(url.as_str(), crate::error::error_chain(&e)))?
    {
        if body.len() + chunk.len() > MAX_PAGE_BYTES {
            return Err(EngineError::failed(url.as_str(), format!("a page over {MAX_PAGE_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| EngineError::failed(url.as_str(), format!("not JSON: {e}")))
}
