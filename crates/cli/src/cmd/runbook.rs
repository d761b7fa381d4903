//! `lifeline runbook`: list, show and check the runbook library; run a runbook on targets and follow its
//! runs (status, log, approve, abort, resume). The executor is `lifeline-runbook`'s; this module is
//! arguments, rendering and exit codes.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use clap::{Args, Subcommand};
use lifeline_engine::ops::readmit::{ReportSource, SchedulerSpec};
use lifeline_runbook::{Env, Executor, Library, RunOptions, RunView, RunbookError};
use lifeline_types::RunState;

use crate::args::{Global, SchedulerArgs};
use crate::cmd::{lifeline, print_json, settings};
use crate::exit::{CmdResult, Code, Exit, code_of, verdict};
use crate::outln;

#[derive(Debug, Subcommand)]
pub enum RunbookCmd {
    /// The runbooks in the library (name, targets, description).
    List(LibArgs),
    /// One runbook: header, parameters and steps.
    Show {
        name: String,
        #[command(flatten)]
        lib: LibArgs,
    },
    /// Check runbook files (default: the whole library); every problem is reported as FILE:LINE:COL.
    Check {
        files: Vec<PathBuf>,
        #[command(flatten)]
        lib: LibArgs,
    },
    /// Run a runbook on each target (one run per target, admitted by the blast-radius guard).
    Run(RunArgs),
    /// A run's state and steps (without RUN: the newest runs).
    Status { run: Option<String> },
    /// A run's journal: every step's intent and outcome, decisions, approvals.
    Log {
        run: String,
        /// Keep printing new rows until the run ends or waits for approval.
        #[arg(long)]
        follow: bool,
    },
    /// Approve the step a run waits on, and continue the run here.
    Approve {
        run: String,
        /// The step's effect is already in place (checked by hand): mark it done instead of running it.
        #[arg(long)]
        skip: bool,
        #[command(flatten)]
        env: EnvArgs,
    },
    /// Stop a run before its next step.
    Abort { run: String },
    /// An escalated run's target has been seen to: it no longer holds its rack's blast-radius guard
    /// (journaled and audited; the run keeps its end state).
    Clear {
        run: String,
        /// What was done about it (kept in the audit log).
        #[arg(long)]
        reason: String,
    },
    /// Continue a run whose process stopped (killed, crashed, rebooted) from its journal.
    Resume {
        run: String,
        #[command(flatten)]
        env: EnvArgs,
    },
}

#[derive(Debug, Args, Clone)]
pub struct LibArgs {
    /// The runbook library (default: `[runbooks] dir` in the config, else ./runbooks).
    #[arg(long = "runbooks", env = "LIFELINE_RUNBOOKS", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The runbook's name (or a file).
    pub name: String,
    /// Devices to run it on (one run each).
    #[arg(required = true)]
    pub targets: Vec<String>,
    /// Set a parameter (repeatable): `--var reset=reset`.
    #[arg(long = "var", value_name = "K=V")]
    pub vars: Vec<String>,
    /// Print the resolved plan (targets, steps with their operations, approvals, the guard's answer); do
    /// nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub lib: LibArgs,
    #[command(flatten)]
    pub env: EnvArgs,
}

/// Where drain, verify and readmit steps reach schedulers and reports.
#[derive(Debug, Args, Clone)]
pub struct EnvArgs {
    #[command(flatten)]
    pub sched: SchedulerArgs,
    /// Verify from the simulator's exported node state (DIR/<node>/…).
    #[arg(long, value_name = "DIR", conflicts_with = "reports")]
    pub node_state: Option<PathBuf>,
    /// Verify from reports the agent posted (a file, or a directory of `<node>.json`).
    #[arg(long, value_name = "PATH")]
    pub reports: Option<PathBuf>,
    /// Agent command over SSH (the default report source).
    #[arg(long, default_value = "lifeline-agent check --policy /dev/stdin --json", value_name = "CMD")]
    pub agent_command: String,
    /// Extra `ssh` argument (repeatable).
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub ssh_option: Vec<String>,
    /// Counter sampling interval of in-process checks, in ms.
    #[arg(long, value_name = "MS")]
    pub interval_ms: Option<u64>,
}

impl EnvArgs {
    pub(crate) fn env(&self) -> Env {
        let reports = if let Some(dir) = &self.node_state {
            Some(ReportSource::NodeState {
                dir: dir.clone(),
                interval: self.interval_ms.map(Duration::from_millis),
            })
        } else if let Some(p) = &self.reports {
            Some(ReportSource::Reports(p.clone()))
        } else {
            Some(ReportSource::Ssh { command: self.agent_command.clone(), options: self.ssh_option.clone() })
        };
        Env {
            schedulers: SchedulerSpec {
                slurm_conf: self.sched.slurm_conf.clone(),
                kube_url: self.sched.kube_url.clone(),
                kube: self.sched.kube,
            },
            reports,
        }
    }
}

