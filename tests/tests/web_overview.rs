//! The Overview (the landing page) and the rack-grid fleet in a real headless Chromium against
//! `lifeline serve` over `lifeline sim` (the example cluster): the counts agree with `GET /api/v1/summary`
//! and each links to a fleet filtered to that state with a matching count; a run waiting for approval
//! appears on the open page without a reload (live) and is approved from it; an escalated run is shown with
//! its reason summarized; the events panel has history on open; a filter leaves only matching devices;
//! the keyboard shortcuts; and the field bugs (backups platform, fabrics tier, tokens table, console fit
//! and CSP).

mod web_support;

use serde_json::{Value, json};
use web_support::{Browser, PASSWORD, Stack, browser_available, http};

/// A runbook whose one step waits for an operator's approval (it only reads the power state).
const APPROVED: &str = r#"# approved-check
#
# Fault:       a node whose power an operator wants confirmed.
# Touches:     nothing; it reads the power state after an operator approves.
# Never:       any node's power.
# Worst case:  nothing happens.

name = "approved-check"
description = "Confirm a node is on, after an operator approves"
targets = ["gpu-node"]
fault = "a node that should be on"
touches = "nothing"
never-touches = "power"
worst-case = "nothing happens"

[[step]]
name = "check-on"
kind = "wait-for"
power = "on"
timeout = "30s"
approve = "required"

[[verify]]
name = "is-on"
kind = "wait-for"
power = "on"
timeout = "30s"
"#;

/// A runbook that escalates: it waits for a powered-on node to be off, which it never is.
const ESCALATES: &str = r#"# wait-off-or-escalate
#
# Fault:       a node that should be off.
# Touches:     nothing; it only waits.
# Never:       any node's power.
# Worst case:  a human is asked to look.

name = "wait-off-or-escalate"
description = "Wait briefly for a node to be off; escalate when it is not"
targets = ["gpu-node"]
fault = "a node that should be off"
touches = "nothing"
never-touches = "power"
worst-case = "a human is asked to look"

[[step]]
name = "is-off"
kind = "wait-for"
power = "off"
timeout = "3s"
on-failure = "escalate"

[[verify]]
name = "still-on"
kind = "wait-for"
power = "on"
timeout = "1m"
"#;

fn token(stack: &Stack, user: &str) -> String {
    let o = stack.sim.lifeline(&["token", "create", "--user", user]);
    format!("Bearer {}", String::from_utf8_lossy(&o.stdout).trim())
}

