//! Each step kind over the engine's operations: what it does, what it records before acting (the state a
//! resume compares against), how its result is judged, and how a crashed attempt is recovered.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use lifeline_engine::ops::readmit::{ReportSource, schedulers};
use lifeline_engine::ops::wait::{SchedulerState, Waited, wait_slurm, wait_tcp};
use lifeline_engine::{Acted, Lifeline, error_chain};
use lifeline_inventory::Device;
use lifeline_types::{AuditAction, BmcProtocol, PowerAction, PowerState, StepState};
use serde_json::{Value, json};

use crate::cond::render;
use crate::exec::Env;
use crate::model::{Kind, Op, Runbook, Step, WaitWhat};

/// What a step runs with.
pub(crate) struct StepCtx<'a> {
    pub l: &'a Lifeline,
    pub env: &'a Env,
    pub rb: &'a Runbook,
    pub step: &'a Step,
    pub op: &'a Op,
    pub target: &'a str,
    pub run_id: &'a str,
    /// When the step before this one started, in this process (`None` after a resume): a console wait
    /// counts the output printed since then, so a prompt printed while it attached is not missed.
    pub since: Option<std::time::Instant>,
}

/// How a step ended.
#[derive(Debug, Clone)]
pub(crate) struct StepResult {
    pub ok: bool,
    pub timed_out: bool,
    pub message: String,
    /// What `when` conditions can refer to.
    pub outputs: Value,
    /// What the decision rests on (reports, transcripts, replies), kept in the journal with its digest.
    pub evidence: Value,
}

impl StepResult {
    pub(crate) fn ok(message: impl Into<String>, outputs: Value, evidence: Value) -> Self {
        StepResult { ok: true, timed_out: false, message: message.into(), outputs, evidence }
    }

    pub(crate) fn failed(message: impl Into<String>, outputs: Value, evidence: Value) -> Self {
        StepResult { ok: false, timed_out: false, message: message.into(), outputs, evidence }
    }

    pub(crate) fn error(message: impl Into<String>) -> Self {
        Self::failed(message, json!({}), json!({}))
    }

    pub fn timeout(d: Duration) -> Self {
        StepResult {
            ok: false,
            timed_out: true,
            message: format!("did not finish within {}", humantime::format_duration(d)),
            outputs: json!({}),
            evidence: json!({}),
        }
    }

    pub fn ok_by_operator(who: &str) -> Self {
        Self::ok(format!("marked done by {who} (approval: skip)"), json!({}), json!({ "approved_by": who }))
    }

    /// The step state its outcome row records (the word the run's view folds back).
    pub fn state(&self) -> &'static str {
        if self.ok {
            StepState::Ok
        } else if self.timed_out {
            StepState::Timeout
        } else {
            StepState::Failed
        }
        .as_str()
    }
}

/// Renders every template of an operation.
pub(crate) fn resolve(op: &Op, vars: &BTreeMap<String, String>) -> Result<Op, String> {
    let r = |s: &String| render(s, vars);
    let ro = |s: &Option<String>| s.as_ref().map(|s| render(s, vars)).transpose();
    Ok(match op {
        Op::Power { action } => Op::Power { action: r(action)? },
        Op::BmcReset { protocol } => Op::BmcReset { protocol: ro(protocol)? },
        Op::WaitFor { what, value, node, interval, pattern } => Op::WaitFor {
            what: *what,
            value: r(value)?,
            node: ro(node)?,
            interval: interval.clone(),
            pattern: pattern.clone(),
        },
        Op::Console { rescue, bootloader_wait, script } => Op::Console {
            rescue: ro(rescue)?,
            bootloader_wait: bootloader_wait.clone(),
            script: script.iter().map(|st| console_step(st, &r)).collect::<Result<_, _>>()?,
        },
        Op::Sel { pattern, clear, newest } => {
            Op::Sel { pattern: ro(pattern)?, clear: *clear, newest: *newest }
        }
        Op::Backup { switch } => Op::Backup { switch: ro(switch)? },
        Op::Restore { switch, version, to, compare_only, require_equal, allow_scrubbed } => Op::Restore {
            require_equal: *require_equal,
            switch: ro(switch)?,
            version: ro(version)?,
            to: ro(to)?,
            compare_only: *compare_only,
            allow_scrubbed: *allow_scrubbed,
        },
        Op::Drain { reason } => Op::Drain { reason: r(reason)? },
        Op::Verify => Op::Verify,
        Op::Readmit => Op::Readmit,
        Op::Notify { url, message } => Op::Notify { url: r(url)?, message: r(message)? },
        Op::Media { action, image, served_image, boot_once } => Op::Media {
            action: r(action)?,
            image: ro(image)?,
            served_image: ro(served_image)?,
            boot_once: *boot_once,
        },
        Op::Exec { command } => Op::Exec { command: command.iter().map(r).collect::<Result<_, _>>()? },
        Op::FaultCleared { fault } => Op::FaultCleared { fault: ro(fault)? },
        Op::SshBanner { ssh, expect, interval } => {
            Op::SshBanner { ssh: r(ssh)?, expect: r(expect)?, interval: ro(interval)? }
        }
    })
}

