//! Switch-side evidence for the fault correlation: what a leaf itself says about the ports its GPU nodes'
//! rails are cabled to. Two sources, both about named ports:
//!
//! - its counters ([`counters`]): interface errors, link flaps and PFC watchdog / pause counters read on a
//!   schedule; the rise between two reads (never the value: counters only grow until cleared) past a
//!   threshold is evidence on the port;
//! - its configuration ([`config_diff`]): a backup's diff that touches a port's MTU, PFC, QoS or LAG
//!   settings, with the previous version to restore.
//!
//! Why evidence and not faults of their own: a rail down on eight nodes is what breaks the training job;
//! the leaf's flapping port or its changed MTU is *why*. The correlator ([`crate::correlate`]) keeps this
//! evidence for its window and attaches it to every rail fault (the node's own or the leaf's shared one)
//! on a port it names, in words ("leaf-03 config changed at 02:13: mtu 9100 → 1500 on Ethernet12–19").

pub mod config_diff;
pub mod counters;
#[cfg(test)]
mod own_restore_tests;

use serde::Serialize;

/// Something a switch said about some of its ports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortEvidence {
    /// `config-change`, or the counter's kind (`switch-link-flap`, `switch-pfc-watchdog`, …).
    pub kind: String,
    /// The switch, as the inventory names it.
    pub switch: String,
    /// The ports it is about, as the switch spells them.
    pub ports: Vec<String>,
    /// When it was seen (a backup's time, a read's time), milliseconds since the epoch.
    pub at_ms: i64,
    /// In words, self-contained: "leaf-03 config changed at 02:13:05: mtu 9100 → 1500 on Ethernet12–19".
    pub message: String,
    pub detail: serde_json::Value,
    /// What would undo it, offered to an operator (never run without an approval).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore: Option<RestoreOffer>,
}

/// Restore a switch's configuration to the version before a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestoreOffer {
    pub switch: String,
    /// The version to restore (the one before the change).
    pub version: u32,
    /// The runbook that does it.
    pub runbook: String,
}

/// The runbook a config-change restore is offered with (runbooks/switch-config-restore.toml).
pub const RESTORE_RUNBOOK: &str = "switch-config-restore";

/// Ports in words, runs of consecutive numbers folded: `Ethernet12–19`, `swp1–3, swp7`; others listed as
/// they are, in order.
pub fn ports_in_words(ports: &[String]) -> String {
    let mut split: Vec<(String, Option<u64>, String)> = ports
        .iter()
        .map(|p| {
            let digits = p.len() - p.trim_end_matches(|c: char| c.is_ascii_digit()).len();
            let (prefix, n) = p.split_at(p.len() - digits);
            (prefix.to_owned(), n.parse().ok(), p.clone())
        })
        .collect();
    split.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    split.dedup_by(|a, b| a.2 == b.2);
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < split.len() {
        let (prefix, n, name) = &split[i];
        let Some(start) = *n else {
            out.push(name.clone());
            i += 1;
            continue;
        };
        let mut end = start;
        let mut j = i + 1;
        while j < split.len() && split[j].0 == *prefix && split[j].1 == Some(end + 1) {
            end += 1;
            j += 1;
        }
        out.push(if end > start { format!("{prefix}{start}–{end}") } else { name.clone() });
        i = j;
    }
    out.join(", ")
}

/// Ports in the order a person reads them (`Ethernet8` before `Ethernet16`), once each.
pub fn sort_ports(ports: &mut Vec<String>) {
    let key = |p: &String| {
        let digits = p.len() - p.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (prefix, n) = p.split_at(p.len() - digits);
        (prefix.to_owned(), n.parse::<u64>().ok(), p.clone())
    };
    ports.sort_by_cached_key(key);
    ports.dedup();
}

/// A time of day as fault messages give it (UTC): `02:13:05`.
pub fn clock(at_ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(at_ms)
        .map(|t| t.format("%H:%M:%S").to_string())
        .unwrap_or_default()
}

