//! Every problem of a TOML file read into a serde type, at once, as FILE:LINE:COL — for files other than the
//! inventory (the server configuration) that have no staged checker of their own.
//!
//! serde stops at the first error, and `deny_unknown_fields` at the first unknown key. So unknown keys are
//! found first against the type's own keys ([`crate::keys`]: a near miss is renamed and reported with "did
//! you mean"), then the file is deserialized repeatedly: each type error is reported and the entry it sits
//! in is taken out, until the rest deserializes (or a bound is reached). A value taken out for a type error
//! does not come back as "missing field".

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::location::{Diagnostic, SourceMap};
use crate::schema::shape_of;

/// At most this many type errors are reported (each costs one more deserialization).
const MAX_TYPE_ERRORS: usize = 64;

/// What a check found.
#[derive(Debug)]
pub struct Checked<T> {
    /// The value read once the problems were set aside (near-miss keys renamed, unknown keys and badly
    /// typed entries taken out); `None` when even that failed. Check its values further: those problems
    /// belong in the same report.
    pub value: Option<T>,
    /// No problem at all: `value` is exactly the file.
    pub clean: bool,
    /// Every problem, sorted by position.
    pub diagnostics: Vec<Diagnostic>,
}

/// Checks `text`, read from `file`, against `T`.
pub fn check<T: for<'de> Deserialize<'de>>(file: &Path, text: &str) -> Checked<T> {
    let map = SourceMap::new(file, text);
    let mut diags = Vec::new();
    let (root, syntax) = DeTable::parse_recoverable(text);
    for e in &syntax {
        diags.push(
            map.error(e.span().map_or(0, |s| s.start), format!("syntax error: {}", e.message().trim())),
        );
    }
    let span = root.span();
    let mut root = root.into_inner();
    root.make_owned();
    let mut clean = syntax.is_empty();
    for u in crate::keys::fix(&mut root, &shape_of::<T>()) {
        diags.push(map.error(u.offset, u.message("")));
        clean = false;
    }
    // (parent table's span, key) of entries taken out for a type error.
    let mut removed: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    let mut value = None;
    for _ in 0..=MAX_TYPE_ERRORS {
        let de = toml::de::Deserializer::from(Spanned::new(span.clone(), root.clone()));
        match T::deserialize(de) {
            Ok(v) => {
                value = Some(v);
                break;
            }
            Err(e) => {
                clean = false;
                let at = e.span().map_or(0, |s| s.start);
                let msg = e.message().trim().to_owned();
                let consequence = missing_field(&msg)
                    .is_some_and(|f| removed.iter().any(|(parent, k)| k == f && parent.start == at));
                if !consequence {
                    diags.push(map.error(at, msg));
                }
                match take_out(&mut root, span.clone(), at) {
                    Some(r) => removed.push(r),
                    None => break,
                }
            }
        }
    }
    diags.sort_by_key(|d| (d.line, d.col));
    Checked { value, clean: clean && diags.is_empty(), diagnostics: diags }
}

/// Byte offset of the value at a dotted path (`server.listen`, `backup-schedule[2].cron`) in `text`, for
/// problems found in a value after deserializing.
pub fn value_offset(text: &str, path: &str) -> Option<usize> {
    let (root, _) = DeTable::parse_recoverable(text);
    let mut table = Some(root.get_ref());
    let mut at = None;
    for part in path.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((k, rest)) => (k, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        let mut v = table?.get(key)?;
        if let Some(i) = index {
            v = v.get_ref().as_array()?.get(i)?;
        }
        at = Some(v.span().start);
        table = v.get_ref().as_table();
    }
    at
}

fn missing_field(msg: &str) -> Option<&str> {
    msg.strip_prefix("missing field `")?.split('`').next()
}

#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    Item(usize),
}

/// Removes the innermost key or array item at `at`; returns its parent's span and key (or `[i]`).
///
/// A table's span covers only its header, not its body, so the tree is searched whole rather than pruned
/// by spans; the deepest entry whose key or value covers `at` is the one the error is about.
fn take_out(
    root: &mut DeTable<'_>,
    root_span: std::ops::Range<usize>,
    at: usize,
) -> Option<(std::ops::Range<usize>, String)> {
    let mut best: Option<(Vec<Seg>, std::ops::Range<usize>)> = None;
    let mut path = Vec::new();
    search_table(root, &root_span, at, &mut path, &mut best);
    let (path, parent_span) = best?;
    let mut wrapped = DeValue::Table(std::mem::take(root));
    let label = remove_path(&mut wrapped, &path);
    if let DeValue::Table(t) = wrapped {
        *root = t;
    }
    Some((parent_span, label?))
}

fn remove_path(root: &mut DeValue<'_>, path: &[Seg]) -> Option<String> {
    let (last, parents) = path.split_last()?;
    let mut node = root;
    for seg in parents {
        node = match (node, seg) {
            (DeValue::Table(t), Seg::Key(k)) => t.get_mut(k.as_str())?.get_mut(),
            (DeValue::Array(a), Seg::Item(i)) => a.as_mut().get_mut(*i)?.get_mut(),
            _ => return None,
        };
    }
    match (node, last) {
        (DeValue::Table(t), Seg::Key(k)) => {
            t.remove(k.as_str());
            Some(k.clone())
        }
        (DeValue::Array(a), Seg::Item(i)) => {
            // A `DeArray` has no `remove`: rebuild it without the item.
            let mut rebuilt = toml::de::DeArray::new();
            for (j, v) in a.iter().enumerate() {
                if j != *i {
                    rebuilt.push(v.clone());
                }
            }
            *a = rebuilt;
            Some(format!("[{i}]"))
        }
        _ => None,
    }
}

