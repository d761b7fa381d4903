//! Simulated switches: an SSH server per switch (russh) with the platform's CLI, realistic fabric
//! configs, a `config-change` fault and restore paths that really change the running config.
//!
//! Why in the simulator: Lifeline's switch backup/restore (crate `netcfg`) must be exercised over real
//! SSH against every platform it supports, at fleet scale, and restores must be verifiable without
//! real switches. The sim shares nothing with the `netcfg` client: it only speaks SSH and CLI text.

mod cli;
pub mod configs;
pub mod counters;
pub mod files;
pub mod ifcounters;
pub mod lldp;
#[cfg(test)]
mod openssh_tests;
mod port_config;
mod server;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use chrono::{DateTime, Utc};
use lifeline_types::{ConfigSource, Platform};
use russh::keys::PrivateKey;
use russh::keys::ssh_key::private::Ed25519Keypair;

pub use cli::{Cli, Reply};
pub use server::serve;

use crate::actions::ActionLog;
use crate::spec::SwitchSpec;

/// Path of SONiC's saved config (served by `cat` and `config reload`).
pub const SONIC_SAVED: &str = "/etc/sonic/config_db.json";

/// The exact line change a `config-change` fault made (for tests asserting "exactly that diff").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigChange {
    pub removed: String,
    pub added: String,
}

struct Inner {
    /// The running config body (IOS/EOS text without the volatile header, SONiC canonical JSON,
    /// Cumulus `nv set` lines).
    running: String,
    saved: String,
    /// NVUE pending revision.
    pending: Option<Vec<String>>,
    files: HashMap<String, String>,
    key_generation: u32,
    host_key: PrivateKey,
    changes: u32,
    last_change: DateTime<Utc>,
    revision: u32,
    reloads: u32,
}

/// One simulated switch's state, shared by its SSH sessions and the sim's control API.
pub struct SwitchState {
    pub name: String,
    pub platform: Platform,
    pub username: String,
    pub password: String,
    /// Config changes executed over SSH (shared with the switch's BMC log when it has one).
    pub actions: Arc<ActionLog>,
    /// Ports in a PFC pause storm (`pfc-storm=PORT`), for the CLI's PFC counters.
    pub pfc: counters::PfcStorms,
    /// Ports flapping (`link-flap=PORT`), for the CLI's interface and flap counters.
    pub flaps: ifcounters::Flaps,
    /// Who is cabled to which port, for the LLDP show commands (`miscabled=A:B` swaps two).
    pub lldp: lldp::Cabling,
    /// `mgmt-down`: the management port stops answering SSH (the BMC and its SOL still work).
    mgmt_down: AtomicBool,
    mgmt_changed: Notify,
    /// The switch's BMC host: the management port answers only while its OS runs (a real switch looping in
    /// its bootloader or kernel has no management plane, whatever its BMC says).
    bmc_host: std::sync::OnceLock<std::sync::Weak<crate::host::Host>>,
    /// `boot-loop` on a switch without a BMC: its OS never comes up, so neither does the port.
    looping: AtomicBool,
    /// Cumulus without NVUE (`config-source = "files"`): the configuration is two files ([`files`]).
    pub files_mode: bool,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for SwitchState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwitchState").field("name", &self.name).field("platform", &self.platform).finish()
    }
}

/// A stable Ed25519 host key per (switch, generation): the same sim restarted keeps its keys, and a
/// rotation gives a different one.
fn host_key(name: &str, generation: u32) -> PrivateKey {
    let mut seed = [0u8; 32];
    for (i, chunk) in seed.chunks_mut(8).enumerate() {
        // FNV-1a over name, generation and chunk index.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes().chain(generation.to_le_bytes()).chain([i as u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        chunk.copy_from_slice(&h.to_le_bytes());
    }
    PrivateKey::from(Ed25519Keypair::from_seed(&seed))
}

fn strip_volatile_header(platform: Platform, text: &str) -> String {
    let volatile = |l: &str| {
        let t = l.trim();
        match platform {
            Platform::Eos => {
                t.starts_with("! Command:")
                    || t.starts_with("! device:")
                    || t.starts_with("! Time:")
                    || t.starts_with("! Startup-config last modified")
            }
            _ => {
                t.starts_with("Building configuration")
                    || t.starts_with("Current configuration :")
                    || t.starts_with("! Last configuration change")
                    || t.starts_with("! NVRAM config last updated")
            }
        }
    };
    let mut out = String::with_capacity(text.len());
    let mut started = false;
    for l in text.lines() {
        if volatile(l) || (!started && l.trim().is_empty()) {
            continue;
        }
        started = true;
        out.push_str(l.trim_end());
        out.push('\n');
    }
    out
}

