//! Complete lines out of a console byte stream, however the link chunked it.
//!
//! A serial console is not a log file: chunks end mid-line (and mid-escape), systemd colours its status
//! with ANSI sequences, getty and the BIOS redraw with bare CRs, and a wedged host can print without a
//! newline for ever. The splitter keeps one partial line per console, bounded by `max_line` (the rest of
//! an over-long line is dropped and the line is marked truncated), removes CSI / OSC / two-byte escape
//! sequences and other control bytes (tab kept, CR dropped), and hands out each line when its `\n`
//! arrives. Its state (partial line, escape state) survives any split of the stream, so the lines it
//! yields do not depend on the chunking — the property the tests check.

/// Where the escape-sequence state machine is between chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Esc {
    None,
    /// After ESC.
    Start,
    /// Inside `ESC [ ...` until a final byte 0x40..=0x7e.
    Csi,
    /// Inside `ESC ] ...` until BEL or ST (`ESC \`).
    Osc,
    /// Inside an OSC, after ESC (a `\` ends it).
    OscAfterEscape,
}

/// A line handed out by [`LineSplitter::feed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    /// The line without its `\n`, escapes and control bytes removed; not necessarily UTF-8.
    pub bytes: &'a [u8],
    /// Bytes were dropped because the line was longer than the limit.
    pub truncated: bool,
}

/// Splits one console's byte stream into clean lines with bounded memory.
#[derive(Debug, Clone)]
pub struct LineSplitter {
    buf: Vec<u8>,
    max_line: usize,
    truncated: bool,
    esc: Esc,
}

/// Longest line kept by default: kernel lines are far shorter; a stack of binary garbage is not a line.
pub const DEFAULT_MAX_LINE: usize = 2048;

impl Default for LineSplitter {
    fn default() -> Self {
        LineSplitter::new(DEFAULT_MAX_LINE)
    }
}

impl LineSplitter {
    pub fn new(max_line: usize) -> LineSplitter {
        let max_line = max_line.max(1);
        LineSplitter {
            buf: Vec::with_capacity(128.min(max_line)),
            max_line,
            truncated: false,
            esc: Esc::None,
        }
    }

