//! The web console in a real headless Chromium (Debian's `chromium` + `chromium-driver`) against
//! `lifeline serve` over `lifeline sim` serving the example cluster: login, the live fleet page, a
//! confirmed power cycle from the node page that the audit view shows with the web user as actor, a
//! hostile SEL message shown as text, the console's boot text and key echo, a backup diff after a config
//! change, and a viewer who sees no power button and whose forged request is refused.

mod web_support;

use serde_json::json;
use web_support::{Browser, PASSWORD, Stack, browser_available, example_devices};

#[test]
fn login_fleet_power_cycle_audit_and_sel_markup_as_text() {
    let Some(()) = browser_available() else { return };
    let stack = Stack::start(33000);
    let b = Browser::start("fleet");

    // A wrong password stays on the login page with a message; the right one lands on the overview.
    b.login(&stack, "ann", "wrong password");
    b.wait_text("#flash", "Wrong user name or password", 20);
    assert_eq!(b.path(), "/ui/login");
    b.login(&stack, "ann", PASSWORD);
    b.wait("the overview (the landing page)", 30, |b| (b.path() == "/ui/overview").then_some(()));
    b.goto(&stack.url("/ui/fleet"));

    // Every device of the example cluster, each BMC's power state filled in by the live stream.
    let names = example_devices();
    assert_eq!(names.len(), 17);
    b.wait("every device with a BMC to show its power state", 90, |b| {
        let rows = b.js(
            "return [...document.querySelectorAll('tr[data-device]')].map(r => [r.dataset.device, r.dataset.power || ''])",
            json!([]),
        );
        let rows = rows.as_array()?.clone();
        let listed: Vec<&str> = rows.iter().filter_map(|r| r[0].as_str()).collect();
        let mut want: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut got = listed.clone();
        want.sort_unstable();
        got.sort_unstable();
        // Still rendering (the first SSE frame has not arrived): keep waiting; a wrong list times out.
        if got != want {
            return None;
        }
        // Switches without a BMC (storage, frontend, OOB) have no power state to show.
        let no_bmc = ["storage-leaf-01", "frontend-leaf-01", "oob-sw-01"];
        rows.iter()
            .filter(|r| !no_bmc.contains(&r[0].as_str().unwrap_or("")))
            .all(|r| matches!(r[1].as_str(), Some("on" | "off")))
            .then_some(())
    });
    // The rows' first power states may come from the fleet page itself, before the stream's `open`
    // event: wait for the stream rather than race it (a stream that never opens times out).
    b.wait("the fleet page to hold the SSE stream open", 30, |b| {
        (b.js("return document.body.dataset.live || ''", json!([])) == "open").then_some(())
    });
    if std::env::var_os("LIFELINE_UPDATE_SCREENSHOT").is_some() {
        b.screenshot(&lifeline_test_utils::workspace_root().join("web/screenshot-fleet.png"));
    } else {
        b.screenshot(&web_support::artifacts_dir().join("fleet.png"));
    }

    // Power cycle from the node page: a confirmation listing the node, then the audit view shows it.
    b.goto(&stack.url("/ui/node/gpu-node-02"));
    b.click("button[data-action=cycle]");
    b.confirm("gpu-node-02");
    b.wait_text("#power-result", "Power cycle:", 60);
    b.goto(&stack.url("/ui/audit?actor=web:ann&action=power.cycle"));
    let audit = b.wait_text("#audit", "gpu-node-02", 30);
    assert!(audit.contains("web:ann") && audit.contains("power.cycle"), "{audit}");

    // A SEL message carrying markup is shown as text: no script ran, no element was created.
    stack.sim.fault("gpu-node-01", "sel-markup");
    b.goto(&stack.url("/ui/node/gpu-node-01"));
    let sel = b.wait_text("#sel", "<script>", 60);
    assert!(sel.contains("<b>hi</b>"), "{sel}");
    let injected = b.js(
        "return [document.title, document.querySelectorAll('#sel script, #sel img, #sel b').length]",
        json!([]),
    );
    assert!(!injected[0].as_str().unwrap_or("").contains("pwned"), "{injected}");
    assert_eq!(injected[1], 0, "{injected}");
}

