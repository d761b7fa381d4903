//! Redfish front end over real HTTPS sockets: sessions and limits, resets per flavor, boot override quirks,
//! faults seen through Redfish, certificate change, unresponsive BMC, SSE and push subscriptions.

mod common;

use std::time::Duration;

use common::{bmc, eventually, fleet};
use lifeline_sim::control::Client;
use lifeline_sim::{EndpointKind, SimOptions};
use serde_json::{Value, json};

async fn get(c: &reqwest::Client, url: &str) -> Value {
    let r = c.get(url).basic_auth("admin", Some("password")).send().await.unwrap();
    assert!(r.status().is_success(), "GET {url}: {}", r.status());
    r.json().await.unwrap()
}

#[tokio::test]
async fn session_login_limit_and_logout() {
    let f = fleet(3, SimOptions::for_tests()).await;
    // gpu-node-03 is ilo-like: 4 sessions.
    let (base, c) = bmc(&f, "gpu-node-03");
    let login = json!({"UserName": "admin", "Password": "password"});
    let mut locations = Vec::new();
    for _ in 0..4 {
        let r =
            c.post(format!("{base}/redfish/v1/SessionService/Sessions")).json(&login).send().await.unwrap();
        assert_eq!(r.status(), 201);
        let token = r.headers()["x-auth-token"].to_str().unwrap().to_owned();
        let loc = r.headers()["location"].to_str().unwrap().to_owned();
        let sys = c
            .get(format!("{base}/redfish/v1/Systems/1"))
            .header("X-Auth-Token", &token)
            .send()
            .await
            .unwrap();
        assert_eq!(sys.status(), 200);
        locations.push((loc, token));
    }
    let r = c.post(format!("{base}/redfish/v1/SessionService/Sessions")).json(&login).send().await.unwrap();
    assert_eq!(r.status(), 503);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["@Message.ExtendedInfo"][0]["MessageId"], "Base.1.15.0.SessionLimitExceeded");
    let (loc, token) = locations.pop().unwrap();
    let d = c.delete(format!("{base}{loc}")).header("X-Auth-Token", &token).send().await.unwrap();
    assert_eq!(d.status(), 204);
    let gone =
        c.get(format!("{base}/redfish/v1/Systems/1")).header("X-Auth-Token", &token).send().await.unwrap();
    assert_eq!(gone.status(), 401);
    let r = c.post(format!("{base}/redfish/v1/SessionService/Sessions")).json(&login).send().await.unwrap();
    assert_eq!(r.status(), 201, "a slot was freed by the logout");

    let bad = c
        .post(format!("{base}/redfish/v1/SessionService/Sessions"))
        .json(&json!({"UserName": "admin", "Password": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 401);

    // iDRAC's own reply past the limit, forced by the sessions-full fault.
    let (base, c) = bmc(&f, "gpu-node-02");
    Client::inject(f.control_url(), "gpu-node-02", "sessions-full").await.unwrap();
    let r = c.post(format!("{base}/redfish/v1/SessionService/Sessions")).json(&login).send().await.unwrap();
    assert_eq!(r.status(), 503);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["@Message.ExtendedInfo"][0]["MessageId"], "IDRAC.2.9.RAC0218");
    Client::inject(f.control_url(), "gpu-node-02", "clear").await.unwrap();
    let r = c.post(format!("{base}/redfish/v1/SessionService/Sessions")).json(&login).send().await.unwrap();
    assert_eq!(r.status(), 201);
    f.shutdown().await;
}

