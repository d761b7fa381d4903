//! Probation and lemons as operations (the rules are [`crate::probation`]): a re-admission starts a
//! probation, a fault or a failing check within it is recorded as a recurrence and drains the node again,
//! the lemons are listed with their history, a lemon's re-admission is refused until a human releases it.
//! Every step is audited with why.

use lifeline_inventory::Device;
use lifeline_store::{LemonReleaseRow, ProbationRow, now_ms};
use lifeline_types::AuditAction;
use lifeline_verify::Verdict;
use serde::Serialize;

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::ops::Row;
use crate::ops::readmit::{Drained, ReportSource, Schedulers};
use crate::probation::{CHECK_CAUSE, Settings, Standing, refusal, standing};

/// What a recurrence did.
#[derive(Debug, Clone, Serialize)]
pub struct Recurred {
    pub node: String,
    pub cause: String,
    pub fault: Option<i64>,
    /// The node's score after it, and whether that makes it a lemon.
    pub score: u32,
    pub lemon: bool,
    pub message: String,
    /// The drain that took it out again; `None` when no scheduler was given.
    pub drained: Option<Drained>,
}

/// One probation check.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    pub node: String,
    /// `passed` (still on probation), `recurred`, `ended` (the window is over: probation passed) or `error`
    /// (no report: not counted either way).
    pub outcome: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recurred: Option<Recurred>,
}

/// Whether a node may be re-admitted.
#[derive(Debug)]
pub(crate) enum Gate {
    Open,
    /// A lemon, re-admitted on a human's release (used when the re-admission is done).
    Released(LemonReleaseRow),
    Refused(String),
}

fn is_human(actor: &str) -> bool {
    actor.starts_with("cli:") || actor.starts_with("web:")
}

impl Lifeline {
    pub fn probation_settings(&self) -> Result<Settings> {
        Settings::from_config(&self.config.config.probation)
    }

    /// Whether `node` is on probation now (a fault there may be a recurrence). Cheap: one row, no
    /// inventory, so the fault intake asks it of every new fault.
    pub async fn on_probation(&self, node: &str) -> Result<bool> {
        Ok(self.store().await?.probation(node).await?.is_some_and(|p| p.state == "on"))
    }

    /// Whether any node is on probation now (nothing to check otherwise).
    pub async fn any_on_probation(&self) -> Result<bool> {
        Ok(!self.store().await?.probations(Some("on")).await?.is_empty())
    }

    /// One node's standing: score, lemon or not, probation, history.
    pub async fn standing(&self, node: &str) -> Result<Standing> {
        let s = self.probation_settings()?;
        let store = self.store().await?;
        let now = now_ms();
        let history = store.recurrences(Some(node), s.counted_since(now)).await?;
        Ok(standing(&s, node, store.probation(node).await?, history, store.lemon_releases(node).await?, now))
    }

