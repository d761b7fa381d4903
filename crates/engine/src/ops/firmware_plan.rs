//! `firmware plan`: for each selected BMC, the component of the asked kind it reports, its version, what
//! would change, and the waves a rollout would run in. A plan is a JSON document the operator reviews and
//! hands to `firmware apply`; what was reviewed is what is applied (its id keys the rollout's journal).
//!
//! Waves follow the runbook blast-radius guard (`[runbooks.guard]`): a canary wave of one BMC first, then
//! waves of at most `max-concurrent` BMCs with at most `max-concurrent-per-rack` in one rack and
//! `max-concurrent-per-domain` in one failure domain (leaf, PDU, NVLink domain, OOB switch), so a bad
//! image never takes more of a rack or a domain at once than a recovery would.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use lifeline_bmc::firmware::{Component, FirmwareImage, FirmwareShow, version_cmp};
use serde::{Deserialize, Serialize};

use crate::config::GuardConfig;
use crate::context::Lifeline;
use crate::correlate::Topology;
use crate::error::{EngineError, Result};
use crate::targets::BmcSelection;

/// What a plan does to one BMC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// Update (in a wave).
    Update,
    /// Already at the version: nothing to do.
    Same,
    /// A downgrade, allowed by `--allow-downgrade` (in a wave).
    Downgrade,
    /// A downgrade (or a version that cannot be compared), refused.
    Refused,
    /// The BMC reports no component of this kind, or cannot be read, or has no UpdateService.
    Skipped,
}

/// One BMC in a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedTarget {
    pub bmc: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    /// The component's `SoftwareInventory` link (the update's target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    pub change: Change,
    /// The wave (0 is the canary), for `update` and `downgrade`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave: Option<usize>,
    /// Why, in words (a refusal, a skip, other components of the kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The limits waves were made under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaveLimits {
    pub per_wave: usize,
    pub per_rack: usize,
    pub per_domain: usize,
}

impl WaveLimits {
    pub fn from_guard(g: &GuardConfig) -> WaveLimits {
        WaveLimits {
            per_wave: (g.max_concurrent as usize).max(1),
            per_rack: (g.max_concurrent_per_rack as usize).max(1),
            per_domain: (g.max_concurrent_per_domain as usize).max(1),
        }
    }
}

/// A reviewed rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirmwarePlan {
    /// `fw-` and a digest of what the plan does: the rollout's key in the journal.
    pub id: String,
    pub component: Component,
    /// The version the image carries; success is this version read back.
    pub version: String,
    /// Where the image comes from (`None`: a plan of what differs, not appliable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<FirmwareImage>,
    pub allow_downgrade: bool,
    pub limits: WaveLimits,
    pub targets: Vec<PlannedTarget>,
    /// BMC names per wave; wave 0 is the canary.
    pub waves: Vec<Vec<String>>,
}

impl FirmwarePlan {
    pub fn load(path: &std::path::Path) -> Result<FirmwarePlan> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| EngineError::ConfigRead { path: path.to_owned(), source })?;
        let p: FirmwarePlan = serde_json::from_str(&text).map_err(|e| EngineError::Config {
            path: path.to_owned(),
            line: e.line(),
            col: e.column(),
            message: format!("not a firmware plan: {e}"),
        })?;
        if p.id != p.digest() {
            return Err(EngineError::bad_argument(format!(
                "{}: the plan was changed after it was made (its id {} does not match its content); make a new \
                 plan with `lifeline firmware plan`",
                path.display(),
                p.id
            )));
        }
        Ok(p)
    }

    /// The id a plan's content gives it.
    pub fn digest(&self) -> String {
        let mut c = self.clone();
        c.id = String::new();
        let text = serde_json::to_string(&c).unwrap_or_default();
        // FNV-1a, 64 bits twice with different seeds: a key, not a signature.
        let h = |seed: u64| {
            text.bytes().fold(seed, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
        };
        format!("fw-{:016x}{:016x}", h(0xcbf2_9ce4_8422_2325), h(0x6c62_272e_07bb_0142))
    }
}

