//! `lifeline config check FILE`: every problem of a server configuration at once, as FILE:LINE:COL.
//!
//! Loading a configuration (`config::parse`) stops at the first problem, which is right for a server that
//! must not start half-configured, and wrong for an operator fixing a file: so the check reads the file
//! with the inventory's TOML checker (unknown keys with "did you mean", every type error) and then checks
//! the values the types leave as text — durations, cron expressions, listen addresses, the event mode —
//! with the same parsers the server uses.

use std::net::SocketAddr;
use std::path::Path;

use lifeline_inventory::tomlcheck::{self, Checked};
use lifeline_inventory::{Diagnostic, Severity, SourceMap};

use crate::config::ServerConfig;

/// The words `[server] events` takes (the server's event intake matches on these).
pub const EVENT_MODES: &[&str] = &["off", "sse", "push"];

/// Every problem of the configuration `text` read from `path`, sorted by position.
pub fn check(path: &Path, text: &str) -> Vec<Diagnostic> {
    let Checked { value, mut diagnostics, .. } = tomlcheck::check::<ServerConfig>(path, text);
    // The value as read after the key and type problems were set aside: its other problems are reported
    // in the same run.
    if let Some(cfg) = value {
        let map = SourceMap::new(path, text);
        let mut err = |key: &str, msg: String| {
            let at = tomlcheck::value_offset(text, key).unwrap_or(0);
            diagnostics.push(map.diag(at, Severity::Error, msg));
        };
        values(&cfg, &mut err);
        // The BIOS profiles as `bios diff` reads them: the files too, each entry's role once.
        if !cfg.bios_profile.is_empty() {
            let loaded = crate::config::LoadedConfig {
                path: Some(path.to_owned()),
                text: text.to_owned(),
                config: cfg,
            };
            if let Err(e) = crate::ops::bios::BiosProfile::from_config(&loaded) {
                err("bios-profile", e.to_string());
            }
        }
    }
    diagnostics.sort_by_key(|d| (d.line, d.col));
    diagnostics
}

fn duration(key: &str, text: &str, err: &mut impl FnMut(&str, String)) -> Option<std::time::Duration> {
    match humantime::parse_duration(text) {
        Ok(d) => Some(d),
        Err(e) => {
            err(key, format!("`{key}`: `{text}` is not a duration ({e}; e.g. `90s`, `15m`, `12h`)"));
            None
        }
    }
}

fn address(key: &str, text: &str, err: &mut impl FnMut(&str, String)) {
    if text.parse::<SocketAddr>().is_err() {
        err(key, format!("`{key}`: `{text}` is not ADDR:PORT (e.g. `127.0.0.1:7443`, `[::1]:7443`)"));
    }
}

