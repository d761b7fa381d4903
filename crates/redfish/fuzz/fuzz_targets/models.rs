//! Every Redfish document model reads a BMC's JSON leniently. Properties, on any document:
//! - a member set to `null` reads exactly as the member absent (Redfish's "not available");
//! - one member replaced by a value of another type degrades only the model fields it feeds (at most a
//!   few), never the whole document;
//! - every warning names the document it came from.
//!
//! Input: byte 0 picks the member (any depth), byte 1 the replacement; the rest is the JSON document.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lifeline_redfish::doc::FieldWarning;
use lifeline_redfish::model::{self, Chassis, ComputerSystem, Event, LogService, Manager, ServiceRoot};
use lifeline_redfish::psu;
use serde_json::{Value, json};

const AT: &str = "/redfish/v1/Fuzz/1";

fn ser<T: serde::Serialize>(t: &T) -> Value {
    let mut v = serde_json::to_value(t).expect("models serialize");
    if let Value::Object(m) = &mut v {
        m.remove("warnings");
    }
    v
}

fn check_warnings(ws: &[FieldWarning]) {
    for w in ws {
        assert!(w.at.starts_with(AT), "warning not naming its document: {w:?}");
    }
}

/// Every model read of `doc`, serialized without warnings (checked separately).
fn read_all(doc: &Value) -> Vec<(&'static str, Value)> {
    let mut ws = Vec::new();
    let mut out = Vec::new();
    let r = ServiceRoot::from_value(doc, AT);
    check_warnings(&r.warnings);
    out.push(("ServiceRoot", ser(&r)));
    let s = ComputerSystem::from_value(doc, AT);
    check_warnings(&s.warnings);
    out.push(("ComputerSystem", ser(&s)));
    let c = Chassis::from_value(doc, AT);
    check_warnings(&c.warnings);
    out.push(("Chassis", ser(&c)));
    let m = Manager::from_value(doc, AT);
    check_warnings(&m.warnings);
    out.push(("Manager", ser(&m)));
    let ss = model::SessionService::from_value(doc, AT);
    check_warnings(&ss.warnings);
    out.push(("SessionService", ser(&ss)));
    let es = model::EventService::from_value(doc, AT);
    check_warnings(&es.warnings);
    out.push(("EventService", ser(&es)));
    let e = Event::from_value(doc, AT);
    check_warnings(&e.warnings);
    out.push(("Event", ser(&e)));
    let l = LogService::from_value(doc, AT);
    check_warnings(&l.warnings);
    let _ = (l.kind(), l.is_sel());
    out.push(("LogService", ser(&l)));
    out.push(("LogEntry", ser(&model::log_entry_from_value(doc, AT, &mut ws))));
    out.push(("EventDestination", ser(&model::event_destination_from_value(doc, AT, &mut ws))));
    out.push(("ResetTypes", ser(&model::action_info_reset_types(doc, AT, &mut ws))));
    out.push(("Sensor", ser(&model::sensor_from_value(doc, AT, &mut ws))));
    let thermal = model::thermal_from_value(doc, AT, &mut ws);
    out.push(("Thermal", ser(&thermal)));
    let power = model::power_from_value(doc, AT, &mut ws);
    out.push(("Power", ser(&power)));
    let health =
        model::SensorSet { readings: thermal.into_iter().chain(power).collect(), ..Default::default() };
    let _ = health.health();
    out.push(("PowerSupply", ser(&psu::power_supply_from_value(doc, AT, Some(doc), &mut ws))));
    out.push(("Redundancy", ser(&psu::redundancy_from_value(doc, AT, &mut ws))));
    let (members, next) = model::collection_members(doc, AT, &mut ws);
    let mut supplies: Vec<_> =
        members.iter().map(|m| psu::power_supply_from_value(m, AT, None, &mut ws)).collect();
    psu::label_power_supplies(&members, &mut supplies);
    out.push(("Collection", json!({ "members": members.len(), "next": next })));
    check_warnings(&ws);
    out
}

/// Paths of every object member, depth first (array elements descended, not listed).
fn member_paths(v: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                at.push(k.clone());
                out.push(at.clone());
                member_paths(child, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                at.push(format!("#{i}"));
                member_paths(child, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// The parent object of `path` and the member name.
fn parent<'a>(
    doc: &'a mut Value,
    path: &[String],
) -> Option<(&'a mut serde_json::Map<String, Value>, String)> {
    let (last, up) = path.split_last()?;
    let mut v = doc;
    for seg in up {
        v = match seg.strip_prefix('#') {
            Some(i) => v.get_mut(i.parse::<usize>().ok()?)?,
            None => v.get_mut(seg.as_str())?,
        };
    }
    Some((v.as_object_mut()?, last.clone()))
}

fn junk(kind: u8) -> Value {
    match kind % 6 {
        0 => json!(41.5),
        1 => json!("\u{1}junk"),
        2 => json!(true),
        3 => json!([1, "x", null]),
        4 => json!({"\u{1}": 0}),
        _ => json!(-7),
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (pick, kind) = (data[0], data[1]);
    let Ok(doc) = serde_json::from_slice::<Value>(&data[2..]) else { return };
    let base = read_all(&doc);
    let mut paths = Vec::new();
    member_paths(&doc, &mut Vec::new(), &mut paths);
    if paths.is_empty() {
        return;
    }
    let path = &paths[usize::from(pick) % paths.len()];

    let mut removed = doc.clone();
    let mut nulled = doc.clone();
    let mut replaced = doc.clone();
    let Some((m, k)) = parent(&mut removed, path) else { return };
    m.remove(&k);
    if let Some((m, k)) = parent(&mut nulled, path) {
        m.insert(k, Value::Null);
    }
    let top_level = path.len() == 1;
    if let Some((m, k)) = parent(&mut replaced, path) {
        m.insert(k, junk(kind));
    }
    let without = read_all(&removed);
    // null == absent, exactly, for every model; except under `Oem`, whose key names are read (they name the
    // vendor, for quirk rules), whatever their values.
    let under_oem = path.len() >= 2 && path[path.len() - 2] == "Oem";
    if !under_oem {
        assert_eq!(read_all(&nulled), without, "member {path:?} set to null reads differently from absent");
    }
    // A bad member degrades only what it feeds.
    if top_level {
        let _ = &base;
        for ((name, a), (_, b)) in read_all(&replaced).iter().zip(&without) {
            if let (Value::Object(a), Value::Object(b)) = (a, b) {
                let differ: Vec<&String> = a.keys().filter(|f| a.get(*f) != b.get(*f)).collect();
                assert!(differ.len() <= 3, "{name}: member {path:?} := {} changed {differ:?}", junk(kind));
            }
        }
    }
});