fn canonical_json(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    fn sort(v: serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let mut entries: Vec<_> = m.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                serde_json::Value::Object(entries.into_iter().map(|(k, v)| (k, sort(v))).collect())
            }
            other => other,
        }
    }
    Ok(sort(serde_json::from_str(text)?))
}

impl SwitchState {
    pub fn new(name: &str, platform: Platform, tier: &str, username: &str, password: &str) -> SwitchState {
        let running = configs::initial(platform, name, tier);
        SwitchState {
            name: name.to_owned(),
            platform,
            username: username.to_owned(),
            password: password.to_owned(),
            actions: Arc::default(),
            pfc: counters::PfcStorms::default(),
            flaps: ifcounters::Flaps::default(),
            lldp: lldp::Cabling::default(),
            mgmt_down: AtomicBool::new(false),
            mgmt_changed: Notify::new(),
            bmc_host: std::sync::OnceLock::new(),
            looping: AtomicBool::new(false),
            files_mode: false,
            inner: Mutex::new(Inner {
                saved: running.clone(),
                running,
                pending: None,
                files: HashMap::new(),
                key_generation: 0,
                host_key: host_key(name, 0),
                changes: 0,
                last_change: Utc::now(),
                revision: 1,
                reloads: 0,
            }),
        }
    }

    pub fn from_spec(spec: &SwitchSpec) -> SwitchState {
        let state = SwitchState {
            lldp: lldp::Cabling::new(spec.lldp.clone()),
            files_mode: spec.platform == Platform::Cumulus && spec.config_source == Some(ConfigSource::Files),
            ..SwitchState::new(&spec.name, spec.platform, &spec.tier, &spec.username, &spec.password)
        };
        if state.files_mode {
            let i = configs::index_of(&spec.name);
            let text = files::initial(&spec.name, &spec.tier, i, configs::asn(&spec.tier, i));
            let mut inner = state.lock();
            inner.saved = text.clone();
            inner.running = text;
            drop(inner);
        }
        state
    }

    /// Records into `log` instead of a log of its own (the BMC's, so one device has one sequence).
    pub fn with_actions(mut self, log: Arc<ActionLog>) -> SwitchState {
        self.actions = log;
        self
    }

    /// Ties the management port to the OS phase of the switch's BMC host (see [`SwitchState::answering`]).
    pub fn set_bmc_host(&self, host: &Arc<crate::host::Host>) {
        let _ = self.bmc_host.set(Arc::downgrade(host));
    }

    /// `boot-loop` routed to a switch without a BMC (`false`: cleared).
    pub fn set_looping(&self, on: bool) {
        self.looping.store(on, Ordering::Relaxed);
        self.mgmt_changed.notify_waiters();
    }

    /// Whether SSH on the management port gets a banner now: the port is up and the NOS runs (the BMC
    /// host, if any, is in its OS phase; no boot loop).
    pub fn answering(&self) -> bool {
        !self.mgmt_down()
            && !self.looping.load(Ordering::Relaxed)
            && self.bmc_host.get().and_then(std::sync::Weak::upgrade).is_none_or(|h| h.os_answering())
    }

    /// Whether the management port is down (`mgmt-down`).
    pub fn mgmt_down(&self) -> bool {
        self.mgmt_down.load(Ordering::Relaxed)
    }

    /// Takes the management port down or brings it back (held connections then drop).
    pub fn set_mgmt_down(&self, down: bool) {
        self.mgmt_down.store(down, Ordering::Relaxed);
        self.mgmt_changed.notify_waiters();
    }

    /// Resolves when `mgmt-down` changes.
    pub async fn mgmt_changed(&self) {
        self.mgmt_changed.notified().await
    }

    /// Every port's interface counters now (for the CLI's counters commands).
    pub fn if_counters(&self) -> Vec<ifcounters::PortCounters> {
        self.flaps.counters(self.platform, &self.pfc)
    }

