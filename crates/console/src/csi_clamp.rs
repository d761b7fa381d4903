//! Clamps the repeat count of the three control sequences that `vt100` 0.16 carries out once per count
//! without bounding it by the screen size: ICH (`CSI n @`), IL (`CSI n L`) and SD (`CSI n T`).
//!
//! Why: a console that prints `ESC [ 65535 @` (line noise at the wrong baud rate, a garbled boot, or
//! a hostile host) made the screen model insert 65,535 cells one at a time into a growing row, about a
//! second of CPU per sequence; `ESC [ 9999 L` allocated 9,999 rows. The fuzz target of the expect engine
//! found it (70 % of its time in `memmove`). Beyond the screen's size more repeats change nothing (every
//! cell or row in reach is already blank), so clamping the count to the screen is exact: the screen is the
//! same as without the clamp, which the property test below checks against an unclamped parser.
//!
//! The filter follows just enough of the VT500 parser (the one `vte` implements) to know when bytes form
//! a CSI sequence without intermediates: an escape followed by `[`, parameter bytes, a final byte. It
//! holds the parameters of such a sequence until its final byte arrives and rewrites only the first
//! one, the only one these sequences use. Every number is re-encoded as the value `vte` would see (it
//! saturates at 65,535), and parameters past the 32 `vte` keeps are dropped as it drops them, so what is
//! held stays under 200 bytes whatever arrives: a sequence is never let through unclamped for being long.
//! A byte that makes `vte` collect an intermediate or ignore the sequence ends the clamp's interest (no
//! plain ICH, IL or SD can follow); anything else it does not recognise goes through unchanged.

/// Parameters (and sub-parameters) `vte` keeps; separators after the 32nd, and digits after them, are
/// ignored by it (`Params::is_full`).
const MAX_PARAMS: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    /// After ESC.
    Escape,
    /// After `ESC [`, in the first parameter (its value so far in `first`).
    First,
    /// After the first parameter (`;` seen): bytes are held raw.
    Rest,
}

/// A streaming filter between a console and the screen model.
#[derive(Debug)]
pub struct CsiClamp {
    rows: u16,
    cols: u16,
    state: State,
    /// The first parameter's value as `vte` would compute it; `None` while it has no digit.
    first: Option<u16>,
    /// Held bytes after the first parameter (from its `;` on), numbers re-encoded.
    rest: Vec<u8>,
    /// The parameter being read in `rest`: its value so far, `None` while it has no digit.
    cur: Option<u16>,
    /// Separators seen (`;` and `:`), the first parameter's included.
    separators: usize,
}

impl CsiClamp {
    pub fn new(rows: u16, cols: u16) -> CsiClamp {
        CsiClamp { rows, cols, state: State::Ground, first: None, rest: Vec::new(), cur: None, separators: 0 }
    }

