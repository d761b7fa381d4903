//! Where a problem is: the checker's diagnostic sink ([`Cx`]) and the mapping from a serde path (an unknown
//! key, a bad value deep in a table) back to the byte offset of the key in the file, so that every problem is
//! reported as FILE:LINE:COL with the key's dotted path. Split from `check` (the semantic checks).

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::location::{Diagnostic, SourceMap};

pub(super) struct Cx<'m> {
    pub(super) map: &'m SourceMap,
    pub(super) diags: Vec<Diagnostic>,
    /// Credential references already checked, by location: a default shared by 500 BMCs is reported once.
    pub(super) checked_credentials: std::collections::HashSet<(String, usize)>,
}

impl Cx<'_> {
    pub(super) fn err(&mut self, offset: usize, msg: impl Into<String>) {
        self.diags.push(self.map.error(offset, msg));
    }

    pub(super) fn warn(&mut self, offset: usize, msg: impl Into<String>) {
        self.diags.push(self.map.warning(offset, msg));
    }

    /// Reports unknown top-level keys, renaming a near miss (`[[devices]]`) to the key it was meant as.
    pub(super) fn fix_top_level(&mut self, root: &mut DeTable<'_>, known: &'static [&'static str]) {
        let shape = crate::schema::Shape::Table {
            name: "inventory",
            fields: known.iter().map(|k| (*k, crate::schema::Shape::Open)).collect(),
        };
        for u in crate::keys::fix(root, &shape) {
            let msg = match u.suggestion {
                Some(_) => u.message(""),
                None => format!("{} (expected one of: {})", u.message(""), known.join(", ")),
            };
            self.err(u.offset, msg);
        }
    }

    pub(super) fn toml_error(&mut self, e: &toml::de::Error, what: &str) {
        let at = e.span().map_or(0, |s| s.start);
        let msg = e.message().trim().to_owned();
        self.err(at, format!("{what}: {msg}"));
    }

    /// Deserializes one table, reporting every unknown key (with its location) and a type error if any.
    pub(super) fn deserialize<T: for<'de> Deserialize<'de>>(
        &mut self,
        table: Spanned<DeTable<'_>>,
        prefix: &str,
    ) -> Option<T> {
        // Unknown keys first, against the type's own keys: a near miss is renamed so that one typo is one
        // error, and the checks after it see what was meant.
        let span = table.span();
        let mut table = table.into_inner();
        let place = if prefix.is_empty() { String::new() } else { format!(" in {prefix}") };
        for u in crate::keys::fix(&mut table, &crate::schema::shape_of::<T>()) {
            self.err(u.offset, u.message(&place));
        }
        let table = Spanned::new(span, table);
        let tree = table.clone();
        let mut unknown: Vec<Vec<Seg>> = Vec::new();
        let de = toml::de::Deserializer::from(table);
        let result = serde_ignored::deserialize(de, |path| unknown.push(segments(&path)));
        for segs in unknown {
            let (offset, dotted) = locate(&tree, &segs);
            let place = if prefix.is_empty() { String::new() } else { format!(" in {prefix}") };
            self.err(offset, format!("unknown key `{dotted}`{place}"));
        }
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                let what =
                    if prefix.is_empty() { "invalid value".to_owned() } else { format!("invalid {prefix}") };
                self.toml_error(&e, &what);
                None
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    Index(usize),
}

fn segments(path: &serde_ignored::Path<'_>) -> Vec<Seg> {
    use serde_ignored::Path as P;
    let mut out = match path {
        P::Root => return Vec::new(),
        P::Seq { parent, .. }
        | P::Map { parent, .. }
        | P::Some { parent }
        | P::NewtypeStruct { parent }
        | P::NewtypeVariant { parent } => segments(parent),
    };
    match path {
        P::Seq { index, .. } => out.push(Seg::Index(*index)),
        // `Spanned<T>` is deserialized through private marker keys; they are not part of the user's path.
        P::Map { key, .. } if key.starts_with("$__serde_spanned_private") => {}
        P::Map { key, .. } => out.push(Seg::Key(key.clone())),
        _ => {}
    }
    out
}

/// Finds the byte offset of the key a path ends at, and a dotted spelling of the path.
fn locate(root: &Spanned<DeTable<'_>>, segs: &[Seg]) -> (usize, String) {
    let mut offset = root.span().start;
    let mut dotted = Vec::new();
    let mut cur: Option<&DeValue<'_>> = None;
    let mut table: Option<&DeTable<'_>> = Some(root.get_ref());
    for seg in segs {
        match seg {
            Seg::Key(k) => {
                dotted.push(k.clone());
                let found = table.and_then(|t| t.iter().find(|(key, _)| key.get_ref() == k));
                match found {
                    Some((key, v)) => {
                        offset = key.span().start;
                        cur = Some(v.get_ref());
                    }
                    None => break,
                }
            }
            Seg::Index(i) => {
                if let Some(last) = dotted.last_mut() {
                    *last = format!("{last}[{i}]");
                }
                match cur.and_then(|v| v.as_array()).and_then(|a| a.get(*i)) {
                    Some(v) => {
                        offset = v.span().start;
                        cur = Some(v.get_ref());
                    }
                    None => break,
                }
            }
        }
        table = cur.and_then(|v| v.as_table());
    }
    (offset, dotted.join("."))
}
