//! BIOS settings against a golden profile: show each BMC's attributes, the drift from the profile of its
//! role, and apply (stage the drifted attributes, audited as `bios.apply` under the target's lease; reset
//! the host through the confirmed power path; read the attributes back until the drift is gone).
//!
//! The profile is a TOML file: `[attributes]` for every target, `[role.<role>.attributes]` on top of it
//! for one role (`docs/media-bios.md`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use lifeline_bmc::bios::{Drift, drift};
use lifeline_bmc::{BiosShow, BiosStaged};
use lifeline_types::{AuditAction, PowerAction};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::ops::{Acted, Row};
use crate::targets::{BmcSelection, SelectedBmc};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleProfile {
    #[serde(default)]
    attributes: BTreeMap<String, Value>,
}

/// A golden BIOS profile.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BiosProfile {
    #[serde(default)]
    attributes: BTreeMap<String, Value>,
    #[serde(default)]
    role: BTreeMap<String, RoleProfile>,
}

impl BiosProfile {
    /// Parses a profile; an error names the file, line and column, and a value that is not a scalar.
    pub fn parse(text: &str, path: &Path) -> Result<BiosProfile> {
        let at = |offset: usize, message: String| {
            let before = &text[..offset.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, str::len) + 1;
            EngineError::Config { path: path.to_owned(), line, col, message }
        };
        let p: BiosProfile =
            toml::from_str(text).map_err(|e| at(e.span().map_or(0, |s| s.start), e.message().to_owned()))?;
        let all = p.attributes.iter().chain(p.role.values().flat_map(|r| r.attributes.iter()));
        for (k, v) in all {
            if v.is_object() || v.is_array() {
                let offset = text.find(k.as_str()).unwrap_or(0);
                return Err(at(offset, format!("BIOS attribute `{k}` must be a string, number or boolean")));
            }
        }
        Ok(p)
    }

    pub fn load(path: &Path) -> Result<BiosProfile> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| EngineError::ConfigRead { path: path.to_owned(), source })?;
        Self::parse(&text, path)
    }

    /// The profile of the configuration's `[[bios-profile]]` entries (`None` when there are none): each
    /// entry's file read for its role, its inline attributes on top; an entry without a role is the base.
    /// Relative files are read from the configuration file's directory; an error names the entry's line.
    pub fn from_config(cfg: &crate::config::LoadedConfig) -> Result<Option<BiosProfile>> {
        let entries = &cfg.config.bios_profile;
        if entries.is_empty() {
            return Ok(None);
        }
        let path = cfg.path.clone().unwrap_or_else(|| "lifeline.toml".into());
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let starts: Vec<usize> = cfg.text.match_indices("[[bios-profile]]").map(|(o, _)| o).collect();
        let mut p = BiosProfile::default();
        for (i, e) in entries.iter().enumerate() {
            let bad = |what: String| {
                let (line, col) = cfg.line_col(starts.get(i).copied().unwrap_or(0));
                EngineError::Config {
                    path: path.clone(),
                    line,
                    col,
                    message: format!("bios-profile[{i}]: {what}"),
                }
            };
            if e.file.is_none() && e.attributes.is_empty() {
                return Err(bad("neither `file` nor `attributes`".into()));
            }
            match &e.role {
                None if entries[..i].iter().any(|x| x.role.is_none()) => {
                    return Err(bad("a second entry without a role".into()));
                }
                Some(r) if p.role.contains_key(r) => {
                    return Err(bad(format!("a second entry for role `{r}`")));
                }
                _ => {}
            }
            let mut a = match &e.file {
                Some(f) => BiosProfile::load(&dir.join(f))?.for_role(e.role.as_deref()),
                None => BTreeMap::new(),
            };
            a.extend(e.attributes.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))));
            match &e.role {
                None => p.attributes = a,
                Some(r) => {
                    p.role.insert(r.clone(), RoleProfile { attributes: a });
                }
            }
        }
        Ok(Some(p))
    }

    /// The attributes wanted of a target of `role`: `[attributes]`, then the role's on top.
    pub fn for_role(&self, role: Option<&str>) -> BTreeMap<String, Value> {
        let mut a = self.attributes.clone();
        if let Some(r) = role.and_then(|r| self.role.get(r)) {
            a.extend(r.attributes.clone());
        }
        a
    }
}

