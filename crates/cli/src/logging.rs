//! `tracing` setup: human output on stderr by default, JSON lines with `--log-format json`; `-v`/`-q` move
//! the level, `RUST_LOG` overrides everything.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::args::{Global, LogFormat};

pub fn init(g: &Global) {
    let level = match (g.verbose as i8) - (g.quiet as i8) {
        i8::MIN..=-2 => "off",
        -1 => "error",
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        // Our crates one step chattier than dependencies, which are noisy at info (sqlx, russh, hyper).
        let ours = match level {
            "warn" => "info",
            l => l,
        };
        let ours = if g.verbose == 0 && g.quiet == 0 { "warn" } else { ours };
        // sqlx logs every failed pool attempt as an ERROR; the store reports the cause once, in words.
        let sqlx = if g.verbose >= 2 { level } else { "off" };
        EnvFilter::new(format!("{level},lifeline={ours},lifeline_cli={ours},sqlx={sqlx}"))
    });
    let ansi = std::io::stderr().is_terminal() && g.log_format == LogFormat::Human;
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    match g.log_format {
        LogFormat::Json => builder.json().with_current_span(false).init(),
        LogFormat::Human => builder.with_target(false).compact().init(),
    }
}
