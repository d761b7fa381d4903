//! Vendor shapes a client must understand: HPE iLO's IML/IEL and identically named PSUs, OpenBMC's two
//! `EventLog`s without a SEL, and the `powersubsystem` flavor with no legacy `Power` resource. A
//! `psu-fail` fault must show in each of them, and `clear` must undo it.

mod common;

use common::bmc;
use lifeline_sim::control::Client;
use lifeline_sim::{Fleet, FleetSpec, RedfishFlavor, SimOptions};
use serde_json::Value;

async fn get(c: &reqwest::Client, url: &str) -> Value {
    let r = c.get(url).basic_auth("admin", Some("password")).send().await.unwrap();
    assert!(r.status().is_success(), "GET {url}: {}", r.status());
    r.json().await.unwrap()
}

async fn status(c: &reqwest::Client, url: &str) -> u16 {
    c.get(url).basic_auth("admin", Some("password")).send().await.unwrap().status().as_u16()
}

/// Every LogService of the System and the Manager: (path, LogEntryType).
async fn log_services(c: &reqwest::Client, base: &str, owners: [&str; 2]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for owner in owners {
        let o = get(c, &format!("{base}{owner}")).await;
        let Some(coll) = o["LogServices"]["@odata.id"].as_str() else { continue };
        for m in get(c, &format!("{base}{coll}")).await["Members"].as_array().unwrap() {
            let p = m["@odata.id"].as_str().unwrap().to_owned();
            let svc = get(c, &format!("{base}{p}")).await;
            out.push((p, svc["LogEntryType"].as_str().unwrap().to_owned()));
        }
    }
    out
}