    /// The lemons (with `all`: every node with a recurrence in the lemon window or a probation), worst first.
    pub async fn lemons(&self, all: bool) -> Result<Vec<Standing>> {
        let s = self.probation_settings()?;
        let store = self.store().await?;
        let now = now_ms();
        let mut nodes: std::collections::BTreeSet<String> =
            store.recurrences(None, s.counted_since(now)).await?.into_iter().map(|r| r.device).collect();
        if all {
            nodes.extend(store.probations(None).await?.into_iter().map(|p| p.device));
        }
        let mut out = Vec::new();
        for n in nodes {
            let st = self.standing(&n).await?;
            if all || st.lemon {
                out.push(st);
            }
        }
        out.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.node.cmp(&b.node)));
        Ok(out)
    }

    /// Asked before a re-admission: a lemon is refused (audited with why) unless a human released it.
    pub(crate) async fn readmit_gate(&self, node: &str) -> Result<Gate> {
        let s = self.probation_settings()?;
        let st = self.standing(node).await?;
        if !st.lemon || !s.refuse_lemons {
            return Ok(Gate::Open);
        }
        if let Some(r) = self.store().await?.lemon_release_pending(node).await? {
            return Ok(Gate::Released(r));
        }
        let why = refusal(&s, &st);
        self.audit()
            .await?
            .record(
                AuditAction::ReadmitLemon,
                node,
                Outcome::Refused,
                None,
                serde_json::json!({ "why": why, "score": st.score, "threshold": st.threshold, "history": st.history }),
            )
            .await?;
        Ok(Gate::Refused(why))
    }

    /// Called after a re-admission: uses the release it needed, and starts the node's probation.
    pub(crate) async fn readmitted(&self, node: &str, gate: &Gate, digest: Option<&str>) -> Result<()> {
        let s = self.probation_settings()?;
        let store = self.store().await?;
        let audit = self.audit().await?;
        if let Gate::Released(r) = gate {
            store.lemon_release_use(r.id).await?;
            audit
                .record(
                    AuditAction::ReadmitLemon,
                    node,
                    Outcome::Ok,
                    None,
                    serde_json::json!({ "why": format!("released by {}: {}", r.by, r.reason), "release": r.id }),
                )
                .await?;
        }
        if !s.enabled() {
            return Ok(());
        }
        let now = now_ms();
        let p = store.probation_start(node, now, s.until(now), digest).await?;
        audit.record(AuditAction::ProbationStart, node, Outcome::Ok, None, &p).await?;
        Ok(())
    }

    /// A fault of `node` (or a failing check): within its probation, a recurrence — recorded, the node
    /// drained again with Lifeline's mark (when `scheds` is given), all audited. `None`: not on probation.
    pub async fn recurrence(
        &self,
        node: &Device,
        cause: &str,
        fault: Option<i64>,
        message: &str,
        scheds: Option<&Schedulers>,
    ) -> Result<Option<Recurred>> {
        let name = node.name.to_string();
        // A bad [probation] section fails here rather than recording under defaults nobody chose.
        self.probation_settings()?;
        let store = self.store().await?.clone();
        let Some(p) = store.probation(&name).await? else { return Ok(None) };
        let now = now_ms();
        if p.state != "on" {
            return Ok(None);
        }
        if now >= p.until_ms {
            self.probation_ended(&p).await?;
            return Ok(None);
        }
        let detail = serde_json::json!({ "message": message });
        let Some(rec) = store.recurrence_record(&name, cause, fault, &detail).await? else { return Ok(None) };
        let st = self.standing(&name).await?;
        let after = humantime::format_duration(std::time::Duration::from_secs(
            u64::try_from((rec.at_ms - rec.readmitted_at_ms) / 1000).unwrap_or(0),
        ));
        let message = format!(
            "probation: {cause} recurred {after} after re-admission ({message}); recurrence score {} of {}{}",
            st.score,
            st.threshold,
            if st.lemon { ": a lemon" } else { "" }
        );
        let drained = match scheds {
            Some(sc) => {
                self.drain(std::slice::from_ref(node), &message, sc).await?.pop().and_then(|r| r.result.ok())
            }
            None => None,
        };
        let out = Recurred {
            node: name.clone(),
            cause: cause.to_owned(),
            fault,
            score: st.score,
            lemon: st.lemon,
            message,
            drained,
        };
        self.audit()
            .await?
            .record(
                AuditAction::ProbationRecurrence,
                &name,
                if out.drained.is_some() || scheds.is_none() { Outcome::Ok } else { Outcome::Failed },
                None,
                &out,
            )
            .await?;
        Ok(Some(out))
    }

    async fn probation_ended(&self, p: &ProbationRow) -> Result<()> {
        if self.store().await?.probation_end(&p.device, "passed").await? {
            self.audit()
                .await?
                .record(
                    AuditAction::ProbationPassed,
                    &p.device,
                    Outcome::Ok,
                    None,
                    serde_json::json!({ "checks": p.checks }),
                )
                .await?;
        }
        Ok(())
    }

    /// Checks the nodes on probation in band: those whose check is due (every node on probation with
    /// `all`). A failing report is a recurrence (drained again with `scheds`); a report that cannot be had
    /// counts neither way; a probation whose window is over has passed.
    pub async fn probation_check(
        &self,
        source: &ReportSource,
        scheds: Option<&Schedulers>,
        all: bool,
    ) -> Result<Vec<Row<Checked>>> {
        let s = self.probation_settings()?;
        let inv = self.inventory()?;
        let store = self.store().await?.clone();
        let mut rows = Vec::new();
        for p in store.probations(Some("on")).await? {
            let now = now_ms();
            let Some(d) = inv.devices.iter().find(|d| d.name.as_str() == p.device) else { continue };
            if now >= p.until_ms {
                self.probation_ended(&p).await?;
                let message = format!("probation over after {} check(s) without a recurrence", p.checks);
                rows.push(Row::new(
                    "node",
                    p.device.clone(),
                    Ok(Checked { node: p.device.clone(), outcome: "ended".into(), message, recurred: None }),
                ));
                continue;
            }
            if !all && !s.check_due(&p, now) {
                continue;
            }
            let r = self.probation_check_one(d, &p, source, scheds).await;
            rows.push(Row::new("node", p.device.clone(), r));
        }
        Ok(rows)
    }

    async fn probation_check_one(
        &self,
        d: &Device,
        p: &ProbationRow,
        source: &ReportSource,
        scheds: Option<&Schedulers>,
    ) -> Result<Checked> {
        let v = self
            .verify(std::slice::from_ref(d), source, None)
            .await?
            .pop()
            .ok_or_else(|| EngineError::Internal { what: "verify returned no row".into(), source: None })?
            .result?;
        let node = p.device.clone();
        if let Some(e) = v.error {
            return Ok(Checked { node, outcome: "error".into(), message: e, recurred: None });
        }
        self.store().await?.probation_checked(&node, now_ms()).await?;
        if v.verdict != Verdict::Fail {
            return Ok(Checked { node, outcome: "passed".into(), message: v.summary, recurred: None });
        }
        let recurred = self.recurrence(d, CHECK_CAUSE, None, &v.summary, scheds).await?;
        Ok(Checked {
            node,
            outcome: if recurred.is_some() { "recurred".into() } else { "passed".into() },
            message: recurred.as_ref().map(|r| r.message.clone()).unwrap_or(v.summary),
            recurred,
        })
    }

    /// A human's word that a lemon may be re-admitted once (audited with the reason). Refused for an
    /// automated actor, and for a node that is not a lemon.
    pub async fn release_lemon(&self, node: &str, reason: &str) -> Result<LemonReleaseRow> {
        let actor = self.actor().to_owned();
        if !is_human(&actor) {
            return Err(EngineError::Refused {
                target: node.into(),
                reason: format!("releasing a lemon takes a person (cli: or web:), not `{actor}`"),
            });
        }
        if reason.trim().is_empty() {
            return Err(EngineError::bad_argument("--reason: say why the node may be re-admitted"));
        }
        let st = self.standing(node).await?;
        if !st.lemon {
            return Err(EngineError::Refused {
                target: node.into(),
                reason: format!("`{node}` is not a lemon (score {} of {})", st.score, st.threshold),
            });
        }
        let r = self.store().await?.lemon_release(node, &actor, reason).await?;
        self.audit().await?.record(AuditAction::LemonRelease, node, Outcome::Ok, None, &r).await?;
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_people_release() {
        assert!(super::is_human("cli:ops") && super::is_human("web:alice"));
        assert!(
            !super::is_human("fault-policy")
                && !super::is_human("runbook:r1")
                && !super::is_human("scheduler")
        );
    }
}