impl crate::Lifeline {
    /// A new backup version of `switch` compared with the one before it: the port evidence its diff makes
    /// (`None`: the first version, or nothing about a port's MTU, PFC, QoS or LAG changed).
    pub async fn config_change_evidence(
        &self,
        switch: &str,
        version: u32,
    ) -> crate::error::Result<Option<PortEvidence>> {
        if version < 2 {
            return Ok(None);
        }
        let ctx = self.backup_context(false).await?;
        let dev = lifeline_types::DeviceName::new(switch)
            .map_err(|e| crate::EngineError::bad_argument(format!("`{switch}`: {e}")))?;
        let load = |v: u32| {
            let (ctx, dev) = (&ctx, &dev);
            async move {
                lifeline_netcfg::restore::load_version(ctx, dev, Some(v))
                    .await
                    .map_err(|e| crate::EngineError::failed_by(switch, "loading the version", e))
            }
        };
        let (old, new) = (load(version - 1).await?, load(version).await?);
        if let Some(v) = self.restored_by_us(switch, &old, &new).await? {
            // Our own restore (an approved offer, an operator's `backup restore`) is no cause of a fault,
            // and offering to undo it would offer the change it removed.
            tracing::info!(%switch, version, restored = v, "config change is Lifeline's restore of v{v}; no evidence");
            return Ok(None);
        }
        Ok(config_diff::evidence(
            switch,
            new.record.platform,
            (old.record.version, &old.normalised),
            (new.record.version, &new.normalised),
            new.record.taken_at.timestamp_millis(),
        ))
    }
}

impl crate::Lifeline {
    /// The version Lifeline restored onto `switch` between the two backups when the newer one is that
    /// version (same normalised config): the change the newer backup saw is that restore.
    async fn restored_by_us(
        &self,
        switch: &str,
        old: &lifeline_netcfg::restore::LoadedVersion,
        new: &lifeline_netcfg::restore::LoadedVersion,
    ) -> crate::error::Result<Option<u32>> {
        let (from, to) = (old.record.taken_at.timestamp_millis(), new.record.taken_at.timestamp_millis());
        let rows = self.store().await?.audit_log(Some(switch), 200).await?;
        let restored = rows.iter().filter(|r| {
            r.entry.action == "backup.restore"
                && matches!(r.entry.outcome.as_str(), "ok" | "unverified")
                && r.entry.detail["from"] == switch
                && (from..=to).contains(&r.at_ms)
        });
        let ctx = self.backup_context(false).await?;
        let dev = lifeline_types::DeviceName::new(switch)
            .map_err(|e| crate::EngineError::bad_argument(format!("`{switch}`: {e}")))?;
        for r in restored {
            let Some(v) = r.entry.detail["version"].as_u64().and_then(|v| u32::try_from(v).ok()) else {
                continue;
            };
            if v == new.record.version {
                continue;
            }
            match lifeline_netcfg::restore::load_version(&ctx, &dev, Some(v)).await {
                Ok(x) if x.normalised == new.normalised => return Ok(Some(v)),
                Ok(_) => {}
                Err(e) => tracing::warn!(%switch, version = v, "restored version not loaded: {e}"),
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn consecutive_ports_fold_into_a_range() {
        let p: Vec<String> = (12..=19).map(|n| format!("Ethernet{n}")).collect();
        assert_eq!(ports_in_words(&p), "Ethernet12–19");
        assert_eq!(ports_in_words(&v(&["swp7", "swp1", "swp2", "swp3"])), "swp1–3, swp7");
        assert_eq!(ports_in_words(&v(&["Ethernet8", "Ethernet16"])), "Ethernet8, Ethernet16");
        assert_eq!(ports_in_words(&v(&["Ethernet1/3", "Ethernet1/4"])), "Ethernet1/3–4");
        assert_eq!(
            ports_in_words(&v(&["PortChannel1", "Ethernet0", "Ethernet0"])),
            "Ethernet0, PortChannel1"
        );
    }
}
