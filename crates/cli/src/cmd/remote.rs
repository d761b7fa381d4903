//! `--server URL`: `power`, `health` and `sweep` sent through a running `lifeline serve` (acting as the
//! token's user, audited there as `web:<user>`). Other verbs are refused with `--server` rather than
//! silently run locally. Answers are read as the API's own types (`lifeline_server::api::answers` and
//! `model`, the types its OpenAPI document describes); `--json` prints them as the server sent them. An
//! error's exit code comes from its class through the CLI's one table ([`crate::exit::code_of`]).

use anyhow::anyhow;
use lifeline_server::api::answers::{HealthRow, PowerAnswer, PowerRow, PowerStatusRow, RunRecord, Sweep};
use lifeline_server::api::model::Fault;
use lifeline_server::client::{Client, ClientError};

use crate::args::{Command, Global, PowerVerb};
use crate::cmd::print_json;
use crate::exit::{CmdResult, Code, Exit, code_of};

fn exit_of(e: ClientError) -> Exit {
    Exit { code: code_of(e.class()), error: Some(anyhow!("{}", lifeline_engine::error_chain(&e))) }
}

/// `None`: the verb does not go through a server (serve, user, token, fault, sim act locally).
pub async fn run(g: &Global, url: &str, cmd: &Command) -> Option<CmdResult> {
    use crate::cmd::runbook::RunbookCmd;
    match cmd {
        Command::Power(_) | Command::Health(_) | Command::Sweep(_) => {}
        Command::Runbook(
            RunbookCmd::Approve { .. } | RunbookCmd::Abort { .. } | RunbookCmd::Status { run: Some(_) },
        ) => {
            return Some(runbook(g, url, cmd).await);
        }
        // The server's fault records, not this machine's store.
        Command::Fault(f) => return Some(fault(g, url, f).await),
        Command::Serve(_) | Command::User(_) | Command::Token(_) | Command::Sim(_) => {
            return None;
        }
        _ => {
            return Some(Err(Exit::usage(anyhow!(
                "this verb does not support --server yet; run it without --server on the jump host"
            ))));
        }
    }
    Some(go(g, url, cmd).await)
}

fn csv(targets: &[String]) -> String {
    targets.join(",")
}

async fn go(g: &Global, url: &str, cmd: &Command) -> CmdResult {
    let c = Client::new(url).map_err(exit_of)?;
    let (out, failing) = match cmd {
        Command::Power(a) => {
            if !a.sel.bmc.is_empty() {
                return Err(Exit::usage(anyhow!("--bmc URL is not supported with --server")));
            }
            if a.verb != PowerVerb::Status && !a.yes {
                return Err(Exit::usage(anyhow!(
                    "power actions through --server need --yes (no prompt over the API)"
                )));
            }
            if a.verb == PowerVerb::Status {
                let (rows, v) = c
                    .get_typed::<Vec<PowerStatusRow>>(&format!(
                        "/api/v1/power?targets={}",
                        csv(&a.sel.targets)
                    ))
                    .await
                    .map_err(exit_of)?;
                let failing = rows.iter().filter(|r| matches!(r, PowerStatusRow::Failed(_))).count();
                (v, failing)
            } else {
                // The group route asks for the number of devices hit; --yes confirms whatever the targets
                // resolve to, as it does without --server. The count travels back, so the server acts only
                // if the targets still resolve to that many devices.
                let action = format!("{:?}", a.verb).to_lowercase();
                let body = |confirm: Option<usize>| serde_json::json!({ "targets": a.sel.targets, "action": action, "confirm": confirm });
                let rid = g.request_id.as_deref();
                let (rows, v) = match c.post_typed::<Vec<PowerRow>>("/api/v1/power", &body(None), None).await
                {
                    Err(ClientError::Api { class, confirm: Some(n), .. }) if class == "unconfirmed" => c
                        .post_typed::<Vec<PowerRow>>("/api/v1/power", &body(Some(n)), rid)
                        .await
                        .map_err(exit_of)?,
                    Err(e) => return Err(exit_of(e)),
                    Ok(answer) => answer,
                };
                (v, rows.iter().filter(|r| !power_done(r)).count())
            }
        }
        Command::Health(a) => {
            let (rows, v) = c
                .get_typed::<Vec<HealthRow>>(&format!("/api/v1/health?targets={}", csv(&a.sel.targets)))
                .await
                .map_err(exit_of)?;
            let failing = rows
                .iter()
                .filter(|r| match r {
                    HealthRow::Failed(_) => true,
                    HealthRow::Done(h) => h.health == lifeline_types::Health::Critical,
                })
                .count();
            (v, failing)
        }
        Command::Sweep(a) => {
            let (sweep, v) = c
                .post_typed::<Sweep>("/api/v1/sweep", &serde_json::json!({ "targets": a.sel.targets }), None)
                .await
                .map_err(exit_of)?;
            (v, sweep.failing)
        }
        _ => return Ok(Code::Usage),
    };
    if g.json {
        print_json(&out)?;
    } else {
        print_rows(&out)?;
    }
    Ok(if failing > 0 { Code::Failed } else { Code::Ok })
}