/// Decides the change for one BMC.
pub fn judge(
    show: &FirmwareShow,
    component: Component,
    version: &str,
    allow_downgrade: bool,
) -> (Option<String>, Option<String>, Change, Option<String>) {
    let of_kind: Vec<_> = show.components.iter().filter(|c| c.is(component)).collect();
    let Some(slot) = of_kind.iter().find(|c| c.updateable != Some(false)).copied() else {
        let why = if of_kind.is_empty() {
            let ids: Vec<&str> = show.components.iter().map(|c| c.id.as_str()).collect();
            format!("reports no {} component (components: {})", component.as_str(), ids.join(", "))
        } else {
            format!("its {} component is not updateable", component.as_str())
        };
        return (None, None, Change::Skipped, Some(why));
    };
    let others: Vec<&str> = of_kind.iter().filter(|c| c.link != slot.link).map(|c| c.id.as_str()).collect();
    let mut note =
        (!others.is_empty()).then(|| format!("also of this kind, not planned: {}", others.join(", ")));
    let current = slot.version.clone();
    let change = match current.as_deref().map(|c| version_cmp(c, version)) {
        Some(Some(Ordering::Equal)) => Change::Same,
        Some(Some(Ordering::Less)) => Change::Update,
        Some(Some(Ordering::Greater)) if allow_downgrade => Change::Downgrade,
        Some(Some(Ordering::Greater)) => {
            note = Some(format!(
                "{} would be a downgrade from {}; refused without --allow-downgrade",
                version,
                current.as_deref().unwrap_or_default()
            ));
            Change::Refused
        }
        _ if allow_downgrade => Change::Update,
        found => {
            note = Some(match found {
                None => format!(
                    "the BMC reports no version for {}: cannot tell a downgrade; refused without --allow-downgrade",
                    slot.id
                ),
                _ => format!(
                    "{} and {version} cannot be compared: cannot tell a downgrade; refused without --allow-downgrade",
                    current.as_deref().unwrap_or_default()
                ),
            });
            Change::Refused
        }
    };
    (Some(slot.link.clone()), current, change, note)
}

/// Splits `targets` (in order) into waves: the first alone (the canary), then greedily in order, each
/// wave within `limits`; `domains(name)` are the failure domains of a target beside its rack.
pub fn waves(
    targets: &[(String, Option<String>)],
    domains: impl Fn(&str) -> Vec<String>,
    limits: WaveLimits,
) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut rest: Vec<&(String, Option<String>)> = targets.iter().collect();
    if rest.is_empty() {
        return out;
    }
    out.push(vec![rest.remove(0).0.clone()]);
    while !rest.is_empty() {
        let mut wave = Vec::new();
        let mut racks: BTreeMap<&str, usize> = BTreeMap::new();
        let mut doms: BTreeMap<String, usize> = BTreeMap::new();
        rest.retain(|(name, rack)| {
            if wave.len() >= limits.per_wave {
                return true;
            }
            let ds = domains(name);
            let rack_full =
                rack.as_deref().is_some_and(|r| racks.get(r).copied().unwrap_or(0) >= limits.per_rack);
            let dom_full = ds.iter().any(|d| doms.get(d).copied().unwrap_or(0) >= limits.per_domain);
            if rack_full || dom_full {
                return true;
            }
            if let Some(r) = rack.as_deref() {
                *racks.entry(r).or_default() += 1;
            }
            for d in ds {
                *doms.entry(d).or_default() += 1;
            }
            wave.push(name.clone());
            false
        });
        out.push(wave);
    }
    out
}

/// What `firmware plan` was asked.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    pub component: Component,
    pub version: String,
    pub image: Option<FirmwareImage>,
    pub allow_downgrade: bool,
}