impl From<RunbookError> for Exit {
    fn from(e: RunbookError) -> Self {
        Exit { code: code_of(e.class()), error: Some(anyhow!("{}", e.chain())) }
    }
}

fn executor(g: &Global, env: Env) -> Result<Executor, Exit> {
    Ok(Executor::new(settings(g), env, lifeline(g)?))
}

/// The executor of a run: with the image server of `[image-server]` running for the command's life when the
/// runbook inserts a served image (its tokens end with each run).
async fn served_images_executor(
    g: &Global,
    env: Env,
    rb: &lifeline_runbook::Runbook,
) -> Result<Executor, Exit> {
    let mut l = lifeline(g)?;
    if rb.params.iter().any(|p| p.ty == lifeline_runbook::params::ParamType::ServedImage) {
        l = l.start_image_server().await?;
    }
    Ok(Executor::new(settings(g), env, l))
}

/// `runbook check`'s word on a runbook with a `served-image` parameter whose images directory is not
/// there (a warning: the file is right; a run would be refused until the directory is).
fn served_images_warning(g: &Global, rb: &lifeline_runbook::Runbook, path: &std::path::Path) {
    let Some(p) = rb.params.iter().find(|p| p.ty == lifeline_runbook::params::ParamType::ServedImage) else {
        return;
    };
    let dir = lifeline(g).ok().and_then(|l| l.images().ok()).map(|i| i.dir().to_owned());
    let why = match dir {
        None => "`[image-server] images` is not set in the configuration".to_owned(),
        Some(dir) if !dir.is_dir() => format!("the images directory {} is not there", dir.display()),
        Some(_) => return,
    };
    eprintln!("{}: warning: parameter `{}` names a served image, but {why}", path.display(), p.name);
}

fn library(g: &Global, lib: &LibArgs) -> Result<Library, Exit> {
    let l = lifeline(g)?;
    Ok(Library::new(lib.dir.clone(), &l.config.config))
}

/// 0 when a run succeeded or waits for an approval (it is where it should be), 1 otherwise.
fn code_of_runs(views: &[RunView]) -> Code {
    verdict(views.iter().any(|v| !matches!(v.state, RunState::Succeeded | RunState::WaitingApproval)))
}

