//! Reading a captured Redfish tree (Mockup Creator short form: `index.json` per document) straight from
//! its files: the oracle side of the corpus tests, which must not go through the client they check.

use std::path::Path;

use serde_json::Value;

/// The document at a Redfish path in the unpacked tree at `root` (`None`: not captured).
pub fn doc(root: &Path, odata_id: &str) -> Option<Value> {
    let rel = odata_id.split('#').next()?.trim_start_matches("/redfish/v1").trim_matches('/');
    serde_json::from_str(&std::fs::read_to_string(root.join(rel).join("index.json")).ok()?).ok()
}

/// The `@odata.id` of the link `key` of `v`.
pub fn link(v: &Value, key: &str) -> Option<String> {
    v.pointer(&format!("/{key}/@odata.id")).and_then(Value::as_str).map(str::to_owned)
}

/// The `@odata.id`s of the array of links `key` of `v`.
pub fn links(v: &Value, key: &str) -> Vec<String> {
    match v.get(key) {
        Some(Value::Array(a)) => {
            a.iter().filter_map(|m| m.get("@odata.id")?.as_str().map(str::to_owned)).collect()
        }
        _ => Vec::new(),
    }
}

/// A Redfish path without its trailing slash (trees and services differ on it).
pub fn norm(p: &str) -> String {
    p.trim_end_matches('/').to_owned()
}

/// The members of a collection, embedded or linked, as (path, document).
pub fn members(root: &Path, coll: &str) -> Vec<(String, Value)> {
    let Some(Value::Array(ms)) = doc(root, coll).and_then(|c| c.get("Members").cloned()) else {
        return Vec::new();
    };
    ms.iter()
        .filter_map(|m| {
            let id = m.get("@odata.id")?.as_str()?.to_owned();
            let embedded = m.as_object().is_some_and(|o| o.keys().any(|k| !k.starts_with('@')));
            let v = if embedded { Some(m.clone()) } else { doc(root, &id) };
            v.map(|v| (id, v))
        })
        .collect()
}

/// Whether the system at `path` is the first listed or a GPU baseboard NVIDIA's HGX/GB firmware lists as a
/// system of its own (`HGX_Baseboard_N`): the systems whose GPUs and parts are the node's.
pub fn node_system(index: usize, path: &str) -> bool {
    index == 0
        || path.trim_end_matches('/').rsplit('/').next().is_some_and(|id| id.starts_with("HGX_Baseboard"))
}
