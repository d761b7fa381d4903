//! The RMCP+ login: Get Channel Auth Caps, the cipher suite choice (remembered, listed by the BMC, or each
//! configured one in turn), Open Session and RAKP 1-4, over either datagram path ([`Link`]).
//!
//! Why apart from the session: the login is the same over a session's own socket and over a shared mux,
//! and it ends with keys and ids, from which either kind of session is built.

use super::error::{Error, Result};
use super::session::ClientConfig;
use super::sessionless::{auth_caps_on, cipher_suites_on};
use super::timing::Timing;
use super::transport::{Link, exchange};
use crate::wire::{
    app::ChannelAuthCaps,
    crypto::{CipherSuite, RakpParams, SessionKeys, codes_equal},
    packet::{self, Packet, PayloadType, V20Packet},
    rakp::{self, OpenSessionRequest, OpenSessionResponse, Rakp1, Rakp2, Rakp34},
};

pub(crate) struct Established {
    pub keys: SessionKeys,
    pub bmc_session_id: u32,
    pub console_session_id: u32,
    /// RAKP 4 was received and verified.
    pub confirmed: bool,
    /// The retransmission policy the session keeps, adapted to how fast the BMC answered the login.
    pub timing: Timing,
}

/// Why a suite attempt failed in a way that justifies trying the next suite. Silence on Open Session only
/// counts when the BMC's suite list is unknown (`silence_is_refusal`), and only after every retransmission:
/// ipmi_sim and some firmware ignore Open Session for a suite they lack, but one lost datagram is not that.
fn suite_rejected(e: &Error, silence_is_refusal: bool) -> bool {
    match e {
        Error::SessionRefused { stage: "Open Session", status, .. } => matches!(
            *status,
            rakp::status::INVALID_AUTH_ALG
                | rakp::status::INVALID_INTEGRITY_ALG
                | 0x06
                | 0x07
                | rakp::status::INVALID_CONF_ALG
                | rakp::status::NO_CIPHER_SUITE_MATCH
                | rakp::status::ILLEGAL_PARAMETER
        ),
        Error::Timeout { what: "Open Session", .. } => silence_is_refusal,
        Error::NoCipherSuite { .. } => true,
        _ => false,
    }
}

