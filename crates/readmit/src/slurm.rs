//! Slurm: drain and resume through `scontrol`, node state read through slurmrestd (or `scontrol show node`).
//!
//! slurmrestd v0.0.38 (Slurm 22.05) is read-only for nodes, so writes go through `scontrol`; reads prefer
//! REST when configured (structured JSON, no text parsing). Ownership is by reason text only (Slurm records
//! every drain as the SlurmUser), and draining an already drained node silently REPLACES the admin's
//! reason, so the current reason is always read first and a foreign drain is never touched.
//! Residual race: an admin draining between our read and our `scontrol update` would be overwritten; the
//! read-back after the update detects that we now hold the node and the decision records both states.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::process::Command;

pub use crate::drain::{SlurmNode, lifeline_reason, parse_show_node};
use crate::{Action, Decision, Justification, Outcome, REASON_PREFIX};

/// How to reach a Slurm controller.
#[derive(Debug, Clone)]
pub struct SlurmConfig {
    /// `SLURM_CONF` for every client command (no DNS SRV lookups, no system config needed).
    pub conf: PathBuf,
    pub scontrol: PathBuf,
    /// Limit for one client command.
    pub command_timeout: Duration,
    /// slurmrestd for reads (optional).
    pub rest: Option<RestConfig>,
    /// How long a resume may take to show the node `idle` (it is `idle*` until the next ping).
    pub resume_timeout: Duration,
    pub poll_interval: Duration,
}

impl SlurmConfig {
    pub fn new(conf: impl Into<PathBuf>) -> SlurmConfig {
        SlurmConfig {
            conf: conf.into(),
            scontrol: PathBuf::from("scontrol"),
            command_timeout: Duration::from_secs(10),
            rest: None,
            resume_timeout: Duration::from_secs(30),
            poll_interval: Duration::from_millis(200),
        }
    }
}

/// slurmrestd endpoint, e.g. `http://127.0.0.1:6820/slurm/v0.0.38`, with JWT auth.
#[derive(Debug, Clone)]
pub struct RestConfig {
    pub base_url: String,
    pub user: String,
    pub token: String,
    pub timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    #[error("cannot run {command}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{command} timed out after {}", lifeline_types::Human(*after))]
    Timeout { command: String, after: Duration },
    #[error("{command} failed (exit {code:?}): {stderr}")]
    Command { command: String, code: Option<i32>, stderr: String },
    #[error("node {node} is not known to Slurm")]
    UnknownNode { node: String },
    #[error("slurmrestd {url} request failed")]
    Rest {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("slurmrestd {url} answered {status}: {detail}")]
    RestStatus { url: String, status: u16, detail: String },
    #[error("cannot parse Slurm's answer about node {node}: {detail}")]
    Parse { node: String, detail: String },
    #[error("node {node} did not become idle within {} (last seen {last})", lifeline_types::Human(*after))]
    NotIdle { node: String, after: Duration, last: String },
    #[error("refusing to drain without a reason")]
    EmptyReason,
}

/// Parses slurmrestd's `GET /node/{name}` body (v0.0.38: `state` string + `state_flags`; later versions:
/// `state` array).
pub fn parse_rest_node(name: &str, body: &Value) -> Result<SlurmNode, SlurmError> {
    let perr = |detail: &str| SlurmError::Parse { node: name.to_owned(), detail: detail.to_owned() };
    if let Some(errors) = body.get("errors").and_then(Value::as_array).filter(|e| !e.is_empty()) {
        let text = errors
            .iter()
            .map(|e| e.get("error").and_then(Value::as_str).unwrap_or("?").to_owned())
            .collect::<Vec<_>>()
            .join("; ");
        if text.to_lowercase().contains("not found") || text.to_lowercase().contains("invalid node") {
            return Err(SlurmError::UnknownNode { node: name.to_owned() });
        }
        return Err(perr(&text));
    }
    let nodes = body.get("nodes").and_then(Value::as_array).ok_or_else(|| perr("no nodes[]"))?;
    let node = nodes
        .iter()
        .find(|n| n.get("name").and_then(Value::as_str) == Some(name))
        .ok_or_else(|| SlurmError::UnknownNode { node: name.to_owned() })?;
    let (state, mut flags) = match node.get("state") {
        Some(Value::String(s)) => (s.to_lowercase(), Vec::new()),
        Some(Value::Array(a)) => {
            let mut it = a.iter().filter_map(Value::as_str);
            (it.next().unwrap_or("unknown").to_lowercase(), it.map(str::to_uppercase).collect())
        }
        _ => return Err(perr("no state")),
    };
    if let Some(f) = node.get("state_flags").and_then(Value::as_array) {
        flags.extend(f.iter().filter_map(Value::as_str).map(str::to_uppercase));
    }
    let reason = node.get("reason").and_then(Value::as_str).filter(|r| !r.is_empty()).map(str::to_owned);
    Ok(SlurmNode { name: name.to_owned(), state, flags, reason })
}

