//! The operations view of the fleet: what is broken, what Lifeline is doing about it, what needs a human.
//! `GET /api/v1/summary` (a count per state, open incidents, runs in flight, what needs a human) and
//! `GET /api/v1/fleet` (every device with its one state, filtered and paged on the server) read one
//! [`Snapshot`], built from the store in a fixed number of queries whatever the fleet's size and shared
//! by every caller for a second, so the overview, the grid and the live stream can never disagree on a
//! count. Each state's definition is [`crate::fleet_state`]'s.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::Method;
use axum::routing::get;
use chrono::{DateTime, Utc};
use lifeline_engine::ops::fault_records::FaultRow;
use lifeline_engine::ops::runs::{ACTIVE_RUN_STATES, RunRow, RunState};
use serde::{Deserialize, Serialize};

use crate::access::{Route, route, viewer};
use crate::error::ApiResult;
use crate::fleet_state::{
    ActiveRun, DRAIN_ACTIONS, DeviceState, Facts, READMIT_ACTIONS, READMIT_DONE, StateCounts, classify,
    summarize_reason, ts,
};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/api/v1/summary",
            viewer(),
            "devices",
            "The fleet at a glance: `total` devices, a count per state (each state's rule: docs/web-console.md), open incidents (most severe, then newest, first), runs in flight with their current step, and what needs a human (approvals, escalations).",
            get(summary),
        )
        .returns::<Summary>(),
        route(
            Method::GET,
            "/api/v1/fleet",
            viewer(),
            "devices",
            "Devices with their state, filtered and paged on the server: `?state=a,b&role=&rack=&site=&q=` (`q`: names, racks, roles, groups or globs as the CLI's targets, or part of a name), `&offset=&limit=`; `counts` follow every filter but `state`.",
            get(fleet),
        )
        .returns::<FleetPage>(),
    ]
}

/// How many incidents the summary lists (`incidents_total` says how many there are).
const INCIDENTS_LISTED: usize = 50;

/// One runbook run as the overview shows it: where it is and why.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct RunBrief {
    pub run: String,
    pub runbook: String,
    pub target: String,
    pub state: RunState,
    /// The step it is at (or waits to run); `null` when its runbook could not be read.
    pub step: Option<String>,
    pub step_kind: Option<String>,
    /// 1-based position of `step` among `steps`.
    pub step_number: usize,
    pub steps: usize,
    /// `step` is a post-condition (the run is proving the fault gone).
    pub post_condition: bool,
    pub started: Option<DateTime<Utc>>,
    /// When the current step began, when the journal says.
    pub step_started: Option<DateTime<Utc>>,
    pub updated: Option<DateTime<Utc>>,
    pub reason: Option<String>,
    /// `reason` in a few words ("10 rails down, …"); the whole reason is `reason`.
    pub reason_summary: Option<String>,
    /// Only an administrator may approve or abort it (its runbook runs programs on the jump host).
    pub admin_only: bool,
    /// The fault record that started it, when a fault did.
    pub fault: Option<i64>,
}

/// An unresolved fault with what Lifeline is doing about it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Incident {
    pub fault: i64,
    pub kind: String,
    pub device: String,
    pub severity: String,
    /// `open` or `acked`.
    pub state: String,
    pub message: String,
    pub count: i64,
    pub opened: Option<DateTime<Utc>>,
    pub updated: Option<DateTime<Utc>>,
    pub acked_by: Option<String>,
    pub device_state: DeviceState,
    /// The run that answers it: the run it started, else the run in progress on its device.
    pub run: Option<RunBrief>,
}

/// `GET /api/v1/summary`.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Summary {
    /// Devices counted: every device of the inventory.
    pub total: usize,
    /// A count per state; they add up to `total`.
    pub counts: StateCounts,
    /// Unresolved faults, most severe first, then newest (at most 50).
    pub incidents: Vec<Incident>,
    pub incidents_total: usize,
    /// Runs in progress (`running`), with their current step.
    pub in_flight: Vec<RunBrief>,
    /// Runs waiting for an approval, and open escalations.
    pub needs_human: Vec<RunBrief>,
    pub generated_at: DateTime<Utc>,
}

