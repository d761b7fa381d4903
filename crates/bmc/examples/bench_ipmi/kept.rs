//! The warm rows of `bench_sweep`: the second sweep of one process over kept sessions
//! (`lifeline_bmc::KeptSessions`, as the server keeps them: IPMI sessions, and Redfish session tokens),
//! and how the IPMI one is compared with ipmipower. In a module of its own so that the Redfish rows of the
//! bench can change beside it without conflicts.

use lifeline_bmc::{KeepOptions, KeptSessions};

use super::{Measured, Table, met};

/// Kept sessions for a child that sweeps more than once (the warm rows, IPMI and Redfish); none otherwise,
/// so the cold rows log in and out as a one-shot command does. `BENCH_NO_KEPT_SESSIONS=1` (in the sweep
/// child's environment): none for the warm rows either, to measure what keeping saves on the same build.
pub fn options_for(times: usize) -> Option<KeptSessions> {
    let off = std::env::var_os("BENCH_NO_KEPT_SESSIONS").is_some();
    (times > 1 && !off).then(|| KeptSessions::new(KeepOptions::default()))
}

/// Closes the kept sessions (not counted: after the measured sweep) and says what they did, as the note
/// of the warm row (`KEPT …`).
pub async fn finish(kept: Option<KeptSessions>) {
    let Some(kept) = kept else { return };
    let s = kept.stats();
    let closed = kept.close_all().await;
    println!(
        "KEPT second sweep over kept sessions: {} reused, {} Redfish session tokens kept, {} dropped and re-opened, {closed} closed (Close Session / DELETE) at the end",
        s.reused, s.redfish_kept, s.dropped
    );
}

/// The warm row: our CPU is the getrusage(RUSAGE_SELF) delta around the second sweep; ipmipower's is its
/// whole cold process (it has no warm mode), from GNU time.
pub fn add_warm_row(table: &Table, warm: &Measured, peer: &Measured, n: usize) {
    let us_per_bmc = warm.cpu / n as f64 * 1e6;
    table.add(
        "IPMI power status",
        warm,
        format!(
            "CPU {:.3}x ipmipower's (goal <= 0.1: {}), {us_per_bmc:.0} us CPU/BMC; ours: getrusage delta around \
             the 2nd sweep, ipmipower's: its whole process",
            warm.cpu / peer.cpu,
            met(warm.cpu <= peer.cpu / 10.0)
        ),
    );
}
