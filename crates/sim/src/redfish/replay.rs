//! The replay flavour: a BMC that serves a captured Redfish tree (DMTF Redfish Mockup Creator output, the
//! `index.json` of every resource) with the simulator's live parts on top.
//!
//! Why: the simulator's own flavors are shapes written here; a captured tree is a real vendor's shape (iLO's
//! oldest-first logs, HGX device lists, AMI's sparse sensors), so the example fleet and the benchmarks can
//! include real BMCs, and the verbs can be run against a real shape with power actions and faults, which a
//! static mockup server cannot do. What is live, everything else being the captured document:
//! - the first system's `PowerState` follows the host's power state machine, and its
//!   `ComputerSystem.Reset` target drives it (only the `ResetType`s the tree allows);
//! - sessions (login, collection, logout) are the simulator's own, with its limits and faults;
//! - one log (the first system's first log service, else the first manager's) gets the host's SEL
//!   entries logged since the BMC started, in the tree's order (oldest or newest first);
//! - the fault `gpu-missing=N` drops the N-th GPU (in tree order; NVSwitches and baseboards are not GPUs)
//!   from its collection, and its document answers 404;
//! - a `Manager.Reset` target resets the BMC (sessions dropped).
//!
//! The tree is read once at start; nothing from a request names a file (paths are looked up in the map).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, Method};
use lifeline_types::Health;
use serde_json::{Value, json};

use super::RedfishBmc;
use super::resources::{
    method_not_allowed, no_content, not_found, ok, param_not_in_list, parse_json, power_command,
    reset_outcome, reset_type_missing,
};
use crate::actions::Origin;
use crate::fault::Fault;
use crate::sel::SelEntry;

/// Documents larger than this are refused at load (a captured document is a few hundred KiB at most).
const MAX_DOC_BYTES: u64 = 16 * 1024 * 1024;
/// Resets allowed when the tree's system names none.
const DEFAULT_RESETS: &[&str] = &["On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart"];

/// Why a tree could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("replay tree {path}: no service root (index.json) found there or under redfish/v1")]
    NoRoot { path: PathBuf },
    #[error("replay tree {path}: cannot read")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("replay tree {path}: not a JSON document: {why}")]
    Json { path: PathBuf, why: String },
    #[error("replay tree {path}: a document over {MAX_DOC_BYTES} bytes")]
    TooLarge { path: PathBuf },
}

/// A captured tree, read once.
#[derive(Debug)]
pub struct ReplayTree {
    /// Where it was read from (for messages).
    pub source: PathBuf,
    /// Resource path (`/redfish/v1/...`, no trailing slash) → document.
    docs: HashMap<String, Value>,
    /// The systems, in the tree's order.
    systems: Vec<String>,
    /// The system the host's power state machine stands for.
    host_system: Option<String>,
    /// Reset target of the host system → allowed `ResetType`s.
    system_reset: Option<(String, Vec<String>)>,
    manager_resets: HashSet<String>,
    /// The Entries collection that gets the host's new SEL entries, and whether the tree lists it newest
    /// first.
    append_log: Option<(String, bool)>,
    /// GPUs (not NVSwitches or baseboards) in tree order: (collection, member path).
    gpus: Vec<(String, String)>,
}

/// Resource path without a trailing slash or fragment.
pub(crate) fn norm(p: &str) -> String {
    let p = p.split('#').next().unwrap_or(p);
    if p.len() > 1 { p.trim_end_matches('/').to_owned() } else { p.to_owned() }
}

fn link_of(v: &Value, key: &str) -> Option<String> {
    v.get(key)?.get("@odata.id")?.as_str().map(norm)
}

fn member_links(v: &Value) -> Vec<String> {
    v.get("Members")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|m| m.get("@odata.id")?.as_str().map(norm)).collect())
        .unwrap_or_default()
}

fn time_of(v: &Value) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    chrono::DateTime::parse_from_rfc3339(v.get("Created")?.as_str()?.trim()).ok()
}

