//! Community SONiC driver: config_db JSON from `show runningconfiguration all` (running) or
//! `/etc/sonic/config_db.json` (saved); restore with `config reload` of an uploaded file, then
//! `config save`.
//!
//! Why canonical JSON: SONiC prints tables in redis order, which changes between runs; re-serialising
//! with sorted keys makes "changed" mean changed, and a JSON parse is the completeness check (a
//! truncated transfer never parses).

use std::sync::LazyLock;

use lifeline_types::Platform;
use regex::Regex;
use serde_json::Value;

use super::{Driver, Incomplete, Step, cli_error};

static PROMPT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|\n)[\w.\-]+@[\w.\-]+:[^\n]{0,60}[$#] ?\z").expect("prompt"));

/// Which config a SONiC backup reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SonicSource {
    /// `show runningconfiguration all`: what the switch runs now.
    Running,
    /// `cat /etc/sonic/config_db.json`: what it boots with.
    Saved,
}

#[derive(Debug)]
pub struct Sonic {
    source: SonicSource,
}

impl Sonic {
    pub fn new(source: SonicSource) -> Self {
        Sonic { source }
    }
}

pub const RESTORE_FILE: &str = "/tmp/lifeline-restore.json";

/// Fields inside config_db that change by themselves.
const VOLATILE_JSON_KEYS: &[&str] = &["timestamp", "last_update", "uptime"];

/// Drop volatile fields and sort every object's keys (explicitly: serde_json keeps insertion order
/// when any crate in the build enables its `preserve_order` feature).
fn drop_volatile(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(m)
                .into_iter()
                .filter(|(k, _)| !VOLATILE_JSON_KEYS.contains(&k.as_str()))
                .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            for (k, mut val) in entries {
                drop_volatile(&mut val);
                m.insert(k, val);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(drop_volatile),
        _ => {}
    }
}

impl Driver for Sonic {
    fn platform(&self) -> Platform {
        Platform::Sonic
    }
    fn prompt(&self) -> &Regex {
        &PROMPT
    }
    fn fetch_command(&self) -> &str {
        match self.source {
            SonicSource::Running => "show runningconfiguration all",
            SonicSource::Saved => "cat /etc/sonic/config_db.json",
        }
    }
    fn canonical(&self, output: &str) -> String {
        // Some builds print a warning line before the JSON; start at the first `{`.
        let start = output.find('{').unwrap_or(0);
        match serde_json::from_str::<Value>(&output[start..]) {
            Ok(mut v) => {
                drop_volatile(&mut v);
                let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
                s.push('\n');
                s
            }
            Err(_) => output.to_owned(),
        }
    }
    fn restorable(&self, raw: &str) -> String {
        // The JSON, without any warning printed before it; canonical JSON is the same document.
        self.canonical(raw)
    }
    fn is_volatile(&self, _line: &str) -> bool {
        false
    }
    fn validate(&self, config: &str) -> Result<(), Incomplete> {
        if config.trim().is_empty() {
            return Err(Incomplete::Empty);
        }
        let start = config.find('{');
        let Some(start) = start else {
            return Err(match cli_error(config) {
                Some(text) => Incomplete::CliError { text },
                None => Incomplete::NotTables,
            });
        };
        match serde_json::from_str::<Value>(&config[start..]) {
            Ok(Value::Object(m)) if !m.is_empty() && m.values().all(Value::is_object) => Ok(()),
            Ok(_) => Err(Incomplete::NotTables),
            Err(e) => Err(Incomplete::BadJson { line: e.line(), column: e.column() }),
        }
    }
    fn restore_steps(&self, config: &str) -> Vec<Step> {
        vec![
            Step::Block {
                intro: format!("cat > {RESTORE_FILE} <<'LIFELINE_EOF'"),
                body: config.to_owned(),
                end: "LIFELINE_EOF".into(),
            },
            // `config reload FILE` replaces the running config with the file (`config load` would
            // merge, leaving tables the version does not have); `config save` makes it the boot config.
            Step::cmd(format!("sudo config reload -y {RESTORE_FILE}")),
            Step::cmd("sudo config save -y"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::normalise;
    use crate::scrub::TagKey;

    #[test]
    fn json_is_canonical_and_validated() {
        let d = Sonic::new(SonicSource::Running);
        let k = TagKey::random();
        let a = r#"{"PORT": {"Ethernet0": {"mtu": "9100", "admin_status": "up"}}, "DEVICE_METADATA": {"localhost": {"hostname": "leaf1"}}}"#;
        let b = r#"{"DEVICE_METADATA": {"localhost": {"hostname": "leaf1"}}, "PORT": {"Ethernet0": {"admin_status": "up", "mtu": "9100"}}}"#;
        assert_eq!(normalise(&d, a, &k), normalise(&d, b, &k));
        assert!(d.validate(a).is_ok());
        assert!(matches!(d.validate(&a[..40]), Err(Incomplete::BadJson { .. })));
        assert!(matches!(d.validate("{}"), Err(Incomplete::NotTables)));
        assert!(matches!(d.validate(""), Err(Incomplete::Empty)));
        assert!(d.prompt().is_match("admin@leaf2-sonic:~$ "));
    }
}
