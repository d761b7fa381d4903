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

/// Milliseconds to stall between a BMC command's fenced intent (and its outcome slot) and the command, as a
/// paused process would.
pub const STALL_BEFORE_SEND_ENV: &str = "LIFELINE_TEST_STALL_BEFORE_SEND_MS";

/// The same stall set from a unit test (milliseconds; 0: none).
pub static STALL_BEFORE_SEND_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Stalls per [`STALL_BEFORE_SEND_MS`] or [`STALL_BEFORE_SEND_ENV`].
pub async fn stall_before_send() {
    let set = STALL_BEFORE_SEND_MS.load(std::sync::atomic::Ordering::Relaxed);
    let ms = match set {
        0 => std::env::var(STALL_BEFORE_SEND_ENV).ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0),
        n => n,
    };
    if ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}
