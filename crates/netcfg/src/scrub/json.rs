//! SONiC config_db scrubbing: secrets are string fields of tables (and, for SNMP communities, row
//! keys), so the JSON is walked with its table names in hand rather than matched as text. After the
//! listed fields, the fallback masks any other field whose name is secret-like (`*_password`,
//! `*_key`, `*secret*`) and any string that looks like a secret by itself.
//!
//! Why table-aware: a field name such as `value` is a secret in `NTP_KEY` and nothing special
//! elsewhere; the table says which. Empty strings stay empty: a user without a password must not
//! look like a user with one.
//!
//! Tables are found at any depth: a multi-ASIC switch prints one config_db per namespace
//! (`{"localhost": {…}, "asic0": {…}}`), and a community hidden one level down is still a secret;
//! a Redis dump (`sonic-db-dump`, sonic-utilities' mock tables) names each row `TABLE|row`, and
//! `SNMP_COMMUNITY|public` holds its community in the key.

use serde_json::Value;

use super::fallback::{Reason, is_secret_keyword, secret_like_value};
use super::rules::{SONIC_FIELDS, SONIC_SAFE_FIELDS, SONIC_SECRET_ROW_TABLES};
use super::tag::{TagKey, is_mask};
use super::{Kind, Masked, MaskedBy, Place};

/// Whether `field` of a row in `table` is a listed secret, and its kind.
fn secret_field(table: Option<&str>, field: &str) -> Option<Kind> {
    SONIC_FIELDS
        .iter()
        .find(|f| {
            f.field.eq_ignore_ascii_case(field)
                && f.table.is_none_or(|t| table.is_some_and(|x| x.eq_ignore_ascii_case(t)))
        })
        .map(|f| f.kind)
}

fn is_pem(s: &str) -> bool {
    s.contains("-----BEGIN ") && (s.contains("PRIVATE KEY") || s.contains("CERTIFICATE"))
}

struct Walk<'a> {
    key: &'a TagKey,
    report: &'a mut Vec<Masked>,
    path: Vec<String>,
}

