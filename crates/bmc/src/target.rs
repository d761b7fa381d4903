//! What the caller tells us about one BMC. The inventory (or a `--bmc URL`) is turned into a [`BmcTarget`] by
//! the caller, with the password already resolved: this crate never reads the inventory or a secret store.

use std::fmt;

use lifeline_types::{BmcProtocol, Fingerprint};

/// Default ports: HTTPS for Redfish, RMCP for IPMI.
pub const REDFISH_PORT: u16 = 443;
pub const IPMI_PORT: u16 = 623;

/// One BMC to talk to.
#[derive(Clone)]
pub struct BmcTarget {
    /// Inventory device name (or `host:port` for ad-hoc targets): the key for locks, pins, memory and audit.
    pub name: String,
    /// Host name or IP address of the BMC.
    pub address: String,
    pub protocol: BmcProtocol,
    /// Redfish port (TCP) and IPMI port (UDP): both matter for `auto`.
    pub redfish_port: u16,
    pub ipmi_port: u16,
    /// `false` only for plain-HTTP test services (DMTF mockups served by sushy-static).
    pub redfish_tls: bool,
    pub username: String,
    pub password: String,
    /// Inventory TLS pin: wins over the pin store.
    pub tls_pin: Option<Fingerprint>,
    /// IPMI cipher suites to try, in order (`None`: 17 then 3).
    pub cipher_suites: Option<Vec<u8>>,
    /// Redfish: which ComputerSystem to drive on a multi-system BMC (its `Id`, `Name` or `@odata.id`);
    /// `None`: the first member.
    pub system: Option<String>,
    /// GPUs the inventory says the node has: `health` and sweeps compare the GPUs the BMC lists with it.
    pub expected_gpus: Option<u32>,
}

impl fmt::Debug for BmcTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BmcTarget")
            .field("name", &self.name)
            .field("address", &self.address)
            .field("protocol", &self.protocol)
            .field("redfish_port", &self.redfish_port)
            .field("ipmi_port", &self.ipmi_port)
            .field("username", &self.username)
            .field("password", &"***")
            .field("tls_pin", &self.tls_pin)
            .field("cipher_suites", &self.cipher_suites)
            .field("system", &self.system)
            .field("expected_gpus", &self.expected_gpus)
            .finish()
    }
}

/// Why a `--bmc` URL was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetUrlError {
    #[error(
        "`{url}`: expected ipmi://USER@HOST[:PORT], redfish://USER@HOST[:PORT], redfish+http://USER@HOST[:PORT] \
         (plain HTTP) or auto://USER@HOST"
    )]
    Shape { url: String },
    #[error("`{url}`: bad port `{port}`")]
    Port { url: String, port: String },
}

impl BmcTarget {
    pub fn new(
        name: impl Into<String>,
        address: impl Into<String>,
        protocol: BmcProtocol,
        username: impl Into<String>,
        password: impl Into<String>,
    ) -> Self {
        BmcTarget {
            name: name.into(),
            address: address.into(),
            protocol,
            redfish_port: REDFISH_PORT,
            ipmi_port: IPMI_PORT,
            redfish_tls: true,
            username: username.into(),
            password: password.into(),
            tls_pin: None,
            cipher_suites: None,
            system: None,
            expected_gpus: None,
        }
    }

    /// Set the port of the target's protocol (for `auto`, both stay as they are: use the fields).
    pub fn with_port(mut self, port: u16) -> Self {
        match self.protocol {
            BmcProtocol::Redfish => self.redfish_port = port,
            BmcProtocol::Ipmi => self.ipmi_port = port,
            BmcProtocol::Auto => {}
        }
        self
    }

