//! `--server URL`: `power`, `health` and `sweep` sent through a running `lifeline serve` (acting as the
//! token's user, audited there as `web:<user>`). Other verbs are refused with `--server` rather than
//! silently run locally.

use anyhow::anyhow;
use lifeline_server::client::{Client, ClientError};

use crate::args::{Command, Global, PowerVerb};
use crate::cmd::print_json;
use crate::exit::{CmdResult, Code, Exit};

fn exit_of(e: ClientError) -> Exit {
    let msg = anyhow!("{}", lifeline_engine::error_chain(&e));
    match &e {
        ClientError::Api { class, .. } => match class.as_str() {
            "usage" | "not-found" => Exit::usage(msg),
            "unavailable" => Exit::internal(msg),
            _ => Exit::failed(msg),
        },
        ClientError::NoToken { .. }
        | ClientError::NoFingerprint
        | ClientError::PlainHttp { .. }
        | ClientError::BadUrl { .. } => Exit::usage(msg),
        _ => Exit::internal(msg),
    }
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
            let v = if a.verb == PowerVerb::Status {
                c.get(&format!("/api/v1/power?targets={}", csv(&a.sel.targets))).await.map_err(exit_of)?
            } else {
                // The group route asks for the number of devices hit; --yes confirms whatever the targets
                // resolve to, as it does without --server. The count travels back, so the server acts only
                // if the targets still resolve to that many devices.
                let action = format!("{:?}", a.verb).to_lowercase();
                let body = |confirm: Option<usize>| serde_json::json!({ "targets": a.sel.targets, "action": action, "confirm": confirm });
                let rid = g.request_id.as_deref();
                match c.post("/api/v1/power", &body(None), None).await {
                    Err(ClientError::Api { class, confirm: Some(n), .. }) if class == "unconfirmed" => {
                        c.post("/api/v1/power", &body(Some(n)), rid).await.map_err(exit_of)?
                    }
                    Err(e) => return Err(exit_of(e)),
                    Ok(v) => v,
                }
            };
            let failing = v
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter(|r| {
                            r.get("error").is_some()
                                || r.get("confirmed") == Some(&serde_json::Value::Bool(false))
                        })
                        .count()
                })
                .unwrap_or(0);
            (v, failing)
        }
        Command::Health(a) => {
            let v =
                c.get(&format!("/api/v1/health?targets={}", csv(&a.sel.targets))).await.map_err(exit_of)?;
            let failing = v
                .as_array()
                .map(|a| a.iter().filter(|r| r.get("error").is_some() || r["health"] == "critical").count())
                .unwrap_or(0);
            (v, failing)
        }
        Command::Sweep(a) => {
            let v = c
                .post("/api/v1/sweep", &serde_json::json!({ "targets": a.sel.targets }), None)
                .await
                .map_err(exit_of)?;
            let failing = v["failing"].as_u64().unwrap_or(0) as usize;
            (v, failing)
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
            c.get(&format!("/api/v1/faults?limit={limit}{q}")).await
        }
        FaultCmd::Show { id } => c.get(&format!("/api/v1/faults/{id}")).await,
        FaultCmd::Ack { id } => {
            c.post(&format!("/api/v1/faults/{id}/ack"), &serde_json::json!({}), None).await
        }
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
    let v = match cmd {
        Command::Runbook(RunbookCmd::Approve { run, skip, .. }) => {
            c.post(&path(run, "/approve"), &serde_json::json!({ "skip": skip }), None).await
        }
        Command::Runbook(RunbookCmd::Abort { run }) => {
            c.post(&path(run, "/abort"), &serde_json::json!({}), None).await
        }
        Command::Runbook(RunbookCmd::Status { run: Some(run) }) => c.get(&path(run, "")).await,
        _ => return Err(Exit::usage(anyhow!("not a runbook verb that goes through a server"))),
    }
    .map_err(exit_of)?;
    if g.json {
        print_json(&v)?;
    } else {
        let field = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("?").to_owned();
        crate::outln!(
            "run {} — {} on {}: {}",
            field("run"),
            field("runbook"),
            field("target"),
            field("state")
        );
        if let Some(r) = v.get("reason").and_then(|x| x.as_str()) {
            crate::outln!("  {r}");
        }
    }
    Ok(Code::Ok)
}