impl Walk<'_> {
    fn mask(&mut self, s: &mut String, by: MaskedBy) {
        if s.is_empty() || is_mask(s) {
            return;
        }
        *s = self.key.mask(s);
        self.report.push(Masked { at: Place::Json(format!("/{}", self.path.join("/"))), by, tag: s.clone() });
    }

    fn walk(&mut self, table: Option<&str>, v: &mut Value) {
        match v {
            Value::Object(map) => {
                let mut flat_rows = Vec::new();
                for (k, val) in map.iter_mut() {
                    self.path.push(k.clone());
                    match val {
                        Value::String(s) => {
                            let by = if let Some(kind) = secret_field(table, k) {
                                Some(MaskedBy::Rule(kind))
                            } else if is_pem(s) {
                                Some(MaskedBy::Rule(Kind::PrivateKey))
                            } else if SONIC_SAFE_FIELDS.iter().any(|f| f.eq_ignore_ascii_case(k)) {
                                None
                            } else if is_secret_keyword(k) {
                                Some(MaskedBy::Fallback(Reason::Keyword(k.to_ascii_lowercase())))
                            } else {
                                secret_like_value(s).map(|w| MaskedBy::Fallback(Reason::Value(w)))
                            };
                            if let Some(by) = by {
                                self.mask(s, by);
                            }
                        }
                        _ => {
                            // A table may sit below the top (a multi-ASIC document is one config_db
                            // per namespace: `{"localhost": {"SNMP_COMMUNITY": …}, "asic0": …}`), and
                            // a Redis dump of CONFIG_DB (`sonic-db-dump`) flattens each row to one
                            // key, `TABLE|row`.
                            let (name, row) = match k.split_once('|') {
                                Some((t, r)) if is_table_name(t) => (t, Some(r)),
                                _ => (k.as_str(), None),
                            };
                            // A known table keeps its name over row keys that look like one
                            // (`SNMP_USER: {"ADMIN": …}`); a wrapper does not.
                            let inner = match table {
                                Some(t) if is_known_table(t) => table,
                                _ if is_table_name(name) => Some(name),
                                _ => table,
                            };
                            self.walk(inner, val);
                            if let Some((kind, _)) =
                                SONIC_SECRET_ROW_TABLES.iter().find(|(_, t)| t.eq_ignore_ascii_case(name))
                            {
                                match (row, val) {
                                    (Some(r), _) => {
                                        if !r.is_empty() && !is_mask(r.trim_end_matches('\'')) {
                                            flat_rows.push((k.clone(), *kind, name.to_owned(), r.to_owned()));
                                        }
                                    }
                                    (None, Value::Object(rows)) => self.mask_row_keys(*kind, rows),
                                    (None, _) => {}
                                }
                            }
                        }
                    }
                    self.path.pop();
                }
                for (old, kind, name, row) in flat_rows {
                    let Some(v) = map.remove(&old) else { continue };
                    let tag = self.key.mask(&row);
                    let parent = self.path.iter().map(|p| format!("/{p}")).collect::<String>();
                    self.report.push(Masked {
                        at: Place::Json(format!("{parent}/{name}| (a row key)")),
                        by: MaskedBy::Rule(kind),
                        tag: tag.clone(),
                    });
                    let mut new = format!("{name}|{tag}");
                    while map.contains_key(&new) {
                        new.push('\'');
                    }
                    map.insert(new, v);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.path.push(i.to_string());
                    match item {
                        Value::String(s) if is_pem(s) => self.mask(s, MaskedBy::Rule(Kind::PrivateKey)),
                        Value::String(s) => {
                            if let Some(w) = secret_like_value(s) {
                                self.mask(s, MaskedBy::Fallback(Reason::Value(w)));
                            }
                        }
                        _ => self.walk(table, item),
                    }
                    self.path.pop();
                }
            }
            _ => {}
        }
    }

    /// Replace each row key of a table whose row keys are secrets (`SNMP_COMMUNITY`) by its tag.
    fn mask_row_keys(&mut self, kind: Kind, rows: &mut serde_json::Map<String, Value>) {
        let old = std::mem::take(rows);
        for (row_key, row) in old {
            // Already masked rows keep their name, so scrubbing is idempotent; two communities
            // whose tags collide keep both rows.
            let mut masked = if is_mask(row_key.trim_end_matches('\'')) || row_key.is_empty() {
                row_key.clone()
            } else {
                let tag = self.key.mask(&row_key);
                self.report.push(Masked {
                    at: Place::Json(format!("/{} (a row key)", self.path.join("/"))),
                    by: MaskedBy::Rule(kind),
                    tag: tag.clone(),
                });
                tag
            };
            while rows.contains_key(&masked) {
                masked.push('\'');
            }
            rows.insert(masked, row);
        }
    }
}

/// A table the rules name (a field rule's or a secret-row table).
fn is_known_table(t: &str) -> bool {
    SONIC_FIELDS
        .iter()
        .filter_map(|f| f.table)
        .chain(SONIC_SECRET_ROW_TABLES.iter().map(|(_, t)| *t))
        .any(|x| x.eq_ignore_ascii_case(t))
}

/// config_db table names are upper-case identifiers (`SNMP_COMMUNITY`, `MACSEC_PROFILE`); a
/// namespace (`localhost`, `asic0`) or a row key (`Ethernet0`, `10.0.0.1`) is not.
fn is_table_name(k: &str) -> bool {
    k.bytes().any(|b| b.is_ascii_uppercase())
        && k.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Mask the secrets of a parsed config_db document in place.
pub fn scrub_value(v: &mut Value, key: &TagKey, report: &mut Vec<Masked>) {
    let mut w = Walk { key, report, path: Vec::new() };
    w.walk(None, v);
}