/// Renders the templates of one console script step (text sent, patterns expected).
fn console_step(
    st: &lifeline_console::Step,
    r: &impl Fn(&String) -> Result<String, String>,
) -> Result<lifeline_console::Step, String> {
    use lifeline_console::Step as S;
    Ok(match st {
        S::Expect { pattern, on, timeout_ms } => {
            S::Expect { pattern: r(pattern)?, on: *on, timeout_ms: *timeout_ms }
        }
        S::Send { text } => S::Send { text: r(text)? },
        other => other.clone(),
    })
}

pub(crate) fn device(ctx: &StepCtx<'_>) -> Result<Device, String> {
    let inv = ctx.l.inventory().map_err(|e| e.chain())?;
    inv.device(ctx.target).cloned().ok_or_else(|| format!("no device `{}` in the inventory", ctx.target))
}

fn secs(s: &Option<String>, default: Duration) -> Duration {
    s.as_deref().and_then(|s| humantime::parse_duration(s).ok()).unwrap_or(default)
}

/// The state recorded with a step's intent: what a resume compares against to find out whether an action
/// whose outcome is unknown took effect.
pub(crate) async fn pre_state(ctx: &StepCtx<'_>) -> Value {
    match ctx.step.kind {
        Kind::Power | Kind::BmcReset => {
            let Ok(sel) = ctx.l.select_bmcs(&[ctx.target.to_owned()], &[], false) else { return json!({}) };
            let power = ctx
                .l
                .power_status(&sel)
                .await
                .ok()
                .and_then(|r| r.into_iter().next())
                .and_then(|r| r.result.ok())
                .map(|p| p.power.to_string());
            let events = sel_ids(ctx).await;
            json!({ "power": power, "sel_ids": events })
        }
        // Every entry before a clear: after a crash, a log that keeps none of them was cleared, even when
        // new entries arrived since (the clear's own record, a power event).
        Kind::Sel => json!({ "sel_keys": sel_keys(ctx).await }),
        _ => json!({}),
    }
}

/// `id|message` of every entry of the target's event log (`None` when it cannot be read).
pub(crate) async fn sel_keys(ctx: &StepCtx<'_>) -> Option<Vec<String>> {
    let sel = ctx.l.select_bmcs(&[ctx.target.to_owned()], &[], false).ok()?;
    let rows = ctx.l.sel(&sel, 1000).await.ok()?;
    let log = rows.into_iter().next()?.result.ok()?;
    Some(log.entries.iter().map(|e| format!("{}|{}", e.id, e.message)).collect())
}

pub(crate) async fn sel_ids(ctx: &StepCtx<'_>) -> Option<Vec<String>> {
    let sel = ctx.l.select_bmcs(&[ctx.target.to_owned()], &[], false).ok()?;
    let rows = ctx.l.sel(&sel, 50).await.ok()?;
    let log = rows.into_iter().next()?.result.ok()?;
    Some(
        log.entries
            .iter()
            .filter(|e| e.message.to_lowercase().contains("power"))
            .map(|e| e.id.clone())
            .collect(),
    )
}

