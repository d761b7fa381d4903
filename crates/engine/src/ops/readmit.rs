//! The end of the recovery loop: drain a node with Lifeline's own mark, verify it from the agent's report,
//! and re-admit it only out of Lifeline's own drain and only with a passing report. Every decision, and
//! every scheduler that could not be asked, is audited with the digest of the report behind it.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use lifeline_inventory::{Device, Inventory};
use lifeline_readmit::{Action, Decision, Justification, Outcome as Decided};
use lifeline_types::AuditAction;
use lifeline_verify::{GpuSource, Options, Policy, Report, Roots, Verdict};
use serde::Serialize;
use tokio::io::AsyncWriteExt;

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result, error_chain};
use crate::ops::Row;

/// Which schedulers to ask.
#[derive(Debug, Clone, Default)]
pub struct SchedulerSpec {
    pub slurm_conf: Option<PathBuf>,
    pub kube_url: Option<String>,
    /// The in-cluster or kubeconfig client.
    pub kube: bool,
}

/// Where a node's agent report comes from.
#[derive(Debug, Clone)]
pub enum ReportSource {
    /// An exported state tree per node (`DIR/<node>/`): the check runs here.
    NodeState { dir: PathBuf, interval: Option<Duration> },
    /// Reports already written (`DIR/<node>.json`, or one file for one node).
    Reports(PathBuf),
    /// The agent over OpenSSH on the node's frontend address, the policy on stdin.
    Ssh { command: String, options: Vec<String> },
}

/// Connected schedulers.
pub struct Schedulers {
    slurm: Option<lifeline_readmit::slurm::Slurm>,
    kube: Option<lifeline_readmit::kube::Kube>,
}

impl std::fmt::Debug for Schedulers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schedulers")
            .field("slurm", &self.slurm.is_some())
            .field("kube", &self.kube.is_some())
            .finish()
    }
}

/// One node's drain.
#[derive(Debug, Clone, Serialize)]
pub struct Drained {
    pub node: String,
    pub decisions: Vec<Decision>,
    /// Schedulers that could not be asked.
    pub errors: Vec<String>,
}

/// One node's verification (and re-admission when asked). A report that could not be obtained is verdict
/// `error` with the reason in `error`: never a pass, never re-admitted.
#[derive(Debug, Clone, Serialize)]
pub struct Verified {
    pub node: String,
    pub verdict: Verdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub digest: Option<String>,
    pub summary: String,
    pub readmitted: bool,
    pub decisions: Vec<Decision>,
    pub errors: Vec<String>,
    pub report: Option<Report>,
}

impl Verified {
    pub fn passed(&self) -> bool {
        self.verdict == Verdict::Pass
    }
}