impl ReplayTree {
    /// Reads every `index.json` below `dir` (the tree's `/redfish/v1`, or a folder holding `redfish/v1`).
    pub fn load(dir: &Path) -> Result<ReplayTree, ReplayError> {
        let base = if dir.join("redfish/v1/index.json").is_file() {
            dir.join("redfish/v1")
        } else if dir.join("index.json").is_file() {
            dir.to_owned()
        } else {
            return Err(ReplayError::NoRoot { path: dir.to_owned() });
        };
        let mut docs = HashMap::new();
        let mut stack = vec![base.clone()];
        while let Some(d) = stack.pop() {
            let io = |source| ReplayError::Io { path: d.clone(), source };
            for e in std::fs::read_dir(&d).map_err(io)? {
                let e = e.map_err(io)?;
                let ty = e.file_type().map_err(io)?;
                let p = e.path();
                if ty.is_dir() {
                    stack.push(p);
                } else if ty.is_file() && e.file_name() == "index.json" {
                    if e.metadata().map_err(io)?.len() > MAX_DOC_BYTES {
                        return Err(ReplayError::TooLarge { path: p });
                    }
                    let text =
                        std::fs::read(&p).map_err(|source| ReplayError::Io { path: p.clone(), source })?;
                    let v: Value = serde_json::from_slice(&text)
                        .map_err(|e| ReplayError::Json { path: p.clone(), why: e.to_string() })?;
                    let rel = d.strip_prefix(&base).unwrap_or(Path::new(""));
                    let mut key = String::from("/redfish/v1");
                    for c in rel.components() {
                        key.push('/');
                        key.push_str(&c.as_os_str().to_string_lossy());
                    }
                    docs.insert(key, v);
                }
            }
        }
        Ok(ReplayTree::from_docs(dir.to_owned(), docs))
    }

    /// A tree from documents already in memory (keys: resource paths).
    pub fn from_docs(source: PathBuf, docs: HashMap<String, Value>) -> ReplayTree {
        let docs: HashMap<String, Value> = docs.into_iter().map(|(k, v)| (norm(&k), v)).collect();
        let systems = docs.get("/redfish/v1/Systems").map(member_links).unwrap_or_default();
        let host_system = systems.first().cloned();
        let mut t = ReplayTree {
            source,
            docs,
            systems,
            host_system,
            system_reset: None,
            manager_resets: HashSet::new(),
            append_log: None,
            gpus: Vec::new(),
        };
        t.system_reset = t.host_system.as_ref().and_then(|s| t.reset_of(s));
        let managers = t.docs.get("/redfish/v1/Managers").map(member_links).unwrap_or_default();
        t.manager_resets = managers
            .iter()
            .filter_map(|m| t.docs.get(m)?.pointer("/Actions/#Manager.Reset/target")?.as_str().map(norm))
            .collect();
        let log_owners = t.host_system.iter().chain(managers.first());
        t.append_log = log_owners.filter_map(|o| t.first_log(o)).next();
        t.gpus = t.find_gpus();
        t
    }

    fn reset_of(&self, system: &str) -> Option<(String, Vec<String>)> {
        let action = self.docs.get(system)?.pointer("/Actions/#ComputerSystem.Reset")?;
        let target = norm(action.get("target")?.as_str()?);
        let listed = action.get("ResetType@Redfish.AllowableValues").or_else(|| {
            // Current services name the values in an ActionInfo resource instead.
            let info = self.docs.get(&norm(action.get("@Redfish.ActionInfo")?.as_str()?))?;
            info.get("Parameters")?
                .as_array()?
                .iter()
                .find(|p| p.get("Name").and_then(Value::as_str) == Some("ResetType"))?
                .get("AllowableValues")
        });
        let allowed = match listed.and_then(Value::as_array) {
            Some(a) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            None => DEFAULT_RESETS.iter().map(|s| (*s).to_owned()).collect(),
        };
        Some((target, allowed))
    }

    /// The first log service of `owner` with entries: (entries path, listed newest first).
    fn first_log(&self, owner: &str) -> Option<(String, bool)> {
        let services = self.docs.get(&link_of(self.docs.get(owner)?, "LogServices")?)?;
        member_links(services).iter().find_map(|s| {
            let entries = link_of(self.docs.get(s)?, "Entries")?;
            let coll = self.docs.get(&entries)?;
            let times: Vec<_> =
                member_links(coll).iter().filter_map(|m| self.docs.get(m)).filter_map(time_of).collect();
            let newest_first = times.len() > 1 && times.first() > times.last();
            Some((entries, newest_first))
        })
    }

