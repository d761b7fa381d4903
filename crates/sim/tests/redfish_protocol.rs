//! DSP0266 rules the sim's Redfish service follows like a real one: `Link: rel=describedby` and `Allow`
//! on every GET/HEAD (and every method not in `Allow` answered 405), `OData-Version` other than 4.0 ->
//! 412, unsupported `$` query parameters -> 501, `only`/`$top`/`$skip`/`$select`, the AccountService
//! with the predefined roles, and login through `POST …/Sessions/Members`.

mod common;

use std::collections::{BTreeSet, VecDeque};

use common::{bmc, fleet};
use lifeline_sim::{RedfishFlavor, SimOptions};
use reqwest::{Method, StatusCode};
use serde_json::Value;

fn links(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "@odata.id"
                    && let Some(s) = x.as_str()
                {
                    out.push(s.to_owned());
                }
                links(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| links(x, out)),
        _ => {}
    }
}

#[tokio::test]
async fn link_and_allow_headers_on_every_resource_and_405_for_the_rest() {
    let f = fleet(RedfishFlavor::ALL.len(), SimOptions::for_tests()).await;
    for (i, flavor) in RedfishFlavor::ALL.iter().enumerate() {
        let (base, c) = bmc(&f, &format!("gpu-node-0{}", i + 1));
        let mut seen = BTreeSet::new();
        let mut todo = VecDeque::from(["/redfish/v1".to_owned()]);
        while let Some(path) = todo.pop_front() {
            let path = path.split('#').next().unwrap().to_owned();
            if !seen.insert(path.clone()) {
                continue;
            }
            let r =
                c.get(format!("{base}{path}")).basic_auth("admin", Some("password")).send().await.unwrap();
            assert_eq!(r.status(), StatusCode::OK, "{flavor} GET {path}");
            let allow = r.headers().get("Allow").map(|v| v.to_str().unwrap().to_owned());
            let link = r.headers().get("Link").map(|v| v.to_str().unwrap().to_owned());
            let v: Value = r.json().await.unwrap();
            let allow = allow.unwrap_or_else(|| panic!("{flavor} {path}: no Allow header"));
            let link = link.unwrap_or_else(|| panic!("{flavor} {path}: no Link header"));
            assert!(link.ends_with("; rel=describedby"), "{flavor} {path}: {link}");
            let ty = v["@odata.type"].as_str().unwrap().trim_start_matches('#');
            let ns = ty.rsplit_once('.').unwrap().0;
            assert!(link.contains(&format!("/{ns}.json>")), "{flavor} {path}: {link} for {ty}");
            for m in [Method::POST, Method::PATCH, Method::PUT, Method::DELETE] {
                if allow.split(", ").any(|a| a == m.as_str()) {
                    continue;
                }
                let r = c
                    .request(m.clone(), format!("{base}{path}"))
                    .basic_auth("admin", Some("password"))
                    .json(&serde_json::json!({}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(
                    r.status(),
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{flavor} {m} {path} (Allow: {allow})"
                );
            }
            let head =
                c.head(format!("{base}{path}")).basic_auth("admin", Some("password")).send().await.unwrap();
            assert_eq!(head.status(), StatusCode::OK, "{flavor} HEAD {path}");
            let mut out = Vec::new();
            links(&v, &mut out);
            todo.extend(out.into_iter().filter(|l| l.starts_with("/redfish/v1")));
        }
        assert!(seen.len() > 20, "{flavor}: only {} resources walked", seen.len());
        assert!(seen.contains("/redfish/v1/AccountService/Roles/ReadOnly"), "{flavor}: {seen:?}");
    }
    f.shutdown().await;
}

#[tokio::test]
async fn odata_version_query_parameters_accounts_and_members_login() {
    // gpu-node-01 is the generic flavor (it has $expand), gpu-node-05 the OpenBMC one (it has not).
    let f = fleet(5, SimOptions::for_tests()).await;
    let (base, c) = bmc(&f, "gpu-node-01");
    let get = async |path: &str| {
        c.get(format!("{base}{path}")).basic_auth("admin", Some("password")).send().await.unwrap()
    };

    let r = c
        .get(format!("{base}/redfish/v1/Systems"))
        .basic_auth("admin", Some("password"))
        .header("OData-Version", "4.01")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::PRECONDITION_FAILED);
    let r = c
        .get(format!("{base}/redfish/v1/Systems"))
        .basic_auth("admin", Some("password"))
        .header("OData-Version", "4.0")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);

    let root: Value = get("/redfish/v1").await.json().await.unwrap();
    assert_eq!(root["ProtocolFeaturesSupported"]["ExpandQuery"]["NoLinks"], true);
    for q in ["$expand=*", "$expand=.(%24levels=1)"] {
        let v: Value = get(&format!("/redfish/v1/Chassis/Self/Sensors?{q}")).await.json().await.unwrap();
        let members = v["Members"].as_array().unwrap();
        assert!(members.len() > 5 && members.iter().all(|m| m["Reading"].is_number()), "{q}: {v:#}");
    }
    assert_eq!(get("/redfish/v1/Systems?$expand=.($levels=2)").await.status(), StatusCode::BAD_REQUEST);
    let (obmc, oc) = bmc(&f, "gpu-node-05");
    let r = oc.get(format!("{obmc}/redfish/v1/Systems?$expand=.")).basic_auth("admin", Some("password"));
    assert_eq!(r.send().await.unwrap().status(), StatusCode::NOT_IMPLEMENTED, "OpenBMC: no $expand");
    for q in ["$filter=Id%20eq%20'1'", "$levels=2", "$unknown=1", "excerpt"] {
        let r = get(&format!("/redfish/v1/Systems?{q}")).await;
        assert_eq!(r.status(), StatusCode::NOT_IMPLEMENTED, "{q}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            v["error"]["@Message.ExtendedInfo"][0]["MessageId"], "Base.1.15.0.QueryNotSupported",
            "{q}"
        );
    }
    assert_eq!(get("/redfish/v1/Systems?cachebuster=1").await.status(), StatusCode::OK, "non-$ ignored");

    let only: Value = get("/redfish/v1/Systems?only").await.json().await.unwrap();
    assert_eq!(only["@odata.id"], "/redfish/v1/Systems/Self", "only: the one member");
    assert!(only["PowerState"].is_string());
    assert_eq!(get("/redfish/v1/Systems/Self?only").await.status(), StatusCode::BAD_REQUEST);
    let page: Value = get("/redfish/v1/AccountService/Roles?$top=1&$skip=1").await.json().await.unwrap();
    assert_eq!(page["Members"].as_array().unwrap().len(), 1);
    assert_eq!(page["Members"][0]["@odata.id"], "/redfish/v1/AccountService/Roles/Operator");
    assert_eq!(page["Members@odata.count"], 3);
    assert_eq!(page["Members@odata.nextLink"], "/redfish/v1/AccountService/Roles?$skip=2&$top=1");
    let sel: Value = get("/redfish/v1/Systems/Self?$select=PowerState").await.json().await.unwrap();
    let keys: BTreeSet<&str> = sel.as_object().unwrap().keys().map(String::as_str).collect();
    // DSP0266 keeps the `@odata` annotations (id, type, etag) whatever `$select` names.
    assert_eq!(keys, BTreeSet::from(["@odata.etag", "@odata.id", "@odata.type", "PowerState"]));

    let roles: Value = get("/redfish/v1/AccountService/Roles").await.json().await.unwrap();
    let ids: Vec<&str> =
        roles["Members"].as_array().unwrap().iter().map(|m| m["@odata.id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["Administrator", "Operator", "ReadOnly"].map(|r| format!("/redfish/v1/AccountService/Roles/{r}"))
    );
    let ro: Value = get("/redfish/v1/AccountService/Roles/ReadOnly").await.json().await.unwrap();
    assert_eq!(ro["IsPredefined"], true);
    assert_eq!(ro["AssignedPrivileges"], serde_json::json!(["Login", "ConfigureSelf"]));
    let accounts: Value = get("/redfish/v1/AccountService/Accounts").await.json().await.unwrap();
    let acc = accounts["Members"][0]["@odata.id"].as_str().unwrap().to_owned();
    let acc: Value = get(&acc).await.json().await.unwrap();
    assert_eq!((acc["UserName"].as_str(), acc["RoleId"].as_str()), (Some("admin"), Some("Administrator")));
    assert!(acc["Password"].is_null(), "a password is never returned");

    let r = c
        .post(format!("{base}/redfish/v1/SessionService/Sessions/Members"))
        .json(&serde_json::json!({"UserName": "admin", "Password": "password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let token = r.headers()["X-Auth-Token"].to_str().unwrap().to_owned();
    let location = r.headers()["Location"].to_str().unwrap().to_owned();
    let me = c.get(format!("{base}{location}")).header("X-Auth-Token", &token).send().await.unwrap();
    assert_eq!(me.status(), StatusCode::OK);
    let bad = c
        .post(format!("{base}/redfish/v1/SessionService/Sessions/Members"))
        .json(&serde_json::json!({"UserName": "admin", "Password": "wrong"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::UNAUTHORIZED);
    f.shutdown().await;
}
