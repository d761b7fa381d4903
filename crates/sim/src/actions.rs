//! What each simulated device was made to do: the executed power, BMC and switch-config actions, in order.
//!
//! Why: tests of exclusion and idempotency ("20 concurrent `power cycle`s execute exactly one cycle")
//! must count executions on the device itself, not infer them from SEL entries or client output. Every
//! front end (Redfish, IPMI, SSH CLI, the control API) records here at the moment it executes, under the
//! same lock that changes the state, so the log order is the execution order.
//!
//! What is recorded, and what is not:
//! - an executed command: one entry (a Redfish `PowerCycle` is one `power-cycle`, an IPMI chassis control
//!   power-down one `power-off`);
//! - a command accepted but without effect (`On` while on, `ForceOff` while off, an ACPI shutdown that the
//!   firmware ignores): one entry with `"noop": true`, so a test can tell "asked twice" from "ran twice";
//! - a refused command (wrong state, bad parameter, no privilege): nothing;
//! - an IPMI retransmission that the BMC answers from its duplicate cache: nothing (it never executes);
//! - in-band actions (a `reboot` typed on the serial console, SysRq): nothing, they are not BMC actions.
//!
//! Served by the control API as `GET /devices/{name}/actions` (see [`crate::control`]).

use std::net::SocketAddr;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The protocol through which an action was requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Redfish,
    Ipmi,
    Ssh,
    /// The sim's own control API (`lifeline sim power`, fault injection).
    Control,
}

/// What was executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionKind {
    PowerOn,
    PowerOff,
    /// Off, a pause, then on: one action, however the protocol spells it.
    PowerCycle,
    /// Power stays on, the machine restarts (Redfish ForceRestart, IPMI hard reset).
    HardReset,
    /// ACPI shutdown request (Redfish GracefulShutdown, IPMI soft-off).
    SoftOff,
    /// ACPI shutdown then boot (Redfish GracefulRestart).
    GracefulRestart,
    /// Diagnostic interrupt.
    Nmi,
    BmcReset,
    SelClear,
    /// A switch config merged into or replacing the running config without a reboot (EOS `configure
    /// replace`, SONiC `config load`, NVUE `nv config apply`).
    ConfigApply,
    /// The running config reloaded from a file or the startup config (SONiC `config reload`, IOS `reload`).
    ConfigReload,
    /// A firmware update accepted (SimpleUpdate or a multipart push): one per update, so tests can count
    /// pushes per BMC (a resumed rollout must not push again what it already pushed).
    FirmwareUpdate,
}

impl std::fmt::Display for ActionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = serde_json::to_value(self).ok();
        f.write_str(v.as_ref().and_then(|v| v.as_str()).unwrap_or("?"))
    }
}

/// Who asked: the peer and, when the protocol says, the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub protocol: Protocol,
    pub peer: Option<SocketAddr>,
    /// Redfish session or Basic user, IPMI username, SSH login.
    pub user: Option<String>,
}

impl Origin {
    pub fn new(protocol: Protocol, peer: Option<SocketAddr>, user: Option<String>) -> Origin {
        Origin { protocol, peer, user: user.filter(|u| !u.is_empty()) }
    }

    /// `user@addr:port`, `addr:port`, or `unknown`.
    fn describe(&self) -> String {
        match (&self.user, &self.peer) {
            (Some(u), Some(p)) => format!("{u}@{p}"),
            (None, Some(p)) => p.to_string(),
            (Some(u), None) => u.clone(),
            (None, None) => "unknown".into(),
        }
    }
}

/// One executed action, as `GET /devices/{name}/actions` returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// 1, 2, 3... per device, in execution order.
    pub seq: u64,
    /// When it executed (RFC 3339, UTC).
    pub time: DateTime<Utc>,
    pub protocol: Protocol,
    pub action: ActionKind,
    /// `user@addr:port` when the user is known, else `addr:port`.
    pub origin: String,
    /// Accepted but without effect (e.g. `On` while already on).
    #[serde(default)]
    pub noop: bool,
}

/// Most entries kept per device (oldest dropped first; `seq` keeps counting).
pub const CAPACITY: usize = 4096;

/// The action log of one device, shared by its BMC and (for a switch) its SSH CLI.
#[derive(Debug, Default)]
pub struct ActionLog {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next_seq: u64,
    entries: std::collections::VecDeque<Action>,
}

impl ActionLog {
    /// Appends an executed action and returns it.
    pub fn record(&self, origin: &Origin, action: ActionKind, noop: bool) -> Action {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.next_seq += 1;
        let a = Action {
            seq: g.next_seq,
            time: Utc::now(),
            protocol: origin.protocol,
            action,
            origin: origin.describe(),
            noop,
        };
        if g.entries.len() >= CAPACITY {
            g.entries.pop_front();
        }
        g.entries.push_back(a.clone());
        tracing::debug!(action = %action, origin = %a.origin, noop, "action executed");
        a
    }

    /// Every entry kept, oldest first.
    pub fn entries(&self) -> Vec<Action> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).entries.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape_is_stable() {
        let log = ActionLog::default();
        let o = Origin::new(Protocol::Ipmi, Some("127.0.0.1:4000".parse().unwrap()), Some("admin".into()));
        log.record(&o, ActionKind::PowerCycle, false);
        log.record(&Origin::new(Protocol::Control, None, None), ActionKind::PowerOn, true);
        let v = serde_json::to_value(log.entries()).unwrap();
        assert_eq!(v[0]["seq"], 1);
        assert_eq!(v[0]["protocol"], "ipmi");
        assert_eq!(v[0]["action"], "power-cycle");
        assert_eq!(v[0]["origin"], "admin@127.0.0.1:4000");
        assert_eq!(v[0]["noop"], false);
        assert!(DateTime::parse_from_rfc3339(v[0]["time"].as_str().unwrap()).is_ok());
        assert_eq!(v[1]["seq"], 2);
        assert_eq!(v[1]["origin"], "unknown");
        assert_eq!(v[1]["noop"], true);
        let back: Vec<Action> = serde_json::from_value(v).unwrap();
        assert_eq!(back, log.entries());
    }
}