    fn find_gpus(&self) -> Vec<(String, String)> {
        let is_gpu_board = |v: &Value| {
            let text = ["Name", "Model"]
                .iter()
                .filter_map(|k| v.get(*k).and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" ")
                .to_ascii_lowercase();
            ["switch", "baseboard", "hgx"].iter().any(|w| text.contains(w))
        };
        let mut out = Vec::new();
        let scan = |coll: String, field: &str, out: &mut Vec<(String, String)>| {
            let Some(c) = self.docs.get(&coll) else { return };
            for m in member_links(c) {
                if let Some(v) = self.docs.get(&m)
                    && v.get(field).and_then(Value::as_str) == Some("GPU")
                    && !is_gpu_board(v)
                {
                    out.push((coll.clone(), m));
                }
            }
        };
        // The host system's processors, then those of the GPU baseboards NVIDIA's HGX/GB firmware lists as
        // systems of their own (`HGX_Baseboard_N`), where such a node's GPUs are.
        let baseboards = self
            .systems
            .iter()
            .filter(|s| s.rsplit('/').next().is_some_and(|id| id.starts_with("HGX_Baseboard")));
        for s in self.host_system.iter().chain(baseboards.filter(|s| Some(*s) != self.host_system.as_ref())) {
            if let Some(p) = self.docs.get(s).and_then(|sys| link_of(sys, "Processors")) {
                scan(p, "ProcessorType", &mut out);
            }
        }
        // iLO lists an HGX board's GPUs among its chassis' devices.
        let chassis = self.docs.get("/redfish/v1/Chassis").map(member_links).unwrap_or_default();
        for c in chassis {
            if let Some(d) = self
                .docs
                .get(&c)
                .and_then(|v| v.pointer("/Oem/Hpe/Links/Devices/@odata.id")?.as_str().map(norm))
            {
                scan(d, "DeviceType", &mut out);
            }
        }
        out
    }

    /// The captured power state of the host system (`None`: the tree does not say).
    pub fn power_on(&self) -> Option<bool> {
        let s = self.docs.get(self.host_system.as_ref()?)?;
        match s.get("PowerState")?.as_str()? {
            "On" | "PoweringOn" | "Paused" => Some(true),
            "Off" | "PoweringOff" => Some(false),
            _ => None,
        }
    }

    /// The systems the tree lists.
    pub fn systems(&self) -> &[String] {
        &self.systems
    }

    /// The GPUs `gpu-missing=N` counts (member paths, tree order).
    pub fn gpus(&self) -> Vec<&str> {
        self.gpus.iter().map(|(_, m)| m.as_str()).collect()
    }

    /// The Entries collection new SEL entries are added to.
    pub fn append_log(&self) -> Option<&str> {
        self.append_log.as_ref().map(|(p, _)| p.as_str())
    }

    /// Documents in the tree.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }
}

/// A BMC's replay: the tree plus the SEL id it started at (entries up to it are not the tree's news) and
/// the host's reset time then (a later one is a reset the simulator made, which `LastResetTime` shows).
#[derive(Debug)]
pub struct Replay {
    pub tree: Arc<ReplayTree>,
    sel_start: Option<u16>,
    reset_start: Option<chrono::DateTime<chrono::Utc>>,
}

impl Replay {
    pub fn new(tree: Arc<ReplayTree>, existing: &[SelEntry]) -> Replay {
        Replay { tree, sel_start: existing.iter().map(|e| e.id).max(), reset_start: None }
    }

    /// [`Replay::new`] for a host whose last reset (as the simulator counts it) is `last_reset`.
    pub fn with_reset_start(mut self, last_reset: chrono::DateTime<chrono::Utc>) -> Replay {
        self.reset_start = Some(last_reset);
        self
    }
}

/// Whether `path` is the simulator's live session service rather than a captured document.
fn live_sessions(path: &str) -> bool {
    path.starts_with("/redfish/v1/SessionService/Sessions")
}

/// Routes one request of a replaying BMC. `path` has no trailing slash and no query.
pub(super) async fn dispatch(
    bmc: &Arc<RedfishBmc>,
    replay: &Replay,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: &Bytes,
    origin: &Origin,
) -> Response {
    if path == "/redfish" {
        return match *method {
            Method::GET => ok(json!({ "v1": "/redfish/v1/" })),
            _ => method_not_allowed("GET"),
        };
    }
    if live_sessions(path) {
        return super::resources::dispatch(bmc, method, path, headers, body, origin).await;
    }
    let t = &replay.tree;
    match *method {
        Method::GET => get(bmc, replay, path),
        Method::POST if t.system_reset.as_ref().is_some_and(|(p, _)| p == path) => {
            reset_system(bmc, replay, body, origin)
        }
        Method::POST if t.manager_resets.contains(path) => {
            bmc.host.reset_bmc_by(origin);
            no_content()
        }
        _ if t.docs.contains_key(path) || appended_id(replay, path).is_some() => method_not_allowed("GET"),
        _ => not_found(path),
    }
}

/// GPUs the host's `gpu-missing` faults remove: member paths.
fn missing_gpus(bmc: &RedfishBmc, tree: &ReplayTree) -> HashSet<String> {
    bmc.host
        .active_faults()
        .iter()
        .filter_map(|f| match f {
            Fault::GpuMissing { gpu } => tree.gpus.get(usize::from(*gpu)).map(|(_, m)| m.clone()),
            _ => None,
        })
        .collect()
}

