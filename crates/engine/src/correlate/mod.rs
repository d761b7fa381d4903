//! Fault correlation: blame the shared part. Observations from many devices (a console's "rdma3: Link
//! down", a kernel panic, …) are held for a short while and grouped by the parts their units share
//! ([`topology`]); when one part explains them, ONE fault is raised on that part with the members listed,
//! and the members are not raised (nor acted on) one by one. A leaf that drops rail 3 then costs one
//! switch fault instead of eight node power cycles.
//!
//! The score, for a part `C` and the observations of one kind within the window:
//! - `affected`: distinct units observed that depend on `C`; `dependents`: units that depend on `C`;
//! - `fraction = affected / dependents`; `unaffected_share = affected < dependents` (a healthy unit on the
//!   same part is evidence against it);
//! - `C` explains them when `affected >= min_members` (default 2: one node is never a shared fault) and
//!   `fraction >= min_fraction` (default 0.5). Among parts that explain, the one that explains the most
//!   observations wins, then the higher fraction, then the smaller part (the port group before the leaf).
//!
//! Which parts may explain a kind ([`sweep::explaining`]): a sweep's `bmc-unreachable` only its OOB switch,
//! PDUs and rack (in that order of preference when two explain it equally), `health-critical` and
//! `sel-critical` only its PDUs and rack; console findings every part their unit depends on.
//!
//! Timing: an observation is decided `hold` after it arrived (default 5 s), so that the other members of a
//! shared failure, which arrive within a second or two, are seen with it. An observation that arrives while
//! its part's group is open (within `window` of the group's last member) joins it. One decided alone and
//! later found to be part of a group is reported as `linked` in the group (its own fault already exists).
//!
//! The correlator is pure (time is passed in, milliseconds), so the server's intake and the tests drive it
//! the same way.

pub mod clearing;
mod evidence;
pub mod rebuild;
pub mod rounds;
pub mod sweep;
pub mod topology;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

use serde::Serialize;

pub use evidence::with_evidence;
pub use topology::{Component, ComponentKind, Topology, Unit};

/// Tunables, `[correlation]` in the configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub hold: Duration,
    pub window: Duration,
    pub min_members: usize,
    pub min_fraction: f64,
}

impl Settings {
    /// From `[correlation]`; a bad value is a usage error naming the key.
    pub fn from_config(c: &crate::config::CorrelationConfig) -> crate::error::Result<Settings> {
        let d = Settings::default();
        let dur = |v: &Option<String>, key: &str, default: Duration| match v {
            None => Ok(default),
            Some(t) => humantime::parse_duration(t)
                .map_err(|e| crate::EngineError::bad_argument(format!("[correlation] {key} = \"{t}\": {e}"))),
        };
        let s = Settings {
            hold: dur(&c.hold, "hold", d.hold)?,
            window: dur(&c.window, "window", d.window)?,
            min_members: c.min_members.unwrap_or(d.min_members),
            min_fraction: c.min_fraction.unwrap_or(d.min_fraction),
        };
        if s.min_members < 2 {
            return Err(crate::EngineError::bad_argument(format!(
                "[correlation] min-members = {}: a shared fault needs at least 2 members",
                s.min_members
            )));
        }
        if !(s.min_fraction > 0.0 && s.min_fraction <= 1.0) {
            return Err(crate::EngineError::bad_argument(format!(
                "[correlation] min-fraction = {}: expected a fraction in (0, 1]",
                s.min_fraction
            )));
        }
        if s.window < s.hold {
            return Err(crate::EngineError::bad_argument("[correlation] window is shorter than hold"));
        }
        Ok(s)
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            hold: Duration::from_secs(5),
            window: Duration::from_secs(600),
            min_members: 2,
            min_fraction: 0.5,
        }
    }
}

/// One thing seen on one device: what its own fault would be.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Observation {
    /// The fault kind it would raise alone (`rail-down`, `console-kernel-panic`).
    pub kind: String,
    pub unit: Unit,
    pub severity: String,
    pub message: String,
    /// When it was seen, milliseconds since the epoch.
    pub at_ms: i64,
    pub detail: serde_json::Value,
}