#[tokio::test]
async fn resets_follow_each_flavor_and_change_power_state() {
    let f = fleet(5, SimOptions::for_tests()).await;
    let cases = [
        ("gpu-node-01", "Self", true),
        ("gpu-node-02", "System.Embedded.1", false),
        ("gpu-node-05", "system", true),
    ];
    for (name, id, has_cycle) in cases {
        let (base, c) = bmc(&f, name);
        let sys_url = format!("{base}/redfish/v1/Systems/{id}");
        let sys = get(&c, &sys_url).await;
        let allowed: Vec<String> = serde_json::from_value(
            sys["Actions"]["#ComputerSystem.Reset"]["ResetType@Redfish.AllowableValues"].clone(),
        )
        .unwrap();
        assert_eq!(allowed.contains(&"PowerCycle".to_owned()), has_cycle, "{name}");
        let target = format!("{base}{}", sys["Actions"]["#ComputerSystem.Reset"]["target"].as_str().unwrap());
        let post = |rt: &'static str| {
            c.post(&target).basic_auth("admin", Some("password")).json(&json!({"ResetType": rt})).send()
        };
        if !has_cycle {
            let r = post("PowerCycle").await.unwrap();
            assert_eq!(r.status(), 400, "{name}: PowerCycle is not allowed");
            let body: Value = r.json().await.unwrap();
            assert!(body["error"]["code"].as_str().unwrap().ends_with("ActionParameterValueNotInList"));
        }
        assert_eq!(post("ForceOff").await.unwrap().status(), 204);
        assert_eq!(get(&c, &sys_url).await["PowerState"], "Off");
        assert_eq!(post("On").await.unwrap().status(), 204);
        let host = f.host(name).unwrap();
        assert!(eventually(10, async || host.phase() == lifeline_sim::Phase::OsUp).await, "{name} boots");
        assert_eq!(get(&c, &sys_url).await["PowerState"], "On");
        if name == "gpu-node-02" {
            // iDRAC refuses On while on.
            assert_eq!(post("On").await.unwrap().status(), 409);
        }
        let missing =
            c.post(&target).basic_auth("admin", Some("password")).json(&json!({})).send().await.unwrap();
        assert_eq!(missing.status(), 400);
    }
    f.shutdown().await;
}