/// `bios diff`: one target's drift from its profile.
#[derive(Debug, Clone, Serialize)]
pub struct BiosDiff {
    pub bmc: String,
    pub role: Option<String>,
    /// Attributes the profile names for this target.
    pub checked: usize,
    pub drift: Vec<Drift>,
}

/// `bios apply`: what was staged, the reset, and the drift read back afterwards.
#[derive(Debug, Clone, Serialize)]
pub struct BiosApplied {
    pub bmc: String,
    pub changes: BTreeMap<String, Value>,
    pub staged: Option<BiosStaged>,
    /// The host reset that applies the pending settings (`None`: not asked, or nothing to change).
    pub reset: Option<String>,
    /// Drift left after the reset (empty: the profile holds).
    pub drift_after: Vec<Drift>,
    pub applied: bool,
}

fn role_of(b: &SelectedBmc) -> Option<String> {
    b.role.as_ref().map(|r| r.to_string())
}

pub(crate) fn diff_of(b: &SelectedBmc, profile: &BiosProfile, s: &BiosShow) -> BiosDiff {
    let role = role_of(b);
    let want = profile.for_role(role.as_deref());
    BiosDiff { bmc: s.bmc.clone(), role, checked: want.len(), drift: drift(&want, &s.attributes, &s.pending) }
}

impl Lifeline {
    /// The BIOS attributes (in force and pending) of each BMC.
    pub async fn bios_show(&self, sel: &BmcSelection) -> Result<Vec<Row<BiosShow>>> {
        self.each_bmc(sel, |bmc| async move { bmc.bios_show().await }).await
    }

    /// Each BMC's drift from the profile of its role.
    pub async fn bios_diff(&self, sel: &BmcSelection, profile: &BiosProfile) -> Result<Vec<Row<BiosDiff>>> {
        let shows = self.bios_show(sel).await?;
        Ok(shows
            .into_iter()
            .zip(&sel.bmcs)
            .map(|(r, b)| Row::new("bmc", r.target, r.result.map(|s| diff_of(b, profile, &s))))
            .collect())
    }

