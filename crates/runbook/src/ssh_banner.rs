//! `ssh-banner`: the post-condition that the device's own operating system answers SSH, told by the
//! identification line its sshd sends first (RFC 4253 §4.2: `SSH-protoversion-softwareversion comments`).
//!
//! Why not `wait-for ssh`: any SSH server passes that, and a switch left in its rescue environment answers
//! SSH too — ONIE's rescue runs dropbear (`SSH-2.0-dropbear_…`), while the network OS answers with its own
//! sshd: OpenSSH on SONiC, Cumulus, EOS and NX-OS, Cisco's own (`SSH-2.0-Cisco-1.25`) on IOS. The address
//! comes from the inventory only (`management` or `frontend`), never from a variable; the expected banner is
//! the inventory platform's, or a pattern fixed in the runbook.

use std::time::{Duration, Instant};

use lifeline_types::Platform;
use regex::Regex;
use serde::Serialize;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::steps::{StepCtx, StepResult, device};

/// `expect = "platform"`: the banner the inventory's platform gives.
pub const PLATFORM: &str = "platform";

/// Where the banner is read: the inventory's addresses, never one from a variable.
pub const ADDRESSES: &[&str] = &["management", "frontend"];

/// The most bytes read before the identification line (RFC 4253 allows other lines before it).
const MAX_PREAMBLE: usize = 8 * 1024;

/// What each platform's network OS answers with. Debian-based NOSes add `Debian-…` unless the site set
/// `DebianBanner no`, so that comment is not required; a site that knows its exact build names it in
/// `expect`.
pub fn platform_pattern(p: Platform) -> &'static str {
    match p {
        Platform::Ios => r"^SSH-(2\.0|1\.99)-Cisco-",
        Platform::Sonic | Platform::Cumulus | Platform::Eos | Platform::Nxos => r"^SSH-2\.0-OpenSSH_",
    }
}

/// What a read of the start of the connection found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scan {
    /// The identification line, without its line end.
    Found(String),
    /// Not enough bytes yet.
    More,
    /// What was sent is not an SSH server's start.
    NotSsh(String),
}

/// Finds the identification line in the first bytes a server sent (pure: the wire parser).
pub fn scan(buf: &[u8]) -> Scan {
    let mut rest = buf;
    while let Some(end) = rest.iter().position(|&b| b == b'\n') {
        let line = &rest[..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.starts_with(b"SSH-") {
            // 255 bytes with CR LF at most; a longer one is not an identification line.
            if line.len() > 253 {
                return Scan::NotSsh(format!("identification line of {} bytes (at most 253)", line.len()));
            }
            return Scan::Found(String::from_utf8_lossy(line).into_owned());
        }
        rest = &rest[end + 1..];
    }
    if rest.starts_with(b"SSH-") && rest.len() > 253 {
        return Scan::NotSsh("identification line without an end".into());
    }
    if buf.len() >= MAX_PREAMBLE {
        return Scan::NotSsh(format!("no identification line in the first {} bytes", buf.len()));
    }
    Scan::More
}

/// One look at `addr`: the identification line, or why there is none. Every wait is bounded by `limit`.
pub async fn read_banner(addr: &str, limit: Duration) -> Result<String, String> {
    let work = async {
        let mut s = tokio::net::TcpStream::connect(addr).await.map_err(|e| format!("connect: {e}"))?;
        // Both sides send their identification (RFC 4253 §4.2); a server may wait for ours first.
        let _ = s.write_all(b"SSH-2.0-lifeline_banner_check\r\n").await;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 1024];
        loop {
            let n = s.read(&mut chunk).await.map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err(if buf.is_empty() {
                    "closed without a banner".to_owned()
                } else {
                    format!("closed after {} bytes without an identification line", buf.len())
                });
            }
            buf.extend_from_slice(&chunk[..n]);
            match scan(&buf) {
                Scan::Found(line) => return Ok(line),
                Scan::NotSsh(why) => return Err(why),
                Scan::More => {}
            }
        }
    };
    match tokio::time::timeout(limit, work).await {
        Ok(r) => r,
        Err(_) => Err(format!("no banner within {}", humantime::format_duration(limit))),
    }
}

/// The outcome of a banner check, as journalled.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    pub address: String,
    /// The pattern the banner had to match, and where it came from (`platform sonic`, `runbook`).
    pub expected: String,
    pub expected_from: String,
    /// The last identification line seen (or `None`: no SSH server answered).
    pub banner: Option<String>,
    /// Why the last look failed, when it did.
    pub last_error: Option<String>,
    pub matched: bool,
    pub attempts: u32,
    pub waited_ms: u64,
}