    /// `clear`: the switch-side faults (PFC storms, link flaps, management port, miscabling) end.
    pub fn clear_faults(&self) {
        self.pfc.clear();
        self.flaps.clear();
        self.lldp.restore();
        self.looping.store(false, Ordering::Relaxed);
        self.set_mgmt_down(false);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current host key (what a new connection is served with).
    pub fn host_key(&self) -> PrivateKey {
        self.lock().host_key.clone()
    }

    /// Replace the host key (a switch that was re-imaged or swapped): Lifeline must refuse it.
    pub fn rotate_host_key(&self) {
        let mut i = self.lock();
        i.key_generation += 1;
        i.host_key = host_key(&self.name, i.key_generation);
    }

    /// The running config body, without volatile header lines.
    pub fn running_config(&self) -> String {
        self.lock().running.clone()
    }

    pub fn saved_config(&self) -> String {
        self.lock().saved.clone()
    }

    /// How many times the switch reloaded (IOS restore path).
    pub fn reloads(&self) -> u32 {
        self.lock().reloads
    }

    /// The `config-change` fault: move the syslog server to the next address. Deterministic: the n-th
    /// change on a switch always makes the same edit.
    pub fn config_change(&self) -> ConfigChange {
        let mut i = self.lock();
        let (old, new) = (configs::syslog_addr(i.changes), configs::syslog_addr(i.changes + 1));
        let line = i.running.lines().find(|l| l.contains(&old)).map(str::to_owned);
        let Some(line) = line else {
            // The operator (or a restore) removed the syslog line: add one instead.
            let added = match self.platform {
                Platform::Ios | Platform::Nxos | Platform::Eos => format!("logging host {new}"),
                // Appended at the end of the text: frr.conf, the last file.
                _ if self.files_mode => format!("ip route {new}/32 10.99.0.1 nexthop-vrf mgmt"),
                _ => format!("nv set service syslog default server {new}"),
            };
            if self.platform != Platform::Sonic {
                let pos = i.running.rfind("end\n").filter(|_| self.platform != Platform::Cumulus);
                match pos {
                    Some(p) => i.running.insert_str(p, &format!("{added}\n")),
                    None => i.running.push_str(&format!("{added}\n")),
                }
            }
            i.changes += 1;
            i.last_change = Utc::now();
            return ConfigChange { removed: String::new(), added };
        };
        let replaced = line.replace(&old, &new);
        i.running = i.running.replacen(&line, &replaced, 1);
        i.changes += 1;
        i.last_change = Utc::now();
        ConfigChange { removed: line, added: replaced }
    }

    fn header(&self, i: &Inner, body: &str) -> String {
        let now = Utc::now();
        match self.platform {
            Platform::Ios | Platform::Nxos => format!(
                "Building configuration...\n\nCurrent configuration : {} bytes\n! Last configuration change at {} by admin\n{body}",
                body.len(),
                i.last_change.format("%H:%M:%S UTC %a %b %-d %Y"),
            ),
            Platform::Eos => format!(
                "! Command: show running-config\n! device: {} (DCS-7060X5-64S, EOS-4.31.2F)\n! Time: {}\n{body}",
                self.name,
                now.format("%a %b %e %H:%M:%S %Y"),
            ),
            _ => body.to_owned(),
        }
    }

    /// What `show running-config` (or the platform's equivalent) prints.
    pub fn show_running(&self) -> String {
        let i = self.lock();
        self.header(&i, &i.running)
    }

    pub fn show_startup(&self) -> String {
        let i = self.lock();
        self.header(&i, &i.saved)
    }

    pub fn show_version(&self) -> String {
        match self.platform {
            Platform::Ios => "Cisco IOS Software, lifeline-sim, Version 15.2(7)E\n".into(),
            Platform::Nxos => "Cisco Nexus Operating System (NX-OS) Software, lifeline-sim\n".into(),
            Platform::Eos => "Arista DCS-7060X5-64S\nSoftware image version: 4.31.2F (lifeline-sim)\n".into(),
            Platform::Sonic => "SONiC Software Version: SONiC.202311.lifeline-sim\n".into(),
            Platform::Cumulus => "operational  applied\nbuild  Cumulus Linux 5.9.1 (lifeline-sim)\n".into(),
        }
    }

    pub(crate) fn save(&self) {
        let mut i = self.lock();
        i.saved = i.running.clone();
    }

    pub(crate) fn unsaved(&self) -> bool {
        let i = self.lock();
        i.saved != i.running
    }

    pub(crate) fn write_file(&self, path: &str, content: String) {
        let mut i = self.lock();
        if self.files_mode && files::FILES.contains(&path) {
            // The files are the configuration, running and saved alike.
            i.running = files::replace_section(&i.running, path, &content);
            i.saved = i.running.clone();
            i.last_change = Utc::now();
        } else if path == SONIC_SAVED {
            i.saved = content;
        } else {
            i.files.insert(path.to_owned(), content);
        }
    }

    pub(crate) fn read_file(&self, path: &str) -> Option<String> {
        let i = self.lock();
        if path == SONIC_SAVED && self.platform == Platform::Sonic {
            return Some(i.saved.clone());
        }
        if self.files_mode && files::FILES.contains(&path) {
            return files::section(&i.running, path);
        }
        i.files.get(path).cloned()
    }

    pub(crate) fn set_startup_from_text(&self, text: &str) {
        let body = strip_volatile_header(self.platform, text);
        self.lock().saved = body;
    }

    pub(crate) fn set_running_from_text(&self, text: &str) {
        let body = strip_volatile_header(self.platform, text);
        let mut i = self.lock();
        i.running = body;
        i.last_change = Utc::now();
    }

    /// IOS reload: the running config becomes the startup config.
    pub(crate) fn reload(&self) {
        let mut i = self.lock();
        i.running = i.saved.clone();
        i.reloads += 1;
        i.last_change = Utc::now();
    }

    pub(crate) fn sonic_replace(&self, text: &str) -> Result<(), serde_json::Error> {
        let v = canonical_json(text)?;
        let mut i = self.lock();
        i.running = configs::pretty(&v);
        i.last_change = Utc::now();
        Ok(())
    }

    pub(crate) fn sonic_merge(&self, text: &str) -> Result<(), serde_json::Error> {
        let add = canonical_json(text)?;
        let mut i = self.lock();
        let mut cur = canonical_json(&i.running)?;
        if let (Some(cur), serde_json::Value::Object(add)) = (cur.as_object_mut(), add) {
            for (table, rows) in add {
                match (cur.get_mut(&table).and_then(|t| t.as_object_mut()), rows) {
                    (Some(t), serde_json::Value::Object(rows)) => t.extend(rows),
                    (_, rows) => {
                        cur.insert(table, rows);
                    }
                }
            }
        }
        let text = configs::pretty(&cur);
        i.running = configs::pretty(&canonical_json(&text)?);
        Ok(())
    }

    fn pending(i: &mut Inner) -> &mut Vec<String> {
        if i.pending.is_none() {
            i.pending = Some(i.running.lines().map(str::to_owned).collect());
        }
        i.pending.as_mut().expect("just set")
    }

    pub(crate) fn nv_set(&self, line: &str) {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut i = self.lock();
        let p = Self::pending(&mut i);
        if !p.contains(&line) {
            p.push(line);
        }
    }

    /// `nv unset PATH` (empty: everything).
    pub(crate) fn nv_unset(&self, path: &str) {
        let mut i = self.lock();
        let p = Self::pending(&mut i);
        if path.trim().is_empty() {
            p.clear();
        } else {
            let prefix = format!("nv set {}", path.trim());
            p.retain(|l| !(l == &prefix || l.starts_with(&format!("{prefix} "))));
        }
    }

    /// Applies the pending revision; returns the new revision and whether there was one to apply.
    pub(crate) fn nv_apply(&self) -> (u32, bool) {
        let mut i = self.lock();
        let applied = i.pending.is_some();
        if let Some(p) = i.pending.take() {
            let mut s = p.join("\n");
            if !s.is_empty() {
                s.push('\n');
            }
            i.running = s;
            i.last_change = Utc::now();
        }
        i.revision += 1;
        (i.revision, applied)
    }

    pub(crate) fn nv_detach(&self) {
        self.lock().pending = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn drive(cli: &mut Cli, line: &str) -> Reply {
        cli.line(line)
    }

    #[test]
    fn config_change_is_one_line_and_deterministic() {
        for p in Platform::ALL {
            let s = SwitchState::new("leaf3", *p, "leaf", "admin", "pw");
            let before = s.running_config();
            let c = s.config_change();
            let after = s.running_config();
            assert!(before.contains(&c.removed) && after.contains(&c.added), "{p}");
            assert_eq!(before.lines().count(), after.lines().count(), "{p}");
            let diff: Vec<_> = before.lines().zip(after.lines()).filter(|(a, b)| a != b).collect();
            assert_eq!(diff, vec![(c.removed.as_str(), c.added.as_str())], "{p}");
            let s2 = SwitchState::new("leaf3", *p, "leaf", "admin", "pw");
            assert_eq!(s2.config_change(), c);
        }
    }

    #[test]
    fn cumulus_files_mode_backs_up_and_restores_its_two_files() {
        let spec = SwitchSpec {
            name: "fe1".into(),
            platform: Platform::Cumulus,
            address: std::net::Ipv4Addr::LOCALHOST.into(),
            ssh_port: None,
            username: "cumulus".into(),
            password: "pw".into(),
            bmc: None,
            tier: "leaf".into(),
            lldp: Vec::new(),
            config_source: Some(ConfigSource::Files),
        };
        let s = Arc::new(SwitchState::from_spec(&spec));
        let mut cli = Cli::new(s.clone(), false);
        let fetch = "for f in /etc/network/interfaces /etc/frr/frr.conf; do echo \"# lifeline-file: $f\"; \
                     sudo cat \"$f\"; done";
        let all = drive(&mut cli, fetch).text;
        assert_eq!(all, s.running_config(), "the loop prints both files after their markers");
        assert!(all.starts_with("# lifeline-file: /etc/network/interfaces\n# This file describes"));
        assert!(drive(&mut cli, "nv config show -o commands").text.is_empty(), "NVUE holds nothing");

        // A config change moves one line of frr.conf; writing the old file back and reloading undoes it.
        let frr = files::section(&all, "/etc/frr/frr.conf").unwrap();
        let c = s.config_change();
        assert!(frr.contains(&c.removed) && !c.removed.is_empty(), "{c:?}");
        drive(&mut cli, "sudo tee /etc/frr/frr.conf >/dev/null <<'LIFELINE_EOF'");
        for l in frr.lines() {
            drive(&mut cli, l);
        }
        drive(&mut cli, "LIFELINE_EOF");
        assert_eq!(drive(&mut cli, "sudo ifreload -a").status, 0);
        assert_eq!(drive(&mut cli, "sudo systemctl reload frr").status, 0);
        assert_eq!(s.running_config(), all, "restored byte for byte");
        assert_eq!(s.actions.entries().len(), 1, "ifreload is the one applied change");
    }

    #[test]
    fn ios_paging_and_privilege() {
        let s = Arc::new(SwitchState::new("leaf1", Platform::Ios, "leaf", "admin", "pw"));
        let mut cli = Cli::new(s.clone(), false);
        assert_eq!(cli.prompt(), "leaf1>");
        assert!(drive(&mut cli, "show running-config").text.contains("% Invalid input"));
        drive(&mut cli, "enable");
        assert_eq!(cli.prompt(), "leaf1#");
        let r = drive(&mut cli, "show running-config");
        assert!(r.text.ends_with(" --More-- ") && !r.prompt);
        let mut all = r.text.replace(" --More-- ", "");
        while cli.paging() {
            let r = cli.page_key(b' ');
            all.push_str(&r.text.replace(" --More-- ", "").replace("\r          \r", ""));
        }
        assert_eq!(strip_volatile_header(Platform::Ios, &all), s.running_config());
        drive(&mut cli, "terminal length 0");
        assert!(drive(&mut cli, "show running-config").prompt);
    }

    #[test]
    fn sonic_reload_from_file_replaces_running() {
        let s = Arc::new(SwitchState::new("leaf2", Platform::Sonic, "leaf", "admin", "pw"));
        let mut cli = Cli::new(s.clone(), false);
        drive(&mut cli, "cat > /tmp/x.json <<'EOF'");
        drive(&mut cli, r#"{"DEVICE_METADATA": {"localhost": {"hostname": "leaf2"}}}"#);
        drive(&mut cli, "EOF");
        let r = drive(&mut cli, "sudo config reload -y /tmp/x.json");
        assert_eq!(r.status, 0, "{}", r.text);
        assert!(s.running_config().contains("hostname") && !s.running_config().contains("PORT"));
        assert_ne!(s.saved_config(), s.running_config());
        drive(&mut cli, "sudo config save -y");
        assert_eq!(s.saved_config(), s.running_config());
    }
}
