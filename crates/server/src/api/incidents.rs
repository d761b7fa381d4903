//! An incident's page: a fault and everything done about it, oldest first, so it reads as the story of
//! the recovery — the fault (and the agent's report when an agent raised it), the runs it started and
//! each step's outcome with its evidence digest, the approvals, the power actions and drains and
//! re-admissions from the audit log, and the console around each power action where the log has it.
//! What belongs to an incident is the engine's decision ([`lifeline_engine::ops::incident`]); this file
//! only shapes it for the page.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::Method;
use axum::routing::get;
use chrono::{DateTime, Utc};
use lifeline_engine::ops::incident::{IncidentRecord, IncidentRun};
use serde::Serialize;

use crate::access::{Route, route, viewer};
use crate::api::model::Fault;
use crate::api::overview::{FleetRow, snapshot};
use crate::error::{ApiError, ApiResult};
use crate::fleet_state::{summarize_reason, ts};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/api/v1/incidents/{fault_id}",
            viewer(),
            "faults",
            "An incident: fault `fault_id` and everything done about it, oldest first — the runs it started and their steps (with evidence digests), approvals, audited actions on the device while it was open (power, drain, re-admission), the console around each power action, the agent's report.",
            get(incident),
        )
        .returns::<IncidentPage>(),
    ]
}

/// One run the fault started.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct IncidentRunBrief {
    pub run: String,
    pub runbook: String,
    pub state: lifeline_types::RunState,
    pub actor: String,
    pub started: Option<DateTime<Utc>>,
    pub ended: Option<DateTime<Utc>>,
    /// `reason` in a few words.
    pub reason_summary: Option<String>,
    pub reason: Option<String>,
}

/// One thing that happened in the incident.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct IncidentEntry {
    pub at: Option<DateTime<Utc>>,
    /// `fault`, `report`, `run`, `step`, `decision`, `approval`, `action`, `console`.
    pub kind: String,
    pub title: String,
    /// In a few words; `full` holds the whole text when it was summarized.
    pub detail: Option<String>,
    pub full: Option<String>,
    pub run: Option<String>,
    pub step: Option<String>,
    pub evidence_digest: Option<String>,
    /// A `console` entry's text: the log around the action, as `lifeline console log` prints it.
    pub console: Option<String>,
}

/// A step's evidence, by digest (what a verification or a post-condition proved).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct EvidenceDigest {
    pub run: String,
    pub step: String,
    pub state: String,
    pub digest: String,
    pub at: Option<DateTime<Utc>>,
}

/// `GET /api/v1/incidents/{fault_id}`.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct IncidentPage {
    pub fault: Fault,
    /// When the fault was resolved; `null` while the incident is open.
    pub resolved: Option<DateTime<Utc>>,
    /// The device now, as the fleet shows it; `null` when it has left the inventory.
    pub device: Option<FleetRow>,
    /// The runs the fault started, oldest first.
    pub runs: Vec<IncidentRunBrief>,
    /// Everything, oldest first.
    pub entries: Vec<IncidentEntry>,
    /// Every step's evidence digest, oldest first.
    pub evidence: Vec<EvidenceDigest>,
}

fn entry(at_ms: i64, kind: &str, title: String) -> IncidentEntry {
    IncidentEntry {
        at: ts(at_ms),
        kind: kind.into(),
        title,
        detail: None,
        full: None,
        run: None,
        step: None,
        evidence_digest: None,
        console: None,
    }
}

/// `text` in a few words, with the whole text kept when it was shortened.
fn with_text(mut e: IncidentEntry, text: Option<&str>) -> IncidentEntry {
    if let Some(t) = text.map(str::trim).filter(|t| !t.is_empty()) {
        let short = summarize_reason(t);
        e.full = (short != t).then(|| t.to_owned());
        e.detail = Some(short);
    }
    e
}

fn message(v: &serde_json::Value) -> Option<&str> {
    v.get("message").or_else(|| v.get("reason")).and_then(|m| m.as_str())
}