/// Looks at `addr` every `interval` until its banner matches `expect` or `timeout` passes.
pub async fn probe(
    addr: &str,
    expect: &Regex,
    expected_from: &str,
    timeout: Duration,
    interval: Duration,
) -> Probe {
    let started = Instant::now();
    let mut p = Probe {
        address: addr.to_owned(),
        expected: expect.as_str().to_owned(),
        expected_from: expected_from.to_owned(),
        banner: None,
        last_error: None,
        matched: false,
        attempts: 0,
        waited_ms: 0,
    };
    loop {
        p.attempts += 1;
        let left = timeout.saturating_sub(started.elapsed()).max(Duration::from_millis(100));
        match read_banner(addr, left.min(Duration::from_secs(5))).await {
            Ok(line) => {
                p.matched = expect.is_match(&line);
                p.last_error = (!p.matched).then(|| format!("`{line}` does not match /{}/", expect.as_str()));
                p.banner = Some(line);
            }
            Err(e) => {
                p.banner = None;
                p.last_error = Some(e);
            }
        }
        if p.matched || started.elapsed() + interval >= timeout {
            break;
        }
        tokio::time::sleep(interval).await;
    }
    p.waited_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    p
}

/// The `ssh-banner` post-condition of a run: the target's address from the inventory, the pattern from the
/// runbook or the target's platform.
pub(crate) async fn check(ctx: &StepCtx<'_>, on: &str, expect: &str, interval: Duration) -> StepResult {
    let d = match device(ctx) {
        Ok(d) => d,
        Err(e) => return StepResult::error(e),
    };
    if !ADDRESSES.contains(&on) {
        return StepResult::error(format!("`ssh` `{on}`: expected one of {}", ADDRESSES.join(", ")));
    }
    let addr = match crate::steps::address(&d, on, true) {
        Ok(a) => a,
        Err(e) => return StepResult::error(e),
    };
    let (pattern, from) = if expect == PLATFORM {
        match d.switch.as_ref().map(|s| s.platform) {
            Some(p) => (platform_pattern(p).to_owned(), format!("platform {p}")),
            None => {
                return StepResult::error(format!(
                    "`{}` has no platform in the inventory: give the banner in `expect`",
                    d.name
                ));
            }
        }
    } else {
        (expect.to_owned(), "runbook".to_owned())
    };
    let re = match Regex::new(&pattern) {
        Ok(r) => r,
        Err(e) => return StepResult::error(format!("`expect` is not a valid regular expression: {e}")),
    };
    let timeout = ctx.step.timeout.saturating_sub(Duration::from_millis(500)).max(Duration::from_millis(100));
    let p = probe(&addr, &re, &from, timeout, interval).await;
    let ev = serde_json::to_value(&p).unwrap_or_default();
    let out = json!({ "matched": p.matched, "banner": p.banner });
    if p.matched {
        StepResult::ok(
            format!("ssh {addr} answers `{}` ({from}: /{pattern}/)", p.banner.as_deref().unwrap_or_default()),
            out,
            ev,
        )
    } else {
        StepResult::failed(
            format!(
                "ssh {addr}: no banner matching /{pattern}/ ({from}) within {}: {}",
                humantime::format_duration(Duration::from_millis(p.waited_ms)),
                p.last_error.as_deref().unwrap_or("nothing seen")
            ),
            out,
            ev,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_identification_line_is_found_after_other_lines() {
        assert_eq!(scan(b"SSH-2.0-Cisco-1.25\r\n"), Scan::Found("SSH-2.0-Cisco-1.25".into()));
        assert_eq!(
            scan(b"Welcome\r\nto the switch\nSSH-2.0-OpenSSH_9.2\r\n"),
            Scan::Found("SSH-2.0-OpenSSH_9.2".into())
        );
        assert_eq!(scan(b"SSH-2.0-Open"), Scan::More);
        assert!(matches!(scan(&vec![b'x'; MAX_PREAMBLE]), Scan::NotSsh(_)));
        let long = format!("SSH-2.0-{}\r\n", "a".repeat(300));
        assert!(matches!(scan(long.as_bytes()), Scan::NotSsh(_)));
    }

    #[test]
    fn rescue_and_foreign_banners_do_not_pass_for_a_platform() {
        let sonic = Regex::new(platform_pattern(Platform::Sonic)).unwrap();
        let ios = Regex::new(platform_pattern(Platform::Ios)).unwrap();
        assert!(sonic.is_match("SSH-2.0-OpenSSH_8.4p1 Debian-5+deb11u3"));
        assert!(!sonic.is_match("SSH-2.0-dropbear_2019.78"), "ONIE's rescue shell");
        assert!(!sonic.is_match("SSH-2.0-Cisco-1.25"));
        assert!(ios.is_match("SSH-1.99-Cisco-1.25") && ios.is_match("SSH-2.0-Cisco-1.25"));
        assert!(!ios.is_match("SSH-2.0-paramiko_4.0.0"));
    }

    proptest! {
        #[test]
        fn scan_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = scan(&bytes);
        }

        #[test]
        fn any_preamble_then_an_identification_is_found(
            pre in proptest::collection::vec("[a-zA-Z0-9 .:-]{0,40}", 0..5),
            soft in "[A-Za-z0-9_.-]{1,40}",
        ) {
            prop_assume!(pre.iter().all(|l| !l.starts_with("SSH-")));
            let mut text = String::new();
            for l in &pre {
                text.push_str(l);
                text.push_str("\r\n");
            }
            let id = format!("SSH-2.0-{soft}");
            text.push_str(&id);
            text.push_str("\r\n");
            prop_assert_eq!(scan(text.as_bytes()), Scan::Found(id));
        }
    }
}
