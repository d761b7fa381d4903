//! SessionService: login (`POST …/Sessions` or `…/Sessions/Members`), the session collection, logout.

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::resources::{collection, link, ok, parse_json};
use super::{RedfishBmc, Session, error, json_response};
use axum::response::Response;

pub(super) fn session_service(bmc: &RedfishBmc) -> Value {
    json!({
        "@odata.id": "/redfish/v1/SessionService",
        "@odata.type": "#SessionService.v1_1_8.SessionService",
        "Id": "SessionService",
        "Name": "Session Service",
        "ServiceEnabled": true,
        "SessionTimeout": super::SESSION_TIMEOUT.as_secs(),
        "Status": { "State": "Enabled", "Health": "OK" },
        "Sessions": link("/redfish/v1/SessionService/Sessions"),
        "Oem": {},
        "Description": format!("Session Service (at most {} sessions)", bmc.session_limit),
    })
}

pub(super) fn session_doc(s: &Session) -> Value {
    json!({
        "@odata.id": format!("/redfish/v1/SessionService/Sessions/{}", s.id),
        "@odata.type": "#Session.v1_6_0.Session",
        "Id": s.id,
        "Name": "User Session",
        "UserName": s.user,
        "CreatedTime": s.created,
        "SessionType": "Redfish",
    })
}

pub(super) fn session_collection(bmc: &RedfishBmc) -> Value {
    let s = bmc.sessions();
    let members = s.list.iter().map(|x| format!("/redfish/v1/SessionService/Sessions/{}", x.id)).collect();
    collection("/redfish/v1/SessionService/Sessions", "SessionCollection", "Session Collection", members)
}

pub(super) fn session_member(bmc: &RedfishBmc, id: &str) -> Option<Response> {
    let s = bmc.sessions();
    s.list.iter().find(|x| x.id == id).map(|x| ok(session_doc(x)))
}

pub(super) fn create_session(bmc: &RedfishBmc, body: &Bytes) -> Response {
    let m = match parse_json(body) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let (Some(user), Some(pass)) =
        (m.get("UserName").and_then(Value::as_str), m.get("Password").and_then(Value::as_str))
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "PropertyMissing",
            "The property UserName or Password is a required property and must be included in the request.",
            &["UserName"],
        );
    };
    if !super::check_password(bmc, user, pass) {
        return super::unauthorized();
    }
    let mut s = bmc.sessions();
    if bmc.host.bmc().sessions_full() || s.list.len() >= bmc.session_limit {
        let (status, body) = bmc.flavor.session_limit_error();
        return json_response(status, body);
    }
    s.next_id += 1;
    let sess = Session {
        id: format!("{}", s.next_id),
        token: format!("{:032x}", rand::random::<u128>()),
        user: user.to_owned(),
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        last_used: std::time::Instant::now(),
    };
    let doc = session_doc(&sess);
    let location = format!("/redfish/v1/SessionService/Sessions/{}", sess.id);
    let token = sess.token.clone();
    s.list.push(sess);
    let mut r = json_response(StatusCode::CREATED, doc);
    if let (Ok(t), Ok(l)) = (HeaderValue::from_str(&token), HeaderValue::from_str(&location)) {
        r.headers_mut().insert("X-Auth-Token", t);
        r.headers_mut().insert(header::LOCATION, l);
    }
    r
}
