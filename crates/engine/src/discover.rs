//! `lifeline discover CIDR…`: which BMCs answer on an address range, what they are, and how that compares
//! with the inventory.
//!
//! Onboarding starts from a range, not a list. So discovery asks every address the two questions a BMC
//! answers without credentials — an RMCP presence ping (ASF, UDP 623) followed by IPMI Get Channel
//! Authentication Capabilities for those that pong, and the Redfish service root (plus the first system and
//! manager where the BMC allows it) — then reads vendor, model, serial, BMC MAC and firmware with the
//! inventory's credential references for the addresses the inventory knows — and, given a user and a
//! credential reference of their own (`--credentials REF`, never a password), for the addresses it does
//! not know, each pinned to the certificate its anonymous probe presented. An OOB network is 1G and BMCs
//! are slow: pings are paced at `rate` per second, and at most `concurrency` probes (and credentialed
//! reads, each paced like a new connection) are in flight.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use ipnet::IpNet;
use lifeline_bmc::{BmcInfo, BmcTarget};
use lifeline_inventory::{Host, Inventory};
use lifeline_ipmi::wire::Privilege;
use lifeline_ipmi::wire::packet::{self, AsfMessage, Packet};
use serde::Serialize;
use serde_json::Value;
use tokio::net::UdpSocket;

use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::targets::SelectedBmc;

/// A scan larger than this is refused: a typo (`/8`) must not flood an OOB network.
pub const MAX_ADDRESSES: usize = 1 << 17;

/// What to scan and how gently.
#[derive(Debug, Clone)]
pub struct Spec {
    pub ranges: Vec<IpNet>,
    pub ipmi: bool,
    pub redfish: bool,
    pub ipmi_port: u16,
    pub redfish_port: u16,
    /// `false`: Redfish over plain HTTP (emulators).
    pub redfish_tls: bool,
    /// Probes (Redfish reads, IPMI capability requests) in flight at once.
    pub concurrency: usize,
    /// Presence pings and new Redfish connections per second.
    pub rate: u32,
    /// How long one address may take to answer one question.
    pub timeout: Duration,
    /// Read vendor/model/serial/MAC/firmware with the inventory's credentials where the address is known.
    pub identify: bool,
    /// Read them for the addresses the inventory does not know, as this user.
    pub unknown: Option<UnknownCredentials>,
}

/// Who to log in as on BMCs outside the inventory: a user and a credential reference as the inventory
/// writes them (`env:VAR`, `file:PATH`, `sealed:NAME`), resolved once before the scan starts.
#[derive(Debug, Clone)]
pub struct UnknownCredentials {
    pub username: String,
    pub credential: lifeline_types::CredentialRef,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            ranges: Vec::new(),
            ipmi: true,
            redfish: true,
            ipmi_port: 623,
            redfish_port: 443,
            redfish_tls: true,
            concurrency: 64,
            rate: 500,
            timeout: Duration::from_secs(2),
            identify: true,
            unknown: None,
        }
    }
}

/// One BMC that answered.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    pub address: IpAddr,
    /// `redfish` when the Redfish service answered, else `ipmi`.
    pub protocol: &'static str,
    /// Every protocol that answered.
    pub protocols: Vec<&'static str>,
    pub vendor: Option<String>,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub bmc_mac: Option<String>,
    pub firmware: Option<String>,
    /// The inventory device whose BMC has this address.
    pub device: Option<String>,
    /// `credentials` when the inventory's credential read the identity, `given-credentials` when the
    /// `--credentials` reference did (an address the inventory lacks), else `anonymous`.
    pub identified_by: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redfish_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_fingerprint: Option<String>,
    /// IPMI: RMCP+ (2.0) offered, and whether anonymous login is enabled (a finding on its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipmi_v2: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anonymous_login: Option<bool>,
    /// The credentialed read failed (the anonymous fields stay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identify_error: Option<String>,
    /// The certificate the anonymous probe saw: a credentialed read of an unknown BMC is pinned to it.
    #[serde(skip)]
    pin: Option<lifeline_types::Fingerprint>,
}

impl Found {
    fn new(address: IpAddr) -> Found {
        Found {
            address,
            protocol: "ipmi",
            protocols: Vec::new(),
            vendor: None,
            model: None,
            serial: None,
            bmc_mac: None,
            firmware: None,
            device: None,
            identified_by: "anonymous",
            redfish_version: None,
            uuid: None,
            tls_fingerprint: None,
            ipmi_v2: None,
            anonymous_login: None,
            identify_error: None,
            pin: None,
        }
    }

