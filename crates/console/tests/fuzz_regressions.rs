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

/// `expect` (timeout-3184ea7f…, 5 s of CPU for one 415-byte output): `ESC [ 2222…2 \xcd 22222222 \xeb… @`.
/// `vte` skips the high bytes inside the parameter and inserts 65,535 cells; the CSI clamp took the first
/// high byte for the end of the sequence and let the count through. It now drops what `vte` ignores there.
/// An hour later (slow-unit-abf572d0…, 6 s): the same with the high bytes between the ESC and the `[`.
#[test]
fn a_count_behind_bytes_the_parser_ignores_is_still_clamped() {
    #[derive(Default)]
    struct MaxIch(u16);
    impl vte::Perform for MaxIch {
        fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], _: bool, action: char) {
            if intermediates.is_empty() && action == '@' {
                self.0 = self.0.max(params.iter().next().and_then(|p| p.first().copied()).unwrap_or(0));
            }
        }
    }
    let max_ich = |bytes: &[u8]| {
        let mut m = MaxIch::default();
        vte::Parser::new().advance(&mut m, bytes);
        m.0
    };
    for seed in ["csi-count-behind-high-bytes", "csi-count-behind-high-bytes-after-esc"] {
        let path = format!("{}/fuzz/seeds/expect/{seed}", env!("CARGO_MANIFEST_DIR"));
        let input = std::fs::read(&path).expect("the seed");
        let out = &input[4..];
        assert!(max_ich(out) > 20_000, "{seed}: the raw output asks for {} insertions", max_ich(out));
        for chunk in [1, 3, 64, out.len()] {
            let mut clamp = lifeline_console::csi_clamp::CsiClamp::new(ROWS, COLS);
            let mut clamped = Vec::new();
            for c in out.chunks(chunk) {
                clamp.feed(c, &mut clamped);
            }
            assert!(max_ich(&clamped) <= COLS, "{seed}, reads of {chunk} bytes: ICH {}", max_ich(&clamped));
        }
    }
}
