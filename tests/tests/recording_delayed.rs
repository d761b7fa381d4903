//! Outcome first, then the answer: when the store stops taking writes after an action's BMC command was sent
//! (a full disk, injected here with the `test-hooks` build's `LIFELINE_TEST_FAIL_RECORDING` exactly there),
//! the action is answered "done, recording delayed" (exit 0 with a warning line; HTTP 200 with a warning
//! field), never "not done"; a retry with the same request id returns the kept outcome and sends nothing;
//! the outcome reaches the audit log once the store takes writes again; `/readyz` fails meanwhile, saying
//! why. The simulator's own action log is the witness of how many cycles ran.

mod common;

use std::process::{Command, Output, Stdio};

use common::{Server, add_user, login, two_node_sim};
use std::time::Duration;

use lifeline_test_utils::{SimProcess, lifeline_bin, output_json, output_text, wait_until};
use serde_json::{Value, json};

const HOOK: &str = "LIFELINE_TEST_FAIL_RECORDING";

/// `lifeline ARGS` on the sim's inventory and data dir, with the store refusing outcomes or not.
fn lifeline(sim: &SimProcess, args: &[&str], refuse: bool) -> Output {
    let mut c = Command::new(lifeline_bin());
    c.args(args)
        .arg("--inventory")
        .arg(&sim.inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .envs(sim.env().iter().map(|(k, v)| (k, v)))
        .env_remove("LIFELINE_DATABASE_URL")
        .env_remove("LIFELINE_CONFIG")
        .env_remove(HOOK)
        .stdin(Stdio::null());
    if refuse {
        c.env(HOOK, "1");
    }
    c.output().expect("run lifeline")
}

fn cycles(sim: &SimProcess) -> usize {
    sim.actions("node").iter().filter(|a| a["action"] == "power-off" || a["action"] == "power-cycle").count()
}

fn audit(sim: &SimProcess) -> Vec<Value> {
    let o = lifeline(sim, &["audit", "log", "--target", "node", "--limit", "100", "--json"], false);
    assert!(o.status.success(), "{}", output_text(&o));
    output_json(&o).as_array().unwrap().clone()
}

fn pending_slots(sim: &SimProcess) -> usize {
    std::fs::read_dir(sim.data.join("pending-outcomes")).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn a_cycle_whose_outcome_the_store_refuses_is_answered_done_and_retried_without_acting() {
    let sim = two_node_sim(41700);
    let args = ["power", "cycle", "node", "--yes", "--json", "--request-id", "op-7"];

    let first = lifeline(&sim, &args, true);
    let text = output_text(&first);
    assert_eq!(first.status.code(), Some(0), "{text}");
    let row = &output_json(&first)[0];
    assert_eq!(row["recording"], "delayed", "{row}");
    assert_eq!(row["request_id"], "op-7/node", "{row}");
    assert_eq!(row["confirmed"], true, "{row}");
    assert!(text.contains("warning: node: done, recording delayed"), "{text}");
    // The hint names what `--request-id` takes (the id less its target).
    assert!(text.contains("a retry with request id op-7 returns it"), "{text}");
    assert_eq!(cycles(&sim), 1, "{:?}", sim.actions("node"));
    // Two kept outcomes: the request's answer and the BMC command's audit outcome.
    assert_eq!(pending_slots(&sim), 2);

    // A retry while the store still refuses: the kept outcome, nothing sent.
    let again = lifeline(&sim, &args, true);
    assert_eq!(again.status.code(), Some(0), "{}", output_text(&again));
    let row = &output_json(&again)[0];
    assert_eq!((row["replay_of"].as_str(), row["recording"].as_str()), (Some("op-7/node"), Some("delayed")));
    assert_eq!(cycles(&sim), 1, "{:?}", sim.actions("node"));

    // The store takes writes again: the outcomes are recorded (once), the retry is a plain replay.
    let later = lifeline(&sim, &args, false);
    assert_eq!(later.status.code(), Some(0), "{}", output_text(&later));
    let row = &output_json(&later)[0];
    assert_eq!(row["replay_of"], "op-7/node", "{row}");
    assert_eq!(row["confirmed"], true, "{row}");
    assert!(row.get("warning").is_none(), "{row}");
    assert_eq!(cycles(&sim), 1, "{:?}", sim.actions("node"));
    assert_eq!(pending_slots(&sim), 0);
    let rows = audit(&sim);
    let cycle_rows: Vec<&Value> = rows.iter().filter(|r| r["action"] == "power.cycle").collect();
    let outcomes: Vec<&str> = cycle_rows.iter().filter_map(|r| r["outcome"].as_str()).collect();
    assert_eq!(outcomes.iter().filter(|o| **o == "started").count(), 1, "{cycle_rows:#?}");
    assert_eq!(outcomes.iter().filter(|o| **o == "ok").count(), 1, "{cycle_rows:#?}");
    let ok = cycle_rows.iter().find(|r| r["outcome"] == "ok").unwrap();
    assert!(
        ok["detail"]["recorded_late"]["why"].as_str().is_some_and(|w| w.contains("disk is full")),
        "{ok}"
    );
}

/// Sent without `--request-id`: the hint names a fresh id, and `--request-id` with that id is the same
/// request (its kept outcome, nothing sent), while the store still refuses and after it takes writes again.
#[test]
fn the_hinted_request_id_of_a_cycle_sent_without_one_replays_it() {
    let sim = two_node_sim(42700);
    let first = lifeline(&sim, &["power", "cycle", "node", "--yes", "--json"], true);
    let text = output_text(&first);
    assert_eq!(first.status.code(), Some(0), "{text}");
    let hinted = text
        .split("a retry with request id ")
        .nth(1)
        .and_then(|r| r.split(" returns it").next())
        .unwrap_or_else(|| panic!("no retry hint: {text}"))
        .to_owned();
    assert!(!hinted.contains('/'), "the hint names the id as --request-id takes it: {hinted}");
    assert_eq!(output_json(&first)[0]["request_id"], format!("{hinted}/node"));
    assert_eq!(cycles(&sim), 1, "{:?}", sim.actions("node"));

    let args = ["power", "cycle", "node", "--yes", "--json", "--request-id", hinted.as_str()];
    let again = lifeline(&sim, &args, true);
    assert_eq!(again.status.code(), Some(0), "{}", output_text(&again));
    assert_eq!(output_json(&again)[0]["replay_of"], format!("{hinted}/node"), "{}", output_text(&again));
    let later = lifeline(&sim, &args, false);
    assert_eq!(later.status.code(), Some(0), "{}", output_text(&later));
    assert_eq!(output_json(&later)[0]["replay_of"], format!("{hinted}/node"), "{}", output_text(&later));
    assert_eq!(cycles(&sim), 1, "the hinted id replayed the cycle: {:?}", sim.actions("node"));
}

#[test]
fn the_server_answers_200_with_a_warning_and_readyz_says_why_it_is_not_ready() {
    let sim = two_node_sim(41800);
    add_user(&sim, "ann", "operator", "correct horse battery");
    let srv = Server::start(&sim);
    // Ready while outcomes can be recorded.
    wait_until("/readyz to say ready", Duration::from_secs(30), || {
        let (st, _, body) = common::request(&srv.addr, "GET", "/readyz", &[], None).ok()?;
        (st == 200 && body.trim() == "ready").then_some(())
    });
    drop(srv);

    // The same server, its store refusing outcomes.
    let mut sim = sim;
    sim.set_env(HOOK, "1");
    let srv = Server::start(&sim);
    let s = login(&srv.addr, "ann", "correct horse battery");
    let h = [("Cookie", s.cookie.as_str()), ("X-CSRF-Token", s.csrf.as_str()), ("Idempotency-Key", "k-1")];
    let cycle = || {
        let (st, _, body) = common::request(
            &srv.addr,
            "POST",
            "/api/v1/devices/node/power",
            &h,
            Some(&json!({"action": "cycle"})),
        )
        .unwrap();
        assert_eq!(st, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()
    };
    let v = cycle();
    assert_eq!(v["recording"], "delayed", "{v}");
    assert!(v["warning"].as_str().is_some_and(|w| w.starts_with("done, recording delayed")), "{v}");
    // The warning names the key the client sent, not the caller-scoped id it is stored under.
    assert!(
        v["warning"].as_str().is_some_and(|w| w.contains("a retry with request id k-1 returns it")),
        "{v}"
    );
    assert_eq!(cycles(&sim), 1);
    let v = cycle();
    assert!(v["replay_of"].as_str().is_some_and(|r| r.contains("k-1")), "{v}");
    assert_eq!(cycles(&sim), 1, "a retry with the key sent nothing");
    let (st, _, why) = common::request(&srv.addr, "GET", "/readyz", &[], None).unwrap();
    assert_eq!(st, 503, "{why}");
    assert!(why.contains("actions cannot be recorded") && why.contains("disk is full"), "{why}");
    assert!(why.contains("action outcome(s) wait in"), "{why}");
}

/// Sent to the server without an `Idempotency-Key`: the warning's hint names a key, and a retry that sends
/// that key is the same request (its kept outcome, nothing sent), while the store refuses and after a
/// restart whose store takes writes again. Before, a keyless request was stored as `UUID/TARGET` while the
/// hinted key was looked up as `ACTOR/UUID/TARGET`, and the retry cycled the node again.
#[test]
fn the_servers_hint_for_a_request_without_a_key_names_a_key_that_replays_it() {
    let mut sim = two_node_sim(43200);
    add_user(&sim, "ann", "operator", "correct horse battery");
    sim.set_env(HOOK, "1");
    let post = |srv: &Server, key: Option<&str>| {
        let s = login(&srv.addr, "ann", "correct horse battery");
        let mut h = vec![("Cookie", s.cookie.as_str()), ("X-CSRF-Token", s.csrf.as_str())];
        if let Some(k) = key {
            h.push(("Idempotency-Key", k));
        }
        let body = Some(json!({"action": "cycle"}));
        let (st, _, body) =
            common::request(&srv.addr, "POST", "/api/v1/devices/node/power", &h, body.as_ref()).unwrap();
        assert_eq!(st, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()
    };
    let srv = Server::start(&sim);
    let v = post(&srv, None);
    assert_eq!(v["recording"], "delayed", "{v}");
    let hinted = v["warning"]
        .as_str()
        .and_then(|w| w.split("a retry with request id ").nth(1))
        .and_then(|r| r.split(" returns it").next())
        .unwrap_or_else(|| panic!("no retry hint: {v}"))
        .to_owned();
    assert!(!hinted.contains('/'), "the hint names the key as a client sends it: {hinted}");
    assert_eq!(cycles(&sim), 1, "{:?}", sim.actions("node"));

    let again = post(&srv, Some(&hinted));
    assert!(again["replay_of"].as_str().is_some_and(|r| r.contains(&hinted)), "{again}");
    assert_eq!(cycles(&sim), 1, "the hinted key replayed the cycle: {:?}", sim.actions("node"));
    drop(srv);

    // The store takes writes again: the kept outcome is recorded, and the hinted key still replays it.
    sim.set_env(HOOK, "");
    let srv = Server::start(&sim);
    let later = post(&srv, Some(&hinted));
    assert!(later["replay_of"].as_str().is_some_and(|r| r.contains(&hinted)), "{later}");
    assert!(later.get("recording").is_none(), "recorded by now: {later}");
    assert_eq!(cycles(&sim), 1, "{:?}", sim.actions("node"));
}
