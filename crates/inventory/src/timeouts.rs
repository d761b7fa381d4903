//! SSH step timeouts of a switch's management session (`[device.management.timeouts]`, defaults in
//! `[defaults.management.timeouts]`), and the duration syntax they are written in.
//!
//! Why in the inventory: a switch behind a slow console server or a chassis whose `show
//! running-config` takes minutes needs longer limits than the rest, and the operator says so once,
//! next to its address, instead of on every command line. The backup driver maps these onto its own
//! defaults; `backup run --timeout` still wins for one run.

use std::time::Duration;

use serde::Serialize;
use toml::Spanned;

use crate::raw::{RawDuration, RawTimeouts};

/// Per-step limits; `None` keeps the backup driver's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct SshTimeouts {
    /// TCP connect and SSH handshake.
    #[serde(serialize_with = "opt_duration")]
    #[cfg_attr(feature = "schema", schema(value_type = Option<String>))]
    pub connect: Option<Duration>,
    #[serde(serialize_with = "opt_duration")]
    #[cfg_attr(feature = "schema", schema(value_type = Option<String>))]
    pub auth: Option<Duration>,
    /// Login to the first CLI prompt.
    #[serde(serialize_with = "opt_duration")]
    #[cfg_attr(feature = "schema", schema(value_type = Option<String>))]
    pub prompt: Option<Duration>,
    /// One command to its prompt.
    #[serde(serialize_with = "opt_duration")]
    #[cfg_attr(feature = "schema", schema(value_type = Option<String>))]
    pub command: Option<Duration>,
    /// The whole backup or restore of the device.
    #[serde(serialize_with = "opt_duration")]
    #[cfg_attr(feature = "schema", schema(value_type = Option<String>))]
    pub total: Option<Duration>,
}

fn opt_duration<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_str(&format_duration(*d)),
        None => s.serialize_none(),
    }
}

/// `90s` → `1m30s`, `500ms` → `500ms`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let (h, m, s) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60);
    let mut out = String::new();
    for (v, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if v > 0 {
            out.push_str(&format!("{v}{unit}"));
        }
    }
    if out.is_empty() { "0s".into() } else { out }
}

/// Why a duration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("`{text}` is not a duration (write e.g. `30s`, `2m`, `1m30s`, `500ms`, or a number of seconds)")]
    Syntax { text: String },
    #[error("a timeout of `{text}` is zero")]
    Zero { text: String },
    #[error("a timeout of `{text}` is longer than the 1h limit")]
    TooLong { text: String },
}

/// Parse `30s`, `2m`, `1h`, `1m30s`, `500ms`, or bare seconds (`45`), between 1 ms and 1 h. Also
/// what `backup run --timeout` takes.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let syntax = || DurationError::Syntax { text: text.to_owned() };
    let t = text.trim();
    if t.is_empty() {
        return Err(syntax());
    }
    let d = if t.bytes().all(|b| b.is_ascii_digit()) {
        Duration::from_secs(t.parse().map_err(|_| syntax())?)
    } else {
        let mut total = Duration::ZERO;
        let mut rest = t;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(syntax());
            }
            let n: u64 = rest[..digits].parse().map_err(|_| syntax())?;
            rest = &rest[digits..];
            let unit = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
            let one = match &rest[..unit] {
                "ms" => Duration::from_millis(n),
                "s" => Duration::from_secs(n),
                "m" => Duration::from_secs(n.saturating_mul(60)),
                "h" => Duration::from_secs(n.saturating_mul(3600)),
                _ => return Err(syntax()),
            };
            total = total.saturating_add(one);
            rest = &rest[unit..];
        }
        total
    };
    if d.is_zero() {
        return Err(DurationError::Zero { text: text.to_owned() });
    }
    if d > Duration::from_secs(3600) {
        return Err(DurationError::TooLong { text: text.to_owned() });
    }
    Ok(d)
}

/// One checked value, or the diagnostic to report at its span.
pub(crate) fn check_one(v: Option<&Spanned<RawDuration>>) -> Result<Option<Duration>, (usize, String)> {
    let Some(v) = v else { return Ok(None) };
    let at = v.span().start;
    let text = match v.get_ref() {
        RawDuration::Seconds(n) if *n < 0 => format!("{n}s"),
        RawDuration::Seconds(n) => n.to_string(),
        RawDuration::Text(t) => t.clone(),
    };
    parse_duration(&text).map(Some).map_err(|e| (at, e.to_string()))
}

/// Check a `timeouts` table over the defaults' one: every problem is reported, with its span.
pub(crate) fn check(
    device: Option<&RawTimeouts>,
    defaults: Option<&RawTimeouts>,
) -> (SshTimeouts, Vec<(usize, String)>) {
    let mut problems = Vec::new();
    let mut pick = |f: fn(&RawTimeouts) -> Option<&Spanned<RawDuration>>| {
        let v = device.and_then(f).or_else(|| defaults.and_then(f));
        check_one(v).unwrap_or_else(|p| {
            problems.push(p);
            None
        })
    };
    let t = SshTimeouts {
        connect: pick(|r| r.connect.as_ref()),
        auth: pick(|r| r.auth.as_ref()),
        prompt: pick(|r| r.prompt.as_ref()),
        command: pick(|r| r.command.as_ref()),
        total: pick(|r| r.total.as_ref()),
    };
    if let (Some(total), Some(command)) = (t.total, t.command)
        && total < command
    {
        let at = device.and_then(|r| r.total.as_ref()).or(defaults.and_then(|r| r.total.as_ref()));
        problems.push((
            at.map_or(0, |s| s.span().start),
            format!(
                "timeouts.total ({}) is shorter than timeouts.command ({}): the fetch could never finish",
                format_duration(total),
                format_duration(command)
            ),
        ));
    }
    (t, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn durations() {
        let s = Duration::from_secs;
        assert_eq!(parse_duration("30s").unwrap(), s(30));
        assert_eq!(parse_duration("45").unwrap(), s(45));
        assert_eq!(parse_duration("2m").unwrap(), s(120));
        assert_eq!(parse_duration("1m30s").unwrap(), s(90));
        assert_eq!(parse_duration("1h").unwrap(), s(3600));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        for bad in ["", "s", "10x", "1.5s", "-3s", "m5"] {
            assert!(matches!(parse_duration(bad), Err(DurationError::Syntax { .. })), "{bad}");
        }
        assert!(matches!(parse_duration("0s"), Err(DurationError::Zero { .. })));
        assert!(matches!(parse_duration("2h"), Err(DurationError::TooLong { .. })));
        assert_eq!(format_duration(s(90)), "1m30s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(ms in 1u64..3_600_000) {
            let d = Duration::from_millis(ms);
            prop_assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
        }

        #[test]
        fn never_panics(s in any::<String>()) {
            let _ = parse_duration(&s);
        }
    }
}
