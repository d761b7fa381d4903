//! Kubernetes: quarantine (cordon + `lifeline.io/quarantine:NoSchedule` taint) and release a node.
//!
//! Lifeline's marks are the taint and its annotations; an admin's cordon or taints are never removed.
//! If the node was already cordoned when Lifeline quarantined it, Lifeline does not claim the cordon
//! (no `cordoned-by-lifeline` annotation) and release leaves it cordoned. Every write is a JSON merge patch
//! carrying the `resourceVersion` that was read, so a concurrent change makes the API server answer 409
//! instead of one writer silently undoing the other; on 409 the node is re-read and the plan recomputed.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Taint};
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::{Action, Decision, Justification, Outcome};

pub const TAINT_KEY: &str = "lifeline.io/quarantine";
pub const TAINT_EFFECT: &str = "NoSchedule";
/// Digest of the agent report behind the current quarantine.
pub const ANN_DIGEST: &str = "lifeline.io/report-digest";
pub const ANN_REASON: &str = "lifeline.io/reason";
/// Present ("true") only when Lifeline itself set `spec.unschedulable`.
pub const ANN_CORDONED: &str = "lifeline.io/cordoned-by-lifeline";

const CONFLICT_RETRIES: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    #[error("Kubernetes API call {call} on node {node} failed")]
    Api {
        call: &'static str,
        node: String,
        #[source]
        source: kube::Error,
    },
    #[error("Kubernetes API call {call} on node {node} timed out after {}", lifeline_types::Human(*after))]
    Timeout { call: &'static str, node: String, after: Duration },
    #[error("node {node} kept changing under us ({CONFLICT_RETRIES} conflicts)")]
    Conflicts { node: String },
    #[error("cannot build a Kubernetes client for {url}")]
    Client {
        url: String,
        #[source]
        source: kube::Error,
    },
}

/// Lifeline's view of a node's scheduling marks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marks {
    pub unschedulable: bool,
    pub our_taint: bool,
    pub we_cordoned: bool,
    pub digest: Option<String>,
    /// Other taints, `key=value:effect`.
    pub foreign_taints: Vec<String>,
}

impl Marks {
    pub fn describe(&self) -> String {
        format!(
            "unschedulable={} lifeline_taint={} cordoned_by_lifeline={} digest={} other_taints=[{}]",
            self.unschedulable,
            self.our_taint,
            self.we_cordoned,
            self.digest.as_deref().unwrap_or("-"),
            self.foreign_taints.join(",")
        )
    }
}

fn is_ours(t: &Taint) -> bool {
    t.key == TAINT_KEY && t.effect == TAINT_EFFECT
}

fn annotations(node: &Node) -> BTreeMap<String, String> {
    node.metadata.annotations.clone().unwrap_or_default()
}

pub fn marks(node: &Node) -> Marks {
    let spec = node.spec.clone().unwrap_or_default();
    let taints = spec.taints.unwrap_or_default();
    let ann = annotations(node);
    Marks {
        unschedulable: spec.unschedulable.unwrap_or(false),
        our_taint: taints.iter().any(is_ours),
        we_cordoned: ann.get(ANN_CORDONED).is_some_and(|v| v == "true"),
        digest: ann.get(ANN_DIGEST).cloned(),
        foreign_taints: taints
            .iter()
            .filter(|t| !is_ours(t))
            .map(|t| format!("{}={}:{}", t.key, t.value.as_deref().unwrap_or(""), t.effect))
            .collect(),
    }
}

fn taints_json(taints: &[Taint]) -> Value {
    serde_json::to_value(taints).unwrap_or(Value::Array(Vec::new()))
}

/// The merge patch that quarantines `node`, or `None` when Lifeline's taint is already there.
pub fn quarantine_patch(node: &Node, reason: &str, digest: &str) -> Option<Value> {
    let m = marks(node);
    if m.our_taint {
        return None;
    }
    let mut taints = node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
    taints.push(Taint { key: TAINT_KEY.into(), value: None, effect: TAINT_EFFECT.into(), time_added: None });
    let mut ann = json!({ ANN_DIGEST: digest, ANN_REASON: reason });
    if !m.unschedulable {
        ann[ANN_CORDONED] = json!("true");
    }
    Some(json!({
        "metadata": { "resourceVersion": node.metadata.resource_version, "annotations": ann },
        "spec": { "unschedulable": true, "taints": taints_json(&taints) },
    }))
}

/// The merge patch that releases `node`, or `None` when it carries no Lifeline mark.
pub fn release_patch(node: &Node) -> Option<Value> {
    let m = marks(node);
    if !m.our_taint && !m.we_cordoned {
        return None;
    }
    let taints: Vec<Taint> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|t| !is_ours(t))
        .collect();
    let mut spec = json!({ "taints": taints_json(&taints) });
    if m.we_cordoned {
        spec["unschedulable"] = json!(false);
    }
    Some(json!({
        "metadata": {
            "resourceVersion": node.metadata.resource_version,
            "annotations": { ANN_DIGEST: null, ANN_REASON: null, ANN_CORDONED: null },
        },
        "spec": spec,
    }))
}

