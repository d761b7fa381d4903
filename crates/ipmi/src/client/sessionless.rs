//! Requests outside a session (IPMI 1.5 framing, no credentials): Get Channel Authentication Capabilities
//! and Get Channel Cipher Suites before a login, and any other command a BMC answers session-less (the
//! credential audit asks these without ever logging in).
//!
//! Why in the client: the retransmission loop (bounded attempts, backoff, late replies accepted, ICMP
//! unreachable treated as a loss) is the same one sessions use, and a caller with its own copy would drift.

use super::error::{Error, Result};
use super::timing::Timing;
use super::transport::{Link, decode_err, exchange};
use crate::wire::{
    Body, Command, Privilege,
    app::{
        ChannelAuthCaps, ChannelCipherSuites, GetChannelAuthCaps, GetChannelCipherSuites,
        parse_cipher_suite_records,
    },
    message::{Request, Response},
    packet::{self, Packet, V15Packet},
};
use tokio::net::UdpSocket;

/// Send `req` outside any session on a connected socket and return the first reply to the same command
/// (and rqSeq), retransmitting per `timing` (`what` names it in a timeout). The completion code is the
/// caller's to judge.
pub async fn sessionless(
    socket: &UdpSocket,
    bmc: &str,
    timing: &Timing,
    what: &'static str,
    req: Request,
) -> Result<Response> {
    sessionless_on(Link::Socket(socket), bmc, timing, what, req).await
}

/// [`sessionless`] over either path. The reply must echo the request's rqSeq as well as its command (as
/// ipmitool requires): on a mux, concurrent logins to one BMC see each other's replies.
pub(crate) async fn sessionless_on(
    link: Link<'_>,
    bmc: &str,
    timing: &Timing,
    what: &'static str,
    req: Request,
) -> Result<Response> {
    let (cmd, rq_seq) = (req.cmd, req.rq_seq);
    let msg = req.encode();
    let pkt = Packet::V15(V15Packet { auth_type: 0, seq: 0, session_id: 0, auth_code: None, message: msg });
    let dgram = packet::encode(&pkt, None, [0; 16]);
    exchange(link, bmc, timing, what, &dgram, |b| {
        let Ok(Packet::V15(p)) = packet::decode(b, None) else { return None };
        let resp = Response::decode(&p.message).ok()?;
        (resp.cmd == cmd && resp.rq_seq == rq_seq).then_some(Ok(resp))
    })
    .await
}

/// Session-less Get Channel Authentication Capabilities (IPMI 1.5 framing): works without
/// credentials, so the credential audit can use it to spot anonymous/null logins.
pub async fn get_channel_auth_caps(
    socket: &UdpSocket,
    bmc: &str,
    timing: &Timing,
    privilege: Privilege,
) -> Result<ChannelAuthCaps> {
    auth_caps_on(Link::Socket(socket), bmc, timing, privilege).await
}

pub(crate) async fn auth_caps_on(
    link: Link<'_>,
    bmc: &str,
    timing: &Timing,
    privilege: Privilege,
) -> Result<ChannelAuthCaps> {
    let req = GetChannelAuthCaps { channel: 0x8E, privilege: privilege as u8 };
    let what = "Get Channel Authentication Capabilities";
    let rq = Request::new(GetChannelAuthCaps::NETFN, GetChannelAuthCaps::CMD, 1, req.encode());
    let resp = sessionless_on(link, bmc, timing, what, rq).await?;
    if resp.completion != 0 {
        return Err(Error::CompletionCode { bmc: bmc.to_string(), cmd: what, code: resp.completion });
    }
    ChannelAuthCaps::decode(&resp.data).map_err(decode_err(bmc, "Get Channel Auth Caps response"))
}

/// Session-less Get Channel Cipher Suites (IPMI 1.5 framing, as ipmitool sends it before login): the suite
/// ids the BMC offers on the LAN channel, in its order. Why ask: a BMC that lacks a suite either refuses
/// its Open Session or silently ignores it (ipmi_sim), and silence cannot be told from a lost reply; with
/// the list, a missing suite is skipped at once and silence on an offered one is only ever a loss.
/// Lenient: stops at the first short page; unparsable bytes are skipped.
pub async fn get_channel_cipher_suites(socket: &UdpSocket, bmc: &str, timing: &Timing) -> Result<Vec<u8>> {
    cipher_suites_on(Link::Socket(socket), bmc, timing).await
}

pub(crate) async fn cipher_suites_on(link: Link<'_>, bmc: &str, timing: &Timing) -> Result<Vec<u8>> {
    let mut data = Vec::new();
    // 64 list indices of 16 bytes cover every possible record list.
    for index in 0..64u8 {
        // 0x0E: this channel; bit 7: list supported algorithms by cipher suite.
        let req = GetChannelCipherSuites { channel: 0x0E, payload_type: 0, index: 0x80 | index };
        let what = "Get Channel Cipher Suites";
        // A distinct rqSeq per page: a reply to another login's request for another page is never taken.
        let seq = (2 + index) & 0x3F;
        let rq = Request::new(GetChannelCipherSuites::NETFN, GetChannelCipherSuites::CMD, seq, req.encode());
        let resp = sessionless_on(link, bmc, timing, what, rq).await?;
        if resp.completion != 0 {
            return Err(Error::CompletionCode { bmc: bmc.to_string(), cmd: what, code: resp.completion });
        }
        let page = ChannelCipherSuites::decode(&resp.data).map_err(decode_err(bmc, what))?;
        let last = page.data.len() < 16;
        data.extend_from_slice(&page.data);
        if last {
            break;
        }
    }
    Ok(parse_cipher_suite_records(&data).into_iter().map(|r| r.id).collect())
}