/// The correlation score of one part.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Score {
    pub affected: usize,
    pub dependents: usize,
    pub fraction: f64,
    /// A unit that depends on the part was not observed failing.
    pub unaffected_share: bool,
}

/// A part blamed for several observations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shared {
    /// `shared-<member kind>`.
    pub kind: String,
    pub component: Component,
    /// Where the fault is recorded ([`Component::device`]).
    pub device: String,
    pub severity: String,
    pub message: String,
    pub score: Score,
    /// Every member so far, one per unit, oldest first.
    pub members: Vec<Observation>,
    /// Members that had been decided alone before the group formed: their own faults exist and are to be
    /// linked to this one.
    pub linked: Vec<Unit>,
    /// The members this verdict adds (all of them for a new group).
    pub added: Vec<Unit>,
    /// False when this only adds members to a group reported before.
    pub new: bool,
}

/// What to do with observations that are due.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Nothing shared explains it: the device's own fault.
    Own(Observation),
    /// One fault on the shared part.
    Shared(Shared),
}

#[derive(Debug)]
struct Group {
    kind: String,
    component: Component,
    members: BTreeMap<Unit, Observation>,
    last_ms: i64,
}

/// Holds observations until they can be decided; see the module documentation.
#[derive(Debug)]
pub struct Correlator {
    topology: Topology,
    settings: Settings,
    pending: Vec<Observation>,
    /// Decided alone, kept for the window: a later group may explain them.
    alone: Vec<Observation>,
    groups: Vec<Group>,
    /// (kind, part) -> units observed in `pending` or `alone` (with their count), so a score is a look-up,
    /// not a scan: at 1,000 observations a second the window holds hundreds of thousands.
    index: HashMap<(String, Component), HashMap<Unit, usize>>,
    /// Switch-side evidence held for the window ([`evidence`]).
    evidence: Vec<crate::switch_evidence::PortEvidence>,
    /// (kind, unit) -> the sweep rounds a pending observation has been through ([`Correlator::flush_round`]).
    waited: HashMap<(String, Unit), u32>,
}

impl Correlator {
    pub fn new(topology: Topology, settings: Settings) -> Correlator {
        Correlator {
            topology,
            settings,
            pending: Vec::new(),
            alone: Vec::new(),
            groups: Vec::new(),
            index: HashMap::new(),
            evidence: Vec::new(),
            waited: HashMap::new(),
        }
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Observations waiting for their hold to pass.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    pub fn observe(&mut self, o: Observation) {
        self.index_add(&o);
        self.pending.push(o);
    }

    /// The parts that may explain an observation of `kind` about `unit` ([`sweep::explaining`]).
    fn parts_for<'a>(&'a self, kind: &str, unit: &Unit) -> impl Iterator<Item = &'a Component> + use<'a> {
        let allowed = sweep::explaining(kind);
        self.topology.parts(unit).iter().filter(move |c| allowed.is_none_or(|a| a.contains(&c.kind)))
    }

    fn index_add(&mut self, o: &Observation) {
        let parts: Vec<Component> = self.parts_for(&o.kind, &o.unit).cloned().collect();
        for c in parts {
            *self.index.entry((o.kind.clone(), c.clone())).or_default().entry(o.unit.clone()).or_default() +=
                1;
        }
    }

    fn index_remove(&mut self, o: &Observation) {
        let parts: Vec<Component> = self.parts_for(&o.kind, &o.unit).cloned().collect();
        for c in parts {
            let key = (o.kind.clone(), c);
            if let Some(units) = self.index.get_mut(&key) {
                if let Some(n) = units.get_mut(&o.unit) {
                    *n -= 1;
                    if *n == 0 {
                        units.remove(&o.unit);
                    }
                }
                if units.is_empty() {
                    self.index.remove(&key);
                }
            }
        }
    }

