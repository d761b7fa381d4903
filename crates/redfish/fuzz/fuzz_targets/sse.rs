//! The Server-Sent Events parser behind `EventStream`, on any byte stream a BMC sends:
//! - the events (and the size-limit error) are the same however the bytes are chunked;
//! - the events it produced, encoded again, parse to the same events;
//! - every event's data reads as a Redfish `Event` the way `EventStream::parse` reads it, with warnings
//!   naming the stream.
//!
//! Input: byte 0 picks the per-event byte limit, bytes 1.. are split into chunks at the positions that
//! bytes 1..=4 give; the rest is the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lifeline_redfish::fuzzing::parse_event_data;
use lifeline_redfish::sse::{SseError, SseEvent, SseParser, encode};

const URL: &str = "https://127.0.0.1/redfish/v1/EventService/SSE";

fn run(limit: usize, chunks: &[&[u8]]) -> (Vec<SseEvent>, Option<SseError>) {
    // As `EventStream` reads: events of a read are delivered, then the parser's failure (if any) ends it.
    let mut p = SseParser::new(limit);
    let mut out = Vec::new();
    for c in chunks {
        match p.push(c) {
            Ok(ev) => out.extend(ev),
            Err(e) => return (out, Some(e)),
        }
        if let Some(e) = p.failure() {
            return (out, Some(e.clone()));
        }
    }
    (out, None)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let limit = 16 + usize::from(data[0]) * 8;
    let cuts = &data[1..5];
    let stream = &data[5..];

    let (whole, whole_err) = run(limit, &[stream]);
    // Chunked at up to four fuzz-chosen positions (a `\r\n` split across chunks included).
    let mut at: Vec<usize> = cuts.iter().map(|c| usize::from(*c) * stream.len() / 256).collect();
    at.sort_unstable();
    let mut chunks = Vec::new();
    let mut prev = 0;
    for a in at {
        chunks.push(&stream[prev..a]);
        prev = a;
    }
    chunks.push(&stream[prev..]);
    let (pieces, pieces_err) = run(limit, &chunks);
    // Byte by byte.
    let singles: Vec<&[u8]> = stream.chunks(1).collect();
    let (bytes, bytes_err) = run(limit, &singles);
    // An oversized event stops the stream; the events completed before it are delivered however chunked.
    assert_eq!(pieces, whole, "chunking changed the events");
    assert_eq!(pieces_err, whole_err);
    assert_eq!(bytes, whole, "byte-by-byte feeding changed the events");
    assert_eq!(bytes_err, whole_err);

    // Re-encoding what was parsed gives the same events back.
    let again = run(usize::MAX, &[encode(&whole).as_bytes()]).0;
    assert_eq!(again, whole, "encode/parse round trip");

    for e in &whole {
        // Raw bytes are bounded; invalid UTF-8 becomes U+FFFD (3 bytes) at most.
        assert!(e.data.len() <= 3 * limit, "event data beyond the limit");
        let ev = parse_event_data(&e.data, URL);
        for w in &ev.warnings {
            assert!(w.at.starts_with(URL), "{w:?}");
        }
    }
});