/// kube's rustls stack panics when the process has several rustls crypto backends compiled in and none
/// chosen; pick ring (the workspace's) unless the application already chose one.
pub fn ensure_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A Kubernetes cluster's nodes.
#[derive(Clone)]
pub struct Kube {
    nodes: Api<Node>,
    timeout: Duration,
}

impl std::fmt::Debug for Kube {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kube").field("timeout", &self.timeout).finish()
    }
}

impl Kube {
    /// Wraps a client (e.g. `kube::Client::try_default()` in-cluster or from kubeconfig; call
    /// [`ensure_crypto_provider`] before building it).
    pub fn new(client: kube::Client, timeout: Duration) -> Kube {
        Kube { nodes: Api::all(client), timeout }
    }

    /// A client for an API server URL without auth (tests, `kubectl proxy`).
    pub fn from_url(url: &str, timeout: Duration) -> Result<Kube, KubeError> {
        let uri: http::Uri = url.parse().map_err(|e: http::uri::InvalidUri| KubeError::Client {
            url: url.to_owned(),
            source: kube::Error::Service(Box::new(e)),
        })?;
        ensure_crypto_provider();
        let mut cfg = kube::Config::new(uri);
        cfg.connect_timeout = Some(timeout);
        cfg.read_timeout = Some(timeout);
        cfg.write_timeout = Some(timeout);
        let client = kube::Client::try_from(cfg)
            .map_err(|source| KubeError::Client { url: url.to_owned(), source })?;
        Ok(Kube::new(client, timeout))
    }

    async fn get(&self, name: &str) -> Result<Node, KubeError> {
        tokio::time::timeout(self.timeout, self.nodes.get(name))
            .await
            .map_err(|_| KubeError::Timeout { call: "get node", node: name.to_owned(), after: self.timeout })?
            .map_err(|source| KubeError::Api { call: "get node", node: name.to_owned(), source })
    }

    /// `Ok(None)` on a 409 conflict (re-read and retry).
    async fn patch(&self, name: &str, patch: &Value) -> Result<Option<Node>, KubeError> {
        let params = PatchParams::default();
        let res = tokio::time::timeout(self.timeout, self.nodes.patch(name, &params, &Patch::Merge(patch)))
            .await
            .map_err(|_| KubeError::Timeout {
                call: "patch node",
                node: name.to_owned(),
                after: self.timeout,
            })?;
        match res {
            Ok(n) => Ok(Some(n)),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
            Err(source) => Err(KubeError::Api { call: "patch node", node: name.to_owned(), source }),
        }
    }

    /// Current marks of a node.
    pub async fn marks(&self, name: &str) -> Result<Marks, KubeError> {
        Ok(marks(&self.get(name).await?))
    }

    /// Cordons and taints `name`, annotating the report digest that justified it.
    pub async fn quarantine(
        &self,
        name: &str,
        reason: &str,
        report_digest: &str,
    ) -> Result<Decision, KubeError> {
        let mut d = Decision::new("kubernetes", name, Action::Quarantine, report_digest);
        for _ in 0..CONFLICT_RETRIES {
            let node = self.get(name).await?;
            let m = marks(&node);
            d.before = m.describe();
            let Some(patch) = quarantine_patch(&node, reason, report_digest) else {
                d.outcome = Outcome::AlreadyDone;
                d.after = d.before.clone();
                d.message = "already quarantined by Lifeline".into();
                return Ok(d);
            };
            if let Some(after) = self.patch(name, &patch).await? {
                d.after = marks(&after).describe();
                d.message = if m.unschedulable {
                    format!(
                        "tainted {TAINT_KEY}:{TAINT_EFFECT}; node was already cordoned by someone else (kept theirs)"
                    )
                } else {
                    format!("cordoned and tainted {TAINT_KEY}:{TAINT_EFFECT}")
                };
                return Ok(d);
            }
        }
        Err(KubeError::Conflicts { node: name.to_owned() })
    }

    /// Removes Lifeline's taint (and its cordon, if Lifeline set it) after a passing report.
    pub async fn release(&self, name: &str, just: &Justification) -> Result<Decision, KubeError> {
        let mut d = Decision::new("kubernetes", name, Action::Release, &just.report_digest);
        for _ in 0..CONFLICT_RETRIES {
            let node = self.get(name).await?;
            let m = marks(&node);
            d.before = m.describe();
            d.after = d.before.clone();
            if !just.passed {
                d.outcome = Outcome::RefusedReportNotPassing;
                d.message = format!("report did not pass ({}); node stays quarantined", just.summary);
                return Ok(d);
            }
            let Some(patch) = release_patch(&node) else {
                d.outcome = Outcome::RefusedNotOurs;
                d.message = "no Lifeline taint or cordon on this node: nothing of ours to release".into();
                return Ok(d);
            };
            if let Some(after) = self.patch(name, &patch).await? {
                let am = marks(&after);
                d.after = am.describe();
                d.message = if am.unschedulable {
                    "Lifeline taint removed; cordon kept (not set by Lifeline)".into()
                } else {
                    "Lifeline taint and cordon removed".into()
                };
                return Ok(d);
            }
        }
        Err(KubeError::Conflicts { node: name.to_owned() })
    }
}
