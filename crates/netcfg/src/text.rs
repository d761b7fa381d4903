//! Terminal text clean-up for interactive shells.
//!
//! Why: a PTY shell gives back what a human would see — echoed commands, `\r\n`, ANSI colour and
//! cursor escapes, backspaces, pager prompts and the trailing prompt. Drivers want only the
//! command's output, so these pure functions turn one into the other. They must never panic on
//! arbitrary bytes (property-tested) because switch firmware sends odd things.
//!
//! Pager prompts are removed only where the shell saw the pager stop and answered it
//! ([`remove_pages`], given the byte ranges the shell recorded), never by searching the text: a
//! `description uplink -- More -- to spine1` is configuration, and the stored copy must be what the
//! switch holds. Trailing whitespace is kept here too; only the comparison copy trims it (see
//! [`crate::platform::Driver::canonical`]).

use std::sync::LazyLock;

use regex::bytes::Regex;

/// What a pager writes after a key press to erase its prompt: carriage returns, runs of spaces
/// ended by a carriage return or backspaces, backspace runs, "erase line" / "cursor left" escapes.
static ERASE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\A(?:\r|\x1b\[[0-9]*[KD]|\x08+ *\x08*| +(?:\r|\x08+))*").expect("erase regex")
});

/// The raw bytes of a shell session with each answered pager prompt (`pages`: byte ranges of the
/// line the pager wrote, in order) and the erase sequence that followed it removed. Nothing else
/// is touched.
pub fn remove_pages(buf: &[u8], pages: &[(usize, usize)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(buf.len());
    let mut at = 0;
    for &(start, end) in pages {
        if start < at || end > buf.len() || start > end {
            continue;
        }
        out.extend_from_slice(&buf[at..start]);
        let erase = ERASE.find(&buf[end..]).map_or(0, |m| m.end());
        at = end + erase;
    }
    out.extend_from_slice(&buf[at.min(buf.len())..]);
    out
}

/// Remove ANSI/VT100 escape sequences (CSI `ESC [ ... final`, OSC `ESC ] ... BEL|ST`, two-byte
/// `ESC x`), apply backspaces, and drop other C0 control characters except `\n` and `\t`.
pub fn strip_terminal(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    let mut chars = input.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.peek().copied() {
                Some('[') => {
                    chars.next();
                    // CSI: parameters/intermediates until a final byte in 0x40..=0x7e.
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    chars.next();
                    while let Some(c) = chars.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\x08' => {
                out.pop();
            }
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 || c == '\x7f' => {}
            c => out.push(c),
        }
    }
    out
}

/// Normalise line endings: `\r\n` and lone `\r` become `\n`... except that a lone `\r` in the middle of
/// a line (a pager overwriting `--More--`) means "start of line again", so the text before it on that
/// line is dropped, like a terminal would.
pub fn normalise_newlines(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    for (i, line) in input.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = line.trim_end_matches('\r');
        match line.rfind('\r') {
            Some(pos) => out.push_str(&line[pos + 1..]),
            None => out.push_str(line),
        }
    }
    out
}

/// Full clean-up of a shell transcript (pager prompts already removed by [`remove_pages`]):
/// newlines and terminal escapes. Content, including pager-like words in it, is kept.
pub fn clean_transcript(raw: &str) -> String {
    strip_terminal(&normalise_newlines(raw))
}

/// Given a cleaned transcript of one command (echo + output + prompt), return just the output:
/// drop everything up to and including the first line that contains the echoed command, and the
/// final line (the prompt).
pub fn output_between(transcript: &str, command: &str) -> String {
    let mut lines: Vec<&str> = transcript.split('\n').collect();
    // The last element is the prompt line (possibly empty when the prompt ended with a newline).
    lines.pop();
    let start = if command.is_empty() {
        0
    } else {
        lines.iter().position(|l| l.contains(command)).map(|i| i + 1).unwrap_or(0)
    };
    let mut out = lines[start.min(lines.len())..].join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strips_escapes_and_backspaces() {
        assert_eq!(strip_terminal("\x1b[1;32mleaf1#\x1b[0m "), "leaf1# ");
        assert_eq!(strip_terminal("ab\x08c"), "ac");
        assert_eq!(strip_terminal("\x1b]0;title\x07x"), "x");
        assert_eq!(strip_terminal("\x1b]0;title\x1b\\x"), "x");
        assert_eq!(strip_terminal("a\x1b"), "a");
    }

    #[test]
    fn pages_are_removed_only_where_the_pager_stopped() {
        // IOS style: CR, spaces, CR.
        let raw = b"line1\r\n --More-- \r         \r line2   \r\nleaf1#";
        let page = (7, 7 + " --More-- ".len());
        let text = String::from_utf8(remove_pages(raw, &[page])).unwrap();
        assert_eq!(clean_transcript(&text), "line1\n line2   \nleaf1#");
        // Backspace style with an escape-coloured prompt.
        let raw = b"a\n\x1b[7m--More--\x1b[m\x08\x08\x08\x08\x08\x08\x08\x08        \x08\x08\x08\x08\x08\x08\x08\x08 b\n";
        let text = String::from_utf8(remove_pages(raw, &[(2, 2 + 15)])).unwrap();
        assert_eq!(clean_transcript(&text), "a\n b\n");
        // Content that looks like a pager prompt, where the pager did not stop, is kept.
        let content = " description uplink -- More -- to spine1\n description --More--\n";
        assert_eq!(
            clean_transcript(&String::from_utf8(remove_pages(content.as_bytes(), &[])).unwrap()),
            content
        );
        // Out-of-range pages are ignored rather than panicking.
        assert_eq!(remove_pages(b"abc", &[(2, 9), (1, 0)]), b"abc");
    }

    #[test]
    fn output_between_drops_echo_and_prompt() {
        let t = "show run\nhostname x\nend\nleaf1#";
        assert_eq!(output_between(t, "show run"), "hostname x\nend\n");
        assert_eq!(output_between("leaf1#", "show run"), "");
    }

    proptest! {
        #[test]
        fn never_panics(s in any::<String>()) {
            let c = clean_transcript(&s);
            prop_assert!(!c.contains('\x1b'));
            prop_assert!(!c.contains('\r'));
            let _ = output_between(&c, "show");
        }

        #[test]
        fn plain_text_is_unchanged(s in "[a-zA-Z0-9 #!.:$/\n-]{0,200}") {
            prop_assert_eq!(clean_transcript(&s), s.clone());
            prop_assert_eq!(remove_pages(s.as_bytes(), &[]), s.as_bytes());
        }

        #[test]
        fn remove_pages_never_panics(b in prop::collection::vec(any::<u8>(), 0..200), p in prop::collection::vec((0usize..220, 0usize..220), 0..4)) {
            let _ = remove_pages(&b, &p);
        }
    }
}