#[test]
fn viewer_sees_no_power_button_and_forged_requests_are_refused() {
    let Some(()) = browser_available() else { return };
    let stack = Stack::start(34000);
    let b = Browser::start("viewer");
    b.login(&stack, "vic", PASSWORD);
    b.wait("the overview (the landing page)", 30, |b| (b.path() == "/ui/overview").then_some(()));
    b.goto(&stack.url("/ui/fleet"));
    b.find("tr[data-device=gpu-node-01]");
    assert!(!b.exists("#bulk-apply") && !b.exists("input.pick"), "no fleet action for a viewer");
    b.goto(&stack.url("/ui/node/gpu-node-01"));
    b.wait_text("main", "Audit trail", 30);
    assert!(!b.exists("#power-buttons") && !b.exists("button[data-action]"), "no power button for a viewer");
    b.goto(&stack.url("/ui/console/gpu-node-01"));
    b.find("#download-log");
    assert!(!b.exists("#take-over") && !b.exists("#send-break"), "no console write for a viewer");
    assert!(!b.exists("a[href='/ui/admin']"), "no admin page link for a viewer");

    // The API refuses anyway: the viewer's own session with a valid CSRF token is forbidden.
    let forged = "const csrf = document.cookie.split('; ').find(c => c.startsWith('lifeline_csrf=')).split('=')[1];
        const r = await fetch('/api/v1/devices/gpu-node-01/power', {method: 'POST',
            headers: {'Content-Type': 'application/json', 'X-CSRF-Token': csrf}, body: JSON.stringify({action: 'cycle'})});
        return r.status;";
    let st = b.js(&format!("return (async () => {{ {forged} }})()"), json!([]));
    assert_eq!(st, 403, "viewer power request");

    // An operator's session without the CSRF header (what a cross-site form could send) is refused too.
    b.goto(&stack.url("/ui/login"));
    b.login(&stack, "ann", PASSWORD);
    b.wait("the overview (the landing page)", 30, |b| (b.path() == "/ui/overview").then_some(()));
    let st = b.js(
        "return (async () => (await fetch('/api/v1/devices/gpu-node-01/power', {method: 'POST',
            headers: {'Content-Type': 'application/json'}, body: JSON.stringify({action: 'cycle'})})).status)()",
        json!([]),
    );
    assert_eq!(st, 403, "request without the CSRF header");
    let cycles = stack.sim.actions("gpu-node-01");
    assert!(
        !cycles.iter().any(|a| a.to_string().contains("cycle")),
        "no refused request reached the BMC: {cycles:?}"
    );

    // The pages carry the strict policy.
    let (_, head) = head_of(&stack, "/ui/fleet");
    assert!(head.contains("script-src 'self'") && head.contains("frame-ancestors 'none'"), "{head}");
    assert!(head.to_ascii_lowercase().contains("x-content-type-options: nosniff"), "{head}");
}

fn head_of(stack: &Stack, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(&stack.addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", stack.addr).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let head = out.split("\r\n\r\n").next().unwrap_or("").to_owned();
    (head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0), head)
}