/// A run's own entries: its start, each step's outcome and decision, its approvals, its end.
fn run_entries(r: &IncidentRun, out: &mut Vec<(i64, u8, IncidentEntry)>, evidence: &mut Vec<EvidenceDigest>) {
    let run = &r.run;
    let tag = |mut e: IncidentEntry| {
        e.run = Some(run.id.clone());
        e
    };
    out.push((
        run.created_at_ms,
        1,
        tag(entry(run.created_at_ms, "run", format!("run {} started by {}", run.runbook, run.actor))),
    ));
    for j in &r.journal {
        let kind = match j.phase.as_str() {
            "outcome" => "step",
            "decision" => "decision",
            _ => continue,
        };
        let title = match kind {
            "step" => format!("step {} {}", j.step, j.state),
            _ => format!("step {}: {}", j.step, j.state),
        };
        let mut e = tag(with_text(entry(j.at_ms, kind, title), message(&j.detail)));
        e.step = Some(j.step.clone());
        e.evidence_digest = j.evidence.get("digest").and_then(|d| d.as_str()).map(str::to_owned);
        if let Some(d) = &e.evidence_digest {
            evidence.push(EvidenceDigest {
                run: run.id.clone(),
                step: j.step.clone(),
                state: j.state.clone(),
                digest: d.clone(),
                at: ts(j.at_ms),
            });
        }
        out.push((j.at_ms, 2, e));
    }
    for a in &r.approvals {
        let verb = if a.decision == "skip" { "skip approved" } else { "approved" };
        // The journal names the step; the approvals table has only its position.
        let step = r.journal.iter().find(|j| j.step_index == a.step_index).map(|j| j.step.clone());
        let name = step.clone().unwrap_or_else(|| format!("#{}", a.step_index + 1));
        let mut e = tag(entry(
            a.at_ms,
            "approval",
            format!("step {name} {verb} by {} (attempt {})", a.approver, a.attempt),
        ));
        e.step = step;
        out.push((a.at_ms, 1, e));
    }
    if let Some(end) = run.ended_at_ms {
        let e = tag(with_text(
            entry(end, "run", format!("run {} ended {}", run.runbook, run.state)),
            run.reason.as_deref(),
        ));
        out.push((end, 3, e));
    }
}

/// The page from the engine's record; `device` is the device's fleet row now.
pub fn page(rec: IncidentRecord, device: Option<FleetRow>) -> ApiResult<IncidentPage> {
    let f = &rec.fault;
    // (time, order within the same millisecond, entry): the fault first, a run's end after its steps.
    let mut out: Vec<(i64, u8, IncidentEntry)> = Vec::new();
    let mut opened = with_text(
        entry(f.opened_at_ms, "fault", format!("fault opened: {} ({})", f.kind, f.severity)),
        Some(&f.message),
    );
    opened.full.get_or_insert_with(|| f.message.clone());
    out.push((f.opened_at_ms, 0, opened));
    if f.kind == "agent-report" {
        // The agent's own report, as it sent it (the fault's recorded evidence).
        let mut e = entry(f.opened_at_ms, "report", "the agent's report".into());
        e.detail = f.detail.get("summary").and_then(|s| s.as_str()).map(str::to_owned);
        e.full = serde_json::to_string_pretty(&f.detail).ok();
        out.push((f.opened_at_ms, 0, e));
    }
    let mut evidence = Vec::new();
    for r in &rec.runs {
        run_entries(r, &mut out, &mut evidence);
    }
    for a in &rec.actions {
        let e = with_text(
            entry(a.at_ms, "action", format!("{} {} by {}", a.entry.action, a.entry.outcome, a.entry.actor)),
            message(&a.entry.detail),
        );
        out.push((a.at_ms, 1, e));
    }
    for c in &rec.console {
        // Listed right after its action (the excerpt's window opens before it).
        let mut e = entry(c.at_ms, "console", format!("console around {}", c.action));
        e.detail = Some(if c.text.is_empty() {
            "the console log has nothing in this window".into()
        } else if c.truncated {
            "console output (cut)".into()
        } else {
            "console output".into()
        });
        e.console = (!c.text.is_empty()).then(|| c.text.clone());
        out.push((c.at_ms, 3, e));
    }
    if let Some(at) = rec.resolved_at_ms {
        out.push((at, 4, entry(at, "fault", format!("fault resolved: {}", f.kind))));
    } else if let (Some(by), Some(at)) = (&f.acked_by, f.acked_at_ms) {
        out.push((at, 2, entry(at, "fault", format!("fault acknowledged by {by}"))));
    }
    // Stable: rows of one millisecond keep the order they were read in (journal and audit ids).
    out.sort_by_key(|(at, order, _)| (*at, *order));
    let runs = rec
        .runs
        .iter()
        .map(|r| IncidentRunBrief {
            run: r.run.id.clone(),
            runbook: r.run.runbook.clone(),
            state: r.run.state,
            actor: r.run.actor.clone(),
            started: ts(r.run.created_at_ms),
            ended: r.run.ended_at_ms.and_then(ts),
            reason_summary: r.run.reason.as_deref().map(summarize_reason),
            reason: r.run.reason.clone(),
        })
        .collect();
    Ok(IncidentPage {
        resolved: rec.resolved_at_ms.and_then(ts),
        fault: Fault::from_row(rec.fault)?,
        device,
        runs,
        entries: out.into_iter().map(|(_, _, e)| e).collect(),
        evidence,
    })
}

async fn incident(State(s): State<AppState>, Path(fault_id): Path<String>) -> ApiResult<Json<IncidentPage>> {
    let id: i64 = fault_id
        .parse()
        .map_err(|_| ApiError::bad_request(format!("fault_id: {fault_id:?} is not a fault number")))?;
    // Console logs written by this process are flushed first, so the excerpts hold what was seen.
    s.consoles.flush_logs().await;
    let rec = s.base.incident(id).await?;
    let snap = snapshot(&s).await?;
    let device = snap.rows.iter().find(|r| r.name == rec.fault.device).cloned();
    Ok(Json(page(rec, device)?))
}