/// Connects the schedulers named; a missing Slurm config or no scheduler at all is a usage error.
pub async fn schedulers(s: &SchedulerSpec) -> Result<Schedulers> {
    if let Some(c) = &s.slurm_conf
        && !c.is_file()
    {
        return Err(EngineError::bad_argument(format!(
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
            Some(u) => lifeline_readmit::kube::Kube::from_url(u, Duration::from_secs(10))
                .map_err(|e| EngineError::bad_argument(format!("--kube-url {u}: {}", error_chain(&e))))?,
            None => {
                let client = kube::Client::try_default()
                    .await
                    .map_err(|e| EngineError::bad_argument(format!("kubernetes client: {e}")))?;
                lifeline_readmit::kube::Kube::new(client, Duration::from_secs(10))
            }
        })
    } else {
        None
    };
    if slurm.is_none() && kube.is_none() {
        return Err(EngineError::bad_argument(
            "no scheduler: pass --slurm-conf FILE (or set SLURM_CONF) and/or --kube / --kube-url URL",
        ));
    }
    Ok(Schedulers { slurm, kube })
}

fn decision_outcome(d: &Decision) -> Outcome {
    match &d.outcome {
        Decided::Done => Outcome::Ok,
        Decided::AlreadyDone => Outcome::Unchanged,
        _ => Outcome::Refused,
    }
}

fn action_of(d: &Decision) -> AuditAction {
    match d.action {
        Action::Drain => AuditAction::ReadmitDrain,
        Action::Resume => AuditAction::ReadmitResume,
        Action::Quarantine => AuditAction::ReadmitQuarantine,
        Action::Release => AuditAction::ReadmitRelease,
    }
}

fn summary_line(r: &Report) -> String {
    let problems: Vec<String> =
        r.problems().map(|c| format!("{} {}: {}", c.id, c.subject, c.message)).collect();
    if problems.is_empty() { format!("all {} checks passed", r.checks.len()) } else { problems.join("; ") }
}

impl Lifeline {
    /// Drains each node with Lifeline's mark (an admin's drain is never replaced); every decision and every
    /// scheduler error is audited.
    pub async fn drain(&self, nodes: &[Device], reason: &str, s: &Schedulers) -> Result<Vec<Row<Drained>>> {
        let audit = self.audit().await?;
        let mut rows = Vec::new();
        // No report justifies a manual drain; the digest field says so.
        let digest = "manual";
        for d in nodes {
            let name = d.name.to_string();
            let r = self
                .guarded(&name, AuditAction::Drain, |rid| {
                    let audit = audit.clone();
                    let name = name.clone();
                    async move {
                        let mut out =
                            Drained { node: name.clone(), decisions: Vec::new(), errors: Vec::new() };
                        if let Some(slurm) = &s.slurm {
                            match slurm.drain(&name, reason, digest).await {
                                Ok(dec) => out.decisions.push(dec),
                                Err(e) => out.errors.push(format!("slurm: {}", error_chain(&e))),
                            }
                        }
                        if let Some(k) = &s.kube {
                            match k.quarantine(&name, reason, digest).await {
                                Ok(dec) => out.decisions.push(dec),
                                Err(e) => out.errors.push(format!("kubernetes: {}", error_chain(&e))),
                            }
                        }
                        for dec in &out.decisions {
                            audit
                                .record(action_of(dec), &name, decision_outcome(dec), Some(&rid), dec)
                                .await?;
                        }
                        for e in &out.errors {
                            audit
                                .record(
                                    AuditAction::ReadmitDrain,
                                    &name,
                                    Outcome::Error,
                                    Some(&rid),
                                    serde_json::json!({ "error": e, "reason": reason }),
                                )
                                .await?;
                        }
                        Ok(out)
                    }
                })
                .await
                .map(|a| match a {
                    crate::ops::Acted::Fresh(v) | crate::ops::Acted::Delayed { value: v, .. } => v,
                    crate::ops::Acted::Replayed { outcome, .. } => Drained {
                        node: name.clone(),
                        decisions: Vec::new(),
                        errors: vec![format!("already done by an earlier request: {outcome}")],
                    },
                });
            rows.push(Row::new("node", name, r));
        }
        Ok(rows)
    }

    /// Gets each node's report, records it, and (with `readmit`) resumes the node where Lifeline drained it
    /// and the report passed.
    pub async fn verify(
        &self,
        nodes: &[Device],
        source: &ReportSource,
        readmit: Option<&Schedulers>,
    ) -> Result<Vec<Row<Verified>>> {
        let inv = self.inventory()?;
        let store = self.store().await?.clone();
        let audit = self.audit().await?;
        let single = nodes.len() == 1;
        let mut rows = Vec::new();
        for d in nodes {
            let name = d.name.to_string();
            let report = match report_for(&inv, d, source, single).await {
                Ok(r) => r,
                Err(msg) => {
                    audit
                        .record(
                            AuditAction::Verify,
                            &name,
                            Outcome::Error,
                            None,
                            serde_json::json!({ "error": msg }),
                        )
                        .await?;
                    rows.push(Row::new(
                        "node",
                        name.clone(),
                        Ok(Verified {
                            node: name,
                            verdict: Verdict::Error,
                            error: Some(msg),
                            digest: None,
                            summary: String::new(),
                            readmitted: false,
                            decisions: Vec::new(),
                            errors: Vec::new(),
                            report: None,
                        }),
                    ));
                    continue;
                }
            };
            store
                .observe(&name, "verify", &serde_json::json!({ "verdict": report.verdict, "digest": report.digest, "summary": report.summary }))
                .await?;
            let passed = report.verdict == Verdict::Pass;
            let summary = summary_line(&report);
            audit
                .record(
                    AuditAction::Verify,
                    &name,
                    if passed { Outcome::Ok } else { Outcome::Failed },
                    None,
                    serde_json::json!({ "verdict": report.verdict, "digest": report.digest, "summary": report.summary, "problems": summary }),
                )
                .await?;
            let just =
                Justification { report_digest: report.digest.clone(), passed, summary: summary.clone() };
            let mut decisions = Vec::new();
            let mut errors: Vec<String> = Vec::new();
            // A lemon waits for a human's release, however well it reports (crate::probation).
            let gate = match readmit {
                Some(_) if passed => self.readmit_gate(&name).await?,
                _ => crate::ops::probation::Gate::Open,
            };
            if let crate::ops::probation::Gate::Refused(why) = &gate {
                errors.push(why.clone());
            } else if let Some(s) = readmit
                && passed
            {
                if let Some(slurm) = &s.slurm {
                    match slurm.resume(&name, &just).await {
                        Ok(dec) => decisions.push(dec),
                        Err(e) => errors.push(format!("slurm: {}", error_chain(&e))),
                    }
                }
                if let Some(k) = &s.kube {
                    match k.release(&name, &just).await {
                        Ok(dec) => decisions.push(dec),
                        Err(e) => errors.push(format!("kubernetes: {}", error_chain(&e))),
                    }
                }
                for dec in &decisions {
                    audit.record(action_of(dec), &name, decision_outcome(dec), None, dec).await?;
                }
                for e in &errors {
                    audit
                        .record(
                            AuditAction::ReadmitResume,
                            &name,
                            Outcome::Error,
                            None,
                            serde_json::json!({ "error": e, "report_digest": just.report_digest }),
                        )
                        .await?;
                }
            }
            let readmitted = !decisions.is_empty()
                && errors.is_empty()
                && decisions.iter().all(|d| matches!(d.outcome, Decided::Done | Decided::AlreadyDone));
            if readmitted && decisions.iter().any(|d| d.outcome == Decided::Done) {
                self.readmitted(&name, &gate, Some(&report.digest)).await?;
            }
            rows.push(Row::new(
                "node",
                name.clone(),
                Ok(Verified {
                    node: name,
                    verdict: report.verdict,
                    error: None,
                    digest: Some(report.digest.clone()),
                    summary,
                    readmitted,
                    decisions,
                    errors,
                    report: Some(report),
                }),
            ));
        }
        Ok(rows)
    }
}

/// Gets one node's report from the chosen source.
async fn report_for(
    inv: &Inventory,
    d: &Device,
    source: &ReportSource,
    single: bool,
) -> std::result::Result<Report, String> {
    let name = d.name.to_string();
    let policy = Policy::from_inventory(inv, &name)
        .map_err(|e| format!("policy for `{name}`: {}", error_chain(&e)))?;
    let text = match source {
        ReportSource::NodeState { dir, interval } => {
            let tree = dir.join(&name);
            if !tree.is_dir() {
                return Err(format!("{}: no exported state for `{name}`", tree.display()));
            }
            let opts = Options {
                roots: Roots::for_tree(&tree),
                gpu: GpuSource::Snapshot(tree.join("gpus.json")),
                interval: *interval,
                node: Some(name.clone()),
                verbs: false,
            };
            return tokio::task::spawn_blocking(move || lifeline_verify::run(&policy, &opts))
                .await
                .map_err(|e| format!("check task: {e}"));
        }
        ReportSource::Reports(path) => {
            let file = if path.is_dir() {
                path.join(format!("{name}.json"))
            } else if single {
                path.clone()
            } else {
                return Err(format!(
                    "--reports {} is a file but several nodes were selected; give a directory",
                    path.display()
                ));
            };
            tokio::fs::read_to_string(&file)
                .await
                .map_err(|e| format!("reading report {}: {e}", file.display()))?
        }
        ReportSource::Ssh { command, options } => run_agent_over_ssh(d, &policy, command, options).await?,
    };
    let report = Report::from_json(&text).map_err(|e| format!("report for `{name}`: {}", error_chain(&e)))?;
    if report.node != name {
        return Err(format!("the report is for node `{}`, not `{name}`", report.node));
    }
    Ok(report)
}

/// OpenSSH's arguments: the options, then `--`, so a destination built from the inventory (a `ssh-user`
/// such as `-oProxyCommand=…`) is never read as an option, which would run a command on the jump host.
fn ssh_args<'a>(extra: &'a [String], dest: &'a str, command: &'a str) -> Vec<&'a str> {
    let mut a: Vec<&str> = extra.iter().map(String::as_str).collect();
    a.extend(["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "--", dest, command]);
    a
}

/// Runs the agent with OpenSSH on the node's frontend address (the operator's keys, config and known_hosts
/// apply, as for any ssh), sending the policy on stdin.
async fn run_agent_over_ssh(
    d: &Device,
    policy: &Policy,
    command: &str,
    extra: &[String],
) -> std::result::Result<String, String> {
    let fe = d.frontend.as_ref().and_then(|f| f.address.as_ref()).ok_or_else(|| {
        format!(
            "`{}` has no frontend address in the inventory: cannot reach its agent over SSH (use --reports)",
            d.name
        )
    })?;
    let user = d.frontend.as_ref().and_then(|f| f.ssh_user.clone());
    let dest = match user {
        Some(u) => format!("{u}@{fe}"),
        None => fe.to_string(),
    };
    let policy_toml = toml::to_string(policy).map_err(|e| format!("serialising the policy: {e}"))?;
    let mut child = tokio::process::Command::new("ssh")
        .args(ssh_args(extra, &dest, command))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting ssh: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(policy_toml.as_bytes()).await.map_err(|e| format!("sending the policy: {e}"))?;
    }
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .map_err(|_| format!("agent on `{}` did not finish within 120 s", d.name))?
        .map_err(|e| format!("waiting for ssh: {e}"))?;
    // The agent exits 1 on a failing report; that is still a report.
    match out.status.code() {
        Some(0..=2) if !out.stdout.is_empty() => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        code => Err(format!(
            "agent on `{}` over ssh to {dest} exited {}: {}",
            d.name,
            code.map(|c| format!("with status {c}")).unwrap_or_else(|| "on a signal".into()),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

/// `done`, `already done`, `refused: held by "admin: bad DIMM"`, … for people.
pub fn outcome_text(o: &Decided) -> String {
    match o {
        Decided::Done => "done".into(),
        Decided::AlreadyDone => "already done".into(),
        Decided::RefusedForeignHold { holder } => format!("refused: held by {holder:?}"),
        Decided::RefusedNotOurs => "refused: not drained by Lifeline".into(),
        Decided::RefusedReportNotPassing => "refused: the report did not pass".into(),
    }
}

#[cfg(test)]
mod ssh_tests {
    /// With the real OpenSSH client: a user name that looks like an option stays part of the destination
    /// (without `--`, ssh runs the ProxyCommand and the file appears).
    #[test]
    fn a_destination_that_looks_like_an_option_is_not_one() {
        if std::process::Command::new("ssh").arg("-V").output().is_err() {
            eprintln!("SKIP: no ssh client");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("ran");
        let dest = format!("-oProxyCommand=touch {}@127.0.0.1", mark.display());
        let args = super::ssh_args(&[], &dest, "true");
        let dd = args.iter().position(|a| *a == "--").expect("--");
        assert_eq!(args[dd + 1], dest);
        let _ = std::process::Command::new("ssh")
            .args(["-F", "/dev/null", "-o", "ConnectTimeout=2", "-o", "StrictHostKeyChecking=yes"])
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let ran = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(ran, 0, "ssh read the destination as an option and ran its ProxyCommand");
    }
}