    /// Parse `ipmi://USER@HOST[:PORT]`, `redfish://USER@HOST[:PORT]`, `redfish+http://USER@HOST[:PORT]` or
    /// `auto://USER@HOST` (the CLI's `--bmc`); the password is supplied separately, never in the URL. The
    /// name is `HOST[:PORT]`. `redfish+http` is Redfish over plain HTTP (default port 80): never implied by
    /// `redfish://` or `https://`, so TLS is only ever dropped by saying so.
    pub fn parse_url(url: &str, password: impl Into<String>) -> Result<Self, TargetUrlError> {
        let shape = || TargetUrlError::Shape { url: url.to_owned() };
        let (scheme, rest) = url.split_once("://").ok_or_else(shape)?;
        let (protocol, tls) = match scheme {
            "ipmi" | "lanplus" => (BmcProtocol::Ipmi, true),
            "redfish" | "https" => (BmcProtocol::Redfish, true),
            "redfish+http" => (BmcProtocol::Redfish, false),
            "auto" => (BmcProtocol::Auto, true),
            _ => return Err(shape()),
        };
        let rest = rest.trim_end_matches('/');
        let (user, hostport) = rest.rsplit_once('@').ok_or_else(shape)?;
        if user.is_empty() || hostport.is_empty() || user.contains(':') {
            return Err(shape());
        }
        let (host, port) = split_host_port(hostport);
        if host.is_empty() {
            return Err(shape());
        }
        let mut t = BmcTarget::new(hostport, host, protocol, user, password);
        if !tls {
            t.redfish_tls = false;
            t.redfish_port = 80;
        }
        if let Some(p) = port {
            let port =
                p.parse::<u16>().map_err(|_| TargetUrlError::Port { url: url.into(), port: p.into() })?;
            t = t.with_port(port);
        }
        Ok(t)
    }

    /// `https://host:port` (or `http://`) for the Redfish client.
    pub fn redfish_url(&self) -> String {
        let scheme = if self.redfish_tls { "https" } else { "http" };
        let host = if self.address.contains(':') && !self.address.starts_with('[') {
            format!("[{}]", self.address)
        } else {
            self.address.clone()
        };
        format!("{scheme}://{host}:{}", self.redfish_port)
    }
}

/// `host:port`, `[v6]:port`, `host`, `v6`.
fn split_host_port(s: &str) -> (&str, Option<&str>) {
    if let Some(rest) = s.strip_prefix('[')
        && let Some((h, after)) = rest.split_once(']')
    {
        return (h, after.strip_prefix(':'));
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, Some(p)),
        _ => (s, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bmc_urls() {
        let t = BmcTarget::parse_url("ipmi://admin@127.0.0.5:6230", "pw").unwrap();
        assert_eq!((t.protocol, t.address.as_str(), t.ipmi_port), (BmcProtocol::Ipmi, "127.0.0.5", 6230));
        assert_eq!(
            (t.username.as_str(), t.password.as_str(), t.name.as_str()),
            ("admin", "pw", "127.0.0.5:6230")
        );
        let r = BmcTarget::parse_url("redfish://root@[::1]:8443", "x").unwrap();
        assert_eq!((r.address.as_str(), r.redfish_port), ("::1", 8443));
        assert_eq!(r.redfish_url(), "https://[::1]:8443");
        let a = BmcTarget::parse_url("auto://u@bmc1", "x").unwrap();
        assert_eq!((a.redfish_port, a.ipmi_port), (443, 623));
        assert!(BmcTarget::parse_url("ipmi://host", "x").is_err());
        assert!(BmcTarget::parse_url("ftp://u@h", "x").is_err());
        assert!(BmcTarget::parse_url("ipmi://u:pw@h", "x").is_err(), "passwords never go in URLs");
        assert!(matches!(BmcTarget::parse_url("ipmi://u@h:99999", "x"), Err(TargetUrlError::Port { .. })));
        let h = BmcTarget::parse_url("redfish+http://admin@127.0.0.1:8000", "x").unwrap();
        assert_eq!((h.protocol, h.redfish_tls, h.redfish_port), (BmcProtocol::Redfish, false, 8000));
        assert_eq!(h.redfish_url(), "http://127.0.0.1:8000");
        let d = BmcTarget::parse_url("redfish+http://admin@bmc7", "x").unwrap();
        assert_eq!(d.redfish_url(), "http://bmc7:80");
        assert!(BmcTarget::parse_url("http://admin@bmc7", "x").is_err(), "plain HTTP only when said");
        assert!(BmcTarget::parse_url("redfish://admin@bmc7", "x").unwrap().redfish_tls);
    }

    #[test]
    fn debug_hides_the_password() {
        let t = BmcTarget::new("n", "h", BmcProtocol::Ipmi, "u", "secret");
        assert!(!format!("{t:?}").contains("secret"));
    }
}