async fn handshake(link: Link<'_>, bmc: &str, cfg: &ClientConfig, suite: CipherSuite) -> Result<Established> {
    let console_session_id = loop {
        let id: u32 = rand::random();
        // Non-zero, and on a mux not in use by another session to this BMC (replies are routed by it).
        if id != 0 && link.session_id_free(id) {
            break id;
        }
    };
    let tag: u8 = rand::random();
    let algorithms = suite.algorithms();
    let req = OpenSessionRequest { tag, max_privilege: cfg.privilege as u8, console_session_id, algorithms };
    let dgram = packet::encode(
        &Packet::V20(V20Packet::sessionless(PayloadType::OpenSessionRequest, req.encode())),
        None,
        [0; 16],
    );
    // Every attempt, even for a suite that may be unsupported: a lost reply must not look like a refusal.
    let open = exchange(link, bmc, &cfg.timing, "Open Session", &dgram, |b| {
        let Ok(Packet::V20(p)) = packet::decode(b, None) else { return None };
        if p.payload_type != PayloadType::OpenSessionResponse {
            return None;
        }
        let r = OpenSessionResponse::decode(&p.payload).ok()?;
        (r.tag == tag && r.console_session_id == console_session_id).then_some(Ok(r))
    })
    .await?;
    if open.status != rakp::status::OK {
        return Err(Error::SessionRefused {
            bmc: bmc.to_string(),
            stage: "Open Session",
            status: open.status,
        });
    }
    if open.algorithms != Some(algorithms) {
        return Err(Error::NoCipherSuite { bmc: bmc.to_string(), tried: vec![suite.id()] });
    }

    let username = cfg.username.as_bytes()[..cfg.username.len().min(16)].to_vec();
    let console_random: [u8; 16] = rand::random();
    // Name-only lookup (bit 4), as ipmitool does.
    let role = 0x10 | cfg.privilege as u8;
    let r1 =
        Rakp1 { tag, bmc_session_id: open.bmc_session_id, console_random, role, username: username.clone() };
    let dgram =
        packet::encode(&Packet::V20(V20Packet::sessionless(PayloadType::Rakp1, r1.encode())), None, [0; 16]);
    let r2 = exchange(link, bmc, &cfg.timing, "RAKP 1", &dgram, |b| {
        let Ok(Packet::V20(p)) = packet::decode(b, None) else { return None };
        if p.payload_type != PayloadType::Rakp2 {
            return None;
        }
        let r = Rakp2::decode(&p.payload).ok()?;
        (r.tag == tag && r.console_session_id == console_session_id).then_some(Ok(r))
    })
    .await?;
    match r2.status {
        rakp::status::OK => {}
        rakp::status::UNAUTHORIZED_NAME => {
            return Err(Error::Auth { bmc: bmc.to_string(), reason: "user name not accepted by the BMC" });
        }
        s => return Err(Error::SessionRefused { bmc: bmc.to_string(), stage: "RAKP 2", status: s }),
    }
    let params = RakpParams {
        suite,
        console_session_id,
        bmc_session_id: open.bmc_session_id,
        console_random,
        bmc_random: r2.bmc_random,
        bmc_guid: r2.bmc_guid,
        role,
        username,
    };
    let password = cfg.password.as_bytes();
    if !codes_equal(&params.rakp2_code(password), &r2.auth_code) {
        // Tell the BMC to drop the half-open session now (RAKP 3 with an error status) rather than leave it
        // holding one of its few session slots until it times out: a password check that fails a few
        // times in a row (a rotation being resumed, an audit) must not exhaust them.
        let abort = Rakp34 {
            tag,
            status: rakp::status::INVALID_INTEGRITY_CHECK,
            session_id: open.bmc_session_id,
            auth_code: Vec::new(),
        };
        let d = packet::encode(
            &Packet::V20(V20Packet::sessionless(PayloadType::Rakp3, abort.encode())),
            None,
            [0; 16],
        );
        let _ = link.send(&d).await;
        return Err(Error::Auth { bmc: bmc.to_string(), reason: "RAKP 2 code mismatch (wrong password?)" });
    }

    let r3 = Rakp34 {
        tag,
        status: rakp::status::OK,
        session_id: open.bmc_session_id,
        auth_code: params.rakp3_code(password),
    };
    let dgram =
        packet::encode(&Packet::V20(V20Packet::sessionless(PayloadType::Rakp3, r3.encode())), None, [0; 16]);
    let sik = params.sik(password, cfg.kg.as_deref());
    let r4 = exchange(link, bmc, &cfg.timing, "RAKP 3", &dgram, |b| {
        let Ok(Packet::V20(p)) = packet::decode(b, None) else { return None };
        if p.payload_type != PayloadType::Rakp4 {
            return None;
        }
        let r = Rakp34::decode(&p.payload).ok()?;
        (r.tag == tag && r.session_id == console_session_id).then_some(Ok(r))
    })
    .await;
    let established = |confirmed| Established {
        keys: SessionKeys::derive(suite, &sik),
        bmc_session_id: open.bmc_session_id,
        console_session_id,
        confirmed,
        timing: cfg.timing.clone(),
    };
    // When RAKP 4 is lost the BMC has already activated the session and (ipmi_sim) ignores
    // or refuses a retransmitted RAKP 3. The keys are known, so the session is used
    // unconfirmed: the first authenticated reply proves the BMC derived the same SIK, and
    // if none comes, dropping the session sends Close Session so nothing is orphaned.
    let r4 = match r4 {
        Ok(r4) => r4,
        Err(Error::Timeout { .. }) => return Ok(established(false)),
        Err(e) => return Err(e),
    };
    match r4.status {
        rakp::status::OK => {}
        rakp::status::INVALID_INTEGRITY_CHECK => {
            return Err(Error::Auth { bmc: bmc.to_string(), reason: "BMC rejected our RAKP 3 code" });
        }
        _ => return Ok(established(false)),
    }
    if !codes_equal(&params.rakp4_icv(&sik), &r4.auth_code) {
        return Err(Error::Auth { bmc: bmc.to_string(), reason: "RAKP 4 integrity check value mismatch" });
    }
    Ok(established(true))
}

