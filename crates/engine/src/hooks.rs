//! Test-only injections (`test-hooks` feature), so end-to-end tests can make the store fail exactly where
//! a full disk would: after an action's BMC command was sent. A release build carries none of them.

/// While set (to anything but `0`), every write of an action's outcome (its audit outcome row, its request
/// row, the replay of kept outcomes and `/readyz`'s write probe) fails as a refusing store would.
pub const FAIL_RECORDING_ENV: &str = "LIFELINE_TEST_FAIL_RECORDING";

/// The injected refusal, when [`FAIL_RECORDING_ENV`] is set.
pub fn recording_refused() -> Option<String> {
    match std::env::var(FAIL_RECORDING_ENV) {
        Ok(v) if !v.is_empty() && v != "0" => {
            Some(format!("injected store failure ({FAIL_RECORDING_ENV}): database or disk is full"))
        }
        _ => None,
    }
}
