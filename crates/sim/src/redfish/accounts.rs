//! AccountService: the BMC's one configured account and the three roles DSP0266 predefines
//! (Administrator, Operator, ReadOnly), read-only.
//!
//! Why: real services always have it, and clients (and `lifeline audit bmc`) read the account's role and
//! the service's lockout policy from here; a simulator without it hides a missing-resource code path.

use serde_json::{Value, json};

use super::RedfishBmc;
use super::resources::{collection, link};
use crate::spec::RedfishFlavor;

const BASE: &str = "/redfish/v1/AccountService";

/// (RoleId, AssignedPrivileges) of the predefined roles (Redfish Privilege Registry).
const ROLES: [(&str, &[&str]); 3] = [
    (
        "Administrator",
        &["Login", "ConfigureManager", "ConfigureUsers", "ConfigureSelf", "ConfigureComponents"],
    ),
    ("Operator", &["Login", "ConfigureSelf", "ConfigureComponents"]),
    ("ReadOnly", &["Login", "ConfigureSelf"]),
];

/// The account's Id: OpenBMC names accounts by user name, the others by IPMI user slot (2).
fn account_id(bmc: &RedfishBmc) -> String {
    if bmc.flavor.kind == RedfishFlavor::OpenbmcLike {
        bmc.host.bmc_config().username.clone()
    } else {
        "2".into()
    }
}

pub(super) fn service() -> Value {
    json!({
        "@odata.id": BASE,
        "@odata.type": "#AccountService.v1_15_0.AccountService",
        "Id": "AccountService",
        "Name": "Account Service",
        "Description": "BMC user accounts",
        "ServiceEnabled": true,
        "Status": { "State": "Enabled", "Health": "OK" },
        "MinPasswordLength": 8,
        "MaxPasswordLength": 20,
        "AccountLockoutThreshold": 5,
        "AccountLockoutDuration": 300,
        "AccountLockoutCounterResetAfter": 300,
        "AuthFailureLoggingThreshold": 3,
        "LocalAccountAuth": "Enabled",
        "Accounts": link(&format!("{BASE}/Accounts")),
        "Roles": link(&format!("{BASE}/Roles")),
    })
}

pub(super) fn accounts(bmc: &RedfishBmc) -> Value {
    let path = format!("{BASE}/Accounts");
    let member = format!("{path}/{}", account_id(bmc));
    collection(&path, "ManagerAccountCollection", "Accounts Collection", vec![member])
}

pub(super) fn account(bmc: &RedfishBmc, id: &str) -> Option<Value> {
    if id != account_id(bmc) {
        return None;
    }
    Some(json!({
        "@odata.id": format!("{BASE}/Accounts/{id}"),
        "@odata.type": "#ManagerAccount.v1_12_0.ManagerAccount",
        "Id": id,
        "Name": "User Account",
        "UserName": bmc.host.bmc_config().username,
        "Password": null,
        "RoleId": "Administrator",
        "Enabled": true,
        "Locked": false,
        "AccountTypes": ["Redfish", "IPMI", "ManagerConsole"],
        "Links": { "Role": link(&format!("{BASE}/Roles/Administrator")) },
    }))
}

pub(super) fn roles() -> Value {
    let path = format!("{BASE}/Roles");
    let members = ROLES.iter().map(|(r, _)| format!("{path}/{r}")).collect();
    collection(&path, "RoleCollection", "Roles Collection", members)
}

pub(super) fn role(id: &str) -> Option<Value> {
    let (name, privileges) = ROLES.iter().find(|(r, _)| *r == id)?;
    Some(json!({
        "@odata.id": format!("{BASE}/Roles/{name}"),
        "@odata.type": "#Role.v1_3_2.Role",
        "Id": name,
        "Name": format!("{name} Role"),
        "RoleId": name,
        "IsPredefined": true,
        "AssignedPrivileges": privileges,
        "OemPrivileges": [],
    }))
}