#[test]
fn console_shows_boot_text_and_echoes_a_key_and_backup_shows_a_changed_line() {
    let Some(()) = browser_available() else { return };
    let stack = Stack::start(35000);
    let b = Browser::start("console");
    b.login(&stack, "ann", PASSWORD);
    b.wait("the overview (the landing page)", 30, |b| (b.path() == "/ui/overview").then_some(()));

    // Boot the node from its page, then watch the boot in the console.
    b.goto(&stack.url("/ui/node/gpu-node-06"));
    b.click("button[data-action=cycle]");
    b.confirm("gpu-node-06");
    b.wait_text("#power-result", "Power cycle:", 60);
    b.goto(&stack.url("/ui/console/gpu-node-06"));
    let screen = b.wait("the boot text and the login prompt", 120, |b| {
        let t = b.js("return window.lifelineConsoleText ? window.lifelineConsoleText() : ''", json!([]));
        t.as_str().filter(|t| t.contains("gpu-node-06 login:")).map(str::to_owned)
    });
    assert!(screen.contains("Linux version") && screen.contains("systemd"), "{screen}");
    assert_eq!(b.js("return document.body.dataset.console", json!([])), "read-only");

    // Take over (confirmed), type, and see the getty echo it.
    b.click("#take-over");
    b.confirm("gpu-node-06");
    b.wait("the write lock", 30, |b| {
        (b.js("return document.body.dataset.console", json!([])) == "write").then_some(())
    });
    b.type_into(".xterm-helper-textarea", "zq7");
    b.wait("the key echoed", 30, |b| {
        let t = b.js("return window.lifelineConsoleText()", json!([]));
        t.as_str().is_some_and(|t| t.contains("login: zq7")).then_some(())
    });

    // Backups: run, change the switch's configuration in the simulator, run again, see the changed line.
    b.goto(&stack.url("/ui/backups/backend-leaf-01"));
    b.click("#run-backup");
    b.wait_text("#versions", "1", 120);
    stack.sim.fault("backend-leaf-01", "config-change");
    b.click("#run-backup");
    b.wait("version 2", 120, |b| b.exists("#diff-to option[value='2']").then_some(()));
    b.wait("a changed line in the diff", 30, |b| b.exists("#diff .dl.add, #diff .dl.del").then_some(()));
    let diff = b.text("#diff");
    assert!(diff.lines().any(|l| l.starts_with('+') && !l.starts_with("+++")), "{diff}");
}

#[test]
fn an_admin_sees_both_fingerprints_before_a_certificate_is_trusted() {
    let Some(()) = browser_available() else { return };
    let stack = Stack::start(47000);
    let b = Browser::start("trust");
    b.login(&stack, "ada", PASSWORD);
    b.wait("the overview (the landing page)", 30, |b| (b.path() == "/ui/overview").then_some(()));
    let listed = |b: &Browser| b.text("#confirm-list");

    // The server's sweeps pinned the certificate on first contact: the check says it is the one presented,
    // and asks nothing.
    b.goto(&stack.url("/ui/node/gpu-node-03"));
    b.click("#trust-check");
    let same = b.wait_text("#trust-result", "Pinned certificate is the one presented: sha256:", 60);
    let pinned = same.rsplit(": ").next().unwrap().trim().to_owned();
    assert!(pinned.starts_with("sha256:"), "{same}");

    // The BMC presents another certificate: both are shown; Cancel changes nothing.
    stack.sim.fault("gpu-node-03", "tls-cert-change");
    b.goto(&stack.url("/ui/node/gpu-node-03"));
    b.click("#trust-check");
    let shown = b.wait_text("#confirm-list", &format!("pinned: {pinned}"), 60);
    assert_eq!(shown.matches("sha256:").count(), 2, "{shown}");
    let presented = shown.rsplit("presented:").next().unwrap().trim().to_owned();
    assert_ne!(presented, pinned);
    b.click("#confirm-cancel");
    b.click("#trust-check");
    let again = b.wait_text("#confirm-list", &format!("pinned: {pinned}"), 60);
    assert_eq!(listed(&b), again);
    b.click("#confirm-ok");
    b.wait_text("#trust-result", &format!("Re-pinned {presented}"), 60);
    b.goto(&stack.url("/ui/audit?target=gpu-node-03&action=bmc.trust"));
    let audit = b.wait_text("#audit", "web:ada", 30);
    assert!(audit.contains("bmc.trust"), "{audit}");
}