    /// What a credentialed read says wins over the anonymous answers it covers.
    fn absorb(&mut self, i: BmcInfo, by: &'static str) {
        self.identified_by = by;
        self.vendor = i.manufacturer.or(self.vendor.take());
        self.model = i.model.or(self.model.take());
        self.serial = i.serial.or(self.serial.take());
        self.bmc_mac = i.bmc_mac;
        self.firmware = i.bmc_firmware.or(self.firmware.take());
    }
}

/// A discovery and its comparison with the inventory.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scanned: usize,
    pub found: Vec<Found>,
    /// Addresses that answer and that no inventory BMC has.
    pub not_in_inventory: Vec<IpAddr>,
    /// Inventory devices whose BMC address is in the ranges and did not answer.
    pub not_answering: Vec<String>,
    pub pings_sent: usize,
    pub wall_ms: u64,
}

impl Report {
    /// "3 BMCs answer that the inventory lacks; 2 inventory BMCs do not answer".
    pub fn summary(&self) -> String {
        format!(
            "{} BMC(s) answer that the inventory lacks; {} inventory BMC(s) do not answer ({} found, {} addresses \
             scanned)",
            self.not_in_inventory.len(),
            self.not_answering.len(),
            self.found.len(),
            self.scanned
        )
    }
}

/// Every host address of the ranges, in order, without duplicates.
pub fn addresses(ranges: &[IpNet]) -> Result<Vec<IpAddr>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for r in ranges {
        let size = match r {
            IpNet::V4(n) => 1u128 << (32 - n.prefix_len()),
            IpNet::V6(n) => 1u128.checked_shl(128 - u32::from(n.prefix_len())).unwrap_or(u128::MAX),
        };
        if size > MAX_ADDRESSES as u128 || out.len() + size as usize > MAX_ADDRESSES {
            return Err(EngineError::bad_argument(format!(
                "{r}: more than {MAX_ADDRESSES} addresses in all; scan smaller ranges"
            )));
        }
        for a in r.hosts() {
            if seen.insert(a) {
                out.push(a);
            }
        }
    }
    Ok(out)
}

/// The vendor a Redfish service root names: `Vendor` (Redfish 1.5+), else its one `Oem` key.
pub fn root_vendor(root: &Value) -> Option<String> {
    if let Some(v) = root.get("Vendor").and_then(Value::as_str).filter(|v| !v.is_empty()) {
        return Some(v.to_owned());
    }
    let oem = root.get("Oem")?.as_object()?;
    (oem.len() == 1).then(|| oem.keys().next().cloned()).flatten()
}