    /// Decides every observation whose hold has passed at `now_ms`.
    pub fn decide(&mut self, now_ms: i64) -> Vec<Verdict> {
        let hold = i64::try_from(self.settings.hold.as_millis()).unwrap_or(i64::MAX);
        self.decide_held(now_ms, hold, None)
    }

    /// Decides every pending observation now, without waiting for its hold: for a batch that is already
    /// complete (one sweep's rows: every member of a shared failure is in it).
    pub fn flush(&mut self, now_ms: i64) -> Vec<Verdict> {
        self.decide_held(now_ms, 0, None)
    }

    /// Decides one round of a periodic sweep. An observation a part explains is decided at once (as
    /// [`Correlator::flush`]); one that nothing explains yet is decided alone only after it has been
    /// through `rounds` rounds (its own included), or at once when its unit is already decided alone. Why:
    /// the round that straddles the moment an OOB switch dies reads the BMCs visited before that moment
    /// clear (or half read), so its first dark BMC looks alone; the next round, all of whose visits start
    /// after it, reads every member dark. A repeated observation of a waiting unit keeps the first.
    pub fn flush_round(&mut self, now_ms: i64, rounds: u32) -> Vec<Verdict> {
        self.pending.sort_by_key(|o| o.at_ms);
        let mut seen = HashSet::new();
        let (keep, repeated): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|o| seen.insert((o.kind.clone(), o.unit.clone())));
        self.pending = keep;
        for o in &repeated {
            self.index_remove(o);
        }
        let alone: HashSet<(&str, &Unit)> = self.alone.iter().map(|o| (o.kind.as_str(), &o.unit)).collect();
        let mut may_stand_alone = HashSet::new();
        for o in &self.pending {
            let key = (o.kind.clone(), o.unit.clone());
            let n = self.waited.entry(key.clone()).or_default();
            *n += 1;
            if *n >= rounds || alone.contains(&(o.kind.as_str(), &o.unit)) {
                may_stand_alone.insert(key);
            }
        }
        let out = self.decide_held(now_ms, 0, Some(&may_stand_alone));
        let waiting: HashSet<(&str, &Unit)> =
            self.pending.iter().map(|o| (o.kind.as_str(), &o.unit)).collect();
        self.waited.retain(|(k, u), _| waiting.contains(&(k.as_str(), u)));
        out
    }

    /// An observation of a round another process decided (the previous decider of the sweep rounds): it
    /// has been through that round, so it counts one round towards [`Correlator::flush_round`]'s wait, and
    /// a lone BMC is not held back again by each change of decider. One its unit's group or lone decision
    /// already holds (rebuilt from the store, [`Correlator::rebuild`]) adds nothing.
    pub fn carry(&mut self, o: Observation) {
        let decided = self.alone.iter().any(|a| a.kind == o.kind && a.unit == o.unit)
            || self.groups.iter().any(|g| g.kind == o.kind && g.members.contains_key(&o.unit));
        if decided {
            return;
        }
        self.waited.entry((o.kind.clone(), o.unit.clone())).or_insert(1);
        self.observe(o);
    }

    /// Drops the undecided observations of `kind` on `device`: a later read proved them gone before they
    /// were decided (a BMC dark for one sweep round only), so there is nothing to raise.
    pub fn withdraw(&mut self, kind: &str, device: &str) -> usize {
        let (gone, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|o| o.kind == kind && o.unit.device == device);
        self.pending = keep;
        for o in &gone {
            self.index_remove(o);
            self.waited.remove(&(o.kind.clone(), o.unit.clone()));
        }
        gone.len()
    }

    /// Ends the group of member `kind` whose fault is recorded on `device` ([`Component::device`]): its
    /// shared fault was resolved, so a later failure of the part is a new fault, not a silent addition
    /// to the resolved one.
    pub fn close(&mut self, kind: &str, device: &str) {
        self.groups.retain(|g| !(g.kind == kind && g.component.device() == device));
    }

    /// `may_stand_alone`: when given, only these (kind, unit) are decided alone; the others nothing explains
    /// stay pending ([`Correlator::flush_round`]).
    fn decide_held(
        &mut self,
        now_ms: i64,
        hold: i64,
        may_stand_alone: Option<&HashSet<(String, Unit)>>,
    ) -> Vec<Verdict> {
        let window = i64::try_from(self.settings.window.as_millis()).unwrap_or(i64::MAX);
        let expired: Vec<Observation>;
        (self.alone, expired) =
            std::mem::take(&mut self.alone).into_iter().partition(|o| now_ms - o.at_ms <= window);
        for o in &expired {
            self.index_remove(o);
        }
        self.groups.retain(|g| now_ms - g.last_ms <= window);
        self.expire_evidence(now_ms, window);
        self.pending.sort_by_key(|o| o.at_ms);
        let mut out = Vec::new();
        // Joining an open group needs no hold: the part is already blamed.
        let pending = std::mem::take(&mut self.pending);
        let mut joined: BTreeMap<usize, Vec<Unit>> = BTreeMap::new();
        for o in pending {
            match self.open_group(&o) {
                Some(i) => {
                    self.index_remove(&o);
                    let g = &mut self.groups[i];
                    g.last_ms = g.last_ms.max(o.at_ms);
                    let added = joined.entry(i).or_default();
                    if !g.members.contains_key(&o.unit) {
                        added.push(o.unit.clone());
                        g.members.insert(o.unit.clone(), o);
                    }
                }
                None => self.pending.push(o),
            }
        }
        for (i, added) in joined {
            if !added.is_empty() {
                out.push(Verdict::Shared(self.report(i, Vec::new(), added, false)));
            }
        }
        // The due observations are a prefix of the sorted pending list.
        let due_count = self.pending.partition_point(|o| now_ms - o.at_ms >= hold);
        let mut due: std::collections::VecDeque<Observation> = self.pending.drain(..due_count).collect();
        let mut waiting = Vec::new();
        while let Some(o) = due.pop_front() {
            if let Some(i) = self.open_group(&o) {
                self.index_remove(&o);
                let g = &mut self.groups[i];
                g.last_ms = g.last_ms.max(o.at_ms);
                if !g.members.contains_key(&o.unit) {
                    let added = vec![o.unit.clone()];
                    g.members.insert(o.unit.clone(), o);
                    out.push(Verdict::Shared(self.report(i, Vec::new(), added, false)));
                }
                continue;
            }
            match self.best(&o) {
                Some(component) => {
                    let mut members = BTreeMap::new();
                    let mut linked = Vec::new();
                    let topology = &self.topology;
                    // Same kind, so `component` is one of the parts that may explain it.
                    let shares =
                        |x: &Observation| x.kind == o.kind && topology.parts(&x.unit).contains(&component);
                    let (mine, rest): (Vec<_>, Vec<_>) =
                        std::mem::take(&mut self.pending).into_iter().partition(shares);
                    self.pending = rest;
                    let (mine_due, rest): (Vec<_>, Vec<_>) =
                        std::mem::take(&mut due).into_iter().partition(shares);
                    due = rest.into();
                    let (mine_waiting, rest): (Vec<_>, Vec<_>) =
                        std::mem::take(&mut waiting).into_iter().partition(shares);
                    waiting = rest;
                    let (was_alone, rest): (Vec<_>, Vec<_>) =
                        std::mem::take(&mut self.alone).into_iter().partition(shares);
                    self.alone = rest;
                    for x in was_alone {
                        self.index_remove(&x);
                        linked.push(x.unit.clone());
                        members.entry(x.unit.clone()).or_insert(x);
                    }
                    for x in std::iter::once(o.clone()).chain(mine).chain(mine_due).chain(mine_waiting) {
                        self.index_remove(&x);
                        members.entry(x.unit.clone()).or_insert(x);
                    }
                    let last_ms = members.values().map(|m| m.at_ms).max().unwrap_or(o.at_ms);
                    linked.sort();
                    linked.dedup();
                    self.groups.push(Group { kind: o.kind.clone(), component, members, last_ms });
                    let i = self.groups.len() - 1;
                    let added = self.groups[i].members.keys().cloned().collect();
                    out.push(Verdict::Shared(self.report(i, linked, added, true)));
                }
                None if may_stand_alone.is_some_and(|m| !m.contains(&(o.kind.clone(), o.unit.clone()))) => {
                    waiting.push(o);
                }
                None => {
                    self.alone.push(o.clone());
                    out.push(Verdict::Own(o));
                }
            }
        }
        // Still indexed: they count for the parts they share while they wait.
        self.pending.extend(waiting);
        self.pending.sort_by_key(|o| o.at_ms);
        out
    }

    /// The open group `o` belongs to, if any.
    fn open_group(&self, o: &Observation) -> Option<usize> {
        let parts: Vec<&Component> = self.parts_for(&o.kind, &o.unit).collect();
        self.groups.iter().position(|g| g.kind == o.kind && parts.contains(&&g.component))
    }

    /// The part that best explains `o` with the observations of its kind in the window, if one does.
    fn best(&self, o: &Observation) -> Option<Component> {
        let rank = |c: &Component| sweep::preference(&o.kind, c.kind);
        self.parts_for(&o.kind, &o.unit)
            .filter_map(|c| {
                let affected = self.index.get(&(o.kind.clone(), c.clone())).map_or(0, HashMap::len);
                let s = self.scored(c, affected);
                let explains =
                    s.affected >= self.settings.min_members && s.fraction >= self.settings.min_fraction;
                explains.then_some((c, s))
            })
            .max_by(|(a, x), (b, y)| {
                x.affected
                    .cmp(&y.affected)
                    .then(x.fraction.total_cmp(&y.fraction))
                    .then(y.dependents.cmp(&x.dependents))
                    .then(rank(b).cmp(&rank(a)))
                    .then(b.cmp(a))
            })
            .map(|(c, _)| c.clone())
    }

    fn scored(&self, c: &Component, affected: usize) -> Score {
        let dependents = self.topology.dependents(c);
        let fraction = if dependents == 0 { 0.0 } else { affected as f64 / dependents as f64 };
        Score { affected, dependents, fraction, unaffected_share: affected < dependents }
    }

    fn score(&self, c: &Component, seen: &BTreeSet<&Unit>) -> Score {
        self.scored(c, seen.iter().filter(|u| self.topology.parts(u).contains(c)).count())
    }

    fn report(&self, i: usize, linked: Vec<Unit>, added: Vec<Unit>, new: bool) -> Shared {
        let g = &self.groups[i];
        let units: BTreeSet<&Unit> = g.members.keys().collect();
        let score = self.score(&g.component, &units);
        let mut members: Vec<Observation> = g.members.values().cloned().collect();
        members.sort_by_key(|m| m.at_ms);
        let severity = if members.iter().any(|m| m.severity == "critical") { "critical" } else { "warning" };
        let names: Vec<String> = members
            .iter()
            .map(|m| {
                let port = m.unit.rail.as_deref().and_then(|r| self.topology.port(&m.unit.device, r));
                match port {
                    Some(p) => format!("{} ({p})", m.unit.device),
                    None => m.unit.device.clone(),
                }
            })
            .collect();
        let message = format!(
            "{} on {} of {} dependents of {}{}: {}",
            g.kind,
            score.affected,
            score.dependents,
            g.component.describe(),
            if score.unaffected_share { "" } else { " (all of them)" },
            names.join(", ")
        );
        Shared {
            kind: format!("shared-{}", g.kind),
            component: g.component.clone(),
            device: g.component.device(),
            severity: severity.into(),
            message,
            score,
            members,
            linked,
            added,
            new,
        }
    }
}

/// The head of a test inventory (cluster, defaults, one site, rack `r1`), for the topologies of the tests.
#[cfg(test)]
const TEST_INVENTORY_HEAD: &str = "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n[defaults.bmc]\n\
    username = \"a\"\ncredential = \"env:X\"\n[defaults.management]\nusername = \"a\"\ncredential = \"env:X\"\n\
    [[site]]\nname = \"s\"\n[[rack]]\nname = \"r1\"\nsite = \"s\"\n";

#[cfg(test)]
mod tests;