    /// Stages each drifted BMC's attributes, resets its host (when `reset`) and reads the attributes back
    /// until the drift is gone or `wait` passes.
    pub async fn bios_apply(
        &self,
        sel: &BmcSelection,
        profile: &BiosProfile,
        reset: bool,
        wait: Duration,
    ) -> Result<Vec<Row<Acted<BiosApplied>>>> {
        let pool = self.bmc_pool().await?;
        let audit = self.audit().await?;
        let mut rows = Vec::new();
        for b in &sel.bmcs {
            let name = b.name().to_owned();
            let bmc = pool.bmc(b.target.clone());
            let (audit, who) = (audit.clone(), name.clone());
            let r = self
                .guarded(&name, AuditAction::BiosApply, |rid| async move {
                    let fail = |source| EngineError::Bmc { target: who.clone(), source };
                    let show = bmc.bios_show().await.map_err(fail)?;
                    let d = diff_of(b, profile, &show);
                    let changes: BTreeMap<String, Value> = d
                        .drift
                        .iter()
                        .filter(|x| !x.fixed_at_reset())
                        .map(|x| (x.attribute.clone(), x.want.clone()))
                        .collect();
                    let mut out = BiosApplied {
                        bmc: who.clone(),
                        changes: changes.clone(),
                        staged: None,
                        reset: None,
                        drift_after: d.drift.clone(),
                        applied: d.drift.is_empty(),
                    };
                    if d.drift.is_empty() {
                        return Ok(out);
                    }
                    let intent = audit
                        .intent(
                            AuditAction::BiosApply,
                            &who,
                            Some(&rid),
                            serde_json::json!({ "changes": changes, "reset": reset }),
                        )
                        .await?;
                    if !changes.is_empty() {
                        match bmc.bios_stage(changes).await {
                            Ok(s) => out.staged = Some(s),
                            Err(source) => {
                                let err = fail(source);
                                audit
                                    .outcome(
                                        intent,
                                        Outcome::Failed,
                                        serde_json::json!({ "error": err.chain() }),
                                    )
                                    .await?;
                                return Err(err);
                            }
                        }
                    }
                    if reset {
                        let r = bmc
                            .power(PowerAction::Reset, Some(format!("{rid}/reset")))
                            .await
                            .map_err(fail)?;
                        out.reset = Some(match serde_json::to_value(r.confirmation) {
                            Ok(Value::String(c)) => c,
                            _ => format!("{:?}", r.confirmation),
                        });
                        let deadline = Instant::now() + wait;
                        loop {
                            if let Ok(s) = bmc.bios_show().await {
                                out.drift_after = diff_of(b, profile, &s).drift;
                                if out.drift_after.is_empty() || Instant::now() >= deadline {
                                    break;
                                }
                            } else if Instant::now() >= deadline {
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(500)).await;
                        }
                    }
                    out.applied = out.drift_after.is_empty();
                    let o = if out.applied {
                        Outcome::Ok
                    } else if reset {
                        Outcome::Failed
                    } else {
                        Outcome::Unverified
                    };
                    audit.outcome(intent, o, &out).await?;
                    Ok(out)
                })
                .await;
            rows.push(Row::new("bmc", name, r));
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_per_role_and_errors_with_a_place() {
        let p = BiosProfile::parse(
            "[attributes]\nSriovGlobalEnable = \"Enabled\"\nNumaNodesPerSocket = 1\n\n[role.gpu-node.attributes]\nAcsControl = \"Disabled\"\n",
            Path::new("p.toml"),
        )
        .unwrap();
        assert_eq!(p.for_role(Some("gpu-node")).len(), 3);
        assert_eq!(p.for_role(Some("storage")).len(), 2);
        let e = BiosProfile::parse("[attributes]\nX = [1]\n", Path::new("p.toml")).unwrap_err();
        assert_eq!(e.to_string(), "p.toml:2:1: BIOS attribute `X` must be a string, number or boolean");
        let e = BiosProfile::parse("[atributes]\nX = 1\n", Path::new("p.toml")).unwrap_err();
        assert!(e.to_string().starts_with("p.toml:1:"), "{e}");
    }

    fn loaded(dir: &Path, text: &str) -> crate::config::LoadedConfig {
        let path = dir.join("lifeline.toml");
        std::fs::write(&path, text).unwrap();
        crate::config::LoadedConfig {
            path: Some(path.clone()),
            text: text.into(),
            config: crate::config::parse(&path, text).unwrap(),
        }
    }

    #[test]
    fn the_configuration_gives_a_profile_per_role_from_files_and_inline() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("gpu.toml"),
            "[attributes]\nMmioAbove4Gb = \"Enabled\"\n[role.gpu-node.attributes]\nAcsControl = \"Disabled\"\n",
        )
        .unwrap();
        let text = "[[bios-profile]]\nattributes = { SriovGlobalEnable = \"Enabled\" }\n\n\
                    [[bios-profile]]\nrole = \"gpu-node\"\nfile = \"gpu.toml\"\nattributes = { NumaNodesPerSocket = \"1\" }\n";
        let p = BiosProfile::from_config(&loaded(d.path(), text)).unwrap().unwrap();
        let gpu = p.for_role(Some("gpu-node"));
        let names: Vec<&str> = gpu.keys().map(String::as_str).collect();
        assert_eq!(names, ["AcsControl", "MmioAbove4Gb", "NumaNodesPerSocket", "SriovGlobalEnable"]);
        // A number given as text still matches the BIOS's number (compared by meaning).
        assert_eq!(gpu["NumaNodesPerSocket"], Value::String("1".into()));
        assert_eq!(p.for_role(Some("storage")).keys().collect::<Vec<_>>(), ["SriovGlobalEnable"]);
        assert!(BiosProfile::from_config(&loaded(d.path(), "")).unwrap().is_none());
        let twice = "[[bios-profile]]\nrole = \"a\"\nattributes = { X = \"1\" }\n[[bios-profile]]\nrole = \"a\"\nattributes = { Y = \"1\" }\n";
        let e = BiosProfile::from_config(&loaded(d.path(), twice)).unwrap_err().to_string();
        assert!(e.ends_with("lifeline.toml:4:1: bios-profile[1]: a second entry for role `a`"), "{e}");
        let empty = "[[bios-profile]]\nrole = \"a\"\n";
        let e = BiosProfile::from_config(&loaded(d.path(), empty)).unwrap_err().to_string();
        assert!(e.contains("neither `file` nor `attributes`"), "{e}");
        let missing = "[[bios-profile]]\nfile = \"nope.toml\"\n";
        assert!(BiosProfile::from_config(&loaded(d.path(), missing)).is_err());
    }
}