fn search_table(
    t: &DeTable<'_>,
    span: &std::ops::Range<usize>,
    at: usize,
    path: &mut Vec<Seg>,
    best: &mut Option<(Vec<Seg>, std::ops::Range<usize>)>,
) {
    for (k, v) in t.iter() {
        path.push(Seg::Key(k.get_ref().to_string()));
        if covers(&k.span(), at) || covers(&v.span(), at) {
            *best = Some((path.clone(), span.clone()));
        }
        search_value(v, at, path, best);
        path.pop();
    }
}

fn search_value(
    v: &Spanned<DeValue<'_>>,
    at: usize,
    path: &mut Vec<Seg>,
    best: &mut Option<(Vec<Seg>, std::ops::Range<usize>)>,
) {
    match v.get_ref() {
        DeValue::Table(t) => search_table(t, &v.span(), at, path, best),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Seg::Item(i));
                if covers(&item.span(), at) {
                    *best = Some((path.clone(), v.span()));
                }
                search_value(item, at, path, best);
                path.pop();
            }
        }
        _ => {}
    }
}

fn covers(span: &std::ops::Range<usize>, at: usize) -> bool {
    span.contains(&at) || span.start == at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "kebab-case")]
    struct Conf {
        inventory: Option<String>,
        #[serde(default)]
        server: Server,
        #[serde(default)]
        policy: Vec<Policy>,
    }

    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "kebab-case")]
    struct Server {
        listen: Option<String>,
        sweep_interval: Option<String>,
        failures: Option<u32>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "kebab-case")]
    struct Policy {
        kind: String,
        #[serde(default)]
        mode: Mode,
    }

    #[derive(Debug, Default, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    enum Mode {
        #[default]
        Notify,
        Auto,
    }

    fn run(text: &str) -> (bool, Vec<String>) {
        let c = check::<Conf>(Path::new("l.toml"), text);
        (c.clean, c.diagnostics.iter().map(|d| d.to_string()).collect())
    }

    #[test]
    fn every_problem_at_once() {
        let text = "inventory = \"i.toml\"\ncolour = 1\n\n[server]\nsweep-intervall = \"60s\"\nfailures = \"three\"\n\n\
                    [[policy]]\nkind = \"x\"\nmode = \"yolo\"\n\n[[policy]]\nkind = 5\n\n[[policy]]\nmode = \"auto\"\n";
        let (ok, d) = run(text);
        assert!(!ok);
        assert_eq!(d.len(), 6, "{d:#?}");
        assert_eq!(d[0], "l.toml:2:1: unknown key `colour`");
        assert_eq!(d[1], "l.toml:5:1: unknown key `server.sweep-intervall` (did you mean `sweep-interval`?)");
        assert!(d[2].starts_with("l.toml:6:12: invalid type: string \"three\", expected u32"), "{d:#?}");
        assert!(d[3].starts_with("l.toml:10:8: unknown variant `yolo`"), "{d:#?}");
        assert!(d[4].starts_with("l.toml:13:8: invalid type: integer `5`"), "{d:#?}");
        assert!(d[5].starts_with("l.toml:15:1: missing field `kind`"), "{d:#?}");
    }

    #[test]
    fn a_clean_file_gives_its_value() {
        let c = check::<Conf>(
            Path::new("l.toml"),
            "[server]\nlisten = \"127.0.0.1:1\"\n[[policy]]\nkind = \"*\"\n",
        );
        assert!(c.diagnostics.is_empty(), "{:#?}", c.diagnostics);
        let v = c.value.unwrap();
        assert_eq!(v.server.listen.as_deref(), Some("127.0.0.1:1"));
        assert!(matches!(v.policy[0].mode, Mode::Notify));
        let _ = (v.inventory, v.server.sweep_interval, v.server.failures, &v.policy[0].kind, Mode::Auto);
    }

    proptest::proptest! {
        /// Any text: diagnostics, never a panic, and a clean verdict only without diagnostics.
        #[test]
        fn never_panics(text in "(\\[\\[?[a-z.-]{0,10}\\]\\]?\n|[a-z-]{1,14} = (\"[a-z0-9:.]{0,8}\"|[0-9]{1,3}|true|\\[\\])\n){0,8}") {
            let c = check::<Conf>(Path::new("p.toml"), &text);
            proptest::prop_assert!(!c.clean || c.diagnostics.is_empty());
        }
    }

    #[test]
    fn syntax_errors_are_reported_with_the_rest() {
        let (ok, d) = run("inventory = \n[server]\nlistn = \"x\"\n");
        assert!(!ok);
        assert!(d[0].starts_with("l.toml:1:"), "{d:#?}");
        assert!(d.iter().any(|x| x.contains("did you mean `listen`")), "{d:#?}");
    }
}
