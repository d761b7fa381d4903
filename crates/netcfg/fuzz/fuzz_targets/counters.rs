//! The switch counters parsers on arbitrary output. Properties: no parser panics; every port returned is
//! named; a read compared with itself rises nowhere, and compared with a read where every counter grew by
//! one, rises only where the thresholds allow one.
//!
//! Input: byte 0 picks the output format, the rest is the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lifeline_netcfg::counters::{FORMATS, Snapshot, Thresholds, parse, rising};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(&rest[..rest.len().min(8192)]);
    let rows = parse(FORMATS[usize::from(pick) % FORMATS.len()], &text, Some("swp1"));
    assert!(rows.iter().all(|r| !r.port.trim().is_empty()));
    let mut a = Snapshot::default();
    a.merge(rows.clone());
    assert!(rising(&a, &a, &Thresholds::default()).is_empty());
    let mut b = Snapshot::default();
    b.merge(
        rows.into_iter()
            .map(|mut r| {
                r.counters.values_mut().for_each(|v| *v = v.saturating_add(1));
                r
            })
            .collect(),
    );
    let t = Thresholds { errors: 1, drops: 1, flaps: 1, pause: 1, watchdog: 1 };
    for r in rising(&a, &b, &t) {
        assert_eq!(r.delta(), 1);
    }
});