fn values(cfg: &ServerConfig, err: &mut impl FnMut(&str, String)) {
    let s = &cfg.server;
    if let Some(v) = &s.listen {
        address("server.listen", v, err);
    }
    if let Some(v) = &s.event_listen {
        address("server.event-listen", v, err);
    }
    if let Some(v) = &s.sweep_interval {
        duration("server.sweep-interval", v, err);
    }
    if let Some(v) = &s.cabling_interval
        && duration("server.cabling-interval", v, err)
            .is_some_and(|d| !d.is_zero() && d < std::time::Duration::from_secs(1))
    {
        err("server.cabling-interval", "`server.cabling-interval` must be `0s` (off) or at least 1s".into());
    }
    if let Some(v) = &s.event_check_interval
        && duration("server.event-check-interval", v, err)
            .is_some_and(|d| d < std::time::Duration::from_secs(1))
    {
        err("server.event-check-interval", "`server.event-check-interval` must be at least 1s".into());
    }
    if let Some(v) = &s.session_ttl
        && duration("server.session-ttl", v, err).is_some_and(|d| d.is_zero())
    {
        err("server.session-ttl", "`server.session-ttl` must be longer than zero".into());
    }
    if let Some(v) = &s.switch_counters_interval {
        duration("server.switch-counters-interval", v, err);
    }
    if let Some(v) = &s.switch_counters_timeout
        && duration("server.switch-counters-timeout", v, err).is_some_and(|d| d.is_zero())
    {
        err(
            "server.switch-counters-timeout",
            "`server.switch-counters-timeout` must be longer than zero".into(),
        );
    }
    if let Some(v) = &s.bios_drift_interval {
        duration("server.bios-drift-interval", v, err);
    }
    if s.bios_drift_concurrency == Some(0) {
        err("server.bios-drift-concurrency", "`server.bios-drift-concurrency` must be at least 1".into());
    }
    if s.switch_counters_concurrency == Some(0) {
        err(
            "server.switch-counters-concurrency",
            "`server.switch-counters-concurrency` must be at least 1".into(),
        );
    }
    for (key, v) in crate::switch_evidence::counters::threshold_keys(s) {
        if v == Some(0) {
            err(&format!("server.{key}"), format!("`server.{key}` must be at least 1"));
        }
    }
    if s.backup_failures_fault == Some(0) {
        err("server.backup-failures-fault", "`server.backup-failures-fault` must be at least 1".into());
    }
    if let Some(e) = &s.events {
        if !EVENT_MODES.contains(&e.as_str()) {
            let hint = lifeline_inventory::suggest::nearest(e, EVENT_MODES.iter().copied())
                .map(|m| format!(" (did you mean `{m}`?)"))
                .unwrap_or_default();
            err(
                "server.events",
                format!("`server.events`: `{e}` is not one of {}{hint}", EVENT_MODES.join(", ")),
            );
        } else if e == "push" && s.event_listen.is_none() {
            err("server.events", "`events = \"push\"` needs `server.event-listen` (ADDR:PORT)".into());
        }
    }
    if s.event_tls_cert.is_some() != s.event_tls_key.is_some() {
        err(
            "server.event-tls-cert",
            "`server.event-tls-cert` and `server.event-tls-key`: give both, or neither".into(),
        );
    }
    if let Some(d) = &s.event_destination
        && !(d.starts_with("http://") || d.starts_with("https://"))
    {
        err("server.event-destination", format!("`server.event-destination`: `{d}` is not an http(s) URL"));
    }
    for (i, b) in cfg.backup_schedule.iter().enumerate() {
        let b = b.get_ref();
        let jitter = match &b.jitter {
            Some(j) => duration(&format!("backup-schedule[{i}].jitter"), j, err).unwrap_or_default(),
            None => Default::default(),
        };
        if let Err(e) = lifeline_netcfg::schedule::Schedule::parse(&b.cron, jitter) {
            err(&format!("backup-schedule[{i}].cron"), format!("`backup-schedule[{i}].cron`: {e}"));
        }
        if b.targets.is_empty() {
            err(&format!("backup-schedule[{i}].targets"), format!("`backup-schedule[{i}].targets` is empty"));
        }
    }
    for (i, w) in cfg.webhook.iter().enumerate() {
        if !(w.url.starts_with("http://") || w.url.starts_with("https://")) {
            err(
                &format!("webhook[{i}].url"),
                format!("`webhook[{i}].url`: `{}` is not an http(s) URL", w.url),
            );
        }
    }
    if let Err(e) = crate::correlate::Settings::from_config(&cfg.correlation) {
        err("correlation", e.to_string());
    }
    if let Err(e) = crate::probation::Settings::from_config(&cfg.probation) {
        err("probation", e.to_string());
    }
    // Only a section that is there is checked: without one, `--serve` says what to add.
    let i = &cfg.image_server;
    if (i.listen.is_some()
        || i.tls_cert.is_some()
        || i.tls_key.is_some()
        || i.token_ttl.is_some()
        || i.images.is_some())
        && let Err(e) = crate::image_serve::Settings::from_config(i)
    {
        err("image-server", e.to_string());
    }
    let g = &cfg.runbooks.guard;
    if g.max_in_recovery_percent > 100 {
        err(
            "runbooks.guard.max-in-recovery-percent",
            format!("`runbooks.guard.max-in-recovery-percent` is {}, above 100", g.max_in_recovery_percent),
        );
    }
    for (i, p) in cfg.fault_policy.iter().enumerate() {
        if p.runbook.is_some() && !p.ladder.is_empty() {
            err(
                &format!("fault-policy[{i}].ladder"),
                format!(
                    "`fault-policy[{i}]`: a `runbook` and a `ladder`: give one (the ladder's rungs name runbooks)"
                ),
            );
        }
        if let Err(e) = crate::budget::window(p) {
            err(&format!("fault-policy[{i}].attempt-window"), e.to_string());
        }
        if p.runbook.is_none() && p.ladder.is_empty() && p.mode != crate::config::PolicyMode::Notify {
            err(
                &format!("fault-policy[{i}].mode"),
                format!(
                    "`fault-policy[{i}]`: mode `{}` without a `runbook` has nothing to run",
                    p.mode.as_str()
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Vec<String> {
        check(Path::new("l.toml"), text).iter().map(|d| d.to_string()).collect()
    }

    #[test]
    fn the_shipped_example_is_clean() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/lifeline.toml");
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(run(&text), Vec::<String>::new());
    }

    #[test]
    fn bios_profiles_are_read_as_bios_diff_reads_them() {
        let d = run(
            "[[bios-profile]]\nrole = \"a\"\nattributes = { X = \"1\" }\n\n[[bios-profile]]\nrole = \"a\"\nfile = \"x\"\n",
        );
        assert_eq!(d.len(), 1, "{d:#?}");
        assert!(d[0].contains("bios-profile[1]: a second entry for role `a`"), "{d:#?}");
        assert_eq!(
            run("[[bios-profile]]\nattributes = { SriovGlobalEnable = \"Enabled\" }\n"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn keys_types_and_values_at_once() {
        let text = "inventroy = \"i.toml\"\n\n[server]\nlisten = \"localhost\"\nsweep-interval = \"1 fortnight\"\n\
                    events = \"ssse\"\nbackup-failures-fault = \"3\"\n\n[[backup-schedule]]\ntargets = [\"leaf\"]\n\
                    cron = \"0 25 * * *\"\n\n[[fault-policy]]\nkind = \"*\"\nmode = \"auto\"\n\n\
                    [runbooks.guard]\nmax-concurent = 3\n";
        let d = run(text);
        assert_eq!(d.len(), 8, "{d:#?}");
        assert_eq!(d[0], "l.toml:1:1: unknown key `inventroy` (did you mean `inventory`?)");
        assert!(d[1].starts_with("l.toml:4:10: `server.listen`: `localhost` is not ADDR:PORT"), "{d:#?}");
        assert!(
            d[2].starts_with("l.toml:5:18: `server.sweep-interval`: `1 fortnight` is not a duration"),
            "{d:#?}"
        );
        assert_eq!(
            d[3],
            "l.toml:6:10: `server.events`: `ssse` is not one of off, sse, push (did you mean `sse`?)"
        );
        assert_eq!(d[4], "l.toml:7:25: invalid type: string \"3\", expected u32");
        assert!(d[5].starts_with("l.toml:11:8: `backup-schedule[0].cron`:"), "{d:#?}");
        assert!(
            d[6].starts_with("l.toml:15:8: `fault-policy[0]`: mode `auto` without a `runbook`"),
            "{d:#?}"
        );
        assert_eq!(
            d[7],
            "l.toml:18:1: unknown key `runbooks.guard.max-concurent` (did you mean `max-concurrent`?)"
        );
    }

    #[test]
    fn the_cabling_interval_is_off_or_at_least_a_second() {
        let at = |v: &str| run(&format!("[server]\ncabling-interval = \"{v}\"\n"));
        assert_eq!(at("0s"), Vec::<String>::new());
        assert_eq!(at("15m"), Vec::<String>::new());
        let d = at("100ms");
        assert_eq!(d.len(), 1, "{d:#?}");
        assert!(d[0].starts_with("l.toml:2:20: `server.cabling-interval` must be"), "{d:#?}");
        assert!(at("often")[0].contains("is not a duration"), "{:#?}", at("often"));
    }

    #[test]
    fn the_switch_counter_thresholds_are_at_least_one() {
        let ok = "[server]\nswitch-flap-threshold = 3\nswitch-error-threshold = 10\nswitch-drop-threshold = 1\n\
                  switch-pause-threshold = 5000000\nswitch-watchdog-threshold = 2\n";
        assert_eq!(run(ok), Vec::<String>::new());
        let d = run("[server]\nswitch-flap-threshold = 0\nswitch-pause-threshold = 0\n");
        assert_eq!(
            d,
            [
                "l.toml:2:25: `server.switch-flap-threshold` must be at least 1",
                "l.toml:3:26: `server.switch-pause-threshold` must be at least 1"
            ],
            "{d:#?}"
        );
        let d = run("[server]\nswitch-error-threshold = -1\n");
        assert!(d.len() == 1 && d[0].starts_with("l.toml:2:"), "{d:#?}");
    }

    #[test]
    fn the_switch_counters_keys_are_checked() {
        let ok = "[server]\nswitch-counters-interval = \"60s\"\nswitch-counters-concurrency = 4\n\
                  switch-counters-timeout = \"20s\"\n";
        assert_eq!(run(ok), Vec::<String>::new());
        let d = run("[server]\nswitch-counters-interval = \"often\"\nswitch-counters-concurrency = 0\n\
                     switch-counters-timeout = \"0s\"\n");
        assert_eq!(d.len(), 3, "{d:#?}");
        assert!(
            d.iter().any(|x| x.contains("`server.switch-counters-interval`: `often` is not a duration")),
            "{d:#?}"
        );
        assert!(
            d.iter().any(|x| x.contains("`server.switch-counters-concurrency` must be at least 1")),
            "{d:#?}"
        );
        assert!(
            d.iter().any(|x| x.contains("`server.switch-counters-timeout` must be longer than zero")),
            "{d:#?}"
        );
    }

    #[test]
    fn the_bios_drift_keys_are_checked() {
        assert_eq!(
            run("[server]\nbios-drift-interval = \"1h\"\nbios-drift-concurrency = 4\n"),
            Vec::<String>::new()
        );
        let d = run("[server]\nbios-drift-interval = \"hourly\"\nbios-drift-concurrency = 0\n");
        assert_eq!(d.len(), 2, "{d:#?}");
        assert!(
            d.iter().any(|x| x.contains("`server.bios-drift-interval`: `hourly` is not a duration")),
            "{d:#?}"
        );
        assert!(d.iter().any(|x| x.contains("`server.bios-drift-concurrency` must be at least 1")), "{d:#?}");
    }
}
