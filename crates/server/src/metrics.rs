//! `/metrics` in the Prometheus text format. A handful of counters and gauges kept in atomics (no metrics
//! framework: the set is small and fixed, and every name starts with `lifeline_`). Names follow
//! Prometheus' conventions, checked by `promtool check metrics` in the tests: base units (`_seconds`),
//! `_total` on counters.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters by label set, e.g. power actions by `(action, result)`.
#[derive(Debug, Default)]
pub struct Labelled(Mutex<BTreeMap<Vec<(&'static str, String)>, u64>>);

impl Labelled {
    pub fn inc(&self, labels: &[(&'static str, &str)]) {
        let key = labels.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        *self.0.lock().unwrap_or_else(|p| p.into_inner()).entry(key).or_default() += 1;
    }

    pub fn set(&self, labels: &[(&'static str, &str)], v: u64) {
        let key = labels.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(key, v);
    }

    fn render(&self, out: &mut String, name: &str, help: &str, kind: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in self.0.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
            let _ = writeln!(out, "{name}{{{}}} {v}", l.join(","));
        }
    }
}

#[derive(Debug, Default)]
pub struct Metrics {
    pub http_requests: Labelled,
    pub power_actions: Labelled,
    pub backups: Labelled,
    pub logins: Labelled,
    pub bmc_reachable: Labelled,
    pub sweeps: AtomicU64,
    pub sweep_duration_ms: AtomicU64,
    pub sweep_devices: AtomicU64,
    pub sweep_failing: AtomicU64,
    pub console_sessions: AtomicU64,
    pub console_viewers: AtomicU64,
    pub open_faults: AtomicU64,
    pub webhook_failures: AtomicU64,
    /// Live replicas sharing the store, as seen at this replica's last heartbeat.
    pub replicas: AtomicU64,
    /// BMC events stored from streams and pushes, by source and severity.
    pub bmc_events: Labelled,
}

impl Metrics {
    pub fn render(&self) -> String {
        let mut o = String::new();
        self.http_requests.render(
            &mut o,
            "lifeline_http_requests_total",
            "API requests by route and status.",
            "counter",
        );
        self.power_actions.render(
            &mut o,
            "lifeline_power_actions_total",
            "Power actions by action and result.",
            "counter",
        );
        self.backups.render(
            &mut o,
            "lifeline_backups_total",
            "Switch backups by trigger and result.",
            "counter",
        );
        self.logins.render(&mut o, "lifeline_logins_total", "Login attempts by result.", "counter");
        self.bmc_events.render(
            &mut o,
            "lifeline_bmc_events_total",
            "BMC events received (Redfish SSE or EventService push) and stored, by source and severity.",
            "counter",
        );
        self.bmc_reachable.render(
            &mut o,
            "lifeline_bmc_reachable",
            "BMCs reachable in the last sweep, by protocol.",
            "gauge",
        );
        let g = |o: &mut String, name: &str, help: &str, kind: &str, v: &AtomicU64| {
            let _ = writeln!(
                o,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}",
                v.load(Ordering::Relaxed)
            );
        };
        g(&mut o, "lifeline_sweeps_total", "Fleet sweeps run by the scheduler.", "counter", &self.sweeps);
        let _ = writeln!(
            o,
            "# HELP lifeline_sweep_duration_seconds Duration of the last sweep.\n\
             # TYPE lifeline_sweep_duration_seconds gauge\nlifeline_sweep_duration_seconds {}",
            self.sweep_duration_ms.load(Ordering::Relaxed) as f64 / 1000.0
        );
        g(&mut o, "lifeline_sweep_devices", "BMCs in the last sweep.", "gauge", &self.sweep_devices);
        g(
            &mut o,
            "lifeline_sweep_failing",
            "BMCs unreachable or critical in the last sweep.",
            "gauge",
            &self.sweep_failing,
        );
        g(
            &mut o,
            "lifeline_console_sessions",
            "Consoles with an open session.",
            "gauge",
            &self.console_sessions,
        );
        g(
            &mut o,
            "lifeline_console_viewers",
            "WebSocket console viewers attached.",
            "gauge",
            &self.console_viewers,
        );
        g(&mut o, "lifeline_open_faults", "Fault records not resolved.", "gauge", &self.open_faults);
        g(
            &mut o,
            "lifeline_webhook_failures_total",
            "Webhook deliveries that failed every retry.",
            "counter",
            &self.webhook_failures,
        );
        g(
            &mut o,
            "lifeline_replicas",
            "Live replicas sharing the store (this one included).",
            "gauge",
            &self.replicas,
        );
        o
    }
}

/// Appends the fleet-wide gauges read from the store at scrape time (see
/// [`lifeline_engine::ops::gauges`]); `now_ms` ages the backups.
pub fn render_operator(o: &mut String, g: &lifeline_engine::ops::gauges::OperatorGauges, now_ms: i64) {
    let _ = writeln!(
        o,
        "# HELP lifeline_backup_age_seconds Age of each switch's newest stored configuration backup.\n\
         # TYPE lifeline_backup_age_seconds gauge"
    );
    for (device, newest) in &g.fleet.newest_backup_ms {
        let age = (now_ms - newest).max(0) as f64 / 1000.0;
        let _ = writeln!(o, "lifeline_backup_age_seconds{{device=\"{}\"}} {age}", escape(device));
    }
    let _ = writeln!(
        o,
        "# HELP lifeline_runbook_runs Runbook runs in the store, by state.\n# TYPE lifeline_runbook_runs gauge"
    );
    for (state, n) in &g.fleet.runs_by_state {
        let _ = writeln!(o, "lifeline_runbook_runs{{state=\"{}\"}} {n}", escape(state));
    }
    let _ = writeln!(
        o,
        "# HELP lifeline_console_log_bytes Bytes of console log files kept on disk.\n\
         # TYPE lifeline_console_log_bytes gauge\nlifeline_console_log_bytes {}",
        g.fleet.console_log_bytes
    );
    let _ = writeln!(
        o,
        "# HELP lifeline_sweep_coverage_ratio Share of the inventory's BMCs swept within three sweep intervals.\n\
         # TYPE lifeline_sweep_coverage_ratio gauge\nlifeline_sweep_coverage_ratio {}",
        g.coverage()
    );
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::process::{Command, Stdio};

    fn operator_sample() -> lifeline_engine::ops::gauges::OperatorGauges {
        lifeline_engine::ops::gauges::OperatorGauges {
            fleet: lifeline_engine::ops::gauges::FleetGauges {
                runs_by_state: vec![("escalated".into(), 1), ("running".into(), 2)],
                newest_backup_ms: vec![("leaf-01".into(), 1_000), ("spine\"x".into(), 9_500)],
                console_log_bytes: 4096,
            },
            bmcs: 4,
            swept: 3,
        }
    }

    fn exposition() -> String {
        let mut text = sample().render();
        render_operator(&mut text, &operator_sample(), 10_000);
        text
    }

    #[test]
    fn operator_gauges_are_rendered_with_ages_in_seconds() {
        let text = exposition();
        for line in [
            "lifeline_backup_age_seconds{device=\"leaf-01\"} 9\n",
            "lifeline_backup_age_seconds{device=\"spine\\\"x\"} 0.5\n",
            "lifeline_runbook_runs{state=\"escalated\"} 1\n",
            "lifeline_runbook_runs{state=\"running\"} 2\n",
            "lifeline_console_log_bytes 4096\n",
            "lifeline_sweep_coverage_ratio 0.75\n",
        ] {
            assert!(text.contains(line), "no `{}` in:\n{text}", line.trim());
        }
    }

    fn sample() -> Metrics {
        let m = Metrics::default();
        m.http_requests.inc(&[("route", "/api/v1/power/{target}"), ("status", "200")]);
        m.power_actions.inc(&[("action", "cycle"), ("result", "ok")]);
        m.backups.inc(&[("trigger", "schedule"), ("result", "failed")]);
        m.logins.inc(&[("result", "ok")]);
        m.bmc_events.inc(&[("source", "sse"), ("severity", "critical")]);
        m.bmc_reachable.set(&[("protocol", "redfish")], 7);
        m.sweep_duration_ms.store(1500, Ordering::Relaxed);
        m
    }

    #[test]
    fn durations_are_in_seconds() {
        let text = sample().render();
        assert!(text.contains("\nlifeline_sweep_duration_seconds 1.5\n"), "{text}");
        assert!(!text.contains("_ms"), "{text}");
    }

    /// Prometheus' own linter (`promtool`, Debian package `prometheus`; `.ci/run` installs it) accepts the
    /// exposition: names, units, types, help. Without it the test says SKIP, and fails in CI.
    #[test]
    fn exposition_passes_promtool() {
        let child = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && std::env::var_os("CI").is_none() => {
                eprintln!("SKIP: promtool not installed (apt install prometheus)");
                return;
            }
            Err(e) => panic!("promtool: {e}"),
        };
        child.stdin.take().expect("stdin").write_all(exposition().as_bytes()).expect("write");
        let out = child.wait_with_output().expect("promtool");
        assert!(
            out.status.success(),
            "promtool check metrics: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
