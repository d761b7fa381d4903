//! Sizing the fan-out to the fleet within the process's file-descriptor budget.
//!
//! Why: a fixed fan-out (256) makes a 1,000-BMC sweep at 200 ms BMC latency run in four waves of ~7 round
//! trips each; visiting every BMC at once is one wave. What bounds it is the open-file limit: every BMC
//! in flight holds an IPMI socket or a few TLS connections. The soft limit is raised to the hard one first
//! (what the operator already allows), then a reserve is kept for the store, logs and the rest.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Descriptors one BMC in flight may hold: Redfish connections (a few per BMC) or an IPMI socket.
pub const FDS_PER_BMC: usize = 4;
/// Descriptors kept for everything else (store, logs, listeners, the runtime).
pub const FD_RESERVE: usize = 256;
/// Never more than this at once, whatever the limit (memory and the jump host's CPU).
pub const MAX_FANOUT: usize = 4096;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit and returns the soft limit now in force (`None` when
/// it cannot be read).
pub fn raise_nofile_limit() -> Option<u64> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return Some(hard);
    }
    Some(soft)
}

/// BMCs to visit at once for a fleet of `bmcs`: all of them when the descriptor budget allows, else as many
/// as it allows (at least 16, at most [`MAX_FANOUT`]). Raises the soft open-file limit as a side effect.
pub fn fanout_for_fleet(bmcs: usize) -> usize {
    let limit = raise_nofile_limit().unwrap_or(1024);
    fanout_within(bmcs, limit)
}

/// [`fanout_for_fleet`] for a given open-file limit (pure, for tests).
pub fn fanout_within(bmcs: usize, nofile: u64) -> usize {
    let nofile = usize::try_from(nofile).unwrap_or(usize::MAX);
    let budget = nofile.saturating_sub(FD_RESERVE) / FDS_PER_BMC;
    bmcs.min(budget).clamp(16, MAX_FANOUT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fanout_covers_the_fleet_within_the_descriptor_budget() {
        assert_eq!(fanout_within(1000, 20_000), 1000);
        assert_eq!(fanout_within(10_000, 20_000), MAX_FANOUT);
        assert_eq!(fanout_within(10_000, 8_000), (8_000 - FD_RESERVE) / FDS_PER_BMC);
        assert_eq!(fanout_within(10_000, 1024), 192);
        assert_eq!(fanout_within(3, 1024), 16);
        assert_eq!(fanout_within(100_000, 1 << 20), MAX_FANOUT);
        assert_eq!(fanout_within(100, u64::MAX), 100);
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let raised = raise_nofile_limit().unwrap();
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        assert_eq!((raised, soft), (hard, hard));
    }
}