/// Runs one attempt.
pub(crate) async fn run(ctx: &StepCtx<'_>, request_base: &str) -> StepResult {
    let l = ctx.l.scoped(Some(request_base.to_owned()));
    let target = [ctx.target.to_owned()];
    match ctx.op {
        Op::Power { action } => {
            let Ok(action) = PowerAction::from_str(action) else {
                return StepResult::error(format!("unknown power action `{action}`"));
            };
            let sel = match l.select_bmcs(&target, &[], false) {
                Ok(s) => s,
                Err(e) => return StepResult::error(e.chain()),
            };
            match l.power(&sel, action).await {
                Ok(rows) => match rows.into_iter().next().map(|r| r.result) {
                    Some(Ok(acted)) => {
                        let ev = serde_json::to_value(&acted).unwrap_or_default();
                        let confirmed = acted.confirmed();
                        let observed = ev.get("observed").cloned().unwrap_or_default();
                        let out = json!({ "confirmed": confirmed, "power": observed });
                        if confirmed {
                            StepResult::ok(format!("power {action} confirmed"), out, ev)
                        } else {
                            StepResult::failed(
                                format!("power {action} not confirmed (observed {observed})"),
                                out,
                                ev,
                            )
                        }
                    }
                    Some(Err(e)) => StepResult::error(e.chain()),
                    None => StepResult::error("no BMC"),
                },
                Err(e) => StepResult::error(e.chain()),
            }
        }
        Op::BmcReset { protocol } => {
            // `protocol = "ipmi"`: the other door when Redfish is what broke; `redfish`: Manager.Reset;
            // unset: the BMC's own protocol.
            let protocol = match protocol.as_deref() {
                None => None,
                Some(p) => match lifeline_types::BmcProtocol::from_str(p) {
                    Ok(p) => Some(p),
                    Err(_) => return StepResult::error(format!("unknown protocol `{p}` (ipmi or redfish)")),
                },
            };
            let sel = match l.select_bmcs(&target, &[], false) {
                Ok(s) => s,
                Err(e) => return StepResult::error(e.chain()),
            };
            let wait = ctx.step.timeout.saturating_sub(Duration::from_secs(15)).max(Duration::from_secs(1));
            let args = lifeline_engine::ops::bmc_reset::BmcResetArgs { warm: false, protocol, wait };
            match l.bmc_reset_one(&sel.bmcs[0], args).await {
                Ok(acted) => {
                    let ev = serde_json::to_value(&acted).unwrap_or_default();
                    let answering = ev.get("answering").and_then(Value::as_bool).unwrap_or(false);
                    let out = json!({ "answering": answering, "protocol": ev.get("protocol").cloned().unwrap_or_default() });
                    if answering {
                        StepResult::ok("BMC reset; it answers again", out, ev)
                    } else {
                        StepResult::failed("BMC reset sent; it has not answered since", out, ev)
                    }
                }
                Err(e) => StepResult::error(e.chain()),
            }
        }
        Op::WaitFor { what: WaitWhat::Boot, pattern, interval, .. } => {
            let pattern = pattern.as_deref().unwrap_or(crate::model::LOGIN_PROMPT);
            crate::post::wait_boot(ctx, &l, pattern, secs(interval, Duration::from_secs(2))).await
        }
        Op::WaitFor { what, value, node, interval, .. } => {
            wait_for(ctx, &l, *what, value, node.as_deref(), secs(interval, Duration::from_secs(2))).await
        }
        Op::FaultCleared { fault } => crate::post::fault_cleared(ctx, &l, fault.as_deref()).await,
        Op::SshBanner { ssh, expect, interval } => {
            crate::ssh_banner::check(ctx, ssh, expect, secs(interval, Duration::from_secs(2))).await
        }
        Op::Console { rescue: None, script, .. } => match l.console_script(ctx.target, script, true).await {
            Ok(r) => {
                let ev = serde_json::to_value(&r).unwrap_or_default();
                if r.outcome == "ok" {
                    StepResult::ok(
                        format!("console script: {} steps done", r.steps),
                        json!({ "done": true }),
                        ev,
                    )
                } else {
                    StepResult::failed(
                        format!(
                            "console script stopped at step {}: {}",
                            r.failed_step.map(|i| i + 1).unwrap_or_default(),
                            r.error.clone().unwrap_or_default()
                        ),
                        json!({ "done": false, "failed-step": r.failed_step }),
                        ev,
                    )
                }
            }
            Err(e) => StepResult::error(e.chain()),
        },
        Op::Console { rescue: Some(rescue), bootloader_wait, .. } => {
            let Ok(bl) = serde_json::from_value::<lifeline_console::Bootloader>(json!(rescue)) else {
                return StepResult::error(format!("unknown bootloader `{rescue}`"));
            };
            let wait = secs(bootloader_wait, Duration::from_secs(300));
            match l.console_rescue(ctx.target, bl, true, wait).await {
                Ok(r) => {
                    let ev = json!({ "transcript": r.transcript, "prompt": r.prompt, "attempts": r.attempts, "error": r.error });
                    if r.outcome == "ok" {
                        StepResult::ok(
                            format!("rescue shell reached ({})", r.prompt.unwrap_or_default()),
                            json!({ "rescued": true }),
                            ev,
                        )
                    } else {
                        StepResult::failed(
                            format!("rescue failed: {}", r.error.unwrap_or_default()),
                            json!({ "rescued": false }),
                            ev,
                        )
                    }
                }
                Err(e) => StepResult::error(e.chain()),
            }
        }
        Op::Sel { pattern, clear, newest } => {
            let sel = match l.select_bmcs(&target, &[], false) {
                Ok(s) => s,
                Err(e) => return StepResult::error(e.chain()),
            };
            let log = match l.sel(&sel, *newest).await.map(|r| r.into_iter().next().map(|r| r.result)) {
                Ok(Some(Ok(log))) => log,
                Ok(Some(Err(e))) | Err(e) => return StepResult::error(e.chain()),
                Ok(None) => return StepResult::error("no BMC"),
            };
            let re = pattern.as_deref().and_then(|p| regex::Regex::new(p).ok());
            let matched: Vec<String> = log
                .entries
                .iter()
                .filter(|e| re.as_ref().is_none_or(|r| r.is_match(&e.message)))
                .map(|e| e.message.clone())
                .collect();
            let ev = json!({ "entries": log.entries, "matched": matched });
            if *clear && let Err(e) = l.sel_clear(&sel).await {
                return StepResult::failed(
                    format!("clearing the SEL failed: {}", e.chain()),
                    json!({ "matched": !matched.is_empty() }),
                    ev,
                );
            }
            StepResult::ok(
                format!("{} of {} entries match", matched.len(), log.entries.len()),
                json!({ "matched": !matched.is_empty(), "count": matched.len() }),
                ev,
            )
        }
        Op::Backup { switch } => {
            let t = match l.switch(switch.as_deref().unwrap_or(ctx.target)) {
                Ok(t) => t,
                Err(e) => return StepResult::error(e.chain()),
            };
            match l
                .backup_run(vec![t], &Default::default(), |_| {})
                .await
                .map(|r| r.into_iter().next().map(|r| r.result))
            {
                Ok(Some(Ok(acted))) => {
                    let ev = serde_json::to_value(&acted).unwrap_or_default();
                    let version = ev.pointer("/detail/version").cloned().unwrap_or_default();
                    StepResult::ok(
                        format!("backed up as version {version}"),
                        json!({ "version": version, "changed": ev.get("outcome") == Some(&json!("ok")) }),
                        ev,
                    )
                }
                Ok(Some(Err(e))) | Err(e) => StepResult::error(e.chain()),
                Ok(None) => StepResult::error("no switch"),
            }
        }
        Op::Restore { switch, version, to, compare_only, require_equal, allow_scrubbed } => {
            let v = version.as_deref().and_then(|v| v.parse::<u32>().ok());
            match l
                .backup_restore(
                    switch.as_deref().unwrap_or(ctx.target),
                    v,
                    to.as_deref(),
                    *compare_only,
                    *allow_scrubbed,
                )
                .await
            {
                Ok(acted) => {
                    let ev = serde_json::to_value(&acted).unwrap_or_default();
                    let drifted =
                        ev.get("diff").and_then(|d| d.as_str()).is_some_and(|d| !d.trim().is_empty());
                    let verified = ev.get("verified").and_then(Value::as_bool).unwrap_or(false);
                    let out =
                        json!({ "drifted": drifted, "verified": verified, "version": ev.get("version") });
                    if *compare_only && *require_equal && drifted {
                        StepResult::failed("the running config differs from the backup", out, ev)
                    } else if *compare_only {
                        StepResult::ok(
                            if drifted {
                                "the running config differs from the backup"
                            } else {
                                "the running config equals the backup"
                            },
                            out,
                            ev,
                        )
                    } else if verified || matches!(acted, Acted::Replayed { .. }) {
                        StepResult::ok(
                            "restored and verified: the running config equals the version",
                            out,
                            ev,
                        )
                    } else {
                        StepResult::failed(
                            "restored but the running config does not equal the version",
                            out,
                            ev,
                        )
                    }
                }
                Err(e) => StepResult::error(e.chain()),
            }
        }
        Op::Drain { reason } => {
            let d = match device(ctx) {
                Ok(d) => d,
                Err(e) => return StepResult::error(e),
            };
            let s = match schedulers(&ctx.env.schedulers).await {
                Ok(s) => s,
                Err(e) => return StepResult::error(e.chain()),
            };
            match l.drain(&[d], reason, &s).await.map(|r| r.into_iter().next().map(|r| r.result)) {
                Ok(Some(Ok(dr))) => {
                    let ev = serde_json::to_value(&dr).unwrap_or_default();
                    let foreign = dr
                        .decisions
                        .iter()
                        .any(|d| matches!(d.outcome, lifeline_readmit::Outcome::RefusedForeignHold { .. }));
                    if foreign || !dr.errors.iter().all(|e| e.starts_with("already done")) {
                        StepResult::failed(
                            format!("drain: {}", dr.errors.join("; ")),
                            json!({ "drained": false }),
                            ev,
                        )
                    } else {
                        StepResult::ok("drained with Lifeline's mark", json!({ "drained": true }), ev)
                    }
                }
                Ok(Some(Err(e))) | Err(e) => StepResult::error(e.chain()),
                Ok(None) => StepResult::error("no node"),
            }
        }
        Op::Verify | Op::Readmit => verify(ctx, &l, matches!(ctx.op, Op::Readmit)).await,
        Op::Notify { url, message } => {
            let body = json!({ "runbook": ctx.rb.name, "run": ctx.run_id, "target": ctx.target, "message": message });
            match lifeline_engine::ops::notify::deliver(
                url,
                &body,
                Duration::from_secs(10),
                lifeline_engine::ops::notify::TRIES,
            )
            .await
            {
                Ok(status) => StepResult::ok(
                    format!("webhook answered {status}"),
                    json!({ "status": status }),
                    json!({ "url": url, "body": body, "status": status }),
                ),
                Err(e) => StepResult::error(e.chain()),
            }
        }
        Op::Exec { command } => exec(ctx, command).await,
        Op::Media { action, image, served_image, boot_once } => {
            let image = match (image, served_image) {
                (Some(url), _) => Some(crate::media_step::Image::Url(url)),
                (None, Some(name)) => Some(crate::media_step::Image::Served(name)),
                (None, None) => None,
            };
            // Boxed: the media operations' futures are large, and this match's future is held on a worker's stack.
            Box::pin(crate::media_step::run(&l, ctx.target, action, image, *boot_once)).await
        }
    }
}

