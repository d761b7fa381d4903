//! The expect engine on whatever a console prints, chunked however the link delivered it. Properties:
//! - waiting repeatedly for a literal stream pattern matches it exactly as many times as it occurs
//!   (non-overlapping, leftmost first), whatever the chunking, then reports the console closed;
//! - the screen model ends up as a terminal that saw the whole output at once would show it (any bytes,
//!   characters cut between reads included), the control-sequence clamp included;
//! - any pattern text (a runbook's) compiles or falls back to a literal, never panics; the bootloader
//!   detectors and the boot-loop detector read any screen.
//!
//! Input: byte 0 the literal's length (1..=8), byte 1 its offset in the output, byte 2 the chunk size,
//! byte 3 the length of a free pattern taken from the end (used when a multiple of 4); the rest is the console output.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use lifeline_console::boot_loop::repeating_block;
use lifeline_console::csi_clamp::CsiClamp;
use lifeline_console::expect::{COLS, ROWS};
use lifeline_console::profiles::{detect, parse_menu};
use lifeline_console::{Expect, ExpectError, Pattern, Replay};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime"))
}

/// Non-overlapping leftmost occurrences of `needle` in `hay`.
fn occurrences(hay: &[u8], needle: &[u8]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i + needle.len() <= hay.len() {
        if &hay[i..i + needle.len()] == needle {
            n += 1;
            i += needle.len();
        } else {
            i += 1;
        }
    }
    n
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let (len, off, chunk, free) = (
        usize::from(data[0] % 8) + 1,
        usize::from(data[1]),
        usize::from(data[2]) + 1,
        usize::from(data[3] % 32),
    );
    let out = &data[4..];
    let free_pattern = String::from_utf8_lossy(&out[out.len().saturating_sub(free)..]).into_owned();
    if out.len() < len {
        return;
    }
    let off = off % (out.len() - len + 1);
    let literal = &out[off..off + len];
    let re: String = literal.iter().map(|b| format!("\\x{b:02x}")).collect();
    let pattern = Pattern::stream(&format!("(?-u:{re})"));
    let expected = occurrences(out, literal);

    runtime().block_on(async {
        let io = Replay::in_reads(out, chunk);
        let mut ex = Expect::new("fuzz-console", io);
        let mut matched = 0;
        loop {
            match ex.expect(pattern.clone(), Duration::from_secs(3600)).await {
                Ok(m) => {
                    assert_eq!(m.text.as_bytes(), String::from_utf8_lossy(literal).as_bytes());
                    matched += 1;
                    assert!(matched <= expected, "matched more often than the literal occurs");
                }
                Err(ExpectError::Closed { .. }) => break,
                Err(e) => panic!("unexpected {e}"),
            }
        }
        assert_eq!(matched, expected, "literal {literal:?} chunked by {chunk}");

        // The reference sees the whole output at once through its own clamp (which bounds vt100's work per
        // sequence; that the clamp never changes a screen is the property test in `csi_clamp`), so the
        // comparison also checks that the clamp's state carries correctly across the chunks.
        let mut clamped = Vec::new();
        CsiClamp::new(ROWS, COLS).feed(out, &mut clamped);
        let mut whole = vt100::Parser::new(ROWS, COLS, 0);
        whole.process(&clamped);
        // For any bytes, valid UTF-8 or not: the engine carries a character cut between reads to the next
        // read (`utf8_carry`; vte 0.15 dropped the byte after such a character, found by this target).
        // The screen's text is rebuilt cell by cell on every call (a sixth of this target's time): once here.
        let screen = ex.screen();
        assert_eq!(screen, whole.screen().contents(), "chunking changed the screen");

        let rows = ex.rows();
        let _ = detect(&screen);
        let _ = parse_menu(&rows);
        let _ = repeating_block(&screen);
        let _ = ex.last_line();
        let _ = ex.transcript_text();
        // A runbook's own pattern text: compiles or falls back to a literal; checked against what is there.
        // (Compiling a Unicode regex is slow: one input in four.)
        if free == 0 || data[3] % 4 != 0 {
            return;
        }
        let io = Replay::in_reads(out, out.len());
        let mut ex = Expect::new("fuzz-console", io);
        let pats = [Pattern::stream(&free_pattern), Pattern::screen(&free_pattern)];
        let _ = ex.expect_any(&pats, Duration::from_secs(3600)).await;
    });
});