fn text(v: Option<&Value>, key: &str) -> Option<String> {
    v?.get(key)?.as_str().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

impl Lifeline {
    /// Scans `spec.ranges`, identifies what answers, and compares with the inventory (when one is
    /// configured).
    pub async fn discover(&self, spec: &Spec) -> Result<Report> {
        let started = Instant::now();
        let addrs = addresses(&spec.ranges)?;
        // A reference that does not resolve fails the run before the first packet.
        let unknown_password = match &spec.unknown {
            Some(c) => {
                Some(self.resolve_bmc_credential(&c.credential, "discover --credentials").map_err(|e| {
                    EngineError::Credentials {
                        problems: vec![format!("--credentials `{}`: {e}", c.credential)],
                    }
                })?)
            }
            None => None,
        };
        let mut found: BTreeMap<IpAddr, Found> = BTreeMap::new();
        let mut pings_sent = 0;
        if spec.ipmi {
            let (pongs, sent) = asf_sweep(&addrs, spec).await?;
            pings_sent = sent;
            let caps = futures::stream::iter(
                pongs.into_iter().map(|(ip, pong)| async move { (ip, pong, auth_caps(ip, spec).await) }),
            )
            .buffer_unordered(spec.concurrency.max(1))
            .collect::<Vec<_>>()
            .await;
            for (ip, pong, caps) in caps {
                let f = found.entry(ip).or_insert_with(|| Found::new(ip));
                f.protocols.push("ipmi");
                let iana = pong.data.get(..4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                // The one IANA table of the BMC layer (Get Device ID reads the same numbers).
                f.vendor = iana.and_then(lifeline_bmc::fru::iana_vendor).map(str::to_owned);
                if let Some(c) = caps {
                    f.ipmi_v2 = Some(c.supports_v2());
                    f.anonymous_login = Some(c.anonymous_login());
                }
            }
        }
        if spec.redfish {
            let pace = pacer(spec.rate);
            let probes = futures::stream::iter(addrs.iter().copied().map(|ip| {
                let pace = pace.clone();
                async move {
                    pace.lock().await.tick().await;
                    (ip, redfish_probe(ip, spec).await)
                }
            }))
            .buffer_unordered(spec.concurrency.max(1))
            .collect::<Vec<_>>()
            .await;
            for (ip, probe) in probes {
                let Some(p) = probe else { continue };
                let f = found.entry(ip).or_insert_with(|| Found::new(ip));
                f.protocols.insert(0, "redfish");
                f.redfish_version = text(Some(&p.root), "RedfishVersion");
                f.uuid = text(Some(&p.root), "UUID");
                f.vendor = root_vendor(&p.root).or(f.vendor.take());
                f.model = text(p.system.as_ref(), "Model").or_else(|| text(Some(&p.root), "Product"));
                f.serial = text(p.system.as_ref(), "SerialNumber");
                f.firmware = text(p.manager.as_ref(), "FirmwareVersion");
                if let Some(m) = text(p.system.as_ref(), "Manufacturer") {
                    f.vendor = Some(m);
                }
                f.tls_fingerprint = p.certificate.map(|c| c.to_string());
                f.pin = p.certificate;
            }
        }
        for f in found.values_mut() {
            f.protocol = f.protocols.first().copied().unwrap_or("ipmi");
            f.identified_by = "anonymous";
        }

        // The inventory side: which device each address is, and which inventory BMCs stayed silent.
        let inventory = self.inventory_if_configured()?;
        let mut not_answering = Vec::new();
        if let Some(inv) = &inventory {
            let by_ip = bmc_ips(inv);
            for (ip, name) in &by_ip {
                match found.get_mut(ip) {
                    Some(f) => f.device = Some(name.clone()),
                    None if spec.ranges.iter().any(|r| r.contains(ip)) => not_answering.push(name.clone()),
                    None => {}
                }
            }
            if spec.identify {
                self.identify(&mut found).await?;
            }
        }
        if let (Some(c), Some(pw)) = (&spec.unknown, &unknown_password) {
            self.identify_unknown(&mut found, c, pw, spec).await?;
        }
        not_answering.sort();
        let not_in_inventory = found.values().filter(|f| f.device.is_none()).map(|f| f.address).collect();
        Ok(Report {
            scanned: addrs.len(),
            found: found.into_values().collect(),
            not_in_inventory,
            not_answering,
            pings_sent,
            wall_ms: started.elapsed().as_millis() as u64,
        })
    }

    fn inventory_if_configured(&self) -> Result<Option<Arc<Inventory>>> {
        if self.paths.inventory.is_none() {
            return Ok(None);
        }
        self.inventory().map(Some)
    }

    /// Reads `bmc info` with the inventory's credentials for every found address the inventory knows.
    async fn identify(&self, found: &mut BTreeMap<IpAddr, Found>) -> Result<()> {
        let names: Vec<String> = found.values().filter_map(|f| f.device.clone()).collect();
        if names.is_empty() {
            return Ok(());
        }
        let sel = self.select_bmcs(&names, &[], false)?;
        let rows = self.bmc_info(&sel).await?;
        let by_name: HashMap<String, std::result::Result<BmcInfo, String>> = rows
            .into_iter()
            .map(|r| (r.target, r.result.map_err(|e| lifeline_types::error_chain(&e))))
            .collect();
        for f in found.values_mut() {
            let Some(name) = &f.device else { continue };
            match by_name.get(name) {
                Some(Ok(i)) => f.absorb(i.clone(), "credentials"),
                Some(Err(e)) => f.identify_error = Some(e.clone()),
                None => {}
            }
        }
        Ok(())
    }
}

impl Lifeline {
    /// Reads `bmc info` as `creds` on every found address no inventory device has: Redfish where it
    /// answered (pinned to the certificate seen anonymously), IPMI otherwise; new sessions paced at
    /// `spec.rate`, `spec.concurrency` at once, each bounded by [`IDENTIFY_TIMEOUT`].
    async fn identify_unknown(
        &self,
        found: &mut BTreeMap<IpAddr, Found>,
        creds: &UnknownCredentials,
        password: &str,
        spec: &Spec,
    ) -> Result<()> {
        if found.values().all(|f| f.device.is_some()) {
            return Ok(());
        }
        let pool = self.bmc_pool().await?;
        let pace = pacer(spec.rate);
        let rows: Vec<(IpAddr, std::result::Result<BmcInfo, String>)> = futures::stream::iter(
            found
                .values()
                .filter(|f| f.device.is_none())
                .map(|f| (f.address, unknown_target(f, creds, spec, password))),
        )
        .map(|(ip, b)| {
            let pace = pace.clone();
            let pool = pool.clone();
            async move {
                pace.lock().await.tick().await;
                let bmc = pool.bmc(b.target);
                let r = tokio::time::timeout(IDENTIFY_TIMEOUT, bmc.info()).await;
                let r = match r {
                    Ok(Ok(i)) => Ok(i),
                    Ok(Err(e)) => Err(lifeline_types::error_chain(&e)),
                    Err(_) => Err(format!("no identity within {}", lifeline_types::Human(IDENTIFY_TIMEOUT))),
                };
                (ip, r)
            }
        })
        .buffer_unordered(spec.concurrency.max(1))
        .collect()
        .await;
        for (ip, r) in rows {
            let Some(f) = found.get_mut(&ip) else { continue };
            match r {
                Ok(i) => f.absorb(i, "given-credentials"),
                Err(e) => f.identify_error = Some(e),
            }
        }
        Ok(())
    }
}

/// One credentialed read of a BMC may take this long in all (a session, a few documents).
const IDENTIFY_TIMEOUT: Duration = Duration::from_secs(60);

/// The BMC target of a found address outside the inventory, named after its address.
fn unknown_target(f: &Found, creds: &UnknownCredentials, spec: &Spec, password: &str) -> SelectedBmc {
    let redfish = f.protocols.contains(&"redfish");
    let (protocol, port) = if redfish {
        (lifeline_types::BmcProtocol::Redfish, spec.redfish_port)
    } else {
        (lifeline_types::BmcProtocol::Ipmi, spec.ipmi_port)
    };
    let name = f.address.to_string();
    let mut t = BmcTarget::new(name.clone(), name, protocol, creds.username.clone(), password.to_owned())
        .with_port(port);
    t.redfish_tls = spec.redfish_tls;
    t.tls_pin = f.pin;
    SelectedBmc { target: t, role: None, rack: None }
}

/// Inventory BMC addresses that are IP literals (a host name cannot be matched to a scanned address).
fn bmc_ips(inv: &Inventory) -> Vec<(IpAddr, String)> {
    inv.devices
        .iter()
        .filter_map(|d| match d.bmc.as_ref()?.address {
            Host::Ip(ip) => Some((ip, d.name.to_string())),
            Host::Name(_) => None,
        })
        .collect()
}

/// A ticker at `rate` per second, shared by the tasks that must keep to it.
fn pacer(rate: u32) -> Arc<tokio::sync::Mutex<tokio::time::Interval>> {
    let period = Duration::from_secs_f64(1.0 / f64::from(rate.max(1)));
    let mut i = tokio::time::interval(period);
    i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    Arc::new(tokio::sync::Mutex::new(i))
}

/// Presence pings to every address (paced, a second round to the silent ones), pongs collected on the same
/// socket. Returns the pongs that advertise IPMI and the number of pings sent.
async fn asf_sweep(addrs: &[IpAddr], spec: &Spec) -> Result<(Vec<(IpAddr, AsfMessage)>, usize)> {
    let io = |e: std::io::Error| EngineError::internal("discovery socket", e);
    let v4 = UdpSocket::bind("0.0.0.0:0").await.map_err(io)?;
    let v6 = UdpSocket::bind("[::]:0").await.ok();
    let mut pongs: HashMap<IpAddr, AsfMessage> = HashMap::new();
    let mut sent = 0;
    for round in 0..2 {
        let targets: Vec<IpAddr> = addrs.iter().copied().filter(|a| !pongs.contains_key(a)).collect();
        if targets.is_empty() || (round > 0 && pongs.len() == addrs.len()) {
            break;
        }
        let mut pace = pacer(spec.rate).lock_owned().await;
        let send = async {
            for (i, ip) in targets.iter().enumerate() {
                pace.tick().await;
                let dgram = packet::encode(&Packet::Asf(AsfMessage::ping(i as u8)), None, [0; 16]);
                let to = SocketAddr::new(*ip, spec.ipmi_port);
                let sock = if ip.is_ipv4() { Some(&v4) } else { v6.as_ref() };
                if let Some(s) = sock {
                    // A host route missing or a full send buffer loses one ping: the second round asks again.
                    let _ = s.send_to(&dgram, to).await;
                }
            }
            targets.len()
        };
        let wanted: HashSet<IpAddr> = targets.iter().copied().collect();
        let (tx, rx) = tokio::sync::watch::channel(false);
        let sender = async {
            let n = send.await;
            let _ = tx.send(true);
            n
        };
        let (n, a, b) = tokio::join!(
            sender,
            receive_pongs(Some(&v4), &wanted, rx.clone(), spec.timeout),
            receive_pongs(v6.as_ref(), &wanted, rx, spec.timeout)
        );
        sent += n;
        for (ip, m) in a.into_iter().chain(b) {
            pongs.entry(ip).or_insert(m);
        }
        drop(pace);
    }
    let mut out: Vec<(IpAddr, AsfMessage)> = pongs.into_iter().collect();
    out.sort_by_key(|(ip, _)| *ip);
    Ok((out, sent))
}

/// Pongs from `wanted` addresses until `timeout` after the sender says it is done.
async fn receive_pongs(
    sock: Option<&UdpSocket>,
    wanted: &HashSet<IpAddr>,
    mut done: tokio::sync::watch::Receiver<bool>,
    timeout: Duration,
) -> Vec<(IpAddr, AsfMessage)> {
    let mut got = Vec::new();
    let Some(sock) = sock else { return got };
    let mut buf = [0u8; 512];
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        if deadline.is_none() && *done.borrow() {
            deadline = Some(tokio::time::Instant::now() + timeout);
        }
        let wait = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => {
                    if done.changed().await.is_err() {
                        // The sender is gone: wait out the timeout from now.
                        tokio::time::sleep(timeout).await;
                    }
                }
            }
        };
        tokio::select! {
            r = sock.recv_from(&mut buf) => {
                let Ok((n, from)) = r else { continue };
                if !wanted.contains(&from.ip()) {
                    continue;
                }
                if let Ok(Packet::Asf(m)) = packet::decode(&buf[..n], None)
                    && m.pong_supports_ipmi()
                {
                    got.push((from.ip(), m));
                }
            }
            // Sending finished (the loop sets the deadline) or the deadline passed.
            _ = wait => {
                if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                    return got;
                }
            }
        }
    }
}

