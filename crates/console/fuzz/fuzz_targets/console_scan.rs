//! The console scanner on any console output, chunked anywhere. Properties: no input panics; the
//! findings do not depend on how the link chunked the bytes (one piece, or split at byte 0 of the input's
//! first value and every byte after that step); the state a console holds between chunks stays bounded.
//!
//! Input: byte 0 the chunk size (1..=256); the rest is the console output.
#![no_main]

use chrono::DateTime;
use libfuzzer_sys::fuzz_target;
use lifeline_console::scan::{ConsoleScanner, Finding, RuleSet};

fn scan(data: &[u8], chunk: usize) -> (Vec<Finding>, usize) {
    let ts = DateTime::from_timestamp(1_800_000_000, 0).expect("ts");
    let mut s = ConsoleScanner::new(RuleSet::builtin());
    let mut out = Vec::new();
    let mut held = 0;
    for c in data.chunks(chunk.max(1)) {
        s.feed(ts, c, &mut out);
        held = held.max(s.held_bytes());
    }
    (out, held)
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, body)) = data.split_first() else { return };
    let (whole, _) = scan(body, body.len().max(1));
    let (chunked, held) = scan(body, usize::from(step).max(1));
    assert_eq!(whole, chunked, "chunking changed the findings");
    // The partial line (2048), remembered context and boot times: bounded whatever the input.
    assert!(held < 64 * 1024, "a console holds {held} bytes between chunks");
});