/// A Slurm cluster.
#[derive(Debug, Clone)]
pub struct Slurm {
    cfg: SlurmConfig,
    http: reqwest::Client,
}

impl Slurm {
    pub fn new(cfg: SlurmConfig) -> Slurm {
        // reqwest is built without a default rustls provider in this workspace (features unify across
        // crates); without one, building a client panics.
        crate::kube::ensure_crypto_provider();
        Slurm { cfg, http: reqwest::Client::new() }
    }

    async fn scontrol(&self, args: &[String]) -> Result<String, SlurmError> {
        let command = format!("{} {}", self.cfg.scontrol.display(), args.join(" "));
        let child = Command::new(&self.cfg.scontrol)
            .args(args)
            .env("SLURM_CONF", &self.cfg.conf)
            // A JWT in the environment switches the client to JWT auth; we use the cluster's munge.
            .env_remove("SLURM_JWT")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SlurmError::Spawn { command: command.clone(), source })?;
        let out = tokio::time::timeout(self.cfg.command_timeout, child.wait_with_output())
            .await
            .map_err(|_| SlurmError::Timeout { command: command.clone(), after: self.cfg.command_timeout })?
            .map_err(|source| SlurmError::Spawn { command: command.clone(), source })?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() {
            Ok(stdout)
        } else {
            let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            let stderr = if stderr.is_empty() { stdout.trim().to_owned() } else { stderr };
            Err(SlurmError::Command { command, code: out.status.code(), stderr })
        }
    }

    /// The node via `scontrol show node`.
    pub async fn node_via_scontrol(&self, name: &str) -> Result<SlurmNode, SlurmError> {
        match self.scontrol(&["show".into(), "node".into(), name.to_owned()]).await {
            Ok(text) => parse_show_node(name, &text)
                .map_err(|e| SlurmError::Parse { node: e.node, detail: "no State= field".into() }),
            Err(SlurmError::Command { stderr, .. }) if stderr.contains("not found") => {
                Err(SlurmError::UnknownNode { node: name.to_owned() })
            }
            Err(e) => Err(e),
        }
    }

    /// The node via slurmrestd (`GET {base}/node/{name}`).
    pub async fn node_via_rest(&self, rest: &RestConfig, name: &str) -> Result<SlurmNode, SlurmError> {
        let url = format!("{}/node/{name}", rest.base_url.trim_end_matches('/'));
        let resp = self
            .http
            .get(&url)
            .header("X-SLURM-USER-NAME", &rest.user)
            .header("X-SLURM-USER-TOKEN", &rest.token)
            .timeout(rest.timeout)
            .send()
            .await
            .map_err(|source| SlurmError::Rest { url: url.clone(), source })?;
        let status = resp.status();
        let body: Value = match resp.json().await {
            Ok(v) => v,
            Err(source) if status.is_success() => return Err(SlurmError::Rest { url, source }),
            Err(_) => Value::Null,
        };
        if !status.is_success() {
            // slurmrestd answers an unknown node with an error body; surface it as such.
            if let Ok(n) = parse_rest_node(name, &body) {
                return Ok(n);
            }
            if let Err(SlurmError::UnknownNode { node }) = parse_rest_node(name, &body) {
                return Err(SlurmError::UnknownNode { node });
            }
            return Err(SlurmError::RestStatus { url, status: status.as_u16(), detail: body.to_string() });
        }
        parse_rest_node(name, &body)
    }

    /// The node, through REST when configured, else `scontrol`.
    pub async fn node(&self, name: &str) -> Result<SlurmNode, SlurmError> {
        match &self.cfg.rest {
            Some(rest) => self.node_via_rest(rest, name).await,
            None => self.node_via_scontrol(name).await,
        }
    }

    /// Drains `name` with a `lifeline:` reason carrying the report digest. A node already drained by
    /// someone else is left alone (their reason is kept); one already drained by Lifeline is not re-drained.
    pub async fn drain(&self, name: &str, reason: &str, report_digest: &str) -> Result<Decision, SlurmError> {
        if reason.trim().trim_start_matches(REASON_PREFIX).trim().is_empty() {
            return Err(SlurmError::EmptyReason);
        }
        let mut d = Decision::new("slurm", name, Action::Drain, report_digest);
        let before = self.node(name).await?;
        d.before = before.describe();
        if before.drained_by_lifeline() {
            d.outcome = Outcome::AlreadyDone;
            d.after = d.before.clone();
            d.message = "already drained by Lifeline; reason kept".into();
            return Ok(d);
        }
        if before.drained() || before.reason.is_some() {
            d.outcome = Outcome::RefusedForeignHold { holder: before.reason.clone().unwrap_or_default() };
            d.after = d.before.clone();
            d.message = "node already held by another reason; not overwriting it".into();
            return Ok(d);
        }
        let full = lifeline_reason(reason, report_digest);
        self.scontrol(&[
            "update".into(),
            format!("nodename={name}"),
            "state=drain".into(),
            format!("reason={full}"),
        ])
        .await?;
        let after = self.node(name).await?;
        d.after = after.describe();
        d.message = format!("drained: {full}");
        Ok(d)
    }

    /// Resumes `name` if (and only if) the report passed and Lifeline holds the drain; waits for `idle`.
    pub async fn resume(&self, name: &str, just: &Justification) -> Result<Decision, SlurmError> {
        let mut d = Decision::new("slurm", name, Action::Resume, &just.report_digest);
        let before = self.node(name).await?;
        d.before = before.describe();
        d.after = d.before.clone();
        if !just.passed {
            d.outcome = Outcome::RefusedReportNotPassing;
            d.message = format!("report did not pass ({}); node stays out", just.summary);
            return Ok(d);
        }
        if !before.drained() {
            d.outcome = if before.in_service() { Outcome::AlreadyDone } else { Outcome::RefusedNotOurs };
            d.message = "node is not drained".into();
            return Ok(d);
        }
        if !before.drained_by_lifeline() {
            d.outcome = Outcome::RefusedForeignHold { holder: before.reason.clone().unwrap_or_default() };
            d.message = "drained by someone else (no lifeline: reason); never resumed by Lifeline".into();
            return Ok(d);
        }
        self.scontrol(&["update".into(), format!("nodename={name}"), "state=resume".into()]).await?;
        let started = Instant::now();
        let last = loop {
            let now = self.node(name).await?;
            if now.in_service() {
                break now;
            }
            if started.elapsed() >= self.cfg.resume_timeout {
                return Err(SlurmError::NotIdle {
                    node: name.to_owned(),
                    after: self.cfg.resume_timeout,
                    last: now.describe(),
                });
            }
            tokio::time::sleep(self.cfg.poll_interval).await;
        };
        d.after = last.describe();
        d.message = format!(
            "resumed after passing report ({}) in {} ms",
            just.summary,
            started.elapsed().as_millis()
        );
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_rest_node() {
        let body = serde_json::json!({"meta": {}, "errors": [], "nodes": [{"name": "gpu-node-02", "state": "idle",
            "state_flags": ["DRAIN"], "reason": "lifeline: rail down [report sha256:ab]", "reason_set_by_user": "root"}]});
        let n = parse_rest_node("gpu-node-02", &body).unwrap();
        assert!(n.drained_by_lifeline());
        let v39 = serde_json::json!({"nodes": [{"name": "a", "state": ["IDLE", "DRAIN"], "reason": ""}]});
        let n = parse_rest_node("a", &v39).unwrap();
        assert_eq!((n.state.as_str(), n.flags.clone(), n.reason), ("idle", vec!["DRAIN".to_string()], None));
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in "(?s).{0,300}") {
            let _ = parse_rest_node("n", &serde_json::Value::String(s.clone()));
        }
    }
}
