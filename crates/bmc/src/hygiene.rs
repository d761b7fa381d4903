//! Credential hygiene audit (`lifeline audit bmc`): which BMCs still accept a vendor's factory default
//! credentials, which run IPMI with cipher suite 0 or anonymous / null-user login, and which serve expired
//! or self-signed certificates.
//!
//! Safety rules, because this module knocks on doors with well-known passwords:
//! - only the targets passed in are touched (the caller passes the inventory's BMCs; nothing is scanned);
//! - at most `max_failures_per_bmc` failed login attempts per BMC per run (default 2, below every vendor's
//!   lockout threshold we know of), across both protocols, and the run stops at the first success;
//! - every attempt is audited (intent before, outcome after) like any other action, without the password;
//! - successful logins are closed at once (Close Session, no Redfish session: HTTP Basic is used).
//!
//! IPMI observations need no credentials: Get Channel Authentication Capabilities (anonymous login, null
//! user names, IPMI 1.5 auth types) and Get Channel Cipher Suites are both allowed outside a session.
//!
//! ## The default credential list ([`DEFAULT_CREDENTIALS`]) and its sources
//! - Dell iDRAC `root` / `calvin`: Dell iDRAC6/7/8 User's Guides, "Logging in to iDRAC" ("The default user
//!   name is root and the default password is calvin"); iDRAC9 ships per-unit passwords since 2019 but
//!   keeps `calvin` as an ordering option.
//! - Supermicro `ADMIN` / `ADMIN`: Supermicro IPMI documentation; boards made after November 2019 carry a
//!   unique password on a label (1gbits.com, "Resetting the Supermicro IPMI default password"), so only
//!   older or factory-reset boards answer to it.
//! - Lenovo XClarity Controller / IBM IMM `USERID` / `PASSW0RD` (zero): Lenovo XClarity documentation
//!   (pubs.lenovo.com) and the IPMI default password list in `Mdot0/Default-Credentials`.
//! - OpenBMC `root` / `0penBmc` (zero): the OpenBMC project's documentation uses it throughout (e.g. the
//!   TLS configuration guide in `openbmc/docs`: `curl --user root:0penBmc ...`).
//! - HPE iLO `Administrator` / per-unit random 8 characters printed on the toe tag: NOT tried (there is no
//!   default to try), listed so the report says why (`Mdot0/Default-Credentials`).
//! - Gigabyte / AMI MegaRAC SP-X `admin` / `password` (before March 2020; GIGABYTE security announcement
//!   "BMC Unique Pre-Programmed Password Implementation", 2020-03-19).
//! - Fujitsu iRMC, ASUS iKVM, Inspur and many generic AMI/OpenBMC builds `admin` / `admin`
//!   (`Mdot0/Default-Credentials`; Inspur ON5263M5 manual, "User Management": user 1 admin/admin).
//! - Oracle ILOM `root` / `changeme` (`Mdot0/Default-Credentials`).
//! - NVIDIA DGX / HGX BMCs `admin` / `admin` after a UID-button reset (NVIDIA DGX GB200 firmware update
//!   guide, "BMC Credentials and Factory Reset").

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use lifeline_ipmi::client::Timing;
use lifeline_ipmi::wire::app::{
    ChannelAuthCaps, GetChannelAuthCaps, GetChannelCipherSuites, parse_cipher_suite_records,
};
use lifeline_ipmi::wire::message::{Request, Response};
use lifeline_ipmi::wire::{Body, Command};
use lifeline_ipmi::{Error as IpmiError, Session};
use lifeline_redfish::{Client, Credentials, RedfishError};
use lifeline_types::{BmcProtocol, Health};
use serde::Serialize;
use serde_json::json;
use tokio::net::UdpSocket;
use tokio::task::JoinSet;

use crate::audit::{AuditIntent, AuditOutcome};
use crate::conn::{ipmi_config, tls_trust};
use crate::error::error_chain;
use crate::pool::BmcPool;
use crate::target::BmcTarget;

