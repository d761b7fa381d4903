//! Console log lines come back from disk (possibly truncated or damaged): parsing must never panic,
//! and whatever parses must re-encode to a line that parses to the same record. The escape parser
//! sees raw terminal input and must never panic or lose plain bytes either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lifeline_console::escape::{EscapeAction, EscapeParser};
use lifeline_console::log::{encode_record, parse_record};

fuzz_target!(|data: &[u8]| {
    if let Some(r) = parse_record(data) {
        let mut line = Vec::new();
        encode_record(&r, &mut line);
        assert_eq!(parse_record(&line), Some(r));
    }
    let mut p = EscapeParser::new();
    let sent: usize =
        p.feed(data).iter().map(|a| if let EscapeAction::Send(v) = a { v.len() } else { 0 }).sum();
    assert!(sent <= data.len());
});