fn api(stack: &Stack, auth: &str, method: &str, path: &str, body: Option<Value>) -> Value {
    let body = body.map(|b| b.to_string());
    let (st, text) = http(&stack.addr, method, path, &[("Authorization", auth)], body.as_deref());
    assert_eq!(st, 200, "{method} {path}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// The counts the page shows, by state.
fn page_counts(b: &Browser) -> Value {
    b.js(
        "const o = {}; document.querySelectorAll('#state-counts li[data-state]').forEach(li => o[li.dataset.state] = Number(li.dataset.count)); return o;",
        json!([]),
    )
}

#[test]
fn overview_counts_live_approval_escalation_and_filtered_fleet() {
    let Some(()) = browser_available() else { return };
    let stack = Stack::start_with(41000, |sim| {
        let dir = sim.dir.path().join("runbooks");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("approved-check.toml"), APPROVED).unwrap();
        std::fs::write(dir.join("wait-off-or-escalate.toml"), ESCALATES).unwrap();
        format!("[server]\nsweep-interval = \"2s\"\n\n[runbooks]\ndir = \"{}\"\n", dir.display())
    });
    let auth = token(&stack, "ann");
    let b = Browser::start("overview");
    b.login(&stack, "ann", PASSWORD);
    b.wait("the overview (the landing page)", 30, |b| (b.path() == "/ui/overview").then_some(()));
    b.find("#state-counts");

    // An escalated run (its wait fails) before the page is looked at again.
    let v = api(
        &stack,
        &auth,
        "POST",
        "/api/v1/runbooks/wait-off-or-escalate/runs",
        Some(json!({"targets": ["gpu-node-07"]})),
    );
    let escalated = v[0]["run"].as_str().unwrap().to_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let r = api(&stack, &auth, "GET", &format!("/api/v1/runs/{escalated}"), None);
        if r["state"] == "escalated" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the run did not escalate: {r}");
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    // It reaches the open page without a reload: in "Needs me", with its reason, and in the counts.
    let row = format!("#needs-me tr[data-run='{escalated}']");
    b.wait("the escalation on the open page (live)", 30, |b| b.exists(&row).then_some(()));
    let text = b.text(&row);
    assert!(text.contains("gpu-node-07") && text.contains("escalated"), "{text}");
    assert_eq!(b.js("return performance.getEntriesByType('navigation').length", json!([])), 1, "no reload");

    // The counts equal the API's, once the sweeps have settled (the page follows the live stream).
    b.wait("the page's counts to equal the API's", 60, |b| {
        let api_counts = api(&stack, &auth, "GET", "/api/v1/summary", None)["counts"].clone();
        (page_counts(b) == api_counts).then_some(())
    });
    let counts = page_counts(&b);
    assert_eq!(counts["escalated"], 1, "{counts}");
    let total: u64 = counts.as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(total, 17, "every device counted once: {counts}");
    assert_eq!(b.text("#total"), "17");
    b.screenshot(&web_support::artifacts_dir().join("overview.png"));

    // A run waiting for approval appears live; Approve from the overview (confirmed); it leaves the list.
    let v = api(
        &stack,
        &auth,
        "POST",
        "/api/v1/runbooks/approved-check/runs",
        Some(json!({"targets": ["gpu-node-03"]})),
    );
    let waiting = v[0]["run"].as_str().unwrap().to_owned();
    let row = format!("#needs-me tr[data-run='{waiting}']");
    b.wait("the waiting run on the open page (live)", 30, |b| b.exists(&row).then_some(()));
    assert!(b.text(&row).contains("step check-on (1 of 2)"), "{}", b.text(&row));
    b.click(&format!("{row} button[data-act=approve]"));
    b.confirm("gpu-node-03");
    b.wait("the run to succeed", 90, |_| {
        (api(&stack, &auth, "GET", &format!("/api/v1/runs/{waiting}"), None)["state"] == "succeeded")
            .then_some(())
    });
    b.wait("the approved run to leave Needs me", 30, |b| (!b.exists(&row)).then_some(()));
    let audit = api(&stack, &auth, "GET", "/api/v1/audit?actor=web:ann&action=runbook.approve", None);
    assert!(audit.to_string().contains(&waiting), "approval audited as the web user: {audit}");

    // The escalated node's page opens with its state in words and its timeline (the run, its failed step).
    b.goto(&stack.url("/ui/node/gpu-node-07"));
    let words = b.wait_text("#node-state", "needs a human", 30);
    assert!(words.starts_with("escalated"), "{words}");
    let tl = b.wait_text("#timeline", "run wait-off-or-escalate started", 30);
    assert!(tl.contains("step is-off") && tl.contains("ended escalated"), "{tl}");

    // The events panel: the history is there on open (a fresh page load). A power change the sweep sees
    // is an event.
    api(&stack, &auth, "POST", "/api/v1/devices/gpu-node-08/power", Some(json!({"action": "off"})));
    b.wait("a sweep change event", 60, |_| {
        let ev = api(&stack, &auth, "GET", "/api/v1/events?limit=100", None);
        ev.as_array().is_some_and(|e| !e.is_empty()).then_some(())
    });
    b.goto(&stack.url("/ui/overview"));
    b.wait("event history on open", 30, |b| {
        (b.js("return document.querySelectorAll('#events li').length", json!([])).as_u64()? > 0).then_some(())
    });

    // The escalated count links to the fleet filtered to that state: only gpu-node-07, counted as such.
    b.click("#state-counts li[data-state=escalated] a");
    b.wait("the filtered fleet", 30, |b| (b.path() == "/ui/fleet").then_some(()));
    b.find("#fleet-count");
    let shown =
        b.js("return [...document.querySelectorAll('#grid a.c')].map(c => c.dataset.device)", json!([]));
    assert_eq!(shown, json!(["gpu-node-07"]));
    assert_eq!(b.text("#fleet-count"), "1 of 17 devices");
    let cls = b.js("return document.querySelector('#grid a.c').className", json!([]));
    assert!(cls.as_str().unwrap().contains("s-escalated"), "{cls}");

    // A typed filter (a rack, as the CLI names it): only that rack's devices, no empty group, the count.
    b.goto(&stack.url("/ui/fleet"));
    b.type_into("#filter", "r02\u{E007}");
    b.wait_text("#fleet-count", "of 17", 30);
    let racks =
        b.js("return [...document.querySelectorAll('#grid .rk')].map(r => r.dataset.rack)", json!([]));
    assert_eq!(racks, json!(["r02"]), "only the rack asked for, no empty group");
    let api_page = api(&stack, &auth, "GET", "/api/v1/fleet?q=r02&limit=100", None);
    let n = b.js("return document.querySelectorAll('#grid a.c').length", json!([]));
    assert_eq!(n, api_page["matched"], "the grid shows what the API matched");
    assert_eq!(b.text("#fleet-count"), format!("{} of 17 devices", api_page["matched"]));

    // Selection from the grid works as from the table: the confirmation lists the picked cells.
    b.click("#select-mode");
    b.click("#grid a.c[data-device=gpu-node-05]");
    b.click("#grid a.c[data-device=gpu-node-06]");
    assert_eq!(b.path(), "/ui/fleet", "in select mode a cell is picked, not opened");
    b.click("#bulk-apply");
    let listed = b.wait_text("#confirm-list", "gpu-node-06", 10);
    assert!(listed.contains("gpu-node-05"), "{listed}");
    b.click("#confirm-cancel");

    // Keyboard: `g o` goes to the overview, `/` focuses the filter, `?` lists the keys, `j` moves.
    b.js("document.activeElement.blur()", json!([]));
    b.keys("go");
    b.wait("g o", 10, |b| (b.path() == "/ui/overview").then_some(()));
    b.find("#state-counts");
    b.js("document.activeElement.blur()", json!([]));
    b.keys("j");
    let f = b.js("return document.activeElement.closest('#state-counts') !== null", json!([]));
    assert_eq!(f, true, "j moves to the first row of the page");
    b.keys("?");
    b.wait("the key list", 10, |b| {
        b.js("return !!document.querySelector('#keys-help[open]')", json!([])).as_bool()?.then_some(())
    });
    b.keys("\u{E00C}");
    b.keys("gf");
    b.wait("g f", 10, |b| (b.path() == "/ui/fleet").then_some(()));
    b.find("#filter");
    b.js("document.activeElement.blur()", json!([]));
    b.keys("/");
    assert_eq!(b.js("return document.activeElement.id", json!([])), "filter");
}

#[test]
fn field_bugs_backups_fabrics_tokens_and_console() {
    let Some(()) = browser_available() else { return };
    let stack = Stack::start(42000);
    let b = Browser::start("field-bugs");
    b.login(&stack, "ada", PASSWORD);
    b.wait("the overview (the landing page)", 30, |b| (b.path() == "/ui/overview").then_some(()));

    // Backups: each switch's platform from the inventory, not "—".
    b.goto(&stack.url("/ui/backups"));
    let t = b.wait_text("#backup-switches", "backend-leaf-01", 30);
    let rows = b.js(
        "return [...document.querySelectorAll('#backup-switches tbody tr')].map(r => r.children[1].textContent)",
        json!([]),
    );
    assert!(!rows.as_array().unwrap().is_empty(), "{t}");
    assert!(rows.as_array().unwrap().iter().all(|p| p != "—" && p != ""), "every platform shown: {rows}");

    // A schedule the server refuses is shown as the error, not as "no entries".
    b.js(
        "const f = window.fetch; window.fetch = (u, o) => String(u).includes('/backups/schedule')
           ? Promise.resolve(new Response(JSON.stringify({class: 'usage', message: 'bad schedule entry'}), {status: 400}))
           : f(u, o); return 1",
        json!([]),
    );
    b.js("return import('/assets/backups.js').then(m => { const el = document.getElementById('main'); el.replaceChildren(); return m.render(el, {}); }).then(() => 1)", json!([]));
    let sched = b.wait_text("#schedule", "could not be read", 10);
    assert!(sched.contains("bad schedule entry") && !sched.contains("No [[backup-schedule]]"), "{sched}");

    // Fabrics: a switch's tier, not "—".
    b.goto(&stack.url("/ui/fabrics"));
    let fab = b.wait_text("section[data-fabric=backend]", "backend-leaf-01", 30);
    assert!(fab.contains("leaf switch"), "the tier of the backend switch: {fab}");

    // Tokens: a created token appears in the table at once (no reload), its secret shown once.
    b.goto(&stack.url("/ui/admin"));
    b.find("#tokens");
    let before =
        b.js("return document.querySelectorAll('#tokens tbody tr').length", json!([])).as_u64().unwrap();
    b.click("#create-token");
    b.wait("the new token row", 30, |b| {
        (b.js("return document.querySelectorAll('#tokens tbody tr').length", json!([])).as_u64()?
            == before + 1)
            .then_some(())
    });
    assert!(b.text("main").contains("Shown once"), "the secret is still shown");

    // A node's page opens with its state in words and its timeline: a failing agent report opens a fault.
    let auth = token(&stack, "ada");
    let report =
        json!({"node": "gpu-node-02", "passed": false, "report": {"summary": "rail.link mlx5_0: down"}});
    api(&stack, &auth, "POST", "/api/v1/agent/reports", Some(report));
    std::thread::sleep(std::time::Duration::from_millis(1100)); // the shared snapshot's second
    b.goto(&stack.url("/ui/node/gpu-node-02"));
    let words = b.wait_text("#node-state", "faulted", 30);
    assert!(words.starts_with("faulted:"), "{words}");
    let tl = b.wait_text("#timeline", "fault opened: agent-report", 30);
    assert!(tl.contains("fault opened"), "{tl}");
    // The overview lists it as an open incident (the README's screenshot).
    b.goto(&stack.url("/ui/overview"));
    b.wait_text("#incidents", "gpu-node-02", 30);
    let shot = if std::env::var_os("LIFELINE_UPDATE_SCREENSHOT").is_some() {
        lifeline_test_utils::workspace_root().join("web/screenshot-overview.png")
    } else {
        web_support::artifacts_dir().join("overview-incident.png")
    };
    b.screenshot(&shot);

    // The console: its last row is on a 1280×800 screen, xterm's stylesheet is applied (no stray
    // measuring glyphs), and the page raised no CSP violation.
    b.goto(&stack.url("/ui/console/gpu-node-01"));
    b.wait("the terminal", 30, |b| b.exists(".xterm-rows").then_some(()));
    std::thread::sleep(std::time::Duration::from_millis(800));
    let fit = b.js(
        "const r = document.querySelector('.xterm-screen').getBoundingClientRect(); return [r.bottom, window.innerHeight];",
        json!([]),
    );
    assert!(fit[0].as_f64().unwrap() <= fit[1].as_f64().unwrap(), "terminal bottom {fit} below the fold");
    let hidden = b.js(
        "const t = document.querySelector('.xterm-helper-textarea'); const m = document.querySelector('.xterm-char-measure-element');
         return [getComputedStyle(t).opacity, m ? getComputedStyle(m).visibility : 'hidden', document.querySelectorAll('#main style').length];",
        json!([]),
    );
    assert_eq!(hidden, json!(["0", "hidden", 0]), "xterm's helpers styled by xterm.css, no <style> element");
    let violations = b.js("return window.lifelineCspViolations", json!([]));
    assert_eq!(violations, json!([]), "CSP violations on the console page");
}

/// A fleet of `racks` racks of 32 GPU nodes and four switches per fabric, one site, every BMC a Redfish
/// BMC of the simulator (ports moved by `offset`).
fn big_fleet(racks: usize, offset: u16) -> (String, usize) {
    let mut s = String::from(
        "[cluster]\nname = \"big\"\noob-subnets = [\"127.11.0.0/16\", \"127.12.0.0/16\"]\n\n[defaults.bmc]\nprotocol = \"redfish\"\nusername = \"admin\"\ncredential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[defaults.management]\nusername = \"admin\"\ncredential = \"env:LIFELINE_SWITCH_PASSWORD\"\n\n[[site]]\nname = \"dc1\"\n\n",
    );
    for r in 1..=racks {
        s.push_str(&format!("[[rack]]\nname = \"r{r:03}\"\nsite = \"dc1\"\n\n"));
    }
    let mut n = 0;
    let bmc = |n: usize| {
        format!("bmc = {{ port = {}, address = \"127.11.{}.{}\" }}\n", 443 + offset, n / 250, n % 250 + 1)
    };
    for f in ["backend", "storage", "frontend", "oob"] {
        for i in 1..=4 {
            s.push_str(&format!(
                "[[device]]\nname = \"{f}-sw-{i:02}\"\nrole = \"switch\"\nrack = \"r001\"\nfabric = \"{f}\"\ntier = \"leaf\"\nplatform = \"sonic\"\nmanagement = {{ port = {}, address = \"127.12.0.{}\" }}\n",
                22 + offset,
                n + 1
            ));
            n += 1;
        }
    }
    for r in 1..=racks {
        for i in 1..=32 {
            s.push_str(&format!(
                "[[device]]\nname = \"gpu-r{r:03}-{i:02}\"\nrole = \"gpu-node\"\nrack = \"r{r:03}\"\n{}\n",
                bmc(n)
            ));
            n += 1;
        }
    }
    (s, n)
}

#[test]
fn grid_of_2000_devices_fits_one_1280x800_screen() {
    let Some(()) = browser_available() else { return };
    let (inventory, n) = big_fleet(62, 43000);
    assert_eq!(n, 2000);
    let stack =
        Stack::start_inventory(&inventory, 43000, |_| "[server]\nsweep-interval = \"0s\"\n".to_owned());
    let b = Browser::start("grid-2000");
    b.login(&stack, "ann", PASSWORD);
    b.wait("the overview (the landing page)", 30, |b| (b.path() == "/ui/overview").then_some(()));
    b.wait_text("#total", "2000", 60);
    b.goto(&stack.url("/ui/fleet"));
    b.wait("2000 cells", 60, |b| {
        (b.js("return document.querySelectorAll('#grid a.c').length", json!([])).as_u64()? == 2000)
            .then_some(())
    });
    let m = b.js(
        "const g = document.getElementById('grid').getBoundingClientRect();
         return { bottom: g.bottom, right: g.right, h: window.innerHeight, w: window.innerWidth,
                  elements: document.querySelectorAll('#grid *').length, page: document.querySelectorAll('*').length,
                  scroll: document.documentElement.scrollWidth,
                  switchRows: [...document.querySelectorAll('#grid .swrow')].map(r => r.dataset.fabric) };",
        json!([]),
    );
    b.screenshot(&web_support::artifacts_dir().join("grid-2000.png"));
    assert!(m["bottom"].as_f64().unwrap() <= m["h"].as_f64().unwrap(), "the grid runs below the fold: {m}");
    assert!(m["scroll"].as_f64().unwrap() <= m["w"].as_f64().unwrap(), "the page scrolls sideways: {m}");
    assert!(m["elements"].as_u64().unwrap() <= 2 * 2000, "at most 2 elements per device in the grid: {m}");
    assert_eq!(
        m["switchRows"],
        json!(["backend", "storage", "frontend", "oob"]),
        "each fabric's switches in a row"
    );
    assert!(!b.exists("#fleet-table"), "no 2000-row table");
    if std::env::var_os("LIFELINE_UPDATE_SCREENSHOT").is_some() {
        b.screenshot(&lifeline_test_utils::workspace_root().join("web/screenshot-grid-2000.png"));
    }
}