pub async fn run(g: &Global, c: RunbookCmd) -> CmdResult {
    match c {
        RunbookCmd::List(lib) => {
            let list = library(g, &lib)?.list()?;
            if g.json {
                print_json(&list)?;
            } else {
                for r in &list {
                    let targets = r.targets.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
                    outln!("{:<24} {:<32} {}", r.name, targets, r.description);
                }
            }
            Ok(Code::Ok)
        }
        RunbookCmd::Show { name, lib } => {
            let (rb, _) = library(g, &lib)?.load(&name)?;
            if g.json {
                print_json(&rb)?;
                return Ok(Code::Ok);
            }
            outln!("{} — {}", rb.name, rb.description);
            outln!(
                "  applies to:  {}",
                rb.targets.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            );
            outln!("  fault:       {}", rb.fault);
            outln!("  touches:     {}", rb.touches);
            outln!("  never:       {}", rb.never_touches);
            outln!("  worst case:  {}", rb.worst_case);
            for p in &rb.params {
                outln!("  --var {}={}  {}", p.name, p.default, p.description);
            }
            for (i, s) in rb.steps.iter().enumerate() {
                let when = s.when.as_ref().map(|c| format!(" when {}", c.text())).unwrap_or_default();
                let approve = if s.approve { " [approval required]" } else { "" };
                outln!(
                    "  {:>2}. {:<20} {:<10} {}{when}{approve} (timeout {}, on failure {:?})",
                    i + 1,
                    s.name,
                    s.kind.as_str(),
                    serde_json::to_string(&s.op).unwrap_or_default(),
                    humantime::format_duration(s.timeout),
                    s.on_failure
                );
            }
            Ok(Code::Ok)
        }
        RunbookCmd::Check { files, lib } => {
            let checked = if files.is_empty() {
                library(g, &lib)?.check_all()?
            } else {
                expand_dirs(&files).iter().map(|f| (f.clone(), lifeline_runbook::check_file(f))).collect()
            };
            let mut bad = false;
            let mut rows = Vec::new();
            for (path, c) in &checked {
                bad |= c.has_errors();
                if let Some(rb) = &c.runbook {
                    served_images_warning(g, rb, path);
                }
                if g.json {
                    rows.push(serde_json::json!({ "file": path, "ok": !c.has_errors(), "diagnostics": c.diagnostics }));
                } else if c.diagnostics.is_empty() {
                    outln!("{}: ok", path.display());
                } else {
                    for d in &c.diagnostics {
                        outln!("{d}");
                    }
                }
            }
            if g.json {
                print_json(&rows)?;
            }
            Ok(verdict(bad))
        }
        RunbookCmd::Run(a) => run_cmd(g, a).await,
        RunbookCmd::Status { run } => {
            let x = executor(g, Env::default())?;
            match run {
                Some(id) => {
                    let v = x.status(&id).await?;
                    show(g, &v)?;
                    Ok(Code::Ok)
                }
                None => {
                    let runs = x.base.runs_recent(50).await?;
                    if g.json {
                        let views: Vec<RunView> = runs.iter().map(|r| RunView::build(r, None, &[])).collect();
                        print_json(&views)?;
                    } else {
                        for r in &runs {
                            outln!(
                                "{}  {:<24} {:<16} {:<17} {}",
                                r.id,
                                r.runbook,
                                r.target,
                                r.state,
                                r.reason.as_deref().unwrap_or("")
                            );
                        }
                    }
                    Ok(Code::Ok)
                }
            }
        }
        RunbookCmd::Log { run, follow } => log(g, &run, follow).await,
        RunbookCmd::Approve { run, skip, env } => {
            let v = executor(g, env.env())?.approve(&run, skip).await?;
            show(g, &v)?;
            Ok(code_of_runs(&[v]))
        }
        RunbookCmd::Abort { run } => {
            let v = executor(g, Env::default())?.abort(&run).await?;
            show(g, &v)?;
            Ok(Code::Ok)
        }
        RunbookCmd::Clear { run, reason } => {
            let v = executor(g, Env::default())?.clear(&run, &reason).await?;
            show(g, &v)?;
            Ok(Code::Ok)
        }
        RunbookCmd::Resume { run, env } => {
            let v = executor(g, env.env())?.resume(&run).await?;
            show(g, &v)?;
            Ok(code_of_runs(&[v]))
        }
    }
}

fn parse_vars(vars: &[String]) -> Result<Vec<(String, String)>, Exit> {
    vars.iter()
        .map(|v| {
            v.split_once('=')
                .map(|(k, v)| (k.trim().to_owned(), v.to_owned()))
                .ok_or_else(|| Exit::usage(anyhow!("--var `{v}`: expected NAME=VALUE")))
        })
        .collect()
}

