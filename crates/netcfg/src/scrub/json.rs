//! SONiC config_db scrubbing: secrets are string fields of tables (and, for SNMP communities, row
//! keys), so the JSON is walked with its table names in hand rather than matched as text.
//!
//! Why table-aware: a field name such as `value` is a secret in `NTP_KEY` and nothing special
//! elsewhere; the table says which.

use serde_json::Value;

use super::MASK;
use super::rules::{SONIC_FIELDS, SONIC_SECRET_ROW_TABLES};

/// Whether `field` of a row in `table` is a secret.
fn is_secret_field(table: Option<&str>, field: &str) -> bool {
    SONIC_FIELDS.iter().any(|f| {
        f.field.eq_ignore_ascii_case(field)
            && f.table.is_none_or(|t| table.is_some_and(|x| x.eq_ignore_ascii_case(t)))
    })
}

/// A string that holds a PEM private key or certificate is masked whatever its field.
fn is_pem(s: &str) -> bool {
    s.contains("-----BEGIN ") && (s.contains("PRIVATE KEY") || s.contains("CERTIFICATE"))
}

/// Mask the secrets of a parsed config_db document in place.
pub fn scrub_value(v: &mut Value) {
    if let Value::Object(tables) = v {
        for (name, table) in tables.iter_mut() {
            walk(Some(name.as_str()), table);
        }
        for (_, name) in SONIC_SECRET_ROW_TABLES {
            if let Some(Value::Object(rows)) = tables.get_mut(*name) {
                let old = std::mem::take(rows);
                for (i, (key, row)) in old.into_iter().enumerate() {
                    // Already masked rows keep their name, so scrubbing is idempotent.
                    let key = if key.starts_with(MASK) { key } else { format!("{MASK}-{}", i + 1) };
                    rows.insert(key, row);
                }
            }
        }
    } else {
        walk(None, v);
    }
}

fn walk(table: Option<&str>, v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                match val {
                    Value::String(s) if is_secret_field(table, k) || is_pem(s) => *s = MASK.to_owned(),
                    _ => walk(table, val),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::String(s) if is_pem(s) => *s = MASK.to_owned(),
                    _ => walk(table, item),
                }
            }
        }
        _ => {}
    }
}
