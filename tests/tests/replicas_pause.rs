//! A replica paused at the worst moment of a runbook step, on PostgreSQL with three `lifeline serve`
//! replicas over `lifeline sim`: the replica driving the run stops itself (SIGSTOP, through the
//! `test-hooks` build's `LIFELINE_TEST_PARK_AT`) either just before writing the audit intent that
//! authorizes the step's BMC command, or just after it (the outcome slot fsynced, the command not yet
//! sent). Another replica takes the run over; the paused one is resumed after its claim expired, and then
//! sends nothing and writes no journal or audit row. The simulator's own action log shows exactly one
//! cycle, and the run is owned by one replica at a time (the victim, then the taker, never back).
//!
//! The takeover is timed from the SIGSTOP (the park file's mtime) to the moment another replica holds
//! both the run's claim and its target lease, and checked against the bound docs/operations.md states
//! once from the heartbeat and the expiry.

mod common;

use std::time::{Duration, Instant, SystemTime};

use common::login;
use lifeline_test_utils::{
    ServeProcess, SimProcess, add_user_args, create_database_blocking, pg_text_rows, postgres_url,
};

/// How often the test polls the store: a measured takeover can read late by this much.
const POLL: Duration = Duration::from_millis(100);

/// The paused replica is left running this long after SIGCONT before the store and the BMC are read.
const AFTER_RESUME: Duration = Duration::from_secs(10);

/// The takeover bound as docs/operations.md states it: "heartbeats every H s (expiry E s); a dead or silent
/// (paused) replica's work is taken over within B s". Returns (H, E, B) and checks that B = E + 2 (the
/// taker wakes at the expiry it saw and claims within two seconds) and that a claim renewed every H s is seen at a
/// tick (every H s) before it can expire (E - H >= H).
pub fn documented_bound() -> (Duration, Duration, Duration) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/operations.md");
    let text = std::fs::read_to_string(path).expect("docs/operations.md");
    let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let number_after = |what: &str| -> u64 {
        let rest =
            text.split(what).nth(1).unwrap_or_else(|| panic!("docs/operations.md no longer says `{what}`"));
        rest.split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("a number after `{what}`"))
    };
    let heartbeat = number_after("heartbeats every ");
    let expiry = number_after("(expiry ");
    let bound = number_after("replica's work is taken over within ");
    assert_eq!(bound, expiry + 2, "the documented bound is the expiry plus the taker's two-second slack");
    assert!(expiry >= 2 * heartbeat, "a claim must be seen at a tick before it can expire");
    (Duration::from_secs(heartbeat), Duration::from_secs(expiry), Duration::from_secs(bound))
}

struct Cluster {
    sim: SimProcess,
    url: String,
    replicas: Vec<ServeProcess>,
    park: std::path::PathBuf,
    _db: lifeline_test_utils::TestDatabase,
}

/// Who holds the run at one moment: (claim holder pid, claim fence, target lease holder pid).
type Owners = (Option<u32>, Option<i64>, Option<u32>);

impl Cluster {
    /// Three replicas on a fresh database; the first to reach `park_at` during a fenced BMC command
    /// stops itself there.
    fn start(park_at: &str, offset: u16) -> Option<Cluster> {
        let admin = postgres_url()?;
        let db = create_database_blocking(&admin);
        let mut sim = common::two_node_sim(offset);
        let park = sim.dir.path().join("parked.pid");
        sim.set_env("LIFELINE_TEST_PARK_AT", park_at);
        sim.set_env("LIFELINE_TEST_PARK_FILE", park.to_str().unwrap());
        let dir = sim.dir.path().join("runbooks");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cycle-head-node.toml"), common::CYCLE).unwrap();
        add_user_args(&sim, "ann", "operator", "correct horse battery", &["--database-url", &db.url]);
        let config =
            format!("[server]\nsweep-interval = \"0s\"\n\n[runbooks]\ndir = \"{}\"\n", dir.display());
        let replicas =
            (0..3).map(|_| ServeProcess::start_args(&sim, &config, &["--database-url", &db.url])).collect();
        Some(Cluster { sim, url: db.url.clone(), replicas, park, _db: db })
    }

