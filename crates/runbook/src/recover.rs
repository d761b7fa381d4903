//! Recovering a step attempt that was in flight when its process died: the journal has its intent but no
//! outcome. Idempotent steps run again; otherwise the engine's request table, the audit log and the target's
//! own state (power, the BMC's event log, the event log's emptiness after a clear) decide, and only when
//! none of them can tell does the run wait for an operator.

use std::collections::BTreeSet;
use std::str::FromStr;
use std::time::Duration;

use lifeline_engine::ops::runs::JournalRow;
use lifeline_types::{PowerAction, PowerState};
use serde_json::json;

use crate::model::{Kind, Op};
use crate::steps::{StepCtx, StepResult, sel_ids};

/// What the journal and the target say about an attempt that was in flight when its process died.
pub(crate) enum Found {
    /// The engine finished the action and kept its outcome: run the same attempt, the engine replays it.
    Replay,
    /// The action was never sent: run a new attempt.
    NotStarted,
    /// Idempotent: running it again does no harm.
    Repeatable,
    /// The state shows the effect: the step is done.
    Done(StepResult),
    /// Nothing tells: an operator must look.
    Unknown(String),
}

impl Found {
    pub fn label(&self) -> &'static str {
        match self {
            Found::Replay => "replay",
            Found::NotStarted => "not-started",
            Found::Repeatable => "repeat",
            Found::Done(_) => "found-done",
            Found::Unknown(_) => "unknown",
        }
    }

    pub fn message(&self) -> String {
        match self {
            Found::Replay => "the action finished before the crash; its recorded outcome is used".into(),
            Found::NotStarted => "the action was never sent; running it".into(),
            Found::Repeatable => "the step is idempotent; running it again".into(),
            Found::Done(r) => format!("the target's state shows the action took effect: {}", r.message),
            Found::Unknown(why) => why.clone(),
        }
    }
}