async fn auth_caps(ip: IpAddr, spec: &Spec) -> Option<lifeline_ipmi::wire::app::ChannelAuthCaps> {
    let bind = if ip.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
    let sock = UdpSocket::bind(bind).await.ok()?;
    sock.connect(SocketAddr::new(ip, spec.ipmi_port)).await.ok()?;
    let timing = lifeline_ipmi::client::Timing {
        attempt_timeout: (spec.timeout / 4).max(Duration::from_millis(100)),
        max_attempt_timeout: spec.timeout,
        attempts: 3,
    };
    lifeline_ipmi::client::get_channel_auth_caps(&sock, &ip.to_string(), &timing, Privilege::Administrator)
        .await
        .ok()
}

async fn redfish_probe(ip: IpAddr, spec: &Spec) -> Option<lifeline_redfish::Probe> {
    let scheme = if spec.redfish_tls { "https" } else { "http" };
    let url = format!("{scheme}://{}", SocketAddr::new(ip, spec.redfish_port));
    let target = lifeline_redfish::BmcTarget::new(ip.to_string(), url);
    let opts = lifeline_redfish::ClientOptions {
        request_timeout: spec.timeout,
        connect_timeout: spec.timeout,
        ..lifeline_redfish::ClientOptions::default()
    };
    lifeline_redfish::probe_service_root(&target, &opts).await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_to_addresses() {
        let r = |s: &str| s.parse::<IpNet>().unwrap();
        let a = addresses(&[r("10.0.0.0/30"), r("10.0.0.1/32"), r("10.0.0.8/31")]).unwrap();
        let s: Vec<String> = a.iter().map(|a| a.to_string()).collect();
        assert_eq!(s, ["10.0.0.1", "10.0.0.2", "10.0.0.8", "10.0.0.9"]);
        assert!(addresses(&[r("10.0.0.0/8")]).is_err());
        assert_eq!(addresses(&[r("10.0.0.0/16")]).unwrap().len(), 65534);
    }

    #[test]
    fn vendors() {
        assert_eq!(lifeline_bmc::fru::iana_vendor(4542), None, "ASF's own number names no vendor");
        let root = serde_json::json!({ "Oem": { "Hpe": {} } });
        assert_eq!(root_vendor(&root).as_deref(), Some("Hpe"));
        let root = serde_json::json!({ "Vendor": "Dell", "Oem": { "Dell": {} } });
        assert_eq!(root_vendor(&root).as_deref(), Some("Dell"));
    }
}