    fn rows(&self, sql: &str) -> Vec<Vec<String>> {
        pg_text_rows(&self.url, sql)
            .into_iter()
            .map(|r| r.into_iter().map(Option::unwrap_or_default).collect())
            .collect()
    }

    fn one(&self, sql: &str) -> String {
        self.rows(sql).into_iter().next().and_then(|r| r.into_iter().next()).unwrap_or_default()
    }

    fn owners(&self, id: &str) -> Owners {
        let claim =
            self.rows(&format!("SELECT holder, fence::text FROM replica_work WHERE key = 'run:{id}'"));
        let lease = self.one(&format!(
            "SELECT holder FROM leases WHERE target = 'node' AND request_id = 'runbook:{id}' \
             AND expires_at >= (extract(epoch from now()) * 1000)::bigint"
        ));
        (
            claim.first().map(|r| pid_of(&r[0])),
            claim.first().and_then(|r| r[1].parse().ok()),
            (!lease.is_empty()).then(|| pid_of(&lease)),
        )
    }

    fn state(&self, id: &str) -> String {
        self.one(&format!("SELECT state FROM runbook_runs WHERE id = '{id}'"))
    }

    /// (highest audit row id, highest journal row id).
    fn high_water(&self) -> (i64, i64) {
        let n = |sql: &str| self.one(sql).parse().unwrap_or(0);
        (
            n("SELECT coalesce(max(id), 0)::text FROM audit_log"),
            n("SELECT coalesce(max(id), 0)::text FROM runbook_journal"),
        )
    }

    /// Rows written after a high-water mark, as `table id action/phase outcome/state`.
    fn rows_after(&self, (audit, journal): (i64, i64)) -> Vec<String> {
        let mut out: Vec<String> = self
            .rows(&format!("SELECT id::text, actor, action, outcome FROM audit_log WHERE id > {audit}"))
            .into_iter()
            .map(|r| format!("audit {} {} {} {}", r[0], r[1], r[2], r[3]))
            .collect();
        out.extend(
            self.rows(&format!(
                "SELECT id::text, step, phase, state FROM runbook_journal WHERE id > {journal}"
            ))
            .into_iter()
            .map(|r| format!("journal {} {} {} {}", r[0], r[1], r[2], r[3])),
        );
        out
    }

    /// The BMC's power actions that did something (the simulator's own log).
    fn acts(&self) -> Vec<String> {
        self.sim
            .actions("node")
            .iter()
            .filter(|a| a["noop"] != true)
            .map(|a| a["action"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    fn replica(&self, pid: u32) -> &ServeProcess {
        self.replicas.iter().find(|r| r.pid() == pid).expect("the parked process is one of the replicas")
    }
}

/// `server (pid PID on HOST) #TAG` (or any holder naming its pid) → PID.
fn pid_of(holder: &str) -> u32 {
    holder.split("(pid ").nth(1).and_then(|r| r.split(' ').next()).and_then(|p| p.parse().ok()).unwrap_or(0)
}

/// Whether process `pid` is stopped (state `T` in /proc/PID/stat).
fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('T')))
        .unwrap_or(false)
}

/// Every distinct owner the run had, in order, while polling.
#[derive(Default)]
struct Timeline(Vec<Owners>);

impl Timeline {
    fn see(&mut self, o: Owners) {
        if self.0.last() != Some(&o) {
            eprintln!("  owners (claim pid, claim fence, lease pid): {o:?}");
            self.0.push(o);
        }
    }

    /// The claim went from the victim to other replicas and never back (its row, and so its fence, starts
    /// afresh each time a replica claims the run again after it waited or ended); the target lease was never
    /// held by another replica than the claim's at the same moment. Returns the holders.
    fn check_one_owner_at_a_time(&self, victim: u32) -> Vec<u32> {
        let holders: Vec<u32> = self.0.iter().filter_map(|o| o.0).fold(Vec::new(), |mut v, p| {
            if v.last() != Some(&p) {
                v.push(p);
            }
            v
        });
        assert_eq!(holders.first(), Some(&victim), "the victim held the run first: {:?}", self.0);
        assert!(
            !holders[1..].contains(&victim),
            "the victim held the run again after losing it: {:?}",
            self.0
        );
        for (claim, _, lease) in &self.0 {
            if let (Some(c), Some(l)) = (claim, lease) {
                assert_eq!(c, l, "the run's claim and its target lease held by two replicas: {:?}", self.0);
            }
        }
        holders
    }
}