/// Where a default credential applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Applies {
    Ipmi,
    Redfish,
    Both,
}

/// One well-known factory default. `password: None` = per-unit random: documented, never tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DefaultCredential {
    pub id: &'static str,
    pub vendor: &'static str,
    /// Lowercase words that identify the vendor in a Redfish service root (`Vendor`, `Product`) or name
    /// its IANA number.
    pub hints: &'static [&'static str],
    pub iana: &'static [u32],
    pub username: &'static str,
    #[serde(skip)]
    pub password: Option<&'static str>,
    pub applies: Applies,
    pub source: &'static str,
}

/// The documented list (sources in the module docs), most widespread first within each vendor.
pub const DEFAULT_CREDENTIALS: &[DefaultCredential] = &[
    DefaultCredential {
        id: "dell-idrac",
        vendor: "Dell iDRAC",
        hints: &["dell", "idrac"],
        iana: &[674],
        username: "root",
        password: Some("calvin"),
        applies: Applies::Both,
        source: "Dell iDRAC User's Guide: default root/calvin",
    },
    DefaultCredential {
        id: "supermicro",
        vendor: "Supermicro",
        hints: &["supermicro", "smc"],
        iana: &[10876],
        username: "ADMIN",
        password: Some("ADMIN"),
        applies: Applies::Both,
        source: "Supermicro IPMI docs: ADMIN/ADMIN before Nov 2019",
    },
    DefaultCredential {
        id: "lenovo-xcc",
        vendor: "Lenovo XCC / IBM IMM",
        hints: &["lenovo", "xclarity", "xcc", "ibm", "imm"],
        iana: &[19046, 2],
        username: "USERID",
        password: Some("PASSW0RD"),
        applies: Applies::Both,
        source: "Lenovo XClarity docs: USERID/PASSW0RD",
    },
    DefaultCredential {
        id: "openbmc",
        vendor: "OpenBMC",
        hints: &["openbmc"],
        iana: &[49622],
        username: "root",
        password: Some("0penBmc"),
        applies: Applies::Both,
        source: "openbmc/docs: root/0penBmc",
    },
    DefaultCredential {
        id: "hpe-ilo",
        vendor: "HPE iLO",
        hints: &["hpe", "hp", "ilo"],
        iana: &[11, 47196],
        username: "Administrator",
        password: None,
        applies: Applies::Both,
        source: "HPE iLO: random 8-character password on the toe tag (not tried)",
    },
    DefaultCredential {
        id: "ami-megarac",
        vendor: "AMI MegaRAC / Gigabyte",
        hints: &["ami", "megarac", "gigabyte"],
        iana: &[20974, 40981],
        username: "admin",
        password: Some("password"),
        applies: Applies::Both,
        source: "GIGABYTE BMC announcement 2020-03-19: admin/password before March 2020",
    },
    DefaultCredential {
        id: "generic-admin",
        vendor: "generic (Fujitsu iRMC, ASUS, Inspur, NVIDIA after reset)",
        hints: &["fujitsu", "irmc", "asus", "inspur", "nvidia"],
        iana: &[],
        username: "admin",
        password: Some("admin"),
        applies: Applies::Both,
        source: "Mdot0/Default-Credentials; Inspur and NVIDIA DGX manuals: admin/admin",
    },
    DefaultCredential {
        id: "oracle-ilom",
        vendor: "Oracle ILOM",
        hints: &["oracle", "ilom", "sun"],
        iana: &[42],
        username: "root",
        password: Some("changeme"),
        applies: Applies::Both,
        source: "Mdot0/Default-Credentials: root/changeme",
    },
];