async fn wait_for(
    ctx: &StepCtx<'_>,
    l: &Lifeline,
    what: WaitWhat,
    value: &str,
    node: Option<&str>,
    interval: Duration,
) -> StepResult {
    // Leave a little of the step's time for the journal: the wait reports what it saw instead of being cut.
    let timeout = ctx.step.timeout.saturating_sub(Duration::from_millis(500)).max(Duration::from_millis(100));
    let waited: Result<Vec<Waited>, String> = async {
        match what {
            WaitWhat::Boot => Err("a boot wait is run by `post::wait_boot`".to_owned()),
            WaitWhat::Power => {
                let want = PowerState::from_str(value).map_err(|e| e.to_string())?;
                let sel = l.select_bmcs(&[ctx.target.to_owned()], &[], false).map_err(|e| e.chain())?;
                Ok(vec![l.wait_power(&sel.bmcs[0], want, timeout, interval).await.map_err(|e| e.chain())?])
            }
            WaitWhat::Bmc => {
                let sel = l.select_bmcs(&[ctx.target.to_owned()], &[], false).map_err(|e| e.chain())?;
                let protos: Vec<Option<BmcProtocol>> = match value {
                    "redfish" => vec![Some(BmcProtocol::Redfish)],
                    "ipmi" => vec![Some(BmcProtocol::Ipmi)],
                    "both" => vec![Some(BmcProtocol::Redfish), Some(BmcProtocol::Ipmi)],
                    _ => vec![None],
                };
                let mut out = Vec::new();
                for p in protos {
                    out.push(l.wait_bmc(&sel.bmcs[0], p, timeout, interval).await.map_err(|e| e.chain())?);
                }
                Ok(out)
            }
            WaitWhat::Tcp | WaitWhat::Ssh => {
                let d = device(ctx)?;
                let addr = address(&d, value, what == WaitWhat::Ssh)?;
                Ok(vec![
                    wait_tcp(&addr, what == WaitWhat::Ssh, timeout, interval).await.map_err(|e| e.chain())?,
                ])
            }
            WaitWhat::Console => {
                let w = l.console_wait(ctx.target, value, timeout, ctx.since).await.map_err(|e| e.chain())?;
                let observed = match &w.matched {
                    Some(m) => format!("matched `{m}`"),
                    None => format!("last line `{}`", w.last_line.trim()),
                };
                Ok(vec![Waited {
                    what: format!("console /{value}/"),
                    reached: w.reached,
                    observed,
                    waited_ms: w.waited_ms,
                    polls: 1,
                }])
            }
            WaitWhat::Scheduler => {
                let conf = ctx
                    .env
                    .schedulers
                    .slurm_conf
                    .as_ref()
                    .ok_or("no Slurm configuration (--slurm-conf / SLURM_CONF)")?;
                let want: SchedulerState = serde_json::from_value(json!(value))
                    .map_err(|_| format!("unknown scheduler state `{value}`"))?;
                Ok(vec![
                    wait_slurm(conf, node.unwrap_or(ctx.target), want, timeout, interval)
                        .await
                        .map_err(|e| e.chain())?,
                ])
            }
        }
    }
    .await;
    match waited {
        Ok(w) => {
            let reached = w.iter().all(|w| w.reached);
            let msg = w
                .iter()
                .map(|w| {
                    format!(
                        "{}: {} ({})",
                        w.what,
                        if w.reached { "reached" } else { "not reached" },
                        w.observed
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            let ev = json!({ "waits": w });
            if reached {
                StepResult::ok(msg, json!({ "reached": true }), ev)
            } else {
                StepResult::failed(msg, json!({ "reached": false }), ev)
            }
        }
        Err(e) => StepResult::error(e),
    }
}

/// `frontend`, `frontend:22`, `management:22` or `HOST:PORT`.
pub(crate) fn address(d: &Device, value: &str, ssh: bool) -> Result<String, String> {
    let (host, port) = match value.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (h, p.to_owned()),
        // `management` alone: the port the inventory gives for the switch's management SSH.
        _ if value == "management" => {
            let port = d.management.as_ref().and_then(|m| m.port).unwrap_or(22);
            (value, port.to_string())
        }
        _ => (value, if ssh { "22".to_owned() } else { return Err(format!("`{value}`: no port")) }),
    };
    let host = match host {
        "frontend" => d
            .frontend
            .as_ref()
            .and_then(|f| f.address.as_ref())
            .map(ToString::to_string)
            .ok_or_else(|| format!("`{}` has no frontend address", d.name))?,
        "management" => d
            .management
            .as_ref()
            .map(|m| m.address.to_string())
            .ok_or_else(|| format!("`{}` has no management address", d.name))?,
        other => other.to_owned(),
    };
    Ok(format!("{host}:{port}"))
}

pub(crate) async fn verify(ctx: &StepCtx<'_>, l: &Lifeline, readmit: bool) -> StepResult {
    let d = match device(ctx) {
        Ok(d) => d,
        Err(e) => return StepResult::error(e),
    };
    let source = ctx.env.reports.clone().unwrap_or(ReportSource::Ssh {
        command: "lifeline-agent check --policy /dev/stdin --json".into(),
        options: Vec::new(),
    });
    let scheds = if readmit {
        match schedulers(&ctx.env.schedulers).await {
            Ok(s) => Some(s),
            Err(e) => return StepResult::error(e.chain()),
        }
    } else {
        None
    };
    match l.verify(&[d], &source, scheds.as_ref()).await.map(|r| r.into_iter().next().map(|r| r.result)) {
        Ok(Some(Ok(v))) => {
            let ev = serde_json::to_value(&v).unwrap_or_default();
            let out = json!({ "passed": v.passed(), "verdict": v.verdict, "digest": v.digest, "readmitted": v.readmitted });
            let msg = match (&v.error, readmit) {
                (Some(e), _) => format!("no report: {e}"),
                (None, false) => format!("{}: {}", v.verdict.as_str(), v.summary),
                (None, true) if v.readmitted => {
                    format!("re-admitted ({})", v.digest.clone().unwrap_or_default())
                }
                (None, true) => format!("not re-admitted: {} {}", v.summary, v.errors.join("; ")),
            };
            if (readmit && v.readmitted) || (!readmit && v.passed()) {
                StepResult::ok(msg, out, ev)
            } else {
                StepResult::failed(msg, out, ev)
            }
        }
        Ok(Some(Err(e))) | Err(e) => StepResult::error(e.chain()),
        Ok(None) => StepResult::error("no node"),
    }
}

async fn exec(ctx: &StepCtx<'_>, command: &[String]) -> StepResult {
    if !ctx.l.config.config.runbooks.exec_allowed.iter().any(|n| n == &ctx.rb.name) {
        return StepResult::error(format!(
            "`exec` steps run only in runbooks an administrator lists in [runbooks] exec-allowed; `{}` is not listed",
            ctx.rb.name
        ));
    }
    let out = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .env("LIFELINE_RUNBOOK_RUN", ctx.run_id)
        .env("LIFELINE_RUNBOOK_TARGET", ctx.target)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await;
    match out {
        Ok(o) => {
            let ev = json!({ "command": command, "status": o.status.code(), "stdout": String::from_utf8_lossy(&o.stdout), "stderr": String::from_utf8_lossy(&o.stderr) });
            if o.status.success() {
                StepResult::ok("exited 0", json!({ "status": 0 }), ev)
            } else {
                StepResult::failed(
                    format!("exited {:?}", o.status.code()),
                    json!({ "status": o.status.code() }),
                    ev,
                )
            }
        }
        Err(e) => StepResult::error(format!("starting {}: {}", command[0], error_chain(&e))),
    }
}

/// Keeps the node out of service and marks it needs-human with the evidence (best effort: each part that
/// fails is logged; the run ends `escalated` either way).
pub(crate) async fn escalate(ctx: &StepCtx<'_>, why: &str, evidence: &Value) {
    let l = ctx.l;
    if let Ok(d) = device(ctx)
        && d.role == lifeline_types::Role::GpuNode
        && (ctx.env.schedulers.slurm_conf.is_some()
            || ctx.env.schedulers.kube
            || ctx.env.schedulers.kube_url.is_some())
        && let Ok(s) = schedulers(&ctx.env.schedulers).await
    {
        let scoped = l.scoped(Some(format!("runbook:{}/escalate", ctx.run_id)));
        if let Err(e) =
            scoped.drain(&[d], &format!("needs-human: runbook {} run {}", ctx.rb.name, ctx.run_id), &s).await
        {
            tracing::warn!(target = ctx.target, "escalation: keeping the node drained failed: {}", e.chain());
        }
    }
    let mark = json!({ "needs_human": true, "run": ctx.run_id, "runbook": ctx.rb.name, "reason": why, "evidence_digest": evidence.get("digest") });
    if let Err(e) = l.record_observation(ctx.target, "needs-human", &mark).await {
        tracing::warn!(target = ctx.target, "escalation: the needs-human mark was not stored: {}", e.chain());
    }
    if let Ok(audit) = l.audit().await {
        let _ = audit
            .record(
                AuditAction::RunbookEscalate,
                ctx.target,
                lifeline_engine::Outcome::Refused,
                Some(ctx.run_id),
                json!({ "reason": why, "evidence": evidence }),
            )
            .await;
    }
}