/// Decides about an attempt whose outcome the journal does not have.
pub(crate) async fn recover(ctx: &StepCtx<'_>, request_base: &str, intent: &JournalRow) -> Found {
    if ctx.step.kind.idempotent(ctx.op) {
        return Found::Repeatable;
    }
    if ctx.l.open_store().await.is_err() {
        return Found::Unknown("the store cannot be read".into());
    }
    let rid = format!("{request_base}/{}", ctx.target);
    match ctx.l.request_record(&rid).await {
        Ok(Some(r)) if r.state == "done" => return Found::Replay,
        Ok(None) => return Found::NotStarted,
        Ok(Some(_)) => {}
        Err(e) => return Found::Unknown(format!("the request table cannot be read: {}", e.chain())),
    }
    // The engine started the action. Did the BMC get it? The bmc crate writes its intent row just before
    // sending; without one nothing went on the wire.
    let sent = match ctx.l.audit_log(Some(ctx.target), 500).await {
        Ok(rows) => rows.iter().any(|r| {
            r.entry.request_id.as_deref() == Some(rid.as_str())
                && (r.entry.action.starts_with("power.") || r.entry.action == "bmc.reset")
        }),
        Err(_) => true,
    };
    match (ctx.step.kind, ctx.op) {
        (Kind::Power, Op::Power { action }) => {
            if !sent {
                return Found::NotStarted;
            }
            let before: BTreeSet<String> = intent
                .evidence
                .get("sel_ids")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            let now = sel_ids(ctx).await;
            let new_power_events: Vec<String> =
                now.clone().unwrap_or_default().into_iter().filter(|id| !before.contains(id)).collect();
            let want = PowerAction::from_str(action).map(PowerAction::target_state).ok();
            let sel = ctx.l.select_bmcs(&[ctx.target.to_owned()], &[], false);
            let power = match &sel {
                Ok(s) => ctx
                    .l
                    .power_status(s)
                    .await
                    .ok()
                    .and_then(|r| r.into_iter().next())
                    .and_then(|r| r.result.ok())
                    .map(|p| p.power),
                Err(_) => None,
            };
            let evidence = json!({ "power": power, "new_power_events": new_power_events, "request_id": rid });
            if now.is_some() && !new_power_events.is_empty() {
                if power == want {
                    return Found::Done(StepResult::ok(
                        format!(
                            "{} new power event(s) in the BMC's log since the attempt and power is {}",
                            new_power_events.len(),
                            power.map(|p| p.to_string()).unwrap_or_default()
                        ),
                        json!({ "confirmed": true, "power": power }),
                        evidence,
                    ));
                }
                // Half-way (off seen, not yet on): a Redfish BMC finishes its own PowerCycle, so wait for it
                // rather than act again. Over IPMI, Lifeline sends a cycle as Off then On itself: nobody will
                // send the On of a run whose process died, so go straight to finishing it below.
                let bmc_finishes = sel
                    .as_ref()
                    .ok()
                    .and_then(|s| s.bmcs.first())
                    .is_some_and(|b| b.target.protocol != lifeline_types::BmcProtocol::Ipmi);
                if let (Some(s), Some(w), true) = (sel.as_ref().ok(), want, bmc_finishes) {
                    let waited = ctx
                        .l
                        .wait_power(&s.bmcs[0], w, Duration::from_secs(120), Duration::from_millis(200))
                        .await;
                    if let Ok(w) = waited
                        && w.reached
                    {
                        return Found::Done(StepResult::ok(
                            "the action was under way; its end state was reached",
                            json!({ "confirmed": true, "power": w.observed }),
                            json!({ "wait": w, "before": evidence }),
                        ));
                    }
                }
            }
            // A cycle sent as off-then-on (IPMI) that was killed between the two: the off happened, the on did
            // not. Finishing it is powering on (idempotent), not cycling again.
            let before = intent
                .evidence
                .get("power")
                .and_then(|p| p.as_str())
                .and_then(|p| PowerState::from_str(p).ok());
            if action == "cycle"
                && power == Some(PowerState::Off)
                && before == Some(PowerState::On)
                && let Ok(s) = &sel
            {
                let finish = ctx.l.scoped(Some(format!("{request_base}-finish")));
                if let Ok(rows) = finish.power(s, PowerAction::On).await
                    && let Some(Ok(acted)) = rows.into_iter().next().map(|r| r.result)
                    && acted.confirmed()
                {
                    return Found::Done(StepResult::ok(
                        "the cycle had powered the node off when the run stopped; finished it with power on",
                        json!({ "confirmed": true, "power": "on" }),
                        json!({ "before": evidence, "finish": acted }),
                    ));
                }
            }
            if now.is_some()
                && new_power_events.is_empty()
                && power.is_some()
                && power
                    == intent
                        .evidence
                        .get("power")
                        .and_then(|p| p.as_str())
                        .and_then(|p| PowerState::from_str(p).ok())
                && !matches!(action.as_str(), "cycle" | "reset")
            {
                return Found::NotStarted;
            }
            Found::Unknown(format!(
                "power {action} on {} may or may not have been executed (power now {}, {} new power events): check the node, then `lifeline runbook approve {}` to run it again or `--skip` if it happened",
                ctx.target,
                power.map(|p| p.to_string()).unwrap_or_else(|| "unknown".into()),
                new_power_events.len(),
                ctx.run_id
            ))
        }
        (Kind::BmcReset, _) if !sent => Found::NotStarted,
        (Kind::Sel, _) => {
            let before: Vec<String> = intent
                .evidence
                .get("sel_keys")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            if !before.is_empty()
                && let Some(now) = crate::steps::sel_keys(ctx).await
                && !now.iter().any(|k| before.contains(k))
            {
                return Found::Done(StepResult::ok(
                    "the event log was cleared (none of its entries before the clear remain)",
                    json!({ "matched": false, "count": 0 }),
                    json!({ "entries_now": now.len(), "entries_before": before.len() }),
                ));
            }
            // A clear is visible: the log holds nothing but the clear's own entry afterwards.
            let sel = match ctx.l.select_bmcs(&[ctx.target.to_owned()], &[], false) {
                Ok(s) => s,
                Err(e) => return Found::Unknown(e.chain()),
            };
            match ctx
                .l
                .sel(&sel, 50)
                .await
                .ok()
                .and_then(|r| r.into_iter().next())
                .and_then(|r| r.result.ok())
            {
                Some(log)
                    if log.entries.len() <= 1
                        && log.entries.iter().all(|e| e.message.to_lowercase().contains("clear")) =>
                {
                    Found::Done(StepResult::ok(
                        "the event log is cleared",
                        json!({ "matched": false, "count": 0 }),
                        json!({ "entries": log.entries }),
                    ))
                }
                Some(_) => Found::NotStarted,
                None => Found::Unknown(format!(
                    "the event log of {} cannot be read to see whether it was cleared",
                    ctx.target
                )),
            }
        }
        _ => Found::Unknown(format!(
            "step `{}` ({}) was in flight when the run stopped and its effect cannot be read back: check {}, then `lifeline runbook approve {}` (run it again) or `--skip`",
            ctx.step.name,
            ctx.step.kind.as_str(),
            ctx.target,
            ctx.run_id
        )),
    }
}