/// One device of `GET /api/v1/fleet`.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct FleetRow {
    pub name: String,
    pub role: String,
    pub site: String,
    pub rack: String,
    pub state: DeviceState,
    /// The state in words: the run's step, the fault, the escalation's reason.
    pub why: Option<String>,
    /// Since when: the current step's start (or the run's), the escalation, the worst fault's opening.
    pub since: Option<DateTime<Utc>>,
    /// A switch's fabric (`backend`, `storage`, `frontend`, `oob`) and tier.
    pub fabric: Option<String>,
    pub tier: Option<String>,
    pub power: Option<String>,
    pub health: Option<String>,
    /// The run in progress on it, or its open escalation.
    pub run: Option<String>,
    pub open_faults: usize,
}

/// `GET /api/v1/fleet`.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct FleetPage {
    /// Every device of the inventory.
    pub total: usize,
    /// Devices that match every filter.
    pub matched: usize,
    /// A count per state of the devices matching every filter but `state`.
    pub counts: StateCounts,
    pub offset: usize,
    pub limit: usize,
    pub devices: Vec<FleetRow>,
}

/// What the summary and the fleet list are computed from, built once a second at most.
#[derive(Debug)]
pub struct Snapshot {
    pub rows: Vec<FleetRow>,
    pub summary: Summary,
}

/// The shared [`Snapshot`] (single flight: concurrent callers wait for the one build in progress), with
/// the [`state_generation`](lifeline_engine::Lifeline::state_generation) it was built at.
#[derive(Debug, Default)]
pub struct SnapshotCache(tokio::sync::Mutex<Option<(std::time::Instant, u64, Arc<Snapshot>)>>);

impl SnapshotCache {
    /// As [`crate::api::devices::FleetCache::TTL`]: observations change once per sweep anyway, and a
    /// state change this process writes (a fault, a run, a drain) makes the snapshot stale at once.
    pub const TTL: std::time::Duration = std::time::Duration::from_secs(1);
}

/// The snapshot, from the cache or built now.
pub async fn snapshot(s: &AppState) -> ApiResult<Arc<Snapshot>> {
    let mut cached = s.fleet_states.0.lock().await;
    // Read before building: a change written during the build leaves this generation behind.
    let generation = s.base.state_generation().await?;
    if let Some((at, built_at, snap)) = cached.as_ref()
        && at.elapsed() < SnapshotCache::TTL
        && *built_at == generation
    {
        return Ok(snap.clone());
    }
    let snap = Arc::new(build(s).await?);
    *cached = Some((std::time::Instant::now(), generation, snap.clone()));
    Ok(snap)
}

fn severity_rank(s: &str) -> u8 {
    match s {
        "critical" => 0,
        "warning" => 1,
        "unknown" => 2,
        _ => 3,
    }
}

/// A run's brief from its row (its stored runbook says the step names and kinds).
fn brief(r: &RunRow, step_started: Option<i64>) -> RunBrief {
    let rb = lifeline_runbook::library::parse_stored(&r.runbook, &r.definition).ok();
    let idx = usize::try_from(r.next_step).unwrap_or(0);
    let step = rb.as_ref().and_then(|rb| rb.all_steps().nth(idx));
    let fault = r.vars.get("fault").and_then(|v| v.as_str()).and_then(|v| v.parse().ok());
    RunBrief {
        run: r.id.clone(),
        runbook: r.runbook.clone(),
        target: r.target.clone(),
        state: r.state,
        step: step.map(|s| s.name.clone()),
        step_kind: step.map(|s| s.kind.as_str().to_owned()),
        step_number: idx + 1,
        steps: rb.as_ref().map_or(0, |rb| rb.all_steps().count()),
        post_condition: rb.as_ref().is_some_and(|rb| rb.is_post(idx)),
        started: ts(r.created_at_ms),
        step_started: step_started.and_then(ts),
        updated: ts(r.updated_at_ms),
        reason: r.reason.clone(),
        reason_summary: r.reason.as_deref().map(summarize_reason),
        admin_only: rb.as_ref().is_some_and(lifeline_runbook::Runbook::admin_only),
        fault,
    }
}

