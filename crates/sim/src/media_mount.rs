//! A simulated BMC mounting an inserted image the way a real one does: over HTTP(S) with range requests
//! (an ISO is read a block at a time, never downloaded whole), starting where a CD's reader starts: the
//! first blocks, then the ISO 9660 primary volume descriptor at 32 KiB. The image server's certificate is
//! not checked (most BMCs cannot be given a CA for it; Lifeline's own image server relies on its
//! per-insert token instead).
//!
//! Why in the simulator: a test of Lifeline serving images must see a BMC actually read them, ranges
//! included, and a refused token must show as an image the BMC could not read.

use std::time::Duration;

/// What a mount read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The image's size, from the server's `Content-Range`.
    pub size: u64,
    /// Range requests answered 206.
    pub ranges: u32,
    pub bytes: u64,
    /// The ISO 9660 volume identifier, when the image is an ISO.
    pub volume_id: Option<String>,
}

/// The first blocks a reader asks for, then the primary volume descriptor (sector 16 of 2 KiB).
const READS: [(u64, u64); 2] = [(0, 2047), (32768, 34815)];

/// Reads `url` as a BMC mounting it does, from the BMC's own address `from` (as a real BMC's requests come
/// from its management address: Lifeline's image server answers a token from that address only); why
/// not, in words.
pub async fn mount(url: &str, from: std::net::IpAddr) -> Result<Mount, String> {
    // reqwest's own rustls configuration takes the process's provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .tls_danger_accept_invalid_certs(true)
        .connect_timeout(Duration::from_secs(3))
        .local_address(from)
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("no HTTP client: {e}"))?;
    let mut m = Mount { size: 0, ranges: 0, bytes: 0, volume_id: None };
    for (i, (from, to)) in READS.into_iter().enumerate() {
        if i > 0 && m.size <= to {
            break;
        }
        let r = client
            .get(url)
            .header(reqwest::header::RANGE, format!("bytes={from}-{to}"))
            .send()
            .await
            .map_err(|e| format!("cannot read the image: {}", chain(&e)))?;
        let status = r.status();
        if status != reqwest::StatusCode::PARTIAL_CONTENT {
            return Err(if status.is_success() {
                format!("the image server does not answer range requests ({status})")
            } else {
                format!("the image server answered {status}")
            });
        }
        let size = r
            .headers()
            .get(reqwest::header::CONTENT_RANGE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit('/').next())
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or("206 without a Content-Range of a known size")?;
        let body = r.bytes().await.map_err(|e| format!("the image's bytes: {}", chain(&e)))?;
        m.size = size;
        m.ranges += 1;
        m.bytes += body.len() as u64;
        if from == 32768 && body.get(1..6) == Some(b"CD001") {
            m.volume_id = body.get(40..72).map(|v| String::from_utf8_lossy(v).trim().to_owned());
        }
    }
    Ok(m)
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}