impl Lifeline {
    /// Reads each BMC's firmware components and plans the rollout.
    pub async fn firmware_plan(&self, sel: &BmcSelection, req: PlanRequest) -> Result<FirmwarePlan> {
        if let Some(FirmwareImage::File(p)) = &req.image
            && !p.is_file()
        {
            return Err(EngineError::bad_argument(format!("--image {}: no such file", p.display())));
        }
        let shows = self.each_bmc(sel, |bmc| async move { bmc.firmware_show().await }).await?;
        let mut targets = Vec::new();
        for (row, b) in shows.into_iter().zip(&sel.bmcs) {
            let (component, current, change, note) = match &row.result {
                Ok(show) => judge(show, req.component, &req.version, req.allow_downgrade),
                Err(e) => {
                    // The error names the BMC (sometimes twice); the row already does.
                    let mut m = e.report().message;
                    while let Some(rest) = m.strip_prefix(&format!("{}: ", row.target)) {
                        m = rest.to_owned();
                    }
                    (None, None, Change::Skipped, Some(m))
                }
            };
            targets.push(PlannedTarget {
                bmc: row.target.clone(),
                rack: b.rack.clone(),
                component,
                current,
                change,
                wave: None,
                note,
            });
        }
        let limits = WaveLimits::from_guard(&self.config.config.runbooks.guard);
        let topology = self.inventory().ok().map(|inv| Topology::from_inventory(&inv));
        let domains = |name: &str| -> Vec<String> {
            topology
                .as_ref()
                .map(|t| t.domains(name).iter().map(|c| c.describe()).collect())
                .unwrap_or_default()
        };
        let moving: Vec<(String, Option<String>)> = targets
            .iter()
            .filter(|t| matches!(t.change, Change::Update | Change::Downgrade))
            .map(|t| (t.bmc.clone(), t.rack.clone()))
            .collect();
        let waves = waves(&moving, domains, limits);
        for (i, w) in waves.iter().enumerate() {
            for t in targets.iter_mut().filter(|t| w.contains(&t.bmc)) {
                t.wave = Some(i);
            }
        }
        let mut plan = FirmwarePlan {
            id: String::new(),
            component: req.component,
            version: req.version,
            image: req.image,
            allow_downgrade: req.allow_downgrade,
            limits,
            targets,
            waves,
        };
        plan.id = plan.digest();
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limits(per_wave: usize, per_rack: usize, per_domain: usize) -> WaveLimits {
        WaveLimits { per_wave, per_rack, per_domain }
    }

    #[test]
    fn a_canary_first_then_waves_within_the_rack_and_domain_limits() {
        let t: Vec<(String, Option<String>)> =
            (0..10).map(|i| (format!("n{i}"), Some(format!("r{}", i % 2)))).collect();
        let dom = |n: &str| if n == "n2" || n == "n4" { vec!["nvlink-domain d1".to_owned()] } else { vec![] };
        let w = waves(&t, dom, limits(8, 2, 1));
        assert_eq!(w[0], ["n0"]);
        assert_eq!(w[1], ["n1", "n2", "n3", "n6"], "n4 shares d1 with n2; r0 holds n2 and n6");
        assert_eq!(w.iter().map(Vec::len).sum::<usize>(), 10);
    }

    proptest! {
        #[test]
        fn every_target_in_exactly_one_wave_and_no_wave_over_a_limit(
            n in 0usize..60, racks in 1usize..6, per_wave in 1usize..10, per_rack in 1usize..4,
        ) {
            let t: Vec<(String, Option<String>)> =
                (0..n).map(|i| (format!("n{i}"), Some(format!("r{}", i % racks)))).collect();
            let w = waves(&t, |_| vec![], limits(per_wave, per_rack, 2));
            let mut all: Vec<&String> = w.iter().flatten().collect();
            all.sort();
            all.dedup();
            prop_assert_eq!(all.len(), n);
            if n > 0 { prop_assert_eq!(w[0].len(), 1); }
            for wave in &w {
                prop_assert!(!wave.is_empty() && wave.len() <= per_wave);
                for r in 0..racks {
                    let in_rack = wave.iter().filter(|x| t.iter().any(|(m, rr)| m == *x && rr.as_deref() == Some(format!("r{r}").as_str()))).count();
                    prop_assert!(in_rack <= per_rack);
                }
            }
        }
    }
}