    /// Bytes held for the current partial line (what this console costs between lines).
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Forget the partial line (the link dropped: what follows is not its continuation).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.truncated = false;
        self.esc = Esc::None;
    }

    /// Feeds a chunk; `on_line` is called for every line the chunk completes, in order.
    pub fn feed(&mut self, chunk: &[u8], mut on_line: impl FnMut(Line<'_>)) {
        for &b in chunk {
            match self.esc {
                Esc::None => {}
                Esc::Start => {
                    self.esc = match b {
                        b'[' => Esc::Csi,
                        b']' => Esc::Osc,
                        // Two-byte sequences (ESC 7, ESC M, ESC ( B's first half...): drop the byte.
                        _ => Esc::None,
                    };
                    continue;
                }
                Esc::Csi => {
                    if (0x40..=0x7e).contains(&b) {
                        self.esc = Esc::None;
                    } else if b == b'\n' {
                        // A broken sequence must not swallow the line end.
                        self.esc = Esc::None;
                        self.emit(&mut on_line);
                    }
                    continue;
                }
                Esc::Osc => {
                    match b {
                        0x07 => self.esc = Esc::None,
                        0x1b => self.esc = Esc::OscAfterEscape,
                        b'\n' => {
                            self.esc = Esc::None;
                            self.emit(&mut on_line);
                        }
                        _ => {}
                    }
                    continue;
                }
                Esc::OscAfterEscape => {
                    self.esc = if b == b'\\' { Esc::None } else { Esc::Osc };
                    continue;
                }
            }
            match b {
                b'\n' => self.emit(&mut on_line),
                0x1b => self.esc = Esc::Start,
                b'\t' => self.push(b' '),
                // CR, BEL, backspace and the other C0 controls carry no text.
                0..=0x1f | 0x7f => {}
                _ => self.push(b),
            }
        }
    }

    fn push(&mut self, b: u8) {
        if self.buf.len() < self.max_line {
            self.buf.push(b);
        } else {
            self.truncated = true;
        }
    }

    fn emit(&mut self, on_line: &mut impl FnMut(Line<'_>)) {
        on_line(Line { bytes: &self.buf, truncated: self.truncated });
        self.buf.clear();
        self.truncated = false;
        // A line that grew large once does not keep its memory for ever.
        if self.buf.capacity() > 4 * 128 {
            self.buf.shrink_to(128);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lines_of(chunks: &[&[u8]], max: usize) -> Vec<(String, bool)> {
        let mut s = LineSplitter::new(max);
        let mut out = Vec::new();
        for c in chunks {
            s.feed(c, |l| out.push((String::from_utf8_lossy(l.bytes).into_owned(), l.truncated)));
        }
        out
    }

    #[test]
    fn ansi_colour_cr_and_partial_lines_are_cleaned() {
        let out = lines_of(
            &[
                b"[  \x1b[0;32m OK \x1b[0m] Started ssh\r\n[   12.1] Kernel pa",
                b"nic - not syncing\r",
                b"\n tail",
            ],
            100,
        );
        assert_eq!(
            out,
            vec![
                ("[   OK ] Started ssh".to_owned(), false),
                ("[   12.1] Kernel panic - not syncing".to_owned(), false),
            ]
        );
    }

    #[test]
    fn escape_split_across_chunks_and_osc_titles_are_removed() {
        let out = lines_of(&[b"a\x1b", b"[3", b"1mb\x1b]0;title\x07c\x1b]2;t\x1b\\d\n"], 100);
        assert_eq!(out, vec![("abcd".to_owned(), false)]);
    }

    #[test]
    fn overlong_lines_are_truncated_and_flagged_and_memory_stays_bounded() {
        let mut s = LineSplitter::new(8);
        let mut out = Vec::new();
        s.feed(&[b'x'; 10_000], |_| unreachable!("no newline yet"));
        assert_eq!(s.pending(), 8);
        s.feed(b"yz\nok\n", |l| out.push((l.bytes.to_vec(), l.truncated)));
        assert_eq!(out, vec![(b"xxxxxxxx".to_vec(), true), (b"ok".to_vec(), false)]);
    }

    #[test]
    fn a_broken_escape_does_not_swallow_the_line_end() {
        let out = lines_of(&[b"x\x1b[12\nnext\n"], 100);
        assert_eq!(out, vec![("x".to_owned(), false), ("next".to_owned(), false)]);
    }

    proptest! {
        /// The lines do not depend on how the stream was chunked (splits anywhere, escapes included).
        #[test]
        fn chunking_never_changes_the_lines(
            parts in proptest::collection::vec(
                prop_oneof![
                    "[ -~]{0,30}".prop_map(String::into_bytes),
                    Just(b"\r\n".to_vec()),
                    Just(b"\n".to_vec()),
                    Just(b"\x1b[1;31m".to_vec()),
                    Just(b"\x1b]0;t\x07".to_vec()),
                    proptest::collection::vec(any::<u8>(), 0..8),
                ],
                0..40,
            ),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
            max in 1usize..64,
        ) {
            let stream: Vec<u8> = parts.concat();
            let whole = lines_of(&[&stream], max);
            let mut at: Vec<usize> = cuts.iter().map(|c| if stream.is_empty() { 0 } else { c % stream.len() }).collect();
            at.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut prev = 0;
            for a in at {
                chunks.push(&stream[prev..a]);
                prev = a;
            }
            chunks.push(&stream[prev..]);
            prop_assert_eq!(lines_of(&chunks, max), whole.clone());
            // One line per newline outside escapes at most; never a control byte or an over-long line.
            prop_assert!(whole.len() <= stream.iter().filter(|&&b| b == b'\n').count());
            for (l, _) in &whole {
                prop_assert!(l.len() <= max * 3); // lossy UTF-8 may widen invalid bytes
                prop_assert!(!l.bytes().any(|b| b < 0x20 || b == 0x7f));
            }
        }

        /// Plain printable lines come back exactly, with LF or CRLF endings.
        #[test]
        fn printable_lines_round_trip(lines in proptest::collection::vec("[ -~]{0,60}", 0..20), crlf in any::<bool>()) {
            let end = if crlf { "\r\n" } else { "\n" };
            let stream: String = lines.iter().map(|l| format!("{l}{end}")).collect();
            let got: Vec<String> = lines_of(&[stream.as_bytes()], 64).into_iter().map(|(l, _)| l).collect();
            let want: Vec<String> = lines.iter().map(|l| l.replace('\x1b', "")).collect();
            prop_assert_eq!(got, want);
        }
    }
}