/// Whether a BMC's power action is done and confirmed (a replay recorded in another shape: its own
/// `confirmed`).
fn power_done(r: &PowerRow) -> bool {
    match r {
        PowerRow::Failed(_) => false,
        PowerRow::Done(PowerAnswer::Report(o)) => o.report.confirmed,
        PowerRow::Done(PowerAnswer::Recorded(v)) => {
            v.get("confirmed").and_then(serde_json::Value::as_bool).unwrap_or(false)
                || v.pointer("/outcome/confirmed").and_then(serde_json::Value::as_bool).unwrap_or(false)
        }
    }
}

/// Text for an answer when `--json` was not asked for: one line per row, its identifying and state fields.
fn print_rows(v: &serde_json::Value) -> Result<(), Exit> {
    let rows: Vec<&serde_json::Value> = match v {
        serde_json::Value::Array(a) => a.iter().collect(),
        serde_json::Value::Object(o) => match o.get("rows").and_then(|r| r.as_array()) {
            Some(a) => a.iter().collect(),
            None => vec![v],
        },
        other => vec![other],
    };
    for r in rows {
        let mut parts = Vec::new();
        for k in [
            "bmc", "name", "id", "kind", "device", "power", "health", "severity", "state", "message", "error",
        ] {
            match r.get(k) {
                Some(serde_json::Value::String(s)) => {
                    parts.push(if k == "bmc" || k == "name" { s.clone() } else { format!("{k}={s}") })
                }
                Some(x @ serde_json::Value::Number(_)) => parts.push(format!("{k}={x}")),
                _ => {}
            }
        }
        crate::outln!("{}", if parts.is_empty() { r.to_string() } else { parts.join("  ") });
    }
    Ok(())
}

/// `fault list|show|ack` against the server's records.
async fn fault(g: &Global, url: &str, f: &crate::cmd::server::FaultCmd) -> CmdResult {
    use crate::cmd::server::FaultCmd;
    let c = Client::new(url).map_err(exit_of)?;
    let v = match f {
        FaultCmd::List { state, limit } => {
            let q = state.as_ref().map(|s| format!("&state={s}")).unwrap_or_default();
            c.get_typed::<Vec<Fault>>(&format!("/api/v1/faults?limit={limit}{q}")).await.map(|(_, v)| v)
        }
        FaultCmd::Show { id } => c.get_typed::<Fault>(&format!("/api/v1/faults/{id}")).await.map(|(_, v)| v),
        FaultCmd::Ack { id } => c
            .post_typed::<Fault>(&format!("/api/v1/faults/{id}/ack"), &serde_json::json!({}), None)
            .await
            .map(|(_, v)| v),
        FaultCmd::Lemons { all } => c.get(&format!("/api/v1/lemons?all={all}")).await,
        FaultCmd::ReleaseLemon { .. } | FaultCmd::ProbationCheck(_) => {
            return Err(Exit::usage(anyhow::anyhow!(
                "`fault release-lemon` and `fault probation-check` act on the store: run them without --server"
            )));
        }
    }
    .map_err(exit_of)?;
    if g.json {
        print_json(&v)?;
    } else {
        print_rows(&v)?;
    }
    Ok(Code::Ok)
}

/// `runbook status RUN`, `approve RUN` and `abort RUN` through the server (where the run is driven: the
/// demo's hint from a second shell, an operator's laptop through the jump host's tunnel).
async fn runbook(g: &Global, url: &str, cmd: &Command) -> CmdResult {
    use crate::cmd::runbook::RunbookCmd;
    let c = Client::new(url).map_err(exit_of)?;
    let path = |run: &str, what: &str| format!("/api/v1/runs/{run}{what}");
    let (run, v) = match cmd {
        Command::Runbook(RunbookCmd::Approve { run, skip, .. }) => {
            c.post_typed::<RunRecord>(&path(run, "/approve"), &serde_json::json!({ "skip": skip }), None)
                .await
        }
        Command::Runbook(RunbookCmd::Abort { run }) => {
            c.post_typed::<RunRecord>(&path(run, "/abort"), &serde_json::json!({}), None).await
        }
        Command::Runbook(RunbookCmd::Status { run: Some(run) }) => {
            c.get_typed::<RunRecord>(&path(run, "")).await
        }
        _ => return Err(Exit::usage(anyhow!("not a runbook verb that goes through a server"))),
    }
    .map_err(exit_of)?;
    if g.json {
        print_json(&v)?;
    } else {
        crate::outln!("run {} — {} on {}: {}", run.run, run.runbook, run.target, run.state);
        if let Some(r) = &run.reason {
            crate::outln!("  {r}");
        }
    }
    Ok(Code::Ok)
}