/// The suites to try, in order, and whether the BMC listed them (so silence on one is never a refusal).
/// A remembered suite goes first without asking; otherwise the BMC's list filters the configured order.
/// When the BMC does not answer the list request (a few attempts), every configured suite is tried.
async fn candidate_suites(link: Link<'_>, bmc: &str, cfg: &ClientConfig) -> (Vec<CipherSuite>, bool) {
    let mut suites = cfg.cipher_suites.clone();
    if let Some(known) = cfg.known_suite
        && let Some(i) = suites.iter().position(|s| *s == known)
    {
        suites.remove(i);
        suites.insert(0, known);
        return (suites, false);
    }
    if suites.len() < 2 {
        return (suites, false);
    }
    let timing = Timing { attempts: cfg.timing.attempts.clamp(1, 4), ..cfg.timing.clone() };
    match cipher_suites_on(link, bmc, &timing).await {
        Ok(ids) => {
            let offered: Vec<CipherSuite> =
                suites.iter().copied().filter(|s| ids.contains(&s.id())).collect();
            tracing::debug!(%bmc, ?ids, "BMC cipher suites");
            if offered.is_empty() {
                // A list without any suite we speak may be wrong (OEM records): try them all anyway.
                (suites, false)
            } else {
                (offered, true)
            }
        }
        Err(e) => {
            tracing::debug!(%bmc, error = %e, "no cipher suite list; trying each configured suite");
            (suites, false)
        }
    }
}

/// Log in to `bmc` over `link`: what the BMC said before login, and the established keys and ids.
pub(crate) async fn login(
    link: Link<'_>,
    bmc: &str,
    cfg: &ClientConfig,
) -> Result<(ChannelAuthCaps, Established)> {
    let asked = tokio::time::Instant::now();
    let auth_caps = auth_caps_on(link, bmc, &cfg.timing, cfg.privilege).await?;
    if !auth_caps.supports_v2() {
        return Err(Error::NoIpmi2 { bmc: bmc.to_string() });
    }
    // How late the answers come sets the schedule of every later request: a slow BMC is not buried under
    // retransmissions it answers one by one (see `Timing::adapted`).
    let slow = cfg.timing.since_last_send(asked.elapsed());
    let mut adapted = ClientConfig { timing: cfg.timing.adapted(slow), ..cfg.clone() };
    let asked = tokio::time::Instant::now();
    let (candidates, listed) = candidate_suites(link, bmc, &adapted).await;
    if listed {
        let slower = adapted.timing.since_last_send(asked.elapsed()).max(slow);
        adapted.timing = cfg.timing.adapted(slower);
    }
    let cfg = &adapted;
    let mut last_err = None;
    let mut tried = Vec::new();
    for suite in &candidates {
        tried.push(suite.id());
        let mut result = handshake(link, bmc, cfg, *suite).await;
        // A lost RAKP 2 leaves only a pending (never active) session on the BMC, which it
        // expires itself: starting over is safe.
        for _ in 0..2 {
            if !matches!(result, Err(Error::Timeout { what: "RAKP 1", .. })) {
                break;
            }
            result = handshake(link, bmc, cfg, *suite).await;
        }
        match result {
            Ok(e) => return Ok((auth_caps, e)),
            Err(e) if suite_rejected(&e, !listed && cfg.known_suite != Some(*suite)) => {
                tracing::debug!(%bmc, suite = suite.id(), error = %e, "cipher suite rejected, trying the next");
                last_err = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    // A timeout (silence) is reported as such: it also means "session table full"
    // on BMCs such as ipmi_sim; explicit algorithm refusals mean no common suite.
    Err(match last_err {
        Some(e @ Error::Timeout { .. }) => e,
        _ => Error::NoCipherSuite { bmc: bmc.to_string(), tried },
    })
}
