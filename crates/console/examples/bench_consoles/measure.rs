//! How the console bench measures a process, the same way for ours and the peer: CPU and memory read
//! from `/proc/<pid>` (whole process, every thread), latencies as sorted samples, logs as bytes and lines
//! on disk. Reading `/proc` for both sides means neither gets a finer or coarser clock than the other.

use std::path::Path;
use std::time::Duration;

/// Linux reports `/proc/<pid>/stat` times in USER_HZ, which is 100 on every Linux ABI.
const TICKS_PER_SEC: f64 = 100.0;

/// User + system CPU seconds of a whole process (all threads) so far.
pub fn cpu_seconds(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces), from field 3 on: utime is 14, stime 15.
    let after = s.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / TICKS_PER_SEC
}

/// A `/proc/<pid>/status` field in KiB (`VmRSS:`, `VmHWM:`), or a count (`Threads:`).
pub fn status_field(pid: u32, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Open descriptors of a process.
pub fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// RLIMIT_NOFILE before and after raising the soft limit to the hard one: (soft before, hard, soft now).
/// A thousand consoles are a thousand sockets plus log files; the hard limit is what the admin allows.
pub fn raise_nofile() -> (u64, u64, u64) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else { return (0, 0, 0) };
    if soft < hard {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
    let now = getrlimit(Resource::RLIMIT_NOFILE).map(|(s, _)| s).unwrap_or(soft);
    (soft, hard, now)
}

/// The p-quantile of sorted samples.
pub fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// "p50 / p99 / max (n)" of latency samples, in ms.
pub fn latency_summary(mut v: Vec<Duration>) -> String {
    if v.is_empty() {
        return "no samples".into();
    }
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!(
        "{:.2} / {:.2} / {:.2} ms ({} echoes)",
        ms(pct(&v, 0.5)),
        ms(pct(&v, 0.99)),
        ms(*v.last().unwrap_or(&Duration::ZERO)),
        v.len()
    )
}

/// Bytes of every file under `dir`, and how many times `needle` occurs in them (one per logged host line).
pub fn text_logs(dir: &Path, needle: &[u8]) -> (u64, u64) {
    let Ok(rd) = std::fs::read_dir(dir) else { return (0, 0) };
    let (mut bytes, mut lines) = (0, 0);
    for e in rd.filter_map(Result::ok) {
        let path = e.path();
        if path.is_dir() {
            let (b, l) = text_logs(&path, needle);
            bytes += b;
            lines += l;
        } else if let Ok(data) = std::fs::read(&path) {
            bytes += data.len() as u64;
            lines += occurrences(&data, needle);
        }
    }
    (bytes, lines)
}

/// The system load (`/proc/loadavg`), printed beside every figure: the machine is shared.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Occurrences of `needle` in `hay` (the bench's needle cannot overlap itself).
pub fn occurrences(hay: &[u8], needle: &[u8]) -> u64 {
    if needle.is_empty() {
        return 0;
    }
    hay.windows(needle.len()).filter(|w| *w == needle).count() as u64
}