#[tokio::test]
async fn boot_override_patch_and_supermicro_quirk() {
    let f = fleet(4, SimOptions::for_tests()).await;
    let (base, c) = bmc(&f, "gpu-node-01");
    let url = format!("{base}/redfish/v1/Systems/Self");
    let r = c
        .patch(&url)
        .basic_auth("admin", Some("password"))
        .json(&json!({"Boot": {"BootSourceOverrideTarget": "Pxe"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let boot = &get(&c, &url).await["Boot"];
    assert_eq!(boot["BootSourceOverrideTarget"], "Pxe");
    assert_eq!(boot["BootSourceOverrideEnabled"], "Once");
    let bad = c
        .patch(&url)
        .basic_auth("admin", Some("password"))
        .json(&json!({"Boot": {"BootSourceOverrideTarget": "Floppy"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    // The next boot uses PXE once (the console shows it), then the override is gone.
    let host = f.host("gpu-node-01").unwrap();
    host.power(lifeline_sim::PowerCommand::ForceRestart).unwrap();
    assert!(eventually(10, async || host.phase() == lifeline_sim::Phase::OsUp).await);
    assert!(host.console().history().contains("PXE-E18"));
    assert_eq!(get(&c, &url).await["Boot"]["BootSourceOverrideEnabled"], "Disabled");

    let (base, c) = bmc(&f, "gpu-node-04");
    let url = format!("{base}/redfish/v1/Systems/1");
    let only_target = json!({"Boot": {"BootSourceOverrideTarget": "Pxe"}});
    let r = c.patch(&url).basic_auth("admin", Some("password")).json(&only_target).send().await.unwrap();
    assert_eq!(r.status(), 400, "supermicro needs BootSourceOverrideEnabled in the same PATCH");
    let both =
        json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Continuous"}});
    let r = c.patch(&url).basic_auth("admin", Some("password")).json(&both).send().await.unwrap();
    assert_eq!(r.status(), 204);
    f.shutdown().await;
}

#[tokio::test]
async fn injected_faults_show_in_sel_sensors_and_exported_node_state() {
    let dir = tempfile::tempdir().unwrap();
    let endpoints = dir.path().join("endpoints.json");
    let opts = SimOptions {
        export_node_state: Some(dir.path().join("state")),
        endpoints_json: Some(endpoints.clone()),
        ..SimOptions::for_tests()
    };
    let f = fleet(5, opts).await;
    let eps: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&endpoints).unwrap()).unwrap();
    assert_eq!(eps.iter().filter(|e| e["kind"] == "redfish").count(), 5);
    assert_eq!(eps.iter().filter(|e| e["kind"] == "control").count(), 1);
    assert_eq!(eps.iter().filter(|e| e["kind"] == "ipmi").count(), 5);
    assert!(eps.iter().all(|e| e["port"].as_u64().unwrap() > 0 && e.get("username").is_some()));

    // openbmc-like keeps its SEL under the System.
    let name = "gpu-node-05";
    let (base, c) = bmc(&f, name);
    let url = f.control_url().to_owned();
    Client::inject(&url, name, "gpu-ecc=3").await.unwrap();
    Client::inject(&url, name, "gpu-xid=1:79").await.unwrap();
    let info = Client::inject(&url, name, "rail-down=mlx5_2").await.unwrap();
    assert_eq!(info.faults, ["gpu-ecc=3", "gpu-xid=1:79", "rail-down=mlx5_2"]);
    let bad = Client::inject(&url, name, "gpu-ecc=12").await.unwrap_err();
    assert!(bad.to_string().contains("no GPU 12"), "{bad}");
    assert!(Client::inject(&url, "nope", "boot-loop").await.unwrap_err().to_string().contains("404"));

    let entries = get(&c, &format!("{base}/redfish/v1/Systems/system/LogServices/EventLog/Entries")).await;
    let messages: Vec<&str> =
        entries["Members"].as_array().unwrap().iter().map(|m| m["Message"].as_str().unwrap()).collect();
    assert!(messages.iter().any(|m| m.contains("GPU3") && m.contains("ECC")), "{messages:?}");
    assert!(messages.iter().any(|m| m.contains("mlx5_2")), "{messages:?}");
    let gpu3 = get(&c, &format!("{base}/redfish/v1/Chassis/chassis/Sensors/GPU3Temp")).await;
    assert_eq!(gpu3["Status"]["Health"], "Critical");
    let sys = get(&c, &format!("{base}/redfish/v1/Systems/system")).await;
    assert_eq!(sys["Status"]["Health"], "Critical");

    let node = dir.path().join("state").join(name);
    let snap: lifeline_sim::node_state::GpuSnapshot =
        serde_json::from_str(&std::fs::read_to_string(node.join("gpus.json")).unwrap()).unwrap();
    assert_eq!(snap.gpus[3].ecc_volatile_uncorrected, 1);
    assert_eq!(snap.gpus[1].xid_events[0].code, 79);
    let state = std::fs::read_to_string(node.join("sysfs/class/infiniband/mlx5_2/ports/1/state")).unwrap();
    assert_eq!(state, "1: DOWN\n");

    // A power cycle through Redfish clears what a real one clears.
    let r = c
        .post(format!("{base}/redfish/v1/Systems/system/Actions/ComputerSystem.Reset"))
        .basic_auth("admin", Some("password"))
        .json(&json!({"ResetType": "PowerCycle"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let host = f.host(name).unwrap();
    assert!(eventually(10, async || host.phase() == lifeline_sim::Phase::OsUp && host.boots() >= 2).await);
    host.flush_export().await;
    let snap: lifeline_sim::node_state::GpuSnapshot =
        serde_json::from_str(&std::fs::read_to_string(node.join("gpus.json")).unwrap()).unwrap();
    assert!(snap.host_up);
    assert!(snap.gpus[1].xid_events.is_empty());
    assert_eq!(snap.gpus[3].ecc_volatile_uncorrected, 0);
    assert_eq!(snap.gpus[3].ecc_aggregate_uncorrected, 1);
    let state = std::fs::read_to_string(node.join("sysfs/class/infiniband/mlx5_2/ports/1/state")).unwrap();
    assert_eq!(state, "1: DOWN\n", "an unplugged cable survives a power cycle");
    let devices = Client::devices(&url).await.unwrap();
    assert_eq!(devices.len(), 5);
    assert_eq!(devices.iter().find(|d| d.name == name).unwrap().faults, ["rail-down=mlx5_2"]);
    f.shutdown().await;
}

#[tokio::test]
async fn certificate_change_and_unresponsive_bmc() {
    let f = fleet(1, SimOptions::for_tests()).await;
    let name = "gpu-node-01";
    let (base, c) = bmc(&f, name);
    let root = format!("{base}/redfish/v1");
    assert!(c.get(&root).send().await.unwrap().status().is_success());
    let url = f.control_url().to_owned();

    let old_cert = f.redfish(name).unwrap().certificate();
    Client::inject(&url, name, "tls-cert-change").await.unwrap();
    let new_cert = f.redfish(name).unwrap().certificate();
    assert_ne!(old_cert, new_cert);
    // A pinning client on a fresh connection notices the change; one pinned to the new certificate works.
    let pinned_old = common::client(old_cert, Duration::from_secs(5));
    let err = pinned_old.get(&root).send().await.unwrap_err();
    assert!(format!("{err:?}").contains("certificate changed"), "{err:?}");
    drop(c);

    Client::inject(&url, name, "bmc-unresponsive").await.unwrap();
    let quick = common::client(new_cert.clone(), Duration::from_millis(300));
    let err = quick.get(&root).send().await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    Client::inject(&url, name, "clear").await.unwrap();
    assert!(quick.get(&root).send().await.unwrap().status().is_success());

    Client::inject(&url, name, "bmc-slow=400").await.unwrap();
    let err = quick.get(&root).send().await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    f.shutdown().await;
}

/// A push destination: a one-route HTTP listener that forwards what it receives. (its URL, what it
/// received, its task).
async fn push_destination()
-> (String, tokio::sync::mpsc::Receiver<Value>, tokio::task::JoinHandle<std::io::Result<()>>) {
    let (tx, rx) = tokio::sync::mpsc::channel::<Value>(8);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dest = format!("http://{}/events", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/events",
        axum::routing::post(move |axum::Json(v): axum::Json<Value>| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(v).await;
                ""
            }
        }),
    );
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    (dest, rx, server)
}

#[tokio::test]
async fn sse_stream_and_push_subscription_carry_fault_events() {
    let f = fleet(1, SimOptions::for_tests()).await;
    let name = "gpu-node-01";
    let (base, c) = bmc(&f, name);

    let (dest, mut rx, server) = push_destination().await;

    let r = c
        .post(format!("{base}/redfish/v1/EventService/Subscriptions"))
        .basic_auth("admin", Some("password"))
        .json(&json!({"Destination": dest, "Protocol": "Redfish", "Context": "lifeline-test"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let sub = r.headers()["location"].to_str().unwrap().to_owned();

    let mut sse = c
        .get(format!("{base}/redfish/v1/EventService/SSE"))
        .basic_auth("admin", Some("password"))
        .send()
        .await
        .unwrap();
    assert_eq!(sse.headers()["content-type"], "text/event-stream");

    Client::inject(f.control_url(), name, "gpu-ecc=0").await.unwrap();

    let mut text = String::new();
    let got = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(chunk) = sse.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.contains("GpuUncorrectableEcc") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(got, Ok(true), "SSE carried the SEL event: {text}");

    let pushed = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap().unwrap();
    assert_eq!(pushed["Context"], "lifeline-test");
    assert_eq!(pushed["Events"][0]["MessageId"], "Lifeline.1.0.GpuUncorrectableEcc");

    let d = c.delete(format!("{base}{sub}")).basic_auth("admin", Some("password")).send().await.unwrap();
    assert_eq!(d.status(), 204);
    server.abort();
    f.shutdown().await;
}

/// A subscription with `SendHeartbeat` gets heartbeat events (at the fleet's time scale: a minute is
/// 0.6 s in tests); a bad interval is refused; a BMC reset drops every subscription, as iDRAC and iLO do.
#[tokio::test]
async fn heartbeats_arrive_and_a_bmc_reset_drops_every_subscription() {
    let f = fleet(1, SimOptions::for_tests()).await;
    let name = "gpu-node-01";
    let (base, c) = bmc(&f, name);
    let (dest, mut rx, server) = push_destination().await;
    let subs = format!("{base}/redfish/v1/EventService/Subscriptions");
    let post = |body: Value| c.post(&subs).basic_auth("admin", Some("password")).json(&body).send();

    let bad = post(json!({"Destination": dest, "SendHeartbeat": true, "HeartbeatIntervalMinutes": 0}))
        .await
        .unwrap();
    assert_eq!(bad.status(), 400, "an interval outside 1..=65535");
    let r = post(
        json!({"Destination": dest, "Context": "hb", "SendHeartbeat": true, "HeartbeatIntervalMinutes": 1}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 201);
    let sub = r.headers()["location"].to_str().unwrap().to_owned();
    let doc = get(&c, &format!("{base}{sub}")).await;
    assert_eq!(
        (doc["SendHeartbeat"].clone(), doc["HeartbeatIntervalMinutes"].clone()),
        (json!(true), json!(1))
    );
    let beat = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap().unwrap();
    assert_eq!(beat["Context"], "hb");
    assert_eq!(beat["Events"][0]["MessageId"], "HeartbeatEvent.1.0.RedfishServiceFunctional");

    f.host(name).unwrap().reset_bmc();
    let list = get(&c, &subs).await;
    assert_eq!(list["Members"], json!([]), "a BMC reset drops every subscription: {list}");
    let gone = c.get(format!("{base}{sub}")).basic_auth("admin", Some("password")).send().await.unwrap();
    assert_eq!(gone.status(), 404);
    server.abort();
    f.shutdown().await;
}

#[tokio::test]
async fn every_flavor_serves_its_own_paths() {
    let f = fleet(5, SimOptions::for_tests()).await;
    let expect = [
        ("gpu-node-01", "Self", "Self", "Managers/Self/LogServices/SEL", "SEL"),
        (
            "gpu-node-02",
            "System.Embedded.1",
            "iDRAC.Embedded.1",
            "Managers/iDRAC.Embedded.1/LogServices/Sel",
            "SEL",
        ),
        ("gpu-node-03", "1", "1", "Systems/1/LogServices/IML", "OEM"),
        ("gpu-node-04", "1", "1", "Managers/1/LogServices/Log1", "SEL"),
        ("gpu-node-05", "system", "bmc", "Systems/system/LogServices/EventLog", "Event"),
    ];
    for (name, sys, mgr, log, entry_type) in expect {
        let (base, c) = bmc(&f, name);
        let systems = get(&c, &format!("{base}/redfish/v1/Systems")).await;
        assert_eq!(systems["Members"][0]["@odata.id"], format!("/redfish/v1/Systems/{sys}"), "{name}");
        let managers = get(&c, &format!("{base}/redfish/v1/Managers/")).await;
        assert_eq!(managers["Members"][0]["@odata.id"], format!("/redfish/v1/Managers/{mgr}"), "{name}");
        let l = get(&c, &format!("{base}/redfish/v1/{log}")).await;
        assert_eq!(l["LogEntryType"], entry_type, "{name}");
        let no_auth = c.get(format!("{base}/redfish/v1/Systems")).send().await.unwrap();
        assert_eq!(no_auth.status(), 401);
        assert_eq!(f.endpoint(name, EndpointKind::Redfish).unwrap().username, "admin");
    }
    f.shutdown().await;
}
