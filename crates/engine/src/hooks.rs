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

/// Where a process stops itself with SIGSTOP, as a paused replica would, so an end-to-end test can freeze
/// it at an exact point: `before-intent` (a fenced BMC command about to write the intent that authorizes
/// it) or `before-send` (that intent written and the outcome slot fsynced, before the last clock check and
/// the send).
pub const PARK_AT_ENV: &str = "LIFELINE_TEST_PARK_AT";

/// The marker file of [`PARK_AT_ENV`]: only the first process to create it (O_EXCL) parks, writing its pid
/// there first, so the replica that takes the work over runs through the same point.
pub const PARK_FILE_ENV: &str = "LIFELINE_TEST_PARK_FILE";

/// Parks this process (SIGSTOP to itself) at `point` when [`PARK_AT_ENV`] names it and this process is
/// the first to claim [`PARK_FILE_ENV`]; it runs on after a SIGCONT.
pub fn park(point: &str) {
    use std::io::Write;
    if std::env::var(PARK_AT_ENV).ok().as_deref() != Some(point) {
        return;
    }
    let Ok(path) = std::env::var(PARK_FILE_ENV) else { return };
    let Ok(mut f) = std::fs::OpenOptions::new().write(true).create_new(true).open(&path) else { return };
    if write!(f, "{}", std::process::id()).and_then(|()| f.sync_all()).is_err() {
        return;
    }
    tracing::warn!(point, "test hook: parking this process (SIGSTOP) until SIGCONT");
    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSTOP);
}

/// Milliseconds a console wait stalls before it attaches, as a busy BMC activating SOL would: a boot
/// prompt printed in that time must still be seen (the run kept the console open from its start).
pub const CONSOLE_ATTACH_DELAY_ENV: &str = "LIFELINE_TEST_CONSOLE_ATTACH_DELAY_MS";

/// Stalls per [`CONSOLE_ATTACH_DELAY_ENV`].
pub async fn console_attach_delay() {
    if let Some(ms) = std::env::var(CONSOLE_ATTACH_DELAY_ENV).ok().and_then(|v| v.parse::<u64>().ok()) {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}

/// While set (to anything but `0`), a BMC command's intent is written without its fence and the clock check
/// before the send is skipped: the end-to-end fencing tests run with it to show that they fail without
/// fencing (a paused replica then acts twice).
pub const UNFENCED_ENV: &str = "LIFELINE_TEST_UNFENCED";

/// Whether [`UNFENCED_ENV`] is set.
pub fn unfenced() -> bool {
    std::env::var(UNFENCED_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}