    /// Filters `input`, appending what the screen model should see to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &b in input {
            self.byte(b, out);
        }
    }

    /// The held bytes of the pending sequence, as they arrived (value-equivalent).
    fn flush(&mut self, out: &mut Vec<u8>) {
        match self.state {
            State::Ground => {}
            // The ESC went out when it arrived.
            State::Escape => {}
            State::First | State::Rest => {
                out.push(b'[');
                if let Some(v) = self.first {
                    out.extend_from_slice(v.to_string().as_bytes());
                }
                self.end_param();
                out.append(&mut self.rest);
            }
        }
        self.state = State::Ground;
        self.first = None;
        self.rest.clear();
        self.cur = None;
        self.separators = 0;
    }

    /// Moves the parameter being read into `rest`.
    fn end_param(&mut self) {
        if let Some(v) = self.cur.take() {
            self.rest.extend_from_slice(v.to_string().as_bytes());
        }
    }

    /// Saturating decimal accumulation, as `vte` computes a parameter.
    fn digit(v: Option<u16>, b: u8) -> Option<u16> {
        Some(v.unwrap_or(0).saturating_mul(10).saturating_add(u16::from(b - b'0')))
    }

    fn byte(&mut self, b: u8, out: &mut Vec<u8>) {
        match (self.state, b) {
            // ESC starts a new sequence in any state; CAN and SUB cancel one (VT500 "anywhere" rules).
            // The ESC itself goes out at once: a C0 control after it must reach the parser after it too,
            // because before it the parser may be in a string state (DCS, OSC, APC) that ignores controls.
            (_, 0x1b) => {
                self.flush(out);
                out.push(0x1b);
                self.state = State::Escape;
            }
            (_, 0x18 | 0x1a) => {
                self.flush(out);
                out.push(b);
            }
            (State::Ground, _) => out.push(b),
            // Other C0 controls inside an escape or CSI sequence are executed on the spot and leave the
            // sequence pending. The ESC is already out, so passing a control on ahead of the held `[` and
            // parameters has the same effect: the parser executes it in the escape state instead of the CSI one.
            (State::Escape | State::First | State::Rest, 0x00..=0x1f) => out.push(b),
            // DEL and every byte from 0x80: `vte` ignores them in any CSI state and the sequence goes on
            // (`ESC [ 6 \xcd 5535 @` is `ESC [ 65535 @`), so they are dropped here, which leaves the
            // screen as it was. Passed through, they ended the clamp's view of the sequence but not the
            // parser's (the expect fuzz target: 5 s of CPU for a 415-byte console output).
            // The same after the ESC: `vte` stays in its escape state (`ESC \xc0 [ 65535 @` is a CSI).
            (State::Escape | State::First | State::Rest, 0x7f..=0xff) => {}
            (State::Escape, b'[') => {
                self.state = State::First;
                self.first = None;
            }
            (State::Escape, _) => {
                self.flush(out);
                out.push(b);
            }
            (State::First, b'0'..=b'9') => self.first = Self::digit(self.first, b),
            // `;` ends the first parameter, and so does `:` (a sub-parameter: `vt100` reads the first
            // parameter's first sub-parameter, so `ESC [ 65535 : 1 @` inserts 65,535 cells).
            (State::First, b';' | b':') => {
                self.state = State::Rest;
                self.rest.push(b);
                self.separators = 1;
            }
            // Past `vte`'s last parameter its digits and separators are ignored: so are they here.
            (State::Rest, b'0'..=b'9' | b';' | b':') if self.separators >= MAX_PARAMS => {}
            (State::Rest, b'0'..=b'9') => self.cur = Self::digit(self.cur, b),
            (State::Rest, b';' | b':') => {
                self.end_param();
                self.rest.push(b);
                self.separators += 1;
            }
            (State::First | State::Rest, 0x40..=0x7e) => {
                // Only the first parameter counts for ICH, IL and SD; later ones are passed unchanged.
                let limit = match b {
                    b'@' => Some(self.cols),
                    b'L' | b'T' => Some(self.rows),
                    _ => None,
                };
                if let (Some(limit), Some(v)) = (limit, self.first) {
                    self.first = Some(v.min(limit));
                }
                self.flush(out);
                out.push(b);
            }
            // An intermediate (0x20-0x2F) or a private marker (0x3C-0x3F): `vte` dispatches the sequence with
            // intermediates, or ignores it, and neither is a plain ICH, IL or SD: not ours to touch.
            (State::First | State::Rest, _) => {
                self.flush(out);
                out.push(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn clamp_all(input: &[u8], chunk: usize) -> Vec<u8> {
        let mut f = CsiClamp::new(24, 80);
        let mut out = Vec::new();
        for c in input.chunks(chunk.max(1)) {
            f.feed(c, &mut out);
        }
        f.flush(&mut out);
        out
    }

    fn screen(bytes: &[u8]) -> (String, Vec<u8>, (u16, u16)) {
        let mut p = vt100::Parser::new(24, 80, 0);
        p.process(bytes);
        let s = p.screen();
        (s.contents(), s.contents_formatted(), s.cursor_position())
    }

    /// The largest ICH, IL and SD counts `vte` (the parser under `vt100`) dispatches for `bytes`: an oracle
    /// independent of the clamp's own view of the grammar.
    fn dispatched_counts(bytes: &[u8]) -> (u16, u16) {
        #[derive(Default)]
        struct Counts(u16, u16);
        impl vte::Perform for Counts {
            fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], _: bool, action: char) {
                let n = params.iter().next().and_then(|p| p.first().copied()).unwrap_or(0);
                match (intermediates, action) {
                    ([], '@') => self.0 = self.0.max(n),
                    ([], 'L' | 'T') => self.1 = self.1.max(n),
                    _ => {}
                }
            }
        }
        let mut c = Counts::default();
        vte::Parser::new().advance(&mut c, bytes);
        (c.0, c.1)
    }

    /// Each input, read in reads of the given size, comes out of the clamp as given.
    fn assert_clamps(cases: &[(&[u8], usize, &[u8])]) {
        for &(input, chunk, want) in cases {
            let got = clamp_all(input, chunk);
            assert_eq!(got, want, "{:?} in reads of {chunk}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn huge_counts_are_clamped_to_the_screen() {
        assert_clamps(&[
            (b"\x1b[65535@x", 3, b"\x1b[80@x"),
            (b"a\x1b[0009999L", 1, b"a\x1b[24L"),
            (b"\x1b[99999999999999999T", 64, b"\x1b[24T"),
            (b"\x1b[300;7L", 2, b"\x1b[24;7L"),
            // Not ours: other finals, private markers, intermediates, small counts.
            (b"\x1b[300H\x1b[?2004h\x1b[5 @\x1b[3@", 5, b"\x1b[300H\x1b[?2004h\x1b[5 @\x1b[3@"),
            (b"\x1b[;5H\x1b[m\x1bM", 1, b"\x1b[;5H\x1b[m\x1bM"),
        ]);
    }

    #[test]
    fn bytes_the_parser_ignores_inside_a_sequence_do_not_end_it() {
        // Found by the expect fuzz target: high bytes inside the parameter, which vte skips.
        assert_clamps(&[
            (b"\x1b[2222\xcd2222\xeb\xeb\x00@x", 1, b"\x1b\x00[80@x"),
            (b"\x1b[6\x7f5535L", 3, b"\x1b[24L"),
            (b"\x1b[\xff65535;\x80\x81T", 2, b"\x1b[24;T"),
            // A sub-parameter after the count.
            (b"\x1b[65535:1@", 4, b"\x1b[80:1@"),
            // Long parameter lists: numbers re-encoded, nothing past vte's 32nd parameter.
            (b"\x1b[65535;0001;;7:2L", 2, b"\x1b[24;1;;7:2L"),
            // After the ESC (found by the same target an hour later).
            (b"\x1b\xc0\xc0[22222222\xc0@", 1, b"\x1b[80@"),
        ]);
        assert_eq!(
            dispatched_counts(b"\x1b[2222\xcd2222@"),
            (65535, 0),
            "the parser reads through the high byte"
        );
        let mut long = b"\x1b[65535".to_vec();
        long.extend(b";0000000001".repeat(100));
        long.push(b'@');
        let mut want = b"\x1b[80".to_vec();
        want.extend(b";1".repeat(31));
        want.extend(b";@");
        assert_clamps(&[(&long, 7, &want)]);
        assert_eq!(screen(&clamp_all(&long, 5)), screen(&long));
        assert_eq!(dispatched_counts(&long), (65535, 0), "vte reads the first count of a long list");
        for input in [&b"ab\x1b[1;2H\x1b[2222\xcd2222\xeb\x00@x"[..], b"\x1b[3;1H\x1b[9999:7L\x1b[\x9b9999T"]
        {
            assert_eq!(screen(&clamp_all(input, 1)), screen(input));
        }
    }

    #[test]
    fn controls_after_an_escape_stay_after_it() {
        // Found by the property test in CI: moving the CR LF ahead of the ESC let the DCS that was open
        // before it swallow them, and the screen lost a line.
        let input = b"\x1bP\x1b\r\naa";
        assert_eq!(clamp_all(input, 1), input);
        assert_eq!(screen(&clamp_all(input, 1)), screen(input));
        let csi = b"\x1b]0;t\x1b[\r\n70000@x";
        assert_eq!(clamp_all(csi, 1), b"\x1b]0;t\x1b\r\n[80@x");
        assert_eq!(screen(&clamp_all(csi, 2)), screen(csi));
    }

    #[test]
    fn the_clamped_screen_is_the_unclamped_one() {
        let input = b"line one\r\nline two\r\n\x1b[1;3H\x1b[60000@\x1b[2;1H\x1b[65535L\x1b[40000Tend";
        assert_eq!(screen(&clamp_all(input, 7)), screen(input));
    }

    /// Console-like bytes: text, controls, and escape sequences with large counts.
    fn console_bytes() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            "[a-z ]{0,12}".prop_map(String::into_bytes),
            Just(b"\r\n".to_vec()),
            Just(b"\x1b".to_vec()),
            Just(b"\x1b[".to_vec()),
            // String states (DCS, OSC, APC, and their terminators), in which the parser ignores controls.
            prop::sample::select(vec![&b"\x1bP"[..], b"\x1b]0;", b"\x1b_", b"\x1b\\", b"\x07", b"\x1bPq#"])
                .prop_map(<[u8]>::to_vec),
            (0u32..3000, prop::sample::select(b"@LTHABCDJKMPSXdmr".to_vec())).prop_map(|(n, f)| format!(
                "\x1b[{n}{}",
                f as char
            )
            .into_bytes()),
            (0u32..100, 0u32..100, prop::sample::select(b"@LTHr".to_vec())).prop_map(|(a, b, f)| format!(
                "\x1b[{a};{b}{}",
                f as char
            )
            .into_bytes()),
            // Counts with bytes the parser ignores (DEL, 0x80 and up) after the ESC, or inside the count with
            // a sub-parameter.
            (
                prop::sample::select(vec![0x7fu8, 0x80, 0xc0, 0xff]),
                0u32..3000,
                prop::sample::select(b"@LT".to_vec())
            )
                .prop_map(|(junk, n, f)| [
                    &b"\x1b"[..],
                    &[junk],
                    format!("[{n}{}", f as char).as_bytes()
                ]
                .concat()),
            (
                0u32..3000,
                prop::sample::select(vec![0x7fu8, 0x80, 0x9b, 0xcd, 0xff, b':']),
                0usize..5,
                prop::sample::select(b"@LTH".to_vec())
            )
                .prop_map(|(n, junk, at, f)| {
                    let digits = n.to_string().into_bytes();
                    let at = at.min(digits.len());
                    [&b"\x1b["[..], &digits[..at], &[junk], &digits[at..], &[f]].concat()
                }),
            // Many parameters after a large count (vte keeps 32).
            (0u32..3000, prop::collection::vec(0u32..200, 0..50), prop::sample::select(b"@LTm".to_vec()))
                .prop_map(|(n, more, f)| {
                    let more: String = more.iter().map(|m| format!(";{m:04}")).collect();
                    format!("\x1b[{n}{more}{}", f as char).into_bytes()
                }),
            prop::collection::vec(any::<u8>(), 0..4),
        ];
        prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn clamping_never_changes_the_screen(input in console_bytes(), chunk in 1usize..32) {
            let clamped = clamp_all(&input, chunk);
            prop_assert_eq!(screen(&clamped), screen(&input));
        }

        #[test]
        fn no_count_beyond_the_screen_reaches_the_parser(input in console_bytes(), chunk in 1usize..32) {
            let (ich, rows) = dispatched_counts(&clamp_all(&input, chunk));
            prop_assert!(ich <= 80 && rows <= 24, "ICH {} IL/SD {}", ich, rows);
        }

        #[test]
        fn chunking_never_changes_the_output(input in console_bytes(), chunk in 1usize..32) {
            prop_assert_eq!(clamp_all(&input, chunk), clamp_all(&input, input.len().max(1)));
        }
    }
}