async fn reset(c: &reqwest::Client, base: &str, system: &str, rt: &str) {
    let r = c
        .post(format!("{base}{system}/Actions/ComputerSystem.Reset"))
        .basic_auth("admin", Some("password"))
        .json(&serde_json::json!({ "ResetType": rt }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204, "{rt}");
}

#[tokio::test]
async fn ilo_iml_iel_and_identically_named_psus() {
    let f = common::fleet(3, SimOptions::for_tests()).await;
    let name = "gpu-node-03";
    let (base, c) = bmc(&f, name);
    Client::inject(f.control_url(), name, "psu-fail=2").await.unwrap();
    reset(&c, &base, "/redfish/v1/Systems/1", "ForceOff").await;

    let logs = log_services(&c, &base, ["/redfish/v1/Systems/1", "/redfish/v1/Managers/1"]).await;
    assert_eq!(
        logs,
        [
            ("/redfish/v1/Systems/1/LogServices/IML".to_owned(), "OEM".to_owned()),
            ("/redfish/v1/Managers/1/LogServices/IEL".to_owned(), "OEM".to_owned())
        ],
        "no SEL service on iLO"
    );
    let iml = get(&c, &format!("{base}/redfish/v1/Systems/1/LogServices/IML/Entries")).await;
    let psu = iml["Members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["Message"].as_str().unwrap().contains("Power Supply Failure"))
        .unwrap_or_else(|| panic!("no PSU failure in the IML: {iml:#}"));
    assert_eq!((psu["EntryType"].as_str(), psu["OemRecordFormat"].as_str()), (Some("Oem"), Some("Hpe-IML")));
    assert_eq!(psu["Severity"], "Critical");
    assert!(psu.get("SensorType").is_none(), "not a SEL record");
    let one = get(&c, &format!("{base}{}", psu["@odata.id"].as_str().unwrap())).await;
    assert_eq!(one["Message"], psu["Message"]);

    let iel = get(&c, &format!("{base}/redfish/v1/Managers/1/LogServices/IEL/Entries")).await;
    let off = &iel["Members"][0];
    assert_eq!(off["OemRecordFormat"], "Hpe-iLOEventLog");
    let msg = off["Message"].as_str().unwrap();
    assert!(
        msg.starts_with("Server power removed by admin@127.0.0.1:") && msg.ends_with("over redfish."),
        "{msg}"
    );

    let power = get(&c, &format!("{base}/redfish/v1/Chassis/1/Power")).await;
    let supplies = power["PowerSupplies"].as_array().unwrap();
    assert_eq!(supplies.len(), 2);
    assert!(supplies.iter().all(|p| p["Name"] == "HpeServerPowerSupply"));
    let distinct = |k: &str| supplies[0][k] != supplies[1][k];
    assert!(distinct("MemberId") && distinct("SerialNumber") && distinct("Location"), "{supplies:#?}");
    assert_eq!(supplies[1]["Location"]["PartLocation"]["ServiceLabel"], "Power Supply Bay 2");
    assert_eq!(supplies[1]["Status"]["Health"], "Critical");
    assert_eq!(supplies[1]["LastPowerOutputWatts"], 0.0);
    assert!(supplies[0]["LastPowerOutputWatts"].as_f64().unwrap() > 0.0);
    assert_eq!(supplies[0]["Status"]["Health"], "OK");
    f.shutdown().await;
}

#[tokio::test]
async fn openbmc_event_logs_under_system_and_manager_without_sel() {
    let f = common::fleet(5, SimOptions::for_tests()).await;
    let name = "gpu-node-05";
    let (base, c) = bmc(&f, name);
    Client::inject(f.control_url(), name, "psu-fail=1").await.unwrap();
    reset(&c, &base, "/redfish/v1/Systems/system", "PowerCycle").await;
    let logs = log_services(&c, &base, ["/redfish/v1/Systems/system", "/redfish/v1/Managers/bmc"]).await;
    assert_eq!(
        logs,
        [
            ("/redfish/v1/Systems/system/LogServices/EventLog".to_owned(), "Event".to_owned()),
            ("/redfish/v1/Managers/bmc/LogServices/EventLog".to_owned(), "Event".to_owned())
        ]
    );
    let sys = get(&c, &format!("{base}/redfish/v1/Systems/system/LogServices/EventLog/Entries")).await;
    let members = sys["Members"].as_array().unwrap();
    assert!(members.iter().all(|e| e["EntryType"] == "Event"), "{sys:#}");
    let psu =
        members.iter().find(|e| e["MessageId"] == "OpenBMC.0.1.PowerSupplyFailed").expect("PSU failure");
    assert_eq!(psu["Severity"], "Critical");
    let bmc_log = get(&c, &format!("{base}/redfish/v1/Managers/bmc/LogServices/EventLog/Entries")).await;
    assert_eq!(bmc_log["Members"][0]["MessageId"], "OpenBMC.0.1.PowerCycle", "{bmc_log:#}");
    assert_eq!(bmc_log["Members"][0]["EntryType"], "Event");
    f.shutdown().await;
}

#[tokio::test]
async fn powersubsystem_flavor_shows_loss_of_input_and_degraded_redundancy() {
    let mut spec = FleetSpec::generate(1, 0);
    spec.servers[0].bmc.flavor = RedfishFlavor::PowerSubsystem;
    let f = Fleet::start(spec, SimOptions::for_tests()).await.unwrap();
    let name = "gpu-node-01";
    let (base, c) = bmc(&f, name);
    assert_eq!("powersubsystem".parse::<RedfishFlavor>().unwrap(), RedfishFlavor::PowerSubsystem);
    assert_eq!(Client::devices(f.control_url()).await.unwrap()[0].flavor.as_deref(), Some("powersubsystem"));

    let chassis = get(&c, &format!("{base}/redfish/v1/Chassis/1")).await;
    assert!(chassis.get("Power").is_none(), "no legacy Power link: {chassis:#}");
    assert_eq!(status(&c, &format!("{base}/redfish/v1/Chassis/1/Power")).await, 404);
    let ps_url = format!("{base}{}", chassis["PowerSubsystem"]["@odata.id"].as_str().unwrap());
    let ps = get(&c, &ps_url).await;
    assert_eq!(ps["PowerSupplyRedundancy"][0]["Status"]["Health"], "OK");
    let psu1 = format!("{ps_url}/PowerSupplies/1");
    assert_eq!(get(&c, &psu1).await["LineInputStatus"], "Normal");

    Client::inject(f.control_url(), name, "psu-fail=1").await.unwrap();
    let p = get(&c, &psu1).await;
    assert_eq!(
        (p["LineInputStatus"].as_str(), p["Status"]["Health"].as_str()),
        (Some("LossOfInput"), Some("Critical"))
    );
    assert_eq!(get(&c, &format!("{ps_url}/PowerSupplies/2")).await["LineInputStatus"], "Normal");
    let ps = get(&c, &ps_url).await;
    assert_eq!(ps["PowerSupplyRedundancy"][0]["Status"]["Health"], "Warning");
    assert_eq!(ps["PowerSupplyRedundancy"][0]["RedundancyGroup"].as_array().unwrap().len(), 2);
    assert_eq!(get(&c, &format!("{base}/redfish/v1/Systems/1")).await["Status"]["Health"], "Critical");
    let sel = get(&c, &format!("{base}/redfish/v1/Managers/1/LogServices/SEL/Entries")).await;
    assert!(sel["Members"].as_array().unwrap().iter().any(|e| e["SensorType"] == "Power Supply / Converter"));

    let e = Client::inject(f.control_url(), name, "psu-fail=3").await.unwrap_err();
    assert!(e.to_string().contains("no PSU 3"), "{e}");
    Client::clear(f.control_url(), name).await.unwrap();
    assert_eq!(get(&c, &psu1).await["LineInputStatus"], "Normal");
    assert_eq!(get(&c, &ps_url).await["PowerSupplyRedundancy"][0]["Status"]["Health"], "OK");
    f.shutdown().await;
}

/// `Status.HealthRollup` on the system where the vendor reports it (generic, iDRAC, iLO), following a PSU
/// failure and its repair; only `Health` on Supermicro and OpenBMC, whose chassis a client must read.
#[tokio::test]
async fn health_rollup_where_the_vendor_reports_it_and_it_follows_a_psu_failure() {
    let f = common::fleet(5, SimOptions::for_tests()).await;
    let systems = [
        ("gpu-node-01", "/redfish/v1/Systems/Self", true),
        ("gpu-node-02", "/redfish/v1/Systems/System.Embedded.1", true),
        ("gpu-node-03", "/redfish/v1/Systems/1", true),
        ("gpu-node-04", "/redfish/v1/Systems/1", false),
        ("gpu-node-05", "/redfish/v1/Systems/system", false),
    ];
    for (name, path, rollup) in systems {
        let (base, c) = bmc(&f, name);
        let s = get(&c, &format!("{base}{path}")).await;
        assert_eq!(s["Status"]["Health"], "OK", "{name}");
        assert_eq!(s["Status"].get("HealthRollup").is_some(), rollup, "{name}: {:#}", s["Status"]);
        Client::inject(f.control_url(), name, "psu-fail=1").await.unwrap();
        let s = get(&c, &format!("{base}{path}")).await;
        let want = if rollup { Some("Critical") } else { None };
        assert_eq!(s["Status"]["HealthRollup"].as_str(), want, "{name}");
        Client::clear(f.control_url(), name).await.unwrap();
        let s = get(&c, &format!("{base}{path}")).await;
        assert_eq!(s["Status"]["HealthRollup"].as_str(), rollup.then_some("OK"), "{name}");
    }
    f.shutdown().await;
}