fn get(bmc: &RedfishBmc, replay: &Replay, path: &str) -> Response {
    let t = &replay.tree;
    let missing = missing_gpus(bmc, t);
    if missing.iter().any(|m| path == m || path.starts_with(&format!("{m}/"))) {
        return not_found(path);
    }
    if let Some(i) = appended_id(replay, path) {
        return appended_entries(bmc, replay)
            .into_iter()
            .find(|(id, _)| *id == i)
            .map_or_else(|| not_found(path), |(_, v)| ok(v));
    }
    let Some(doc) = t.docs.get(path) else { return not_found(path) };
    let mut v = doc.clone();
    if t.host_system.as_deref() == Some(path)
        && let Some(o) = v.as_object_mut()
    {
        o.insert("PowerState".into(), Value::from(super::resources::power_state_str(bmc.host.power_state())));
        // As captured until the simulator resets the host; then the reset's time, as a BMC reports it.
        let last = bmc.host.last_reset();
        if replay.reset_start.is_some_and(|s| last > s) {
            o.insert(
                "LastResetTime".into(),
                Value::from(last.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
            );
        }
    }
    if let Some(Value::Array(members)) = v.get_mut("Members") {
        let before = members.len();
        members.retain(|m| {
            m.get("@odata.id").and_then(Value::as_str).is_none_or(|id| !missing.contains(&norm(id)))
        });
        let mut changed = members.len() != before;
        if let Some((log, newest_first)) = &t.append_log
            && log == path
        {
            let new: Vec<Value> = appended_entries(bmc, replay)
                .into_iter()
                .map(|(_, v)| json!({ "@odata.id": v["@odata.id"] }))
                .collect();
            changed |= !new.is_empty();
            if *newest_first {
                members.splice(0..0, new.into_iter().rev());
            } else {
                members.extend(new);
            }
        }
        if changed {
            let n = members.len();
            v["Members@odata.count"] = Value::from(n);
        }
    }
    ok(v)
}

/// The id an appended entry has at `path`, if `path` is one.
fn appended_id(replay: &Replay, path: &str) -> Option<u64> {
    let (log, _) = replay.tree.append_log.as_ref()?;
    let id: u64 = path.strip_prefix(log.as_str())?.strip_prefix('/')?.parse().ok()?;
    (id > first_free_id(&replay.tree, log)).then_some(id)
}

/// Ids of appended entries start after the tree's largest numeric id, so they never collide with it.
fn first_free_id(tree: &ReplayTree, log: &str) -> u64 {
    tree.docs
        .get(log)
        .map(member_links)
        .unwrap_or_default()
        .iter()
        .filter_map(|m| m.rsplit('/').next()?.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
}

/// The host's SEL entries logged since the BMC started, as LogEntry documents: (id, document).
fn appended_entries(bmc: &RedfishBmc, replay: &Replay) -> Vec<(u64, Value)> {
    let Some((log, _)) = &replay.tree.append_log else { return Vec::new() };
    let base = first_free_id(&replay.tree, log);
    bmc.host
        .sel_entries()
        .into_iter()
        .filter(|e| replay.sel_start.is_none_or(|s| e.id > s))
        .map(|e| {
            let id = base + u64::from(e.id);
            let severity = match e.severity {
                Health::Critical => "Critical",
                Health::Warning => "Warning",
                Health::Ok | Health::Unknown => "OK",
            };
            let v = json!({
                "@odata.id": format!("{log}/{id}"),
                "@odata.type": "#LogEntry.v1_9_0.LogEntry",
                "Id": id.to_string(),
                "Name": "Log Entry",
                "EntryType": "Event",
                "Created": e.created(),
                "Severity": severity,
                "Message": e.message,
                "MessageId": e.message_id,
            });
            (id, v)
        })
        .collect()
}

fn reset_system(bmc: &RedfishBmc, replay: &Replay, body: &Bytes, origin: &Origin) -> Response {
    let Some((_, allowed)) = &replay.tree.system_reset else { return not_found("ComputerSystem.Reset") };
    let m = match parse_json(body) {
        Ok(m) => m,
        Err(r) => return r,
    };
    let Some(rt) = m.get("ResetType").and_then(Value::as_str) else { return reset_type_missing() };
    let cmd = power_command(rt).filter(|_| allowed.iter().any(|a| a == rt));
    let Some(cmd) = cmd else { return param_not_in_list(rt, "ResetType") };
    reset_outcome(rt, bmc.host.power_by(cmd, origin))
}