/// Starts the run, waits for a replica to park, and returns (run id, victim pid, when it stopped).
fn start_and_park(c: &Cluster) -> (String, u32, SystemTime) {
    let s = login(&c.replicas[0].addr, "ann", "correct horse battery");
    let (st, runs) = s.call(
        "POST",
        "/api/v1/runbooks/cycle-head-node/runs",
        Some(serde_json::json!({"targets": ["node"]})),
    );
    assert_eq!(st, 200, "{runs}");
    let id = runs[0]["run"].as_str().unwrap().to_owned();
    let victim =
        lifeline_test_utils::wait_until("a replica parked at the hook", Duration::from_secs(60), || {
            let pid: u32 = std::fs::read_to_string(&c.park).ok()?.trim().parse().ok()?;
            stopped(pid).then_some(pid)
        });
    let parked_at = std::fs::metadata(&c.park).and_then(|m| m.modified()).expect("park file mtime");
    assert!(c.acts().is_empty(), "nothing sent before the park: {:?}", c.acts());
    eprintln!("run {id}: replica pid {victim} stopped itself; owners {:?}", c.owners(&id));
    (id, victim, parked_at)
}

/// Polls until another replica took the run over: it holds both the run's claim and its target lease, or
/// (seen first when the poll is late) it wrote a journal row after the park (the victim is stopped, so any
/// row is another's). Returns the takeover time, from the SIGSTOP to that moment.
fn wait_takeover(c: &Cluster, id: &str, victim: u32, parked_at: SystemTime, tl: &mut Timeline) -> Duration {
    let (_, journal) = c.high_water();
    let t = Instant::now();
    loop {
        let owners = c.owners(id);
        tl.see(owners);
        if let (Some(claim), _, Some(lease)) = owners
            && claim != victim
            && lease == claim
        {
            return SystemTime::now().duration_since(parked_at).unwrap_or_default();
        }
        let first = c.one(&format!(
            "SELECT min(at)::text FROM runbook_journal WHERE run_id = '{id}' AND id > {journal}"
        ));
        if let Ok(at_ms) = first.parse::<u64>() {
            let at = SystemTime::UNIX_EPOCH + Duration::from_millis(at_ms);
            return at.duration_since(parked_at).unwrap_or_default();
        }
        assert!(t.elapsed() < Duration::from_secs(90), "no takeover within 90 s: {:?}", tl.0);
        assert!(stopped(victim), "the victim must stay stopped until the test resumes it");
        std::thread::sleep(POLL);
    }
}

fn wait_state(c: &Cluster, id: &str, want: &[&str], tl: &mut Timeline) -> String {
    let t = Instant::now();
    loop {
        tl.see(c.owners(id));
        let st = c.state(id);
        if want.contains(&st.as_str()) {
            return st;
        }
        assert!(t.elapsed() < Duration::from_secs(120), "run {id} still `{st}` after 120 s, wanted {want:?}");
        std::thread::sleep(POLL);
    }
}

/// Resumes the victim and lets it run on; returns what it wrote meanwhile (nothing, if fenced).
fn resume_and_watch(c: &Cluster, id: &str, victim: u32, tl: &mut Timeline) -> Vec<String> {
    let mark = c.high_water();
    let acts_before = c.acts();
    c.replica(victim).resume();
    let t = Instant::now();
    while t.elapsed() < AFTER_RESUME {
        tl.see(c.owners(id));
        std::thread::sleep(POLL);
    }
    assert!(!stopped(victim), "the victim runs again");
    assert!(
        lifeline_test_utils::healthz_ok(&c.replica(victim).addr),
        "the resumed replica answers /healthz (so it did run its stalled work)"
    );
    assert_eq!(c.acts(), acts_before, "the resumed replica sent a BMC command for a run it lost");
    c.rows_after(mark)
}

