//! Terminal text clean-up for interactive shells.
//!
//! Why: a PTY shell gives back what a human would see — echoed commands, `\r\n`, ANSI colour and
//! cursor escapes, backspaces, `--More--` pager residue and the trailing prompt. Drivers want only the
//! command's output, so these pure functions turn one into the other. They must never panic on
//! arbitrary bytes (property-tested) because switch firmware sends odd things.

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

/// Full clean-up of a shell transcript: newlines, escapes, pager residue.
pub fn clean_transcript(raw: &str) -> String {
    let text = normalise_newlines(raw);
    let text = strip_terminal(&text);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let stripped = strip_pager_marker(line);
        out.push_str(&stripped);
    }
    out
}

/// A pager marker left in a line (`--More--`, ` --More-- `, `-- More --`) is removed; what follows
/// it on the same line is the real content.
fn strip_pager_marker(line: &str) -> String {
    for marker in [" --More-- ", "--More--", "-- More --", "<--- More --->"] {
        if let Some(pos) = line.find(marker) {
            let rest = &line[pos + marker.len()..];
            let before = &line[..pos];
            return format!("{before}{}", rest.trim_start_matches(' '));
        }
    }
    line.to_owned()
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
    fn pager_residue_is_removed() {
        let raw = "line1\r\n --More-- \r         \rline2\r\nleaf1#";
        assert_eq!(clean_transcript(raw), "line1\nline2\nleaf1#");
        assert_eq!(clean_transcript("a\n --More-- b\n"), "a\nb\n");
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
        fn plain_text_is_unchanged(s in "[a-zA-Z0-9 #!.:$/\n]{0,200}") {
            prop_assert_eq!(clean_transcript(&s), s);
        }
    }
}
