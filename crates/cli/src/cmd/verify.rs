//! `lifeline verify` and `lifeline drain`: the end of the recovery loop. A node goes back to training only
//! with a passing agent report in hand, and only out of a drain Lifeline itself set; every decision is
//! audited with the digest of the report that justified it.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, anyhow};
use lifeline_inventory::Device;
use lifeline_readmit::{Decision, Justification, Outcome};
use lifeline_store::{AuditEntry, Store};
use lifeline_verify::{GpuSource, Options, Policy, Report, Roots, Verdict};
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::args::{DrainArgs, Global, SchedulerArgs, VerifyArgs};
use crate::cmd::{actor, inventory, print_json};
use crate::config::open_store;
use crate::exit::{CmdResult, Code, Exit};

/// Where re-admission decisions go.
struct Schedulers {
    slurm: Option<lifeline_readmit::slurm::Slurm>,
    kube: Option<lifeline_readmit::kube::Kube>,
}

async fn schedulers(s: &SchedulerArgs) -> Result<Schedulers, Exit> {
    if let Some(c) = &s.slurm_conf
        && !c.is_file()
    {
        return Err(Exit::usage(anyhow!(
            "Slurm config {} does not exist (--slurm-conf / SLURM_CONF)",
            c.display()
        )));
    }
    let slurm = s
        .slurm_conf
        .as_ref()
        .map(|c| lifeline_readmit::slurm::Slurm::new(lifeline_readmit::slurm::SlurmConfig::new(c)));
    let kube = if s.kube || s.kube_url.is_some() {
        lifeline_readmit::kube::ensure_crypto_provider();
        Some(match &s.kube_url {
            Some(u) => {
                lifeline_readmit::kube::Kube::from_url(u, Duration::from_secs(10)).map_err(Exit::usage)?
            }
            None => {
                let client = kube::Client::try_default()
                    .await
                    .map_err(|e| Exit::usage(anyhow!("kubernetes client: {e}")))?;
                lifeline_readmit::kube::Kube::new(client, Duration::from_secs(10))
            }
        })
    } else {
        None
    };
    if slurm.is_none() && kube.is_none() {
        return Err(Exit::usage(anyhow!(
            "no scheduler: pass --slurm-conf FILE (or set SLURM_CONF) and/or --kube / --kube-url URL"
        )));
    }
    Ok(Schedulers { slurm, kube })
}

async fn audit_decision(store: &Store, d: &Decision) -> Result<(), Exit> {
    let outcome = match &d.outcome {
        Outcome::Done => "ok",
        Outcome::AlreadyDone => "unchanged",
        _ => "refused",
    };
    store
        .audit(&AuditEntry {
            actor: actor(),
            action: format!("readmit.{}", serde_json::to_value(d.action)?.as_str().unwrap_or("?")),
            target: d.node.clone(),
            outcome: outcome.into(),
            detail: json!(d),
            request_id: None,
        })
        .await?;
    Ok(())
}

fn gpu_nodes<'a>(
    inv: &'a lifeline_inventory::Inventory,
    targets: &[String],
) -> Result<Vec<&'a Device>, Exit> {
    let devices = lifeline_inventory::select(inv, targets).map_err(Exit::usage)?;
    let nodes: Vec<&Device> =
        devices.into_iter().filter(|d| d.role == lifeline_types::Role::GpuNode).collect();
    if nodes.is_empty() {
        return Err(Exit::usage(anyhow!("no GPU node among the targets")));
    }
    Ok(nodes)
}

/// Gets one node's report from the chosen source.
async fn report_for(
    inv: &lifeline_inventory::Inventory,
    d: &Device,
    a: &VerifyArgs,
    single: bool,
) -> anyhow::Result<Report> {
    let name = d.name.to_string();
    let policy = Policy::from_inventory(inv, &name).with_context(|| format!("policy for `{name}`"))?;
    if let Some(dir) = &a.node_state {
        let tree = dir.join(&name);
        if !tree.is_dir() {
            anyhow::bail!("{}: no exported state for `{name}`", tree.display());
        }
        let opts = Options {
            roots: Roots::for_tree(&tree),
            gpu: GpuSource::Snapshot(tree.join("gpus.json")),
            interval: a.interval_ms.map(Duration::from_millis),
            node: Some(name.clone()),
            verbs: false,
        };
        return tokio::task::spawn_blocking(move || lifeline_verify::run(&policy, &opts))
            .await
            .context("check task");
    }
    let text = if let Some(path) = &a.reports {
        let file = if path.is_dir() {
            path.join(format!("{name}.json"))
        } else if single {
            path.clone()
        } else {
            anyhow::bail!(
                "--reports {} is a file but several nodes were selected; give a directory",
                path.display()
            )
        };
        tokio::fs::read_to_string(&file)
            .await
            .with_context(|| format!("reading report {}", file.display()))?
    } else {
        run_agent_over_ssh(d, &policy, &a.agent_command, &a.ssh_option).await?
    };
    let report = Report::from_json(&text).with_context(|| format!("report for `{name}`"))?;
    if report.node != name {
        anyhow::bail!("the report is for node `{}`, not `{name}`", report.node);
    }
    Ok(report)
}

