//! In-band verification of a GPU node: RDMA rails, GPUs and host settings, each check with its evidence.
//!
//! After an out-of-band recovery a node must PROVE it is healthy before it rejoins a synchronous training
//! job. This crate runs the checks (on a live node, or on recorded trees from the simulator and fixtures)
//! and produces a versioned, digest-sealed [`Report`]. It has no server dependencies and builds on machines
//! without RDMA or NVIDIA software; it is synchronous on purpose (local file reads and NVML's blocking C
//! API): async callers run [`run`] inside `spawn_blocking`.
//!
//! Order of work, chosen so a full check stays well under 10 s: static reads, first counter sample, GPU
//! collection (its XID event window overlaps the counter interval), second counter sample.

pub mod gpu;
pub mod host;
#[cfg(feature = "inventory")]
pub mod inventory;
pub mod levels;
pub mod policy;
pub mod rails;
pub mod report;
pub mod roots;
#[cfg(feature = "verbs")]
pub mod verbs;

use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use policy::{GpuPolicy, HostPolicy, LinkLayer, Policy, PolicyError, RailPolicy, SamplingPolicy};
pub use report::{Check, Evidence, Report, ReportError, SCHEMA, Status, Verdict};
pub use roots::Roots;

use report::Sources;

/// Where GPU facts come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSource {
    /// NVML on this node, plus the kernel log (normally `/dev/kmsg`) for XIDs since boot.
    Nvml { kmsg: PathBuf },
    /// A recorded `gpus.json`.
    Snapshot(PathBuf),
}

impl Default for GpuSource {
    fn default() -> Self {
        GpuSource::Nvml { kmsg: PathBuf::from("/dev/kmsg") }
    }
}

/// How to run the checks.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub roots: Roots,
    pub gpu: GpuSource,
    /// Overrides the policy's sampling interval (tests, quick runs).
    pub interval: Option<Duration>,
    /// Node name when the policy names none (the agent passes the host name).
    pub node: Option<String>,
    /// Run the ibverbs checks (only with the `verbs` feature, and only against the live `/sys`).
    pub verbs: bool,
}

/// Runs `f` and stamps its duration on the check.
pub(crate) fn timed(f: impl FnOnce() -> Check) -> Check {
    let t = Instant::now();
    let mut c = f();
    c.duration_us = t.elapsed().as_micros() as u64;
    c
}

/// Runs every check the policy asks for.
pub fn run(policy: &Policy, opts: &Options) -> Report {
    run_with_hook(policy, opts, || {})
}

/// Like [`run`], with `between_samples` called after the first read of the rising-counter checks and before
/// the second. Fixture tests use it to make a counter rise the way the kernel would during the interval.
pub fn run_with_hook(policy: &Policy, opts: &Options, between_samples: impl FnOnce()) -> Report {
    let started = Instant::now();
    let started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let roots = &opts.roots;
    let interval = opts.interval.unwrap_or(Duration::from_millis(policy.sampling.interval_ms));

    let mut rail_checks: Vec<Vec<Check>> =
        policy.rails.iter().map(|r| rails::static_checks(roots, r)).collect();
    let mut host_checks = vec![timed(|| host::default_route(roots, &policy.host))];
    for r in &policy.rails {
        host_checks.push(timed(|| host::rp_filter(roots, &policy.host, r)));
    }

    let names = &policy.sampling.error_counters;
    let first_counters: Vec<_> =
        policy.rails.iter().map(|r| rails::sample_counters(roots, r, names)).collect();
    let pfc_wanted = policy.host.pfc_max_pause_per_sec.is_some();
    let first_pause: Vec<_> = policy
        .rails
        .iter()
        .map(|r| if pfc_wanted { host::sample_pause(roots, r) } else { Err(String::new()) })
        .collect();
    let sample_start = Instant::now();

    let gpu_checks = match &policy.gpus {
        None => vec![Check::new("gpu.expected", "gpus", Status::Skip, "policy expects no GPUs")],
        Some(gp) => {
            let t = Instant::now();
            let collected = match &opts.gpu {
                GpuSource::Nvml { kmsg } => gpu::nvml::collect(Duration::from_millis(gp.xid_window_ms), kmsg),
                GpuSource::Snapshot(p) => gpu::GpuSnapshot::load(p),
            };
            match collected {
                Ok(c) => {
                    let mut checks = gpu::checks(gp, &c);
                    let each = (t.elapsed().as_micros() as u64) / checks.len().max(1) as u64;
                    for ch in &mut checks {
                        ch.duration_us = each;
                    }
                    checks
                }
                Err(e) => {
                    let mut c = Check::new(
                        "gpu.source",
                        "gpus",
                        Status::Error,
                        format!("{} (node expects {} GPUs)", error_chain(&e), gp.count),
                    );
                    c.duration_us = t.elapsed().as_micros() as u64;
                    vec![c]
                }
            }
        }
    };

    between_samples();
    if let Some(left) = interval.checked_sub(sample_start.elapsed()) {
        std::thread::sleep(left);
    }
    let measured = sample_start.elapsed();
    for (i, r) in policy.rails.iter().enumerate() {
        let second = rails::sample_counters(roots, r, names);
        rail_checks[i]
            .push(timed(|| rails::counters_check(r, first_counters[i].as_ref(), second.as_ref(), interval)));
        let second_pause = if pfc_wanted { host::sample_pause(roots, r) } else { Err(String::new()) };
        host_checks
            .push(timed(|| host::pfc_check(&policy.host, r, &first_pause[i], &second_pause, measured)));
    }

    #[cfg(feature = "verbs")]
    for (i, r) in policy.rails.iter().enumerate() {
        rail_checks[i].extend(verbs::checks(roots, r, opts.verbs));
    }

    let mut checks: Vec<Check> = rail_checks.into_iter().flatten().collect();
    checks.extend(host_checks);
    checks.extend(gpu_checks);

    let node = policy.node.clone().or_else(|| opts.node.clone()).unwrap_or_else(hostname);
    let sources = Sources {
        sysfs_root: roots.sysfs.display().to_string(),
        proc_root: roots.proc.display().to_string(),
        gpu: match (&policy.gpus, &opts.gpu) {
            (None, _) => "none".into(),
            (Some(_), GpuSource::Nvml { .. }) => "nvml".into(),
            (Some(_), GpuSource::Snapshot(p)) => format!("snapshot:{}", p.display()),
        },
    };
    Report::new(node, started_at, sources, checks, started.elapsed().as_micros() as u64)
}

/// An error and its causes on one line (the report has no room for a backtrace, but needs the why): the
/// workspace's one definition.
pub use lifeline_types::error_chain;

/// This machine's host name (`/proc/sys/kernel/hostname`), or `unknown`.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}
