//! AccountService: the BMC's accounts (the user database its IPMI face shares, see [`crate::accounts`]) and
//! the three roles DSP0266 predefines (Administrator, Operator, ReadOnly).
//!
//! Why: real services always have it; clients read roles and the lockout policy here and change passwords
//! with `PATCH {"Password": …}` (with `If-Match` when they read an ETag), which the next login must honour.

use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};

use super::resources::{collection, link, method_not_allowed, no_content};
use super::{RedfishBmc, error, json_response};
use crate::accounts::{Account, MAX_PASSWORD, NO_ACCESS};
use crate::actions::Origin;
use crate::spec::RedfishFlavor;

/// `MinPasswordLength` of the service.
const MIN_PASSWORD: usize = 8;

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

/// An account's Id: OpenBMC names accounts by user name, the others by IPMI user slot.
fn account_id(bmc: &RedfishBmc, a: &Account) -> String {
    if bmc.flavor.kind == RedfishFlavor::OpenbmcLike { a.name.clone() } else { a.id.to_string() }
}

fn find(bmc: &RedfishBmc, id: &str) -> Option<Account> {
    bmc.host.accounts().list().into_iter().find(|a| !a.name.is_empty() && account_id(bmc, a) == id)
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
        "MinPasswordLength": MIN_PASSWORD,
        "MaxPasswordLength": MAX_PASSWORD,
        "AccountLockoutThreshold": crate::accounts::LOCKOUT_THRESHOLD,
        "AccountLockoutDuration": crate::accounts::LOCKOUT_DURATION.as_secs(),
        "AccountLockoutCounterResetAfter": 300,
        "AuthFailureLoggingThreshold": 3,
        "LocalAccountAuth": "Enabled",
        "Accounts": link(&format!("{BASE}/Accounts")),
        "Roles": link(&format!("{BASE}/Roles")),
    })
}

pub(super) fn accounts(bmc: &RedfishBmc) -> Value {
    let path = format!("{BASE}/Accounts");
    let members = bmc
        .host
        .accounts()
        .list()
        .iter()
        .filter(|a| !a.name.is_empty())
        .map(|a| format!("{path}/{}", account_id(bmc, a)))
        .collect();
    collection(&path, "ManagerAccountCollection", "Accounts Collection", members)
}

fn account_doc(bmc: &RedfishBmc, a: &Account) -> Value {
    let id = account_id(bmc, a);
    json!({
        "@odata.id": format!("{BASE}/Accounts/{id}"),
        "@odata.type": "#ManagerAccount.v1_12_0.ManagerAccount",
        "@odata.etag": a.etag(),
        "Id": id,
        "Name": "User Account",
        "UserName": a.name,
        "Password": null,
        "RoleId": a.role(),
        "Enabled": a.enabled,
        "Locked": a.locked(),
        "AccountTypes": ["Redfish", "IPMI", "ManagerConsole"],
        "Links": { "Role": link(&format!("{BASE}/Roles/{}", a.role())) },
    })
}

fn with_etag(mut r: Response, etag: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(etag) {
        r.headers_mut().insert(header::ETAG, v);
    }
    r
}

/// GET and PATCH of one account. PATCH takes `Password`, `Enabled`, `RoleId`, `UserName` and `Locked: false`
/// (unlock), honours `If-Match` (412 on a stale ETag) and needs an Administrator, or the account itself for
/// its own password (ConfigureSelf).
pub(super) fn member(
    bmc: &RedfishBmc,
    method: &Method,
    id: &str,
    headers: &HeaderMap,
    body: &Bytes,
    origin: &Origin,
) -> Response {
    let Some(a) = find(bmc, id) else {
        return error(StatusCode::NOT_FOUND, "ResourceNotFound", "No such account.", &[id]);
    };
    match *method {
        Method::GET => with_etag(json_response(StatusCode::OK, account_doc(bmc, &a)), &a.etag()),
        Method::PATCH => patch(bmc, a, headers, body, origin),
        _ => method_not_allowed("GET, PATCH"),
    }
}

fn bad_value(property: &str) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "PropertyValueFormatError",
        &format!(
            "The value for the property {property} is of a different format than the property can accept."
        ),
        &[property],
    )
}

fn patch(bmc: &RedfishBmc, a: Account, headers: &HeaderMap, body: &Bytes, origin: &Origin) -> Response {
    if let Some(want) = headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok())
        && want != "*"
        && !want.split(',').any(|t| t.trim() == a.etag())
    {
        return error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            "The ETag supplied did not match the ETag required to change this resource.",
            &[],
        );
    }
    let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(body) else {
        return error(StatusCode::BAD_REQUEST, "MalformedJSON", "The request body was malformed JSON.", &[]);
    };
    let accounts = bmc.host.accounts();
    let caller = origin.user.as_deref().and_then(|u| accounts.by_name(u));
    let admin = caller.as_ref().is_some_and(|c| (4..=5).contains(&c.privilege));
    let own_password = caller.as_ref().is_some_and(|c| c.id == a.id) && m.keys().all(|k| k == "Password");
    if !admin && !own_password {
        return error(
            StatusCode::FORBIDDEN,
            "InsufficientPrivilege",
            "There are insufficient privileges for the account or credentials associated with the current \
             session to perform the requested operation.",
            &[],
        );
    }
    // Everything is validated before anything changes: a PATCH applies whole or not at all.
    let password = match m.get("Password") {
        None => None,
        Some(Value::String(p)) if (MIN_PASSWORD..=MAX_PASSWORD).contains(&p.len()) => Some(p.clone()),
        Some(_) => return bad_value("Password"),
    };
    let privilege = match m.get("RoleId") {
        None => None,
        Some(v) => match v.as_str() {
            Some("Administrator") => Some(4),
            Some("Operator") => Some(3),
            Some("ReadOnly") => Some(2),
            Some("NoAccess") => Some(NO_ACCESS),
            _ => return bad_value("RoleId"),
        },
    };
    let enabled = match m.get("Enabled") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return bad_value("Enabled"),
    };
    let mut result = Ok(());
    if let Some(p) = &password {
        result = result.and(accounts.set_password(a.id, p));
    }
    if let Some(e) = enabled {
        result = result.and(accounts.set_enabled(a.id, e));
    }
    if let Some(p) = privilege {
        result = result.and(accounts.set_privilege(a.id, p));
    }
    if let Some(n) = m.get("UserName").and_then(Value::as_str) {
        result = result.and(accounts.set_name(a.id, n));
    }
    if m.get("Locked").and_then(Value::as_bool) == Some(false) {
        result = result.and(accounts.unlock(a.id));
    }
    if let Err(e) = result {
        return error(
            StatusCode::BAD_REQUEST,
            "PropertyValueConflict",
            &format!("The change was refused: {e:?}."),
            &[],
        );
    }
    match accounts.get(a.id) {
        Some(now) => with_etag(json_response(StatusCode::OK, account_doc(bmc, &now)), &now.etag()),
        None => no_content(),
    }
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
