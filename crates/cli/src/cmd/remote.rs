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
    match cmd {
        Command::Power(_) | Command::Health(_) | Command::Sweep(_) => {}
        Command::Serve(_) | Command::User(_) | Command::Token(_) | Command::Fault(_) | Command::Sim(_) => {
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
    print_json(&out)?;
    Ok(if failing > 0 { Code::Failed } else { Code::Ok })
}
