//! Writing results: every line goes through here, so a closed pipe (`| head -1`) ends the command quietly
//! with success instead of a panic, and JSON is printed one way.

use std::io::Write;

use crate::exit::Exit;

/// Writes one line to stdout.
pub fn line(s: impl std::fmt::Display) -> Result<(), Exit> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{s}").map_err(Exit::io)
}

/// Writes text as is.
pub fn text(s: &str) -> Result<(), Exit> {
    let mut out = std::io::stdout().lock();
    out.write_all(s.as_bytes()).and_then(|()| out.flush()).map_err(Exit::io)
}

/// Prints a serializable value as pretty JSON on stdout.
pub fn json(v: &impl serde::Serialize) -> Result<(), Exit> {
    let text = serde_json::to_string_pretty(v)?;
    line(text)
}

/// `println!` that returns an error instead of panicking on a closed pipe.
#[macro_export]
macro_rules! outln {
    () => { $crate::out::line("")? };
    ($($arg:tt)*) => { $crate::out::line(format_args!($($arg)*))? };
}

/// The warning line of an action whose outcome the store did not take yet ("done, recording delayed"), on
/// stderr so that `--json` output stays one document; the exit code stays the action's own.
pub fn acted_warnings<T>(rows: &[lifeline_engine::Row<lifeline_engine::Acted<T>>]) {
    for r in rows {
        if let Ok(a) = &r.result
            && let Some(w) = a.warning()
        {
            eprintln!("warning: {}: {w}", r.target);
        }
    }
}
