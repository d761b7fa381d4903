//! ssh-style escape sequences for an attached terminal: `~.` leaves, `~B` sends a break, `~W` takes
//! over writing, `~?` shows help, `~~` sends one `~`. Like ssh, `~` is only special right after a
//! newline (or at the very start), so a `~` inside a command line or a path goes through untouched.
//!
//! Pure and byte-at-a-time, so it is property-tested independently of any terminal.

/// What a keystroke sequence asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EscapeAction {
    /// Bytes for the console.
    Send(Vec<u8>),
    Leave,
    Break,
    TakeWrite,
    Help,
}

/// The help text `~?` shows.
pub const ESCAPE_HELP: &str = "\r\nSupported escape sequences (after a newline):\r\n\
 ~.  - leave the console\r\n ~B  - send a serial break\r\n ~W  - take over writing\r\n\
 ~?  - this message\r\n ~~  - send the escape character by typing it twice\r\n";

#[derive(Debug, Clone)]
pub struct EscapeParser {
    at_line_start: bool,
    saw_tilde: bool,
}

impl Default for EscapeParser {
    fn default() -> Self {
        EscapeParser { at_line_start: true, saw_tilde: false }
    }
}

impl EscapeParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed typed bytes; adjacent plain bytes are merged into one `Send`.
    pub fn feed(&mut self, input: &[u8]) -> Vec<EscapeAction> {
        let mut out: Vec<EscapeAction> = Vec::new();
        let send = |out: &mut Vec<EscapeAction>, bytes: &[u8]| {
            if let Some(EscapeAction::Send(v)) = out.last_mut() {
                v.extend_from_slice(bytes);
            } else {
                out.push(EscapeAction::Send(bytes.to_vec()));
            }
        };
        for &b in input {
            if self.saw_tilde {
                self.saw_tilde = false;
                match b {
                    b'.' => {
                        out.push(EscapeAction::Leave);
                        continue;
                    }
                    b'B' => out.push(EscapeAction::Break),
                    b'W' => out.push(EscapeAction::TakeWrite),
                    b'?' => out.push(EscapeAction::Help),
                    b'~' => send(&mut out, b"~"),
                    other => send(&mut out, &[b'~', other]),
                }
                // After a recognised escape ssh stays "at line start" so `~.` can follow `~B`.
                self.at_line_start = matches!(b, b'B' | b'W' | b'?' | b'\r' | b'\n');
                continue;
            }
            if self.at_line_start && b == b'~' {
                self.saw_tilde = true;
                continue;
            }
            send(&mut out, &[b]);
            self.at_line_start = matches!(b, b'\r' | b'\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sent(actions: &[EscapeAction]) -> Vec<u8> {
        actions
            .iter()
            .flat_map(|a| match a {
                EscapeAction::Send(v) => v.clone(),
                _ => vec![],
            })
            .collect()
    }

    #[test]
    fn escapes_only_after_a_newline() {
        let mut p = EscapeParser::new();
        assert_eq!(p.feed(b"~."), vec![EscapeAction::Leave]);
        let mut p = EscapeParser::new();
        assert_eq!(p.feed(b"ls ~/x~."), vec![EscapeAction::Send(b"ls ~/x~.".to_vec())]);
        assert_eq!(p.feed(b"\r~B"), vec![EscapeAction::Send(b"\r".to_vec()), EscapeAction::Break]);
        assert_eq!(p.feed(b"~."), vec![EscapeAction::Leave], "~. right after ~B still leaves");
        let mut p = EscapeParser::new();
        assert_eq!(p.feed(b"\n~~x"), vec![EscapeAction::Send(b"\n~x".to_vec())]);
        let mut p = EscapeParser::new();
        assert_eq!(p.feed(b"~?"), vec![EscapeAction::Help]);
        // Split across reads.
        let mut p = EscapeParser::new();
        assert_eq!(p.feed(b"abc\r~"), vec![EscapeAction::Send(b"abc\r".to_vec())]);
        assert_eq!(p.feed(b"W"), vec![EscapeAction::TakeWrite]);
        let mut p = EscapeParser::new();
        assert_eq!(p.feed(b"~x"), vec![EscapeAction::Send(b"~x".to_vec())]);
    }

    proptest! {
        /// Without a `~` nothing is ever held back or changed.
        #[test]
        fn plain_input_passes_through(input in prop::collection::vec(any::<u8>().prop_filter("no tilde", |b| *b != b'~'), 0..200)) {
            let mut p = EscapeParser::new();
            prop_assert_eq!(sent(&p.feed(&input)), input);
        }

        /// Chunking never changes the outcome.
        #[test]
        fn split_anywhere_same_actions(input in prop::collection::vec(prop::sample::select(b"~.B?W\rab".to_vec()), 0..60), cut in 0usize..60) {
            let cut = cut.min(input.len());
            let mut a = EscapeParser::new();
            let whole = a.feed(&input);
            let mut b = EscapeParser::new();
            let mut parts = b.feed(&input[..cut]);
            parts.extend(b.feed(&input[cut..]));
            let norm = |v: Vec<EscapeAction>| -> (Vec<u8>, Vec<EscapeAction>) {
                (sent(&v), v.into_iter().filter(|a| !matches!(a, EscapeAction::Send(_))).collect())
            };
            prop_assert_eq!(norm(whole), norm(parts));
        }
    }
}