fn one_cycle(acts: &[String]) -> bool {
    acts == ["power-cycle"] || acts == ["power-off", "power-on"]
}

fn report(what: &str, took: Duration, bound: Duration) {
    eprintln!(
        "{what}: paused replica's run taken over in {:.1} s; documented bound {} s (ratio {:.2})",
        took.as_secs_f64(),
        bound.as_secs(),
        took.as_secs_f64() / bound.as_secs_f64()
    );
}

/// Paused before the intent that authorizes its command: the fenced write is refused after the resume
/// (the lease is another's), so nothing is sent or written; the taker finds the command never started
/// (no intent) and runs it, and the run succeeds with one cycle.
#[test]
fn a_replica_paused_before_the_fenced_intent_sends_and_writes_nothing_after_its_resume() {
    let (_, _, bound) = documented_bound();
    let Some(c) = Cluster::start("before-intent", 33100) else { return };
    let (id, victim, parked_at) = start_and_park(&c);
    let mut tl = Timeline::default();
    let took = wait_takeover(&c, &id, victim, parked_at, &mut tl);
    report("before the intent", took, bound);
    let st =
        wait_state(&c, &id, &["succeeded", "failed", "escalated", "aborted", "waiting-approval"], &mut tl);
    assert_eq!(
        st, "succeeded",
        "the taker completes the run on its own (no intent: the command never started)"
    );
    assert!(stopped(victim), "the run ended while the victim was still stopped");
    let written = resume_and_watch(&c, &id, victim, &mut tl);
    assert!(written.is_empty(), "the resumed replica wrote rows for a run it lost: {written:#?}");
    assert_eq!(c.state(&id), "succeeded");
    let acts = c.acts();
    assert!(one_cycle(&acts), "one cycle on the BMC: {acts:?}");
    tl.check_one_owner_at_a_time(victim);
    assert!(took <= bound + POLL * 5, "takeover {took:?} over the documented {bound:?}");
}

/// Paused after the intent (the BMC command authorized, its slot on disk, not yet sent): the taker cannot
/// tell whether it was sent and waits for an operator; the resumed replica's last clock check refuses to
/// send, writes nothing, and cannot take the run out of `waiting-approval`. The approval then runs the
/// step once.
#[test]
fn a_replica_paused_after_the_fenced_intent_leaves_a_waiting_run_alone_and_sends_nothing() {
    let (_, _, bound) = documented_bound();
    let Some(c) = Cluster::start("before-send", 33300) else { return };
    let (id, victim, parked_at) = start_and_park(&c);
    let mut tl = Timeline::default();
    let took = wait_takeover(&c, &id, victim, parked_at, &mut tl);
    report("after the intent", took, bound);
    let st =
        wait_state(&c, &id, &["succeeded", "failed", "escalated", "aborted", "waiting-approval"], &mut tl);
    assert_eq!(st, "waiting-approval", "the taker cannot know whether the command left: it asks");
    let written = resume_and_watch(&c, &id, victim, &mut tl);
    assert!(written.is_empty(), "the resumed replica wrote rows for a run it lost: {written:#?}");
    assert_eq!(c.state(&id), "waiting-approval", "the paused replica's cycle took the run out of waiting");
    assert!(c.acts().is_empty(), "nothing sent before the approval: {:?}", c.acts());

    // The operator approves on a replica that was never paused; the taker runs the step once.
    let other = c.replicas.iter().find(|r| r.pid() != victim).unwrap();
    let s = login(&other.addr, "ann", "correct horse battery");
    let (st, r) = s.call("POST", &format!("/api/v1/runs/{id}/approve"), Some(serde_json::json!({})));
    assert_eq!(st, 200, "{r}");
    let st = wait_state(&c, &id, &["succeeded", "failed", "escalated", "aborted"], &mut tl);
    assert_eq!(st, "succeeded");
    let acts = c.acts();
    assert!(one_cycle(&acts), "one cycle on the BMC: {acts:?}");
    let holders = tl.check_one_owner_at_a_time(victim);
    eprintln!("claim holders in turn: {holders:?}");
    assert!(took <= bound + POLL * 5, "takeover {took:?} over the documented {bound:?}");
}