#[derive(Debug, Clone)]
pub struct HygieneOptions {
    /// Failed login attempts allowed per BMC per run, across protocols (0: no login attempts at all).
    pub max_failures_per_bmc: usize,
    /// Site-specific defaults tried first (e.g. a vendor's ordering option): `(username, password)`.
    pub extra_credentials: Vec<(String, String)>,
    pub check_defaults: bool,
    pub check_ipmi: bool,
    pub check_tls: bool,
    /// Certificates expiring within this are reported as a warning.
    pub expiry_warning: Duration,
    /// Timing of each login attempt and IPMI query.
    pub ipmi_timing: Timing,
}

impl Default for HygieneOptions {
    fn default() -> Self {
        HygieneOptions {
            max_failures_per_bmc: 2,
            extra_credentials: Vec::new(),
            check_defaults: true,
            check_ipmi: true,
            check_tls: true,
            expiry_warning: Duration::from_secs(30 * 86400),
            ipmi_timing: Timing {
                attempt_timeout: Duration::from_millis(500),
                max_attempt_timeout: Duration::from_secs(1),
                attempts: 3,
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum AttemptOutcome {
    Accepted,
    Refused,
    /// No clear answer (timeout, transport error): counted as a failure, since the BMC may have counted it.
    Error,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Attempt {
    pub protocol: BmcProtocol,
    /// Default list id, or `extra`.
    pub credential: String,
    pub username: String,
    pub outcome: AttemptOutcome,
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct IpmiFindings {
    pub ipmi2: bool,
    pub anonymous_login: bool,
    pub null_usernames: bool,
    /// IPMI 1.5 authentication types offered: none, md2, md5, password, oem.
    pub v15_auth_types: Vec<String>,
    /// Cipher suite ids the channel lists (empty: the BMC did not answer Get Channel Cipher Suites).
    pub cipher_suites: Vec<u8>,
    pub cipher_suite_zero: bool,
    pub oem_iana: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct CertificateFindings {
    pub fingerprint: String,
    pub subject: String,
    pub issuer: String,
    pub not_before: Option<DateTime<Utc>>,
    pub not_after: Option<DateTime<Utc>>,
    pub expired: bool,
    pub not_yet_valid: bool,
    pub expires_soon: bool,
    pub self_signed: bool,
}

/// One problem, for the report table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Finding {
    pub severity: Health,
    /// Stable code: `default-credentials`, `ipmi-cipher-zero`, `ipmi-anonymous`, `ipmi-null-user`,
    /// `ipmi-auth-none`, `redfish-plain-http`, `tls-expired`, `tls-not-yet-valid`, `tls-expires-soon`,
    /// `tls-self-signed`.
    pub code: &'static str,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct HygieneRow {
    pub bmc: String,
    pub address: String,
    pub vendor_hint: Option<String>,
    pub accepted_defaults: Vec<Attempt>,
    pub attempts: Vec<Attempt>,
    pub failed_attempts: usize,
    /// Why login attempts stopped before the list ran out.
    pub stopped: Option<String>,
    pub ipmi: Option<IpmiFindings>,
    pub certificate: Option<CertificateFindings>,
    /// Redfish is reached over plain HTTP (`redfish+http://`, inventory `tls = false`).
    pub redfish_plain_http: bool,
    pub findings: Vec<Finding>,
    pub errors: Vec<String>,
}

impl HygieneRow {
    pub fn worst(&self) -> Health {
        self.findings.iter().fold(Health::Ok, |h, f| h.worst(f.severity))
    }
}

/// Inspect a leaf certificate (pure: `now` is passed in).
pub fn inspect_certificate(
    der: &[u8],
    now: DateTime<Utc>,
    warn_within: Duration,
) -> Result<CertificateFindings, String> {
    let (_, cert) =
        x509_parser::parse_x509_certificate(der).map_err(|e| format!("unparsable certificate: {e}"))?;
    let v = cert.validity();
    let ts = |t: &x509_parser::time::ASN1Time| DateTime::<Utc>::from_timestamp(t.timestamp(), 0);
    let (not_before, not_after) = (ts(&v.not_before), ts(&v.not_after));
    let expired = not_after.is_some_and(|t| t < now);
    let not_yet_valid = not_before.is_some_and(|t| t > now);
    let warn = chrono::Duration::from_std(warn_within).unwrap_or_default();
    let expires_soon = !expired && not_after.is_some_and(|t| t < now + warn);
    let same_name = cert.subject().as_raw() == cert.issuer().as_raw();
    // Self-signed: its own key verifies its signature (a CA-issued leaf with an equal name does not).
    let self_signed = same_name && cert.verify_signature(None).is_ok();
    Ok(CertificateFindings {
        fingerprint: lifeline_redfish::fingerprint_der(der).to_string(),
        subject: cert.subject().to_string(),
        issuer: cert.issuer().to_string(),
        not_before,
        not_after,
        expired,
        not_yet_valid,
        expires_soon,
        self_signed,
    })
}

/// One session-less request through the IPMI client's retransmission loop; errors as text for the row.
async fn sessionless(
    socket: &UdpSocket,
    what: &'static str,
    netfn: u8,
    cmd: u8,
    data: Vec<u8>,
    timing: &Timing,
) -> Result<Response, String> {
    let bmc = socket.peer_addr().map(|a| a.to_string()).unwrap_or_default();
    lifeline_ipmi::client::sessionless(socket, &bmc, timing, what, Request::new(netfn, cmd, 0x04, data))
        .await
        .map_err(|e| e.to_string())
}

fn v15_types(bits: u8) -> Vec<String> {
    [(0, "none"), (1, "md2"), (2, "md5"), (4, "password"), (5, "oem")]
        .iter()
        .filter(|(b, _)| bits & (1 << b) != 0)
        .map(|(_, n)| (*n).to_owned())
        .collect()
}

/// Credential-free IPMI observations.
pub async fn inspect_ipmi(addr: SocketAddr, timing: &Timing) -> Result<IpmiFindings, String> {
    let bind: SocketAddr = if addr.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
    let socket = UdpSocket::bind(bind).await.map_err(|e| e.to_string())?;
    socket.connect(addr).await.map_err(|e| e.to_string())?;
    let req = GetChannelAuthCaps { channel: 0x8E, privilege: 4 };
    let (netfn, cmd) = (GetChannelAuthCaps::NETFN, GetChannelAuthCaps::CMD);
    let r = sessionless(&socket, "Get Channel Auth Caps", netfn, cmd, req.encode(), timing).await?;
    if r.completion != 0 {
        return Err(format!("Get Channel Auth Caps: completion code {:#04x}", r.completion));
    }
    let caps = ChannelAuthCaps::decode(&r.data).map_err(|e| e.to_string())?;
    let mut f = IpmiFindings {
        ipmi2: caps.supports_v2(),
        anonymous_login: caps.anonymous_login(),
        null_usernames: caps.null_usernames(),
        v15_auth_types: v15_types(caps.auth_types & 0x3F),
        oem_iana: caps.oem_id,
        ..Default::default()
    };
    // Records by cipher suite, 16 bytes per call, until a short answer.
    let mut data = Vec::new();
    for index in 0..0x40u8 {
        let req = GetChannelCipherSuites { channel: 0x0E, payload_type: 0, index: 0x80 | index };
        match sessionless(
            &socket,
            "Get Channel Cipher Suites",
            GetChannelCipherSuites::NETFN,
            GetChannelCipherSuites::CMD,
            req.encode(),
            timing,
        )
        .await
        {
            Ok(r) if r.completion == 0 && !r.data.is_empty() => {
                let chunk = &r.data[1..];
                data.extend_from_slice(chunk);
                if chunk.len() < 16 {
                    break;
                }
            }
            _ => break,
        }
    }
    let ids: BTreeSet<u8> = parse_cipher_suite_records(&data).iter().map(|r| r.id).collect();
    f.cipher_suites = ids.into_iter().collect();
    f.cipher_suite_zero = f.cipher_suites.contains(&0);
    Ok(f)
}

/// Candidates in trial order: extras, then defaults whose vendor matches the hint, then the rest.
fn candidates(opts: &HygieneOptions, hint: Option<&str>, iana: Option<u32>) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> =
        opts.extra_credentials.iter().map(|(u, p)| ("extra".to_owned(), u.clone(), p.clone())).collect();
    let hint = hint.map(str::to_ascii_lowercase);
    let matches = |d: &DefaultCredential| {
        hint.as_deref().is_some_and(|h| d.hints.iter().any(|w| h.contains(w)))
            || iana.is_some_and(|i| i != 0 && d.iana.contains(&i))
    };
    let mut list: Vec<&DefaultCredential> =
        DEFAULT_CREDENTIALS.iter().filter(|d| d.password.is_some()).collect();
    list.sort_by_key(|d| !matches(d));
    out.extend(
        list.into_iter()
            .map(|d| (d.id.to_owned(), d.username.to_owned(), d.password.unwrap_or_default().to_owned())),
    );
    out
}

fn ipmi_outcome(r: Result<Session, IpmiError>) -> (AttemptOutcome, Option<String>, Option<Session>) {
    match r {
        Ok(s) => (AttemptOutcome::Accepted, None, Some(s)),
        Err(e @ (IpmiError::Auth { .. } | IpmiError::SessionRefused { .. })) => {
            (AttemptOutcome::Refused, Some(e.to_string()), None)
        }
        Err(e) => (AttemptOutcome::Error, Some(e.to_string()), None),
    }
}

impl BmcPool {
    /// Audit `targets` (the inventory's BMCs, nothing else).
    pub async fn hygiene_audit(&self, targets: Vec<BmcTarget>, opts: &HygieneOptions) -> Vec<HygieneRow> {
        let mut set = JoinSet::new();
        let n = targets.len();
        for (i, t) in targets.into_iter().enumerate() {
            let pool = self.clone();
            let opts = opts.clone();
            set.spawn(async move {
                let _permit = pool.inner.permit().await;
                (i, pool.audit_one(t, &opts).await)
            });
        }
        let mut rows: Vec<Option<HygieneRow>> = vec![None; n];
        while let Some(r) = set.join_next().await {
            if let Ok((i, row)) = r {
                rows[i] = Some(row);
            }
        }
        rows.into_iter().flatten().collect()
    }

    async fn audit_one(&self, t: BmcTarget, opts: &HygieneOptions) -> HygieneRow {
        let mut row = HygieneRow {
            bmc: t.name.clone(),
            address: t.address.clone(),
            vendor_hint: None,
            accepted_defaults: Vec::new(),
            attempts: Vec::new(),
            failed_attempts: 0,
            stopped: None,
            ipmi: None,
            certificate: None,
            redfish_plain_http: false,
            findings: Vec::new(),
            errors: Vec::new(),
        };
        let use_ipmi = t.protocol != BmcProtocol::Redfish;
        let use_redfish = t.protocol != BmcProtocol::Ipmi;
        let popts = &self.inner.opts;
        let ipmi_addr = match t.address.parse::<std::net::IpAddr>() {
            Ok(ip) => Some(SocketAddr::new(ip, t.ipmi_port)),
            Err(_) => tokio::net::lookup_host((t.address.clone(), t.ipmi_port))
                .await
                .ok()
                .and_then(|mut a| a.next()),
        };

        // Credential-free observations first: they also give the vendor hint.
        let mut redfish_up = false;
        if use_redfish {
            let rt = lifeline_redfish::BmcTarget::new(t.name.clone(), t.redfish_url());
            let mut probe_opts = popts.redfish.clone();
            probe_opts.request_timeout = popts.probe_timeout;
            probe_opts.connect_timeout = popts.probe_timeout;
            if opts.check_tls && t.redfish_tls {
                match lifeline_redfish::probe_certificate(&rt, &probe_opts).await {
                    Ok((_, der)) => match inspect_certificate(&der, Utc::now(), opts.expiry_warning) {
                        Ok(c) => row.certificate = Some(c),
                        Err(e) => row.errors.push(format!("tls: {e}")),
                    },
                    Err(e) if t.protocol == BmcProtocol::Auto => {
                        tracing::debug!(bmc = %t.name, error = %e, "no TLS service")
                    }
                    Err(e) => row.errors.push(format!("tls: {}", error_chain(&e))),
                }
            }
            // Service root (no credentials by spec) for the vendor hint, through the pool's trust policy. A BMC
            // that wants credentials for it gets the inventory's (never a guessed default, which would count
            // against the lockout threshold unseen).
            let probe = Client::connect(
                rt,
                Credentials::new(t.username.clone(), t.password.clone()),
                tls_trust(&t, &popts.tls),
                probe_opts.credential_check(),
            )
            .await;
            match probe {
                Ok(c) => {
                    redfish_up = true;
                    row.redfish_plain_http = !t.redfish_tls;
                    let root = c.service_root();
                    let hint =
                        [root.vendor.clone(), root.product.clone(), Some(c.profile().platform.clone())]
                            .into_iter()
                            .flatten()
                            .collect::<Vec<_>>()
                            .join(" ");
                    row.vendor_hint = (!hint.trim().is_empty()).then_some(hint);
                    let _ = c.close().await;
                }
                Err(e) if t.protocol == BmcProtocol::Auto => {
                    tracing::debug!(bmc = %t.name, error = %e, "no Redfish")
                }
                Err(e) => row.errors.push(format!("redfish: {}", error_chain(&e))),
            }
        }
        let mut ipmi_up = false;
        if use_ipmi && opts.check_ipmi {
            match ipmi_addr {
                Some(a) => match inspect_ipmi(a, &opts.ipmi_timing).await {
                    Ok(f) => {
                        ipmi_up = f.ipmi2;
                        row.ipmi = Some(f);
                    }
                    Err(e) if t.protocol == BmcProtocol::Auto && redfish_up => {
                        tracing::debug!(bmc = %t.name, error = %e, "no IPMI")
                    }
                    Err(e) => row.errors.push(format!("ipmi: {e}")),
                },
                None => row.errors.push(format!("ipmi: cannot resolve {}", t.address)),
            }
        }

        if opts.check_defaults {
            let iana = row.ipmi.as_ref().map(|f| f.oem_iana);
            let list = candidates(opts, row.vendor_hint.as_deref(), iana);
            let mut protocols = Vec::new();
            if use_ipmi && ipmi_up {
                protocols.push(BmcProtocol::Ipmi);
            }
            if use_redfish && redfish_up {
                protocols.push(BmcProtocol::Redfish);
            }
            'outer: for (id, user, pass) in &list {
                for &p in &protocols {
                    if row.failed_attempts >= opts.max_failures_per_bmc {
                        row.stopped = Some(format!(
                            "lockout guard: {} failed attempts (limit {})",
                            row.failed_attempts, opts.max_failures_per_bmc
                        ));
                        break 'outer;
                    }
                    let listed = row.ipmi.as_ref().map(|i| i.cipher_suites.clone()).unwrap_or_default();
                    let attempt = self.try_login(&t, p, id, user, pass, ipmi_addr, &listed, opts).await;
                    let outcome = attempt.outcome;
                    row.attempts.push(attempt.clone());
                    match outcome {
                        AttemptOutcome::Accepted => {
                            row.accepted_defaults.push(attempt);
                            row.stopped = Some("stopped at the first accepted default".into());
                            break 'outer;
                        }
                        _ => row.failed_attempts += 1,
                    }
                }
            }
        }
        row.findings = findings(&row);
        row
    }

    #[allow(clippy::too_many_arguments)]
    async fn try_login(
        &self,
        t: &BmcTarget,
        protocol: BmcProtocol,
        id: &str,
        user: &str,
        pass: &str,
        ipmi_addr: Option<SocketAddr>,
        listed: &[u8],
        opts: &HygieneOptions,
    ) -> Attempt {
        let verb = lifeline_types::AuditAction::HygieneLogin;
        let mut attempt = Attempt {
            protocol,
            credential: id.to_owned(),
            username: user.to_owned(),
            outcome: AttemptOutcome::Error,
            detail: None,
        };
        let intent = AuditIntent {
            at: Utc::now(),
            bmc: t.name.clone(),
            action: verb,
            request_id: None,
            detail: json!({ "protocol": protocol, "credential": id, "username": user, "address": t.address }),
        };
        let intent_id = match self.audit.intent(&intent).await {
            Ok(i) => i,
            Err(e) => {
                attempt.detail = Some(format!("not attempted: audit log unavailable: {e}"));
                return attempt;
            }
        };
        match protocol {
            BmcProtocol::Ipmi => {
                let Some(addr) = ipmi_addr else { return attempt };
                let mut probe = t.clone();
                probe.username = user.to_owned();
                probe.password = pass.to_owned();
                // Only suites the BMC lists: a suite it lacks may be dropped silently (a slow timeout).
                if probe.cipher_suites.is_none() && !listed.is_empty() {
                    let usable: Vec<u8> = [17u8, 3].into_iter().filter(|s| listed.contains(s)).collect();
                    if !usable.is_empty() {
                        probe.cipher_suites = Some(usable);
                    }
                }
                let cfg = ipmi_config(&probe, &opts.ipmi_timing);
                let (o, d, s) = ipmi_outcome(Session::open(addr, &cfg).await);
                if let Some(s) = s {
                    let _ = s.close().await;
                }
                attempt.outcome = o;
                attempt.detail = d;
            }
            _ => {
                let popts = &self.inner.opts;
                let rt = lifeline_redfish::BmcTarget::new(t.name.clone(), t.redfish_url());
                let copts = popts.redfish.clone().credential_check();
                match Client::connect(rt, Credentials::new(user, pass), tls_trust(t, &popts.tls), copts).await
                {
                    Ok(c) => {
                        // The Systems collection needs authentication (the service root does not).
                        let r = c.systems().await;
                        let _ = c.close().await;
                        match r {
                            Ok(_) => attempt.outcome = AttemptOutcome::Accepted,
                            Err(e @ RedfishError::Status { status: 401 | 403, .. }) => {
                                attempt.outcome = AttemptOutcome::Refused;
                                attempt.detail = Some(e.to_string());
                            }
                            Err(e) => attempt.detail = Some(error_chain(&e)),
                        }
                    }
                    Err(e @ RedfishError::Status { status: 401 | 403, .. }) => {
                        attempt.outcome = AttemptOutcome::Refused;
                        attempt.detail = Some(e.to_string());
                    }
                    Err(e) => attempt.detail = Some(error_chain(&e)),
                }
            }
        }
        let outcome = AuditOutcome {
            at: Utc::now(),
            intent: intent_id,
            bmc: t.name.clone(),
            action: verb,
            ok: true,
            detail: json!({ "protocol": protocol, "credential": id, "username": user, "outcome": attempt.outcome }),
        };
        if let Err(e) = self.audit.outcome(&outcome).await {
            tracing::error!(bmc = %t.name, error = %e, "audit outcome not recorded");
        }
        attempt
    }
}

fn findings(row: &HygieneRow) -> Vec<Finding> {
    let mut out = Vec::new();
    for a in &row.accepted_defaults {
        out.push(Finding {
            severity: Health::Critical,
            code: "default-credentials",
            message: format!(
                "accepts the factory default `{}` ({}) over {}",
                a.username, a.credential, a.protocol
            ),
        });
    }
    if let Some(i) = &row.ipmi {
        if i.cipher_suite_zero {
            out.push(Finding {
                severity: Health::Critical,
                code: "ipmi-cipher-zero",
                message: "IPMI cipher suite 0 enabled: no authentication, integrity or encryption; any password logs in".into(),
            });
        }
        if i.anonymous_login {
            out.push(Finding {
                severity: Health::Critical,
                code: "ipmi-anonymous",
                message: "IPMI anonymous login (null user, null password) enabled".into(),
            });
        }
        if i.null_usernames {
            out.push(Finding {
                severity: Health::Warning,
                code: "ipmi-null-user",
                message: "IPMI null user names enabled".into(),
            });
        }
        if i.v15_auth_types.iter().any(|t| t == "none") {
            out.push(Finding {
                severity: Health::Warning,
                code: "ipmi-auth-none",
                message: "IPMI 1.5 authentication type NONE offered".into(),
            });
        }
    }
    if row.redfish_plain_http {
        out.push(Finding {
            severity: Health::Critical,
            code: "redfish-plain-http",
            message: "Redfish over plain HTTP: passwords and session tokens cross the network unencrypted, \
                      and nothing proves which BMC answers"
                .into(),
        });
    }
    if let Some(c) = &row.certificate {
        let until = c.not_after.map(|t| t.to_rfc3339()).unwrap_or_else(|| "?".into());
        if c.expired {
            out.push(Finding {
                severity: Health::Critical,
                code: "tls-expired",
                message: format!("TLS certificate expired on {until}"),
            });
        } else if c.expires_soon {
            out.push(Finding {
                severity: Health::Warning,
                code: "tls-expires-soon",
                message: format!("TLS certificate expires on {until}"),
            });
        }
        if c.not_yet_valid {
            out.push(Finding {
                severity: Health::Warning,
                code: "tls-not-yet-valid",
                message: "TLS certificate is not valid yet (BMC clock?)".into(),
            });
        }
        if c.self_signed {
            out.push(Finding {
                severity: Health::Warning,
                code: "tls-self-signed",
                message: format!("self-signed TLS certificate ({})", c.subject),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed(not_after_days: i64) -> Vec<u8> {
        let mut p = rcgen::CertificateParams::new(vec!["bmc.example".into()]).unwrap();
        let now = Utc::now();
        let ymd = |t: DateTime<Utc>| {
            use chrono::Datelike;
            rcgen::date_time_ymd(t.year(), t.month() as u8, t.day() as u8)
        };
        p.not_before = ymd(now - chrono::Duration::days(400));
        p.not_after = ymd(now + chrono::Duration::days(not_after_days));
        let key = rcgen::KeyPair::generate().unwrap();
        p.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn candidate_order_follows_the_vendor_hint() {
        let o = HygieneOptions::default();
        let c = candidates(&o, Some("Dell Inc. iDRAC"), None);
        assert_eq!((c[0].1.as_str(), c[0].2.as_str()), ("root", "calvin"));
        let s = candidates(&o, None, Some(10876));
        assert_eq!(s[0].1, "ADMIN");
        let extra = HygieneOptions { extra_credentials: vec![("u".into(), "p".into())], ..o };
        assert_eq!(candidates(&extra, None, None)[0].0, "extra");
        assert!(
            candidates(&extra, None, None).iter().all(|c| c.1 != "Administrator"),
            "HPE has no default to try"
        );
    }

    #[test]
    fn certificate_checks() {
        let now = Utc::now();
        let expired = inspect_certificate(&self_signed(-10), now, Duration::from_secs(86400)).unwrap();
        assert!(expired.expired && expired.self_signed && !expired.expires_soon);
        let soon = inspect_certificate(&self_signed(5), now, Duration::from_secs(30 * 86400)).unwrap();
        assert!(!soon.expired && soon.expires_soon);
        assert!(inspect_certificate(b"junk", now, Duration::ZERO).is_err());
    }
}
