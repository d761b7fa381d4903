//! Inputs the fuzz targets (`crates/console/fuzz`) found, kept as ordinary tests.

use std::time::Duration;

use lifeline_console::expect::{COLS, ROWS};
use lifeline_console::{Expect, ExpectError, Pattern, Replay};

/// The screen the expect engine shows after reading all of `out` in reads of `chunk` bytes.
async fn screen_after(out: &[u8], chunk: usize) -> String {
    let mut ex = Expect::new("fuzz-console", Replay::in_reads(out, chunk));
    let never = Pattern::stream("(?-u:\\xff\\xfe\\xfd)");
    let r = ex.expect(never, Duration::from_secs(3600)).await;
    assert!(matches!(r, Err(ExpectError::Closed { .. })), "{r:?}");
    ex.screen()
}

/// `expect` (crash-e87df9f7…): the output of a 59-byte read ended with the first byte of U+036B (`cd ab`);
/// the screen model (vte 0.15) then printed the character and skipped the `K` after it, so chunking
/// changed the screen. Reads are now carried to whole characters (`utf8_carry`).
#[tokio::test]
async fn a_character_split_between_reads_keeps_the_next_one() {
    let out: &[u8] = b"Cont\x00:SBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\xcd\xabK\xcd\xabK!2T>*J. stE\n        @|\r";
    let mut whole = vt100::Parser::new(ROWS, COLS, 0);
    whole.process(out);
    for chunk in [59, 1, 2, 3, 7, out.len()] {
        assert_eq!(screen_after(out, chunk).await, whole.screen().contents(), "reads of {chunk} bytes");
    }
}
