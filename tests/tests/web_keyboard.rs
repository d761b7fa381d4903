//! The web console on a 1280×800 laptop screen with only a keyboard, in a real headless Chromium: log in
//! without a mouse, reach the navigation, the filter, a device's checkbox and the bulk action by Tab, see
//! where the focus is on every stop, confirm or cancel a power action from the keyboard — and no page
//! scrolls sideways at 1280×800.

mod web_support;

use serde_json::{Value, json};
use web_support::{Browser, PASSWORD, Stack, browser_available};

const TAB: &str = "\u{E004}";
const ENTER: &str = "\u{E007}";
const ESCAPE: &str = "\u{E00C}";
const SPACE: &str = "\u{E00D}";

/// What has the focus: tag, id, class, href, aria-label, and whether a focus ring is drawn.
fn focused(b: &Browser) -> Value {
    b.js(
        "const e = document.activeElement; const s = getComputedStyle(e);
         return { tag: e.tagName.toLowerCase(), id: e.id, cls: e.className, href: e.getAttribute('href') || '',
                  label: e.getAttribute('aria-label') || e.textContent.trim().slice(0, 40),
                  ring: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2 };",
        json!([]),
    )
}

#[test]
fn keyboard_only_on_a_1280x800_screen() {
    let Some(()) = browser_available() else { return };
    let stack = Stack::start(39000);
    let b = Browser::start("keyboard");
    let size = b.js("return [window.innerWidth, window.innerHeight]", json!([]));
    assert!(size[0].as_u64().unwrap() <= 1280 && size[1].as_u64().unwrap() <= 800, "{size}");

    // Log in without a mouse: the user field has the focus on arrival.
    b.goto(&stack.url("/ui/login"));
    b.wait("the login form", 20, |b| (focused(b)["id"] == "username").then_some(()));
    b.keys("ann");
    b.keys(TAB);
    assert_eq!(focused(&b)["id"], "password");
    b.keys(PASSWORD);
    b.keys(ENTER);
    b.wait("the overview (the landing page)", 30, |b| (b.path() == "/ui/overview").then_some(()));
    b.goto(&stack.url("/ui/fleet"));
    b.wait("device rows", 60, |b| {
        (b.js("return document.querySelectorAll('input.pick').length", json!([])).as_u64()? > 0).then_some(())
    });

    // Tab through the page: every stop shows a focus ring, and the stops include the navigation, the
    // filter, a device's checkbox and the bulk action.
    b.js("document.activeElement.blur(); window.scrollTo(0, 0)", json!([]));
    let mut stops = Vec::new();
    for _ in 0..80 {
        b.keys(TAB);
        let f = focused(&b);
        if f["tag"] == "body" {
            continue;
        }
        assert_eq!(f["ring"], true, "no visible focus on {f}");
        let done = f["id"] == "bulk-apply";
        stops.push(f);
        if done {
            break;
        }
    }
    let has = |pred: &dyn Fn(&Value) -> bool| stops.iter().any(pred);
    assert!(has(&|f| f["href"] == "/ui/runbooks"), "navigation by Tab: {stops:#?}");
    assert!(has(&|f| f["id"] == "filter"), "the filter by Tab: {stops:#?}");
    assert!(has(&|f| f["id"] == "bulk-action"), "the bulk action by Tab: {stops:#?}");
    assert!(has(&|f| f["id"] == "bulk-apply"), "the apply button by Tab: {stops:#?}");

    // Select gpu-node-03 with Space, choose the action, open the confirmation with Enter: it lists the node;
    // Escape cancels and nothing was done.
    b.js("document.querySelector('input.pick[value=\"gpu-node-03\"]').focus()", json!([]));
    b.keys(SPACE);
    let checked =
        b.js("return document.querySelector('input.pick[value=\"gpu-node-03\"]').checked", json!([]));
    assert_eq!(checked, true, "Space ticks the focused checkbox");
    b.js("document.getElementById('bulk-apply').focus()", json!([]));
    b.keys(ENTER);
    let listed = b.wait_text("#confirm-list", "gpu-node-03", 10);
    assert!(listed.contains("gpu-node-03"), "{listed}");
    let open = b.js("return document.getElementById('confirm').open", json!([]));
    assert_eq!(open, true);
    let f = focused(&b);
    assert!(f["id"] == "confirm-cancel" || f["id"] == "confirm-ok", "the dialog takes the focus: {f}");
    b.keys(ESCAPE);
    b.wait("the dialog to close", 10, |b| {
        (b.js("return document.getElementById('confirm').open", json!([])) == false).then_some(())
    });
    let actions = stack.sim.actions("gpu-node-03");
    assert!(actions.is_empty(), "cancelled from the keyboard, nothing done: {actions:?}");

    // No page scrolls sideways on a 1280×800 screen (the operator's laptop at 3 a.m.).
    for page in [
        "/ui/overview",
        "/ui/fleet",
        "/ui/fabrics",
        "/ui/node/gpu-node-01",
        "/ui/console/gpu-node-01",
        "/ui/backups",
        "/ui/runbooks",
        "/ui/faults",
        "/ui/audit",
        "/ui/hygiene",
    ] {
        b.goto(&stack.url(page));
        b.wait(&format!("{page} to render"), 30, |b| {
            let t = b.js("return document.getElementById('main').textContent", json!([]));
            (!t.as_str().unwrap_or("").contains("Loading…")).then_some(())
        });
        std::thread::sleep(std::time::Duration::from_millis(500));
        let w = b.js("return [document.documentElement.scrollWidth, window.innerWidth]", json!([]));
        let (scroll, inner) = (w[0].as_u64().unwrap(), w[1].as_u64().unwrap());
        if scroll > inner {
            b.save_artifacts(&page.replace('/', "_"));
        }
        assert!(scroll <= inner, "{page} scrolls sideways at 1280×800: {scroll} px wide in {inner} px");
    }
}
