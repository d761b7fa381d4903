//! AccountService: the BMC's accounts (read leniently) and the two changes credential rotation needs, a
//! password and the enabled flag, sent as `PATCH` with `If-Match` when the BMC gave an ETag (a concurrent
//! change by someone else then fails with 412 instead of being overwritten).

use reqwest::Method;
use serde::Serialize;
use serde_json::{Value, json};

use super::Client;
use super::transport::read_reply;
use crate::error::RedfishError;

/// One `ManagerAccount`, every field optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Account {
    pub odata_id: String,
    pub id: Option<String>,
    pub user_name: Option<String>,
    pub role_id: Option<String>,
    pub enabled: Option<bool>,
    pub locked: Option<bool>,
    /// From the `ETag` header, else `@odata.etag`.
    #[serde(skip)]
    pub etag: Option<String>,
}

impl Account {
    fn from_value(v: &Value, link: &str, etag: Option<String>) -> Account {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        Account {
            odata_id: s("@odata.id").unwrap_or_else(|| link.to_owned()),
            id: s("Id"),
            user_name: s("UserName"),
            role_id: s("RoleId"),
            enabled: v.get("Enabled").and_then(Value::as_bool),
            locked: v.get("Locked").and_then(Value::as_bool),
            etag: etag.or_else(|| s("@odata.etag")),
        }
    }
}

impl Client {
    fn accounts_link(&self) -> Result<String, RedfishError> {
        let svc = self.service_root().account_service.clone().ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: "/redfish/v1/".into(),
            what: "AccountService link",
        })?;
        Ok(svc)
    }

    /// One account with its ETag.
    pub async fn account(&self, link: &str) -> Result<Account, RedfishError> {
        let reply = self.request(Method::GET, link, None).await?;
        let etag = reply.resp.headers().get("etag").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let v = read_reply(&self.inner.t, reply).await?;
        Ok(Account::from_value(&v, link, etag))
    }

    /// Every account of the AccountService (members that fail to read are skipped with a warning log).
    pub async fn accounts(&self) -> Result<Vec<Account>, RedfishError> {
        let svc = self.accounts_link()?;
        let (doc, _) = self.get_json(&svc).await?;
        let link = doc
            .pointer("/Accounts/@odata.id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{}/Accounts", svc.trim_end_matches('/')));
        let l = self.members(&link).await?;
        let mut out = Vec::new();
        for (id, v) in l.items {
            // Members arrive expanded or as links; read each for its ETag either way.
            let link = v.get("@odata.id").and_then(Value::as_str).unwrap_or(&id).to_owned();
            match self.account(&link).await {
                Ok(a) => out.push(a),
                Err(e) => {
                    tracing::warn!(bmc = %self.bmc(), account = %link, error = %e, "account not readable");
                    out.push(Account::from_value(&v, &link, None));
                }
            }
        }
        Ok(out)
    }

    /// PATCH one account (with `If-Match` when `etag` is known).
    pub async fn patch_account(&self, a: &Account, body: &Value) -> Result<(), RedfishError> {
        self.send_json_if_match(Method::PATCH, &a.odata_id, Some(body), a.etag.as_deref()).await.map(|_| ())
    }

    pub async fn set_account_password(&self, a: &Account, password: &str) -> Result<(), RedfishError> {
        self.patch_account(a, &json!({ "Password": password })).await
    }

    pub async fn set_account_enabled(&self, a: &Account, enabled: bool) -> Result<(), RedfishError> {
        self.patch_account(a, &json!({ "Enabled": enabled })).await
    }
}
