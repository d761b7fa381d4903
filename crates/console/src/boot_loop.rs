//! Telling a POST or firmware loop from a slow boot: a host that resets before any bootloader shows prints
//! the same lines every cycle. When the console's output since the wait began contains a block of at least
//! [`MIN_BLOCK`] lines that repeats back to back, and no bootloader was seen, waiting longer (a rescue
//! profile's 300 s) cannot help: the profile fails early and says what it saw.
//!
//! Numbers are masked before comparing (timestamps, counters and memory sizes that tick between cycles
//! must not hide the repetition); blank lines are ignored.

/// A cycle shorter than this many lines is not called a loop (a repeated prompt is not a POST loop).
pub const MIN_BLOCK: usize = 3;

/// Lines looked at, newest last (POST output is short; this bounds the work per check).
const WINDOW: usize = 400;

fn normalise(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut last_digit = false;
    for c in line.trim().chars() {
        if c.is_ascii_digit() {
            if !last_digit {
                out.push('#');
            }
            last_digit = true;
        } else {
            out.push(c);
            last_digit = false;
        }
    }
    out
}

/// The repeating block (as first seen, up to 6 lines) when `text`'s complete lines contain a block of at
/// least [`MIN_BLOCK`] non-blank lines immediately followed by itself.
pub fn repeating_block(text: &str) -> Option<Vec<String>> {
    // Only complete lines: a half-received line must not break (or fake) a match.
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i],
        None => return None,
    };
    let raw: Vec<&str> =
        complete.split('\n').map(|l| l.trim_end_matches('\r')).filter(|l| !l.trim().is_empty()).collect();
    let start = raw.len().saturating_sub(WINDOW);
    let raw = &raw[start..];
    let lines: Vec<String> = raw.iter().map(|l| normalise(l)).collect();
    let n = lines.len();
    for len in MIN_BLOCK..=n / 2 {
        for k in 0..=(n - 2 * len) {
            if lines[k..k + len] == lines[k + len..k + 2 * len] {
                return Some(raw[k..k + len.min(6)].iter().map(|s| s.trim().to_owned()).collect());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const POST: &str = "BIOS Date: 01/02/26 Ver 2.1.4\r\nCPU: Xeon 8480+ @ 2.0GHz\r\nMemory Test: 2097152K OK\r\nPCIe training: slot 3 link failed\r\nSystem reset\r\n";

    #[test]
    fn two_post_cycles_are_a_loop_with_ticking_numbers_masked() {
        assert_eq!(repeating_block(POST), None);
        let second = POST.replace("2097152K", "2097153K");
        let text = format!("{POST}{second}");
        let block = repeating_block(&text).expect("loop");
        assert_eq!(block[0], "BIOS Date: 01/02/26 Ver 2.1.4");
    }

    #[test]
    fn a_normal_boot_is_not_a_loop() {
        let boot = "BIOS\r\nMemory OK\r\nBooting from disk\r\nGNU GRUB version 2.06\r\nLoading Linux\r\n[    0.000] Linux version 6.1\r\n[    0.001] Command line: ro\r\n[    0.002] x86/fpu: enabled\r\n";
        assert_eq!(repeating_block(boot), None);
    }

    #[test]
    fn a_partial_line_is_not_counted() {
        assert_eq!(repeating_block("a\nb\nc\na\nb\nc"), None);
        assert!(repeating_block("a\nb\nc\na\nb\nc\n").is_some());
    }

    proptest! {
        /// Any block of three or more distinct lines printed twice is found; printed once, it is not.
        #[test]
        fn repeated_blocks_are_found(lines in proptest::collection::vec("[a-z ]{1,20}x", 3..12)) {
            let mut distinct = lines.clone();
            distinct.sort();
            distinct.dedup();
            prop_assume!(distinct.len() == lines.len());
            let once: String = lines.iter().map(|l| format!("{l}\r\n")).collect();
            prop_assert!(repeating_block(&once).is_none());
            let twice = once.repeat(2);
            prop_assert!(repeating_block(&twice).is_some());
        }
    }
}