/// When the step the run is at began: its newest intent row, if any.
async fn step_started(s: &AppState, r: &RunRow) -> Option<i64> {
    let journal = s.base.run_journal(&r.id).await.ok()?;
    journal.iter().rev().find(|j| j.step_index == r.next_step && j.phase == "intent").map(|j| j.at_ms)
}

async fn build(s: &AppState) -> ApiResult<Snapshot> {
    let inv = s.base.inventory()?;
    let seen = s.base.fleet_observations().await?;
    let mut faults: Vec<FaultRow> = s.base.faults(Some("open"), 1_000_000).await?;
    faults.extend(s.base.faults(Some("acked"), 1_000_000).await?);
    let active = s.base.runs_in(ACTIVE_RUN_STATES).await?;
    let escalations = s.runbooks.executor(s.engine_as("server")).open_escalations().await?;
    let drains = s.base.latest_audit_per_target(READMIT_ACTIONS, READMIT_DONE).await?;

    let mut briefs: HashMap<String, RunBrief> = HashMap::new();
    for r in active.iter().chain(&escalations) {
        let started = if r.state == RunState::Running { step_started(s, r).await } else { None };
        briefs.insert(r.id.clone(), brief(r, started));
    }
    // A device has one active run at a time (the executor's lease); the newest wins if not.
    let mut run_of: HashMap<&str, &RunRow> = HashMap::new();
    for r in &active {
        let e = run_of.entry(r.target.as_str()).or_insert(r);
        if r.created_at_ms > e.created_at_ms {
            *e = r;
        }
    }
    let mut escalation_of: HashMap<&str, &RunRow> = HashMap::new();
    for r in &escalations {
        escalation_of.entry(r.target.as_str()).or_insert(r);
    }
    let mut faults_of: HashMap<&str, Vec<&FaultRow>> = HashMap::new();
    for f in &faults {
        faults_of.entry(f.device.as_str()).or_default().push(f);
    }
    let drained: std::collections::HashSet<&str> = drains
        .iter()
        .filter(|a| DRAIN_ACTIONS.contains(&a.entry.action.as_str()))
        .map(|a| a.entry.target.as_str())
        .collect();

    let mut rows = Vec::with_capacity(inv.devices.len());
    for d in &inv.devices {
        let sum = crate::api::devices::summary(d, &seen);
        let name = d.name.as_str();
        let run = run_of.get(name).copied();
        let rb = run.and_then(|r| briefs.get(&r.id));
        let esc = escalation_of.get(name).copied();
        let open = faults_of.get(name).map_or(0, Vec::len);
        let facts = Facts {
            reachable: sum.reachable,
            unresolved_faults: open,
            active_run: run.map(|r| ActiveRun {
                id: r.id.clone(),
                state: r.state,
                step: rb.and_then(|b| b.step.clone()),
                step_kind: rb.and_then(|b| b.step_kind.clone()),
                post_condition: rb.is_some_and(|b| b.post_condition),
            }),
            escalated_run: esc.map(|r| r.id.clone()),
            drained_by_lifeline: drained.contains(name),
        };
        let state = classify(&facts);
        let why = match state {
            DeviceState::Escalated => esc.map(|r| {
                let b = briefs.get(&r.id);
                format!(
                    "escalated by {}: {} — needs a human",
                    r.runbook,
                    b.and_then(|b| b.reason_summary.clone()).unwrap_or_else(|| "no reason recorded".into())
                )
            }),
            DeviceState::WaitingApproval | DeviceState::Verifying | DeviceState::Recovering => rb.map(|b| {
                format!(
                    "{} {}: step {} ({} of {})",
                    state.as_str(),
                    b.runbook,
                    b.step.as_deref().unwrap_or("?"),
                    b.step_number,
                    b.steps
                )
            }),
            DeviceState::Unreachable => Some("the BMC did not answer the last sweep".into()),
            DeviceState::Faulted => faults_of.get(name).and_then(|fs| {
                let worst = fs.iter().min_by_key(|f| (severity_rank(&f.severity), -f.opened_at_ms))?;
                Some(if fs.len() > 1 {
                    format!("{} (+{} more)", worst.message, fs.len() - 1)
                } else {
                    worst.message.clone()
                })
            }),
            DeviceState::DrainedByLifeline => Some("drained by Lifeline; no run in progress".into()),
            DeviceState::Unknown => Some(if d.bmc.is_some() { "not swept yet" } else { "no BMC" }.into()),
            DeviceState::Healthy => None,
        };
        let since = match state {
            DeviceState::Escalated => esc.and_then(|r| ts(r.updated_at_ms)),
            DeviceState::WaitingApproval | DeviceState::Verifying | DeviceState::Recovering => {
                rb.and_then(|b| b.step_started.or(b.started))
            }
            DeviceState::Faulted => {
                faults_of.get(name).and_then(|fs| fs.iter().map(|f| f.opened_at_ms).min()).and_then(ts)
            }
            _ => None,
        };
        rows.push(FleetRow {
            since,
            name: name.to_owned(),
            role: d.role.to_string(),
            site: d.site.clone(),
            rack: d.rack.clone(),
            state,
            why,
            fabric: d.switch.as_ref().map(|w| w.fabric.to_string()),
            tier: d.switch.as_ref().and_then(|w| w.tier).map(|t| t.to_string()),
            power: sum.power,
            health: sum.health,
            run: run.or(esc).map(|r| r.id.clone()),
            open_faults: open,
        });
    }

    let state_of: HashMap<&str, DeviceState> = rows.iter().map(|r| (r.name.as_str(), r.state)).collect();
    faults.sort_by_key(|f| (severity_rank(&f.severity), -f.opened_at_ms, -f.id));
    let incidents_total = faults.len();
    let incidents = faults
        .iter()
        .take(INCIDENTS_LISTED)
        .map(|f| {
            let by_cause = active.iter().chain(&escalations).find(|r| {
                r.target == f.device
                    && r.vars.get("fault").and_then(|v| v.as_str()) == Some(&f.id.to_string())
            });
            let run = by_cause.or_else(|| run_of.get(f.device.as_str()).copied());
            Incident {
                fault: f.id,
                kind: f.kind.clone(),
                device: f.device.clone(),
                severity: f.severity.clone(),
                state: f.state.clone(),
                message: f.message.clone(),
                count: f.count,
                opened: ts(f.opened_at_ms),
                updated: ts(f.updated_at_ms),
                acked_by: f.acked_by.clone(),
                device_state: state_of.get(f.device.as_str()).copied().unwrap_or(DeviceState::Unknown),
                run: run.and_then(|r| briefs.get(&r.id).cloned()),
            }
        })
        .collect();
    let mut in_flight: Vec<RunBrief> = active
        .iter()
        .filter(|r| r.state == RunState::Running)
        .filter_map(|r| briefs.get(&r.id).cloned())
        .collect();
    in_flight.sort_by_key(|r| std::cmp::Reverse(r.started));
    let mut needs_human: Vec<RunBrief> = active
        .iter()
        .filter(|r| r.state == RunState::WaitingApproval)
        .chain(&escalations)
        .filter_map(|r| briefs.get(&r.id).cloned())
        .collect();
    needs_human.sort_by_key(|r| std::cmp::Reverse(r.updated));
    let summary = Summary {
        total: rows.len(),
        counts: StateCounts::of(rows.iter().map(|r| &r.state)),
        incidents,
        incidents_total,
        in_flight,
        needs_human,
        generated_at: s.clock.now(),
    };
    Ok(Snapshot { rows, summary })
}

async fn summary(State(s): State<AppState>) -> ApiResult<Json<Summary>> {
    Ok(Json(snapshot(&s).await?.summary.clone()))
}

/// `GET /api/v1/fleet`'s query.
#[derive(Debug, Default, Deserialize)]
pub struct FleetQuery {
    /// States, comma-separated.
    pub state: Option<String>,
    pub role: Option<String>,
    pub rack: Option<String>,
    pub site: Option<String>,
    pub q: Option<String>,
    pub offset: Option<usize>,
    pub limit: Option<usize>,
}

/// The most devices one page carries (the grid asks for the whole fleet at once).
pub const FLEET_PAGE_MAX: usize = 50_000;

async fn fleet(State(s): State<AppState>, Query(q): Query<FleetQuery>) -> ApiResult<Json<FleetPage>> {
    let snap = snapshot(&s).await?;
    let inv = s.base.inventory()?;
    Ok(Json(crate::api::fleet_filter::page(&inv, &snap.rows, &q)?))
}
