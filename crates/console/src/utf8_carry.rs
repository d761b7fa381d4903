//! Holds back a UTF-8 sequence that a read cut in two, so the screen model only ever sees whole ones.
//!
//! Why: `vte` 0.15 (under `vt100`) mishandles a multi-byte character split across two `advance` calls
//! when another character follows within its four-byte window: it prints the first character and skips
//! the byte after it (alacritty/vte#159, fixed upstream but not released). A console's reads split text
//! anywhere (SOL packets, serial buffers), so a boot log with non-ASCII text lost characters on screen, and
//! a screen pattern could miss. Found by the expect engine's fuzz target (`console/expect`), whose
//! property is that chunking never changes the screen.
//!
//! Delaying at most three bytes to the next read keeps the byte order, so the parser ends in the state it
//! would reach from the whole output at once; bytes that never get completed stay unprinted, as they would
//! in the parser's own partial-character buffer.

/// The incomplete UTF-8 sequence at the end of the last read.
#[derive(Debug, Default)]
pub struct Utf8Carry {
    held: [u8; 3],
    len: usize,
}

/// How many bytes a sequence with this lead byte has; `None` for ASCII, continuation and invalid bytes.
fn sequence_len(lead: u8) -> Option<usize> {
    match lead {
        0xC2..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF4 => Some(4),
        _ => None,
    }
}

/// Bytes at the end of `b` that start a sequence `b` does not complete.
fn incomplete_tail(b: &[u8]) -> usize {
    for back in 1..=3.min(b.len()) {
        let byte = b[b.len() - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        return match sequence_len(byte) {
            Some(n) if n > back => back,
            _ => 0,
        };
    }
    0
}

impl Utf8Carry {
    /// Puts the bytes held from the last read in front of `buf` and holds back the incomplete sequence at
    /// its end.
    pub fn apply(&mut self, buf: &mut Vec<u8>) {
        if self.len > 0 {
            buf.splice(0..0, self.held[..self.len].iter().copied());
        }
        let tail = incomplete_tail(buf);
        let keep = buf.len() - tail;
        self.held[..tail].copy_from_slice(&buf[keep..]);
        self.len = tail;
        buf.truncate(keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn screen(reads: &[&[u8]]) -> String {
        let mut p = vt100::Parser::new(24, 80, 0);
        let mut carry = Utf8Carry::default();
        for r in reads {
            let mut b = r.to_vec();
            carry.apply(&mut b);
            p.process(&b);
        }
        p.screen().contents()
    }

    fn whole(b: &[u8]) -> String {
        let mut p = vt100::Parser::new(24, 80, 0);
        p.process(b);
        p.screen().contents()
    }

    #[test]
    fn a_split_character_does_not_eat_the_next_one() {
        // The fuzzer's case, reduced: U+036B split after its first byte, 'K', then another U+036B.
        let text = "B\u{36b}K\u{36b}K".as_bytes();
        assert_eq!(screen(&[&text[..2], &text[2..]]), "B\u{36b}K\u{36b}K");
        // What the parser alone does with that split (vte 0.15): when this fails, vte is fixed and this
        // module can go.
        let mut p = vt100::Parser::new(24, 80, 0);
        p.process(&text[..2]);
        p.process(&text[2..]);
        assert_ne!(p.screen().contents(), "B\u{36b}K\u{36b}K", "vte no longer drops the byte");
    }

    #[test]
    fn tails() {
        assert_eq!(incomplete_tail(b"abc"), 0);
        assert_eq!(incomplete_tail(b"a\xc3"), 1);
        assert_eq!(incomplete_tail(b"a\xc3\xa9"), 0);
        assert_eq!(incomplete_tail(b"\xe2\x94"), 2);
        assert_eq!(incomplete_tail(b"\xe2\x94\x80"), 0);
        assert_eq!(incomplete_tail(b"\xf0\x9f\x98"), 3);
        assert_eq!(incomplete_tail(b"\x80\x80\x80"), 0);
        assert_eq!(incomplete_tail(b"\xff"), 0);
        assert_eq!(incomplete_tail(b""), 0);
    }

    proptest! {
        /// Any bytes (text, escapes, broken UTF-8), read in any pieces: the screen the whole output gives.
        #[test]
        fn reads_never_change_the_screen(
            bytes in prop::collection::vec(prop_oneof![
                4 => any::<u8>(),
                4 => prop::sample::select(vec![0xC3u8, 0xA9, 0xE2, 0x94, 0x80, 0xF0, 0x9F, 0x98, 0x81, 0xCD, 0xAB]),
                2 => prop::sample::select(b"aK \n\r\x1b[".to_vec()),
            ], 0..200),
            cuts in prop::collection::vec(1usize..8, 0..60),
        ) {
            let mut reads: Vec<&[u8]> = Vec::new();
            let mut rest = &bytes[..];
            for c in cuts {
                let (a, b) = rest.split_at(c.min(rest.len()));
                reads.push(a);
                rest = b;
            }
            reads.push(rest);
            prop_assert_eq!(screen(&reads), whole(&bytes));
        }
    }
}
