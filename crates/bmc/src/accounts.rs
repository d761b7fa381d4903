//! BMC accounts over either protocol: list them (IPMI Get User Name / Get User Access on the LAN channel;
//! Redfish `AccountService/Accounts`), set a password, enable or disable an account, and prove a login.
//!
//! Why here and not in the engine: the two protocols differ in substance (user slots vs. account resources
//! with ETags), and this crate already owns the connection to a BMC. The crash-safe rotation built on these
//! pieces (seal first, set, prove by login, then activate) lives in the engine, which owns the store.
//!
//! Setting a password is sent once: a lost IPMI reply is not retransmitted blindly (the caller proves the
//! outcome with [`Bmc::check_login`], never by resending), and a Redfish PATCH carries `If-Match` when the
//! BMC gave an ETag.

use lifeline_ipmi::wire::Privilege;
use lifeline_ipmi::{Error as IpmiError, Session};
use lifeline_redfish::{Client, Credentials, RedfishError};
use lifeline_types::BmcProtocol;
use serde::Serialize;

use crate::conn::{Conn, IpmiConn, RedfishConn, ipmi_config, ipmi_err, rf_err, tls_trust};
use crate::error::{BmcError, error_chain};
use crate::pool::Bmc;

/// The IPMI LAN channel whose user access is read and changed.
pub const LAN_CHANNEL: u8 = 1;

/// One account as the BMC lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccountInfo {
    /// IPMI user slot, or the Redfish account `Id`.
    pub id: String,
    pub name: String,
    pub enabled: Option<bool>,
    /// Redfish `RoleId`, or the IPMI privilege limit by name (`administrator`, `operator`, `user`,
    /// `callback`, `no-access`).
    pub role: Option<String>,
    pub locked: Option<bool>,
}

/// The accounts of one BMC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccountList {
    pub bmc: String,
    pub protocol: BmcProtocol,
    pub accounts: Vec<AccountInfo>,
}

/// What a login attempt showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", content = "detail", rename_all = "kebab-case")]
pub enum LoginCheck {
    Accepted,
    /// The BMC answered and refused (wrong password, disabled or locked account, privilege).
    Refused(String),
    /// No clear answer (timeout, transport): the password is neither proven nor disproven.
    Unknown(String),
}

impl LoginCheck {
    pub fn accepted(&self) -> bool {
        matches!(self, LoginCheck::Accepted)
    }
}

/// IPMI privilege limit by name.
pub fn privilege_name(p: u8) -> &'static str {
    match p {
        1 => "callback",
        2 => "user",
        3 => "operator",
        4 => "administrator",
        5 => "oem",
        _ => "no-access",
    }
}

/// Whether a role (IPMI name or Redfish `RoleId`) administers the BMC.
pub fn is_admin_role(role: &str) -> bool {
    role.eq_ignore_ascii_case("administrator")
}

impl IpmiConn {
    async fn accounts(&self) -> Result<Vec<AccountInfo>, BmcError> {
        let users = self.session.users(LAN_CHANNEL).await.map_err(ipmi_err(&self.bmc))?;
        Ok(users
            .into_iter()
            .filter(|u| !u.name.is_empty())
            .map(|u| AccountInfo {
                id: u.id.to_string(),
                name: u.name,
                // Bits 7:6 of the second byte: 01b enabled, 10b disabled, 00b unspecified.
                enabled: match u.access.enabled >> 6 {
                    1 => Some(true),
                    2 => Some(false),
                    _ => None,
                },
                role: Some(privilege_name(u.access.privilege()).to_owned()),
                locked: None,
            })
            .collect())
    }

    async fn slot(&self, user: &str) -> Result<u8, BmcError> {
        let users = self.session.users(LAN_CHANNEL).await.map_err(ipmi_err(&self.bmc))?;
        users
            .iter()
            .find(|u| u.name == user)
            .map(|u| u.id)
            .ok_or_else(|| BmcError::NoAccount { bmc: self.bmc.clone(), user: user.to_owned() })
    }
}

impl RedfishConn {
    async fn account(&self, user: &str) -> Result<lifeline_redfish::ManagerAccount, BmcError> {
        let all = self.client.accounts().await.map_err(rf_err(&self.bmc))?;
        all.into_iter()
            .find(|a| a.user_name.as_deref() == Some(user))
            .ok_or_else(|| BmcError::NoAccount { bmc: self.bmc.clone(), user: user.to_owned() })
    }
}

impl Conn {
    async fn accounts(&mut self) -> Result<Vec<AccountInfo>, BmcError> {
        match self {
            Conn::Ipmi(c) => c.accounts().await,
            Conn::Redfish(c) => Ok(c
                .client
                .accounts()
                .await
                .map_err(rf_err(&c.bmc))?
                .into_iter()
                .map(|a| AccountInfo {
                    id: a.id.unwrap_or_default(),
                    name: a.user_name.unwrap_or_default(),
                    enabled: a.enabled,
                    role: a.role_id,
                    locked: a.locked,
                })
                .collect()),
        }
    }