/// Runs the agent with OpenSSH on the node's frontend address (the operator's keys, config and known_hosts
/// apply, as for any ssh), sending the policy on stdin.
async fn run_agent_over_ssh(
    d: &Device,
    policy: &Policy,
    command: &str,
    extra: &[String],
) -> anyhow::Result<String> {
    let fe = d.frontend.as_ref().and_then(|f| f.address.as_ref()).ok_or_else(|| {
        anyhow!(
            "`{}` has no frontend address in the inventory: cannot reach its agent over SSH (use --reports)",
            d.name
        )
    })?;
    let user = d.frontend.as_ref().and_then(|f| f.ssh_user.clone());
    let dest = match user {
        Some(u) => format!("{u}@{fe}"),
        None => fe.to_string(),
    };
    let policy_toml = toml::to_string(policy).context("serialising the policy")?;
    let mut child = tokio::process::Command::new("ssh")
        .args(extra)
        .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", &dest, command])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting ssh")?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(policy_toml.as_bytes()).await.context("sending the policy")?;
    }
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .map_err(|_| anyhow!("agent on `{}` did not finish within 120 s", d.name))?
        .context("waiting for ssh")?;
    // The agent exits 1 on a failing report; that is still a report.
    match out.status.code() {
        Some(0..=2) if !out.stdout.is_empty() => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        code => Err(anyhow!(
            "agent on `{}` over ssh to {dest} exited with {code:?}: {}",
            d.name,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// `done`, `already done`, `refused: held by "admin: bad DIMM"`, … for people.
fn outcome_text(o: &Outcome) -> String {
    match o {
        Outcome::Done => "done".into(),
        Outcome::AlreadyDone => "already done".into(),
        Outcome::RefusedForeignHold { holder } => format!("refused: held by {holder:?}"),
        Outcome::RefusedNotOurs => "refused: not drained by Lifeline".into(),
        Outcome::RefusedReportNotPassing => "refused: the report did not pass".into(),
    }
}

fn summary_line(r: &Report) -> String {
    let problems: Vec<String> =
        r.problems().map(|c| format!("{} {}: {}", c.id, c.subject, c.message)).collect();
    if problems.is_empty() { format!("all {} checks passed", r.checks.len()) } else { problems.join("; ") }
}

pub async fn verify(g: &Global, a: VerifyArgs) -> CmdResult {
    let inv = inventory::load(g)?;
    let nodes = gpu_nodes(&inv, &a.targets)?;
    let scheds = if a.readmit { Some(schedulers(&a.sched).await?) } else { None };
    let store = open_store(g).await?;
    let single = nodes.len() == 1;
    let mut worst = Code::Ok;
    let mut out = Vec::new();
    for d in nodes {
        let name = d.name.to_string();
        let report = match report_for(&inv, d, &a, single).await {
            Ok(r) => r,
            Err(e) => {
                worst = Code::Failed;
                let msg = format!("{e:#}");
                if !g.json {
                    println!("{name}: ERROR: {msg}\n  not re-admitted");
                }
                store
                    .audit(&AuditEntry {
                        actor: actor(),
                        action: "verify".into(),
                        target: name.clone(),
                        outcome: "error".into(),
                        detail: json!({ "error": msg }),
                        request_id: None,
                    })
                    .await?;
                out.push(json!({ "node": name, "error": msg, "readmitted": false }));
                continue;
            }
        };
        store
            .observe(
                &name,
                "verify",
                &json!({ "verdict": report.verdict, "digest": report.digest, "summary": report.summary }),
            )
            .await?;
        store
            .audit(&AuditEntry {
                actor: actor(),
                action: "verify".into(),
                target: name.clone(),
                outcome: format!("{:?}", report.verdict).to_lowercase(),
                detail: json!({ "digest": report.digest, "summary": report.summary, "problems": summary_line(&report) }),
                request_id: None,
            })
            .await?;
        let passed = report.verdict == Verdict::Pass;
        if !passed {
            worst = Code::Failed;
        }
        let just =
            Justification { report_digest: report.digest.clone(), passed, summary: summary_line(&report) };
        let mut decisions = Vec::new();
        // A scheduler that could not be asked is not a decision: kept apart, audited as an error.
        let mut errors: Vec<String> = Vec::new();
        if let Some(s) = &scheds
            && passed
        {
            if let Some(slurm) = &s.slurm {
                match slurm.resume(&name, &just).await {
                    Ok(dec) => decisions.push(dec),
                    Err(e) => errors.push(format!("slurm: {}", lifeline_verify::error_chain(&e))),
                }
            }
            if let Some(k) = &s.kube {
                match k.release(&name, &just).await {
                    Ok(dec) => decisions.push(dec),
                    Err(e) => errors.push(format!("kubernetes: {}", lifeline_verify::error_chain(&e))),
                }
            }
            for dec in &decisions {
                audit_decision(&store, dec).await?;
            }
            for e in &errors {
                crate::cmd::audit(
                    &store,
                    "readmit.resume",
                    &name,
                    "error",
                    json!({ "error": e, "report_digest": just.report_digest }),
                )
                .await?;
            }
        }
        if !errors.is_empty() {
            worst = Code::Failed;
        }
        let readmitted = !decisions.is_empty()
            && errors.is_empty()
            && decisions.iter().all(|d| matches!(d.outcome, Outcome::Done | Outcome::AlreadyDone));
        if !g.json {
            println!(
                "{name}: {} — {} (report {})",
                format!("{:?}", report.verdict).to_uppercase(),
                just.summary,
                report.digest
            );
            if a.readmit {
                if !passed {
                    println!("  not re-admitted: the report did not pass; the node stays out of training");
                }
                for dec in &decisions {
                    println!("  {}: {}: {}", dec.backend, outcome_text(&dec.outcome), dec.message);
                }
                for e in &errors {
                    println!("  not re-admitted: {e}");
                }
            }
        }
        out.push(
            json!({ "node": name, "verdict": report.verdict, "digest": report.digest, "summary": just.summary,
            "readmitted": readmitted, "decisions": decisions, "errors": errors, "report": report }),
        );
    }
    if g.json {
        print_json(&out)?;
    }
    store.close().await;
    Ok(worst)
}

pub async fn drain(g: &Global, a: DrainArgs) -> CmdResult {
    let inv = inventory::load(g)?;
    let nodes = gpu_nodes(&inv, &a.targets)?;
    let s = schedulers(&a.sched).await?;
    let store = open_store(g).await?;
    let mut worst = Code::Ok;
    let mut out = Vec::new();
    // No report justifies a manual drain; the digest field says so.
    let digest = "manual";
    for d in nodes {
        let name = d.name.to_string();
        let mut decisions = Vec::new();
        if let Some(slurm) = &s.slurm {
            match slurm.drain(&name, &a.reason, digest).await {
                Ok(dec) => decisions.push(dec),
                Err(e) => {
                    worst = Code::Failed;
                    println!("{name}: slurm drain failed: {}", lifeline_verify::error_chain(&e));
                }
            }
        }
        if let Some(k) = &s.kube {
            match k.quarantine(&name, &a.reason, digest).await {
                Ok(dec) => decisions.push(dec),
                Err(e) => {
                    worst = Code::Failed;
                    println!("{name}: kubernetes quarantine failed: {}", lifeline_verify::error_chain(&e));
                }
            }
        }
        for dec in &decisions {
            audit_decision(&store, dec).await?;
            if !g.json {
                println!("{name}: {}: {}: {}", dec.backend, outcome_text(&dec.outcome), dec.message);
            }
            if matches!(dec.outcome, Outcome::RefusedForeignHold { .. }) {
                worst = Code::Failed;
            }
        }
        out.push(json!({ "node": name, "decisions": decisions }));
    }
    if g.json {
        print_json(&out)?;
    }
    store.close().await;
    Ok(worst)
}