async fn run_cmd(g: &Global, a: RunArgs) -> CmdResult {
    let lib = library(g, &a.lib)?;
    let (rb, text) = lib.load(&a.name)?;
    let opts = RunOptions { vars: parse_vars(&a.vars)?, cause: None };
    let env = a.env.env();
    // The same TARGET forms as every other verb (names, racks, roles, globs, `all`).
    let targets = executor(g, Env::default())?.targets(&rb, &a.targets)?;
    if !targets.skipped.is_empty() && !g.json {
        eprintln!("skipped (roles `{}` does not apply to): {}", rb.name, targets.skipped.join(", "));
    }
    let names: Vec<String> = targets.devices.iter().map(|t| t.name.clone()).collect();
    if a.dry_run {
        let x = executor(g, env)?;
        let mut plans = Vec::new();
        for t in &names {
            plans.push(x.plan(&rb, t, &opts).await?);
        }
        if g.json {
            if plans.len() == 1 {
                print_json(&plans[0])?;
            } else {
                print_json(&plans)?;
            }
        } else {
            for p in &plans {
                outln!("{} on {}:", p.runbook, p.target);
                for (i, s) in p.steps.iter().enumerate() {
                    let when = s.when.as_ref().map(|w| format!(" when {w}")).unwrap_or_default();
                    let approve = if s.approval_required { " [approval required]" } else { "" };
                    let approve = if s.post_condition { " [post-condition]" } else { approve };
                    let op = serde_json::to_value(&s.operation).map(|v| v.to_string()).unwrap_or_default();
                    outln!("  {:>2}. {:<20} {op}{when}{approve}", i + 1, s.name);
                }
                match &p.guard.reason {
                    None => outln!("  guard: would admit ({} active in the rack)", p.guard.active_rack),
                    Some(r) => outln!("  guard: would refuse: {r}"),
                }
            }
        }
        return Ok(Code::Ok);
    }
    // Every value checked before the question, so a bad `--var` is refused before anything is touched.
    {
        let x = executor(g, Env::default())?;
        for t in &names {
            x.plan(&rb, t, &opts).await?;
        }
    }
    let question = format!("run `{}` on {}", rb.name, names.join(", "));
    if targets.needs_count() {
        crate::prompt::confirm_count(&question, names.len(), a.yes)?;
    } else {
        crate::prompt::confirm(&question, a.yes)?;
    }
    // One task per target: admission is serialised in the store, the runs proceed side by side. One
    // executor (one store opened once in this process) serves them all.
    let x = std::sync::Arc::new(served_images_executor(g, env, &rb).await?);
    x.base.open_store().await?;
    let mut tasks = tokio::task::JoinSet::new();
    for (i, t) in names.iter().enumerate() {
        let x = x.clone();
        let (rb, text, t, opts) = (rb.clone(), text.clone(), t.clone(), opts.clone());
        tasks.spawn(async move { (i, t.clone(), x.start(&rb, &text, &t, &opts).await) });
    }
    let mut results = Vec::new();
    while let Some(r) = tasks.join_next().await {
        results.push(r.map_err(|e| Exit::internal(anyhow!("run task: {e}")))?);
    }
    results.sort_by_key(|(i, _, _)| *i);
    x.base.close().await;
    let mut views = Vec::new();
    let mut errors = Vec::new();
    for (_, t, r) in results {
        match r {
            Ok(v) => views.push(v),
            Err(e) => errors.push((t, e)),
        }
    }
    if views.is_empty()
        && let Some((_, e)) = errors.pop()
    {
        return Err(e.into());
    }
    for (t, e) in &errors {
        eprintln!("error: {t}: {}", e.chain());
    }
    if g.json {
        if views.len() == 1 && errors.is_empty() {
            print_json(&views[0])?;
        } else {
            print_json(&views)?;
        }
    } else {
        for v in &views {
            show(g, v)?;
        }
    }
    Ok(if errors.is_empty() { code_of_runs(&views) } else { Code::Failed })
}

fn show(g: &Global, v: &RunView) -> Result<(), Exit> {
    if g.json {
        return print_json(v);
    }
    outln!("run {} — {} on {}: {}", v.run, v.runbook, v.target, v.state);
    if let Some(r) = &v.reason {
        outln!("  {r}");
    }
    if let Some(s) = &v.stalled {
        outln!("  STALLED: {s}");
    }
    for s in &v.steps {
        let took = match (s.started, s.ended) {
            (Some(a), Some(b)) => format!(" ({:.1} s)", (b - a).num_milliseconds() as f64 / 1000.0),
            _ => String::new(),
        };
        outln!("  {:<20} {:<16}{took} {}", s.name, s.state, s.message.as_deref().unwrap_or(""));
    }
    Ok(())
}

async fn log(g: &Global, id: &str, follow: bool) -> CmdResult {
    let x = executor(g, Env::default())?;
    if x.base.run_record(id).await?.is_none() {
        return Err(RunbookError::NoRun { id: id.into() }.into());
    }
    let mut after = 0;
    loop {
        let rows = x.base.run_journal_since(id, after).await?;
        for r in &rows {
            after = r.id;
            if g.json {
                crate::out::line(serde_json::to_string(r)?)?;
            } else {
                let at = chrono::DateTime::from_timestamp_millis(r.at_ms)
                    .unwrap_or_default()
                    .format("%H:%M:%S%.3f");
                let msg = r.detail.get("message").and_then(|m| m.as_str()).unwrap_or("");
                outln!("{at} {:<20} #{} {:<8} {:<16} {msg}", r.step, r.attempt, r.phase, r.state);
            }
        }
        if !follow {
            return Ok(Code::Ok);
        }
        let run = x.base.run_record(id).await?;
        if run.as_ref().is_none_or(|r| r.state != RunState::Running) {
            return Ok(Code::Ok);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A directory among `runbook check`'s files stands for the runbook files (`*.toml`) directly in it, in name
/// order, as the library would load them; an unreadable or empty directory is kept as given, so an error is
/// reported for it.
fn expand_dirs(files: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for f in files {
        match std::fs::read_dir(f) {
            Ok(entries) => {
                let mut inner: Vec<_> = entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.is_file())
                    .collect();
                inner.sort();
                if inner.is_empty() {
                    // Checked as given: "cannot read", not an empty list that reads as "all ok".
                    out.push(f.clone());
                }
                out.extend(inner);
            }
            Err(_) => out.push(f.clone()),
        }
    }
    out
}