    async fn set_password(&mut self, user: &str, password: &str) -> Result<(), BmcError> {
        match self {
            Conn::Ipmi(c) => {
                let slot = c.slot(user).await?;
                c.session.set_user_password(slot, password.as_bytes()).await.map_err(ipmi_err(&c.bmc))
            }
            Conn::Redfish(c) => {
                let a = c.account(user).await?;
                c.client.set_account_password(&a, password).await.map_err(rf_err(&c.bmc))
            }
        }
    }

    async fn set_enabled(&mut self, user: &str, enabled: bool) -> Result<(), BmcError> {
        match self {
            Conn::Ipmi(c) => {
                let slot = c.slot(user).await?;
                c.session.enable_user(slot, enabled).await.map_err(ipmi_err(&c.bmc))
            }
            Conn::Redfish(c) => {
                let a = c.account(user).await?;
                c.client.set_account_enabled(&a, enabled).await.map_err(rf_err(&c.bmc))
            }
        }
    }
}

impl Bmc {
    /// Every named account.
    pub async fn accounts(&self) -> Result<AccountList, BmcError> {
        let limit = self.pool().opts.op_timeout;
        let (protocol, accounts) =
            self.with_conn(Privilege::Administrator, limit, |c| Box::pin(c.accounts())).await?;
        Ok(AccountList { bmc: self.name().to_owned(), protocol, accounts })
    }

    /// Sets `user`'s password, logged in with this target's credentials. An error after the request went out
    /// (a lost reply) leaves the outcome unknown: prove it with [`Bmc::check_login`].
    pub async fn set_account_password(&self, user: &str, password: &str) -> Result<BmcProtocol, BmcError> {
        let limit = self.pool().opts.op_timeout;
        let (user, password) = (user.to_owned(), password.to_owned());
        let r = self
            .with_conn(Privilege::Administrator, limit, move |c| {
                Box::pin(async move { c.set_password(&user, &password).await })
            })
            .await?;
        Ok(r.0)
    }

    /// Enables or disables `user`'s account.
    pub async fn set_account_enabled(&self, user: &str, enabled: bool) -> Result<(), BmcError> {
        let limit = self.pool().opts.op_timeout;
        let user = user.to_owned();
        self.with_conn(Privilege::Administrator, limit, move |c| {
            Box::pin(async move { c.set_enabled(&user, enabled).await })
        })
        .await
        .map(|_| ())
    }

    /// One login as `user` with `password` over `protocol` (IPMI: a session at `privilege`, then Close
    /// Session; Redfish: HTTP Basic on the Systems collection, no session left behind). One attempt only:
    /// each failure counts toward the BMC's lockout.
    pub async fn check_login(
        &self,
        protocol: BmcProtocol,
        user: &str,
        password: &str,
        privilege: Privilege,
    ) -> LoginCheck {
        let mut t = self.target().clone();
        t.username = user.to_owned();
        t.password = password.to_owned();
        let opts = &self.pool().opts;
        let limit = opts.op_timeout;
        let work = async {
            match protocol {
                BmcProtocol::Ipmi => {
                    let addr = match crate::conn::resolve_addr(&t, t.ipmi_port, opts.probe_timeout).await {
                        Ok(a) => a,
                        Err(e) => return LoginCheck::Unknown(error_chain(&e)),
                    };
                    let mut cfg = ipmi_config(&t, &opts.ipmi_timing);
                    cfg.privilege = privilege;
                    match Session::open(addr, &cfg).await {
                        Ok(s) => {
                            let _ = s.close().await;
                            LoginCheck::Accepted
                        }
                        Err(e @ (IpmiError::Auth { .. } | IpmiError::SessionRefused { .. })) => {
                            LoginCheck::Refused(e.to_string())
                        }
                        Err(e) => LoginCheck::Unknown(error_chain(&e)),
                    }
                }
                _ => {
                    let rt = lifeline_redfish::BmcTarget::new(t.name.clone(), t.redfish_url());
                    let copts = opts.redfish.clone().credential_check();
                    let creds = Credentials::new(user, password);
                    let c = match Client::connect(rt, creds, tls_trust(&t, &opts.tls), copts).await {
                        Ok(c) => c,
                        Err(e) => return redfish_check(e),
                    };
                    let r = c.systems().await;
                    let _ = c.close().await;
                    match r {
                        Ok(_) => LoginCheck::Accepted,
                        Err(e) => redfish_check(e),
                    }
                }
            }
        };
        tokio::time::timeout(limit, work)
            .await
            .unwrap_or_else(|_| LoginCheck::Unknown(format!("no answer within {limit:?}")))
    }
}

fn redfish_check(e: RedfishError) -> LoginCheck {
    match e {
        e @ RedfishError::Status { status: 401 | 403, .. } => LoginCheck::Refused(e.to_string()),
        e => LoginCheck::Unknown(error_chain(&e)),
    }
}
