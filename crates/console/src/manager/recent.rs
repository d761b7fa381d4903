//! The last output a console printed, kept in memory with when it arrived. Why: a runbook that power
//! cycles a node and then waits for its login prompt must not miss a prompt printed while its viewer was
//! still attaching (a busy BMC takes seconds to activate SOL; a kexec or a switch boots in seconds), so a
//! wait may start from output that arrived before it attached, back to a moment it names.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;

/// How much recent output a console keeps (a boot's worth of serial text).
pub(crate) const RECENT_BYTES: usize = 256 * 1024;

#[derive(Debug, Default)]
pub(crate) struct Recent {
    chunks: VecDeque<(Instant, Bytes)>,
    bytes: usize,
}

impl Recent {
    pub(crate) fn push(&mut self, at: Instant, b: Bytes) {
        self.bytes += b.len();
        self.chunks.push_back((at, b));
        while self.bytes > RECENT_BYTES
            && let Some((_, old)) = self.chunks.pop_front()
        {
            self.bytes -= old.len();
        }
    }

    /// Output that arrived at or after `since`, oldest first.
    pub(crate) fn since(&self, since: Instant) -> Vec<u8> {
        let mut out = Vec::new();
        for (at, b) in &self.chunks {
            if *at >= since {
                out.extend_from_slice(b);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn keeps_what_arrived_since_and_forgets_the_oldest_past_the_bound() {
        let t0 = Instant::now();
        let mut r = Recent::default();
        r.push(t0, Bytes::from_static(b"old "));
        r.push(t0 + Duration::from_millis(10), Bytes::from_static(b"login: "));
        assert_eq!(r.since(t0 + Duration::from_millis(5)), b"login: ");
        assert_eq!(r.since(t0), b"old login: ");
        r.push(t0 + Duration::from_millis(20), Bytes::from(vec![b'x'; RECENT_BYTES]));
        assert_eq!(r.since(t0).len(), RECENT_BYTES, "the two oldest chunks are dropped");
    }
}
