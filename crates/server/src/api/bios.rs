//! `GET /api/v1/bios/drift`: each node's BIOS drift from the golden profile of its role, as the scheduled
//! read (`[server] bios-drift-interval`, [`crate::scheduler::bios_drift`]) last found it: which nodes
//! drifted and which attributes differ, for the API and the web console's fleet view and node page.
//! The engine's drift ([`lifeline_engine::ops::bios_drift`]) is the one definition; these are its views.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::Method;
use axum::routing::get;
use chrono::{DateTime, Utc};
use lifeline_engine::ops::bios_drift::BiosDriftRow;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::access::{Route, route, viewer};
use crate::error::ApiResult;
use crate::fleet_state::ts;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/api/v1/bios/drift",
            viewer(),
            "devices",
            "Each node's BIOS drift from the `[[bios-profile]]` of its role, as the scheduled read (`[server] bios-drift-interval`) last found it, by node; `drifted` names the nodes with drift. `?device=NAME` for one node.",
            get(list),
        )
        .returns::<BiosDrifts>(),
    ]
}

#[derive(Debug, Deserialize)]
pub struct DriftQuery {
    pub device: Option<String>,
}

/// One attribute not as the profile wants it.
#[derive(Clone, Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BiosAttributeDrift {
    pub attribute: String,
    /// The profile's value.
    pub want: Value,
    /// In force; `null`: the BIOS does not list the attribute.
    pub current: Option<Value>,
    /// Staged for the next reset, when it differs from the value in force.
    pub pending: Option<Value>,
}

/// One node's last read.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct BiosNodeDrift {
    pub device: String,
    pub role: Option<String>,
    /// Attributes the profile names for this node.
    pub checked: i64,
    /// Some attribute differs from the profile (as last read).
    pub drifted: bool,
    pub drift: Vec<BiosAttributeDrift>,
    /// Why the last read failed; `drift` is then the last successful read's.
    pub error: Option<String>,
    pub read_at: Option<DateTime<Utc>>,
}

/// `GET /api/v1/bios/drift`.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct BiosDrifts {
    /// `[server] bios-drift-interval` (`null`: not read on a schedule; the list is then what an earlier
    /// configuration read).
    pub interval: Option<String>,
    pub nodes: Vec<BiosNodeDrift>,
    /// The nodes with drift, by name.
    pub drifted: Vec<String>,
}

impl From<BiosDriftRow> for BiosNodeDrift {
    fn from(r: BiosDriftRow) -> BiosNodeDrift {
        // The row holds the engine's `Drift` list as written; one that does not read is shown as no drift
        // known rather than failing the whole list.
        let drift: Vec<BiosAttributeDrift> = serde_json::from_value(r.drift).unwrap_or_default();
        BiosNodeDrift {
            device: r.device,
            role: r.role,
            checked: r.checked,
            drifted: !drift.is_empty(),
            drift,
            error: r.error,
            read_at: ts(r.read_at_ms),
        }
    }
}

async fn list(State(s): State<AppState>, Query(q): Query<DriftQuery>) -> ApiResult<Json<BiosDrifts>> {
    let rows = s.base.bios_drifts(q.device.as_deref()).await?;
    let nodes: Vec<BiosNodeDrift> = rows.into_iter().map(BiosNodeDrift::from).collect();
    let drifted = nodes.iter().filter(|n| n.drifted).map(|n| n.device.clone()).collect();
    let interval = s
        .base
        .config
        .config
        .server
        .bios_drift_interval
        .clone()
        .filter(|i| humantime::parse_duration(i).is_ok_and(|d| !d.is_zero()));
    Ok(Json(BiosDrifts { interval, nodes, drifted }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_engine_drift_reads_as_its_view_with_nothing_lost() {
        let obj = |v: Value| v.as_object().unwrap().clone().into_iter().collect();
        let want =
            obj(json!({"SriovGlobalEnable": "Enabled", "NumaNodesPerSocket": 1, "AcsControl": "Disabled"}));
        let current = obj(json!({"SriovGlobalEnable": "Disabled", "NumaNodesPerSocket": "1"}));
        let pending = obj(json!({"SriovGlobalEnable": "Enabled"}));
        let drift = serde_json::to_value(lifeline_bmc::bios::drift(&want, &current, &pending)).unwrap();
        let row = BiosDriftRow {
            device: "g5".into(),
            role: Some("gpu-node".into()),
            checked: 3,
            drift: drift.clone(),
            error: None,
            read_at_ms: 1_700_000_000_000,
        };
        let v = BiosNodeDrift::from(row);
        assert!(v.drifted);
        let names: Vec<&str> = v.drift.iter().map(|d| d.attribute.as_str()).collect();
        assert_eq!(names, ["AcsControl", "SriovGlobalEnable"], "a number as text is no drift");
        assert_eq!(serde_json::to_value(&v.drift).unwrap(), drift);
        let clean = BiosNodeDrift::from(BiosDriftRow { drift: json!([]), ..v_row() });
        assert!(!clean.drifted && clean.drift.is_empty());
    }

    fn v_row() -> BiosDriftRow {
        BiosDriftRow {
            device: "g1".into(),
            role: None,
            checked: 0,
            drift: json!([]),
            error: None,
            read_at_ms: 0,
        }
    }
}
