//! A console fault is resolved by its own evidence going away, seen on the console: `lifeline serve` logs a
//! `lifeline sim` GPU node's console; the simulator's `boot-loop` makes it panic at every boot (a
//! `console-kernel-panic` fault); once the loop is cleared the host's next boot comes all the way up (kernel
//! start, then systemd's multi-user target, nothing in between) and that clean boot resolves the fault.

mod common;

use std::time::Duration;

use common::login;
use lifeline_test_utils::{ServeProcess, SimProcess, add_user, unique_loopback, wait_until};

const PASSWORD: &str = "correct horse battery";

#[test]
fn a_kernel_panic_fault_is_resolved_by_the_next_clean_boot_on_the_console() {
    let inv = format!(
        "{}\n[[device]]\nname = \"gpu-node-01\"\nrole = \"gpu-node\"\nrack = \"r1\"\n\
         bmc = {{ address = \"{}\", port = 27323, protocol = \"ipmi\", flavor = \"openbmc-like\" }}\n\
         gpus = {{ count = 2, model = \"NVIDIA H100 80GB HBM3\" }}\n",
        common::ONE_RACK_INVENTORY,
        unique_loopback()
    );
    let sim = SimProcess::start(
        &inv,
        26700,
        &[("LIFELINE_BMC_PASSWORD", "s3cret-pw"), ("LIFELINE_SWITCH_PASSWORD", "sw-pass")],
    );
    add_user(&sim, "ann", "operator", PASSWORD);
    // No sweeps: the simulator's panic also logs a critical SEL entry, and only the console is under test.
    let srv =
        ServeProcess::start_with(&sim, "[server]\nsweep-interval = \"0s\"\n\n[correlation]\nhold = \"2s\"\n");
    let s = login(&srv.addr, "ann", PASSWORD);
    s.consoles_connected(&["gpu-node-01"]);

    sim.fault("gpu-node-01", "boot-loop");
    let f = wait_until("the panic's fault", Duration::from_secs(90), || {
        s.open_faults().into_iter().find(|f| f["kind"] == "console-kernel-panic")
    });
    assert_eq!(f["device"], "gpu-node-01", "{f:#}");
    // Still looping: every boot panics again, none is clean, the fault stays open.
    std::thread::sleep(Duration::from_secs(8));
    assert!(
        s.open_faults().iter().any(|x| x["id"] == f["id"]),
        "a looping host is not clean: {:#?}",
        s.open_faults()
    );

    sim.fault("gpu-node-01", "clear");
    wait_until("the panic resolved by a clean boot", Duration::from_secs(120), || {
        (!s.open_faults().iter().any(|x| x["kind"] == "console-kernel-panic")).then_some(())
    });
    let (st, resolved) = s.call("GET", "/api/v1/faults?state=resolved", None);
    assert_eq!(st, 200, "{resolved}");
    assert!(resolved.as_array().unwrap().iter().any(|x| x["id"] == f["id"]), "{resolved:#}");
    let (_, events) = s.call("GET", "/api/v1/events?limit=1000", None);
    let why = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["source"] == "console" && e["data"]["fault"] == f["id"])
        .unwrap_or_else(|| panic!("a console event says why: {events:#}"));
    let m = why["message"].as_str().unwrap();
    assert!(m.contains("cleared: clean boot on the console"), "{m}");
    assert!(
        m.contains("Linux version 5.15.0-105-generic") && m.contains("Reached target Multi-User System"),
        "{m}"
    );
}
