//! Unknown keys in a parsed TOML tree, each reported once with the nearest known key, before the tree is
//! deserialized.
//!
//! One typo must be one error. A misspelt `credentails` under `[defaults.bmc]` used to be reported once as
//! unknown and then again by every BMC that found no credential; a misspelt required key (`adress`) made
//! its table fail to deserialize. So a key that is near exactly one known key its table lacks is *renamed*
//! to that key (and reported), and the checks that follow see what the operator meant. Other unknown keys
//! are reported and removed.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::schema::Shape;
use crate::suggest::nearest;

/// One unknown key: where it is, its dotted path, and what it was taken to mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// Byte offset of the key in the file.
    pub offset: usize,
    /// Dotted path from the table checked (`bmc.credentails`, `rail[2].mtuu`).
    pub path: String,
    /// The known key it was renamed to.
    pub suggestion: Option<&'static str>,
    /// The keys the table accepts, for a message when there is no suggestion.
    pub expected: Vec<&'static str>,
}

impl UnknownKey {
    /// `unknown key `x` (did you mean `y`?)`, with `place` (e.g. ` in device `n``) after the key.
    pub fn message(&self, place: &str) -> String {
        match self.suggestion {
            Some(s) => format!("unknown key `{}`{place} (did you mean `{s}`?)", self.path),
            None => format!("unknown key `{}`{place}", self.path),
        }
    }
}

/// Walks `table` against `shape`, renaming near-miss keys and removing the other unknown ones.
pub fn fix(table: &mut DeTable<'_>, shape: &Shape) -> Vec<UnknownKey> {
    let mut out = Vec::new();
    fix_table(table, shape, "", &mut out);
    out.sort_by_key(|u| u.offset);
    out
}

fn fix_table(table: &mut DeTable<'_>, shape: &Shape, path: &str, out: &mut Vec<UnknownKey>) {
    let Shape::Table { .. } = shape else { return };
    let present: Vec<String> = table.keys().map(|k| k.get_ref().to_string()).collect();
    let entries = std::mem::take(table);
    for (key, mut value) in entries {
        let name = key.get_ref().to_string();
        let child_path = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
        let (key, field) = match shape.field(&name) {
            Some(f) => (key, f),
            None => {
                // Suggest only a key the table does not already have: renaming onto a present key would
                // hide the real one.
                let suggestion = nearest(&name, shape.keys().filter(|k| !present.iter().any(|p| p == k)));
                out.push(UnknownKey {
                    offset: key.span().start,
                    path: child_path.clone(),
                    suggestion,
                    expected: shape.keys().collect(),
                });
                match suggestion {
                    Some(s) => {
                        let renamed = Spanned::new(key.span(), std::borrow::Cow::Owned(s.to_owned()));
                        (renamed, shape.field(s).expect("suggested from the shape's keys"))
                    }
                    None => continue,
                }
            }
        };
        fix_value(value.get_mut(), field, &child_path, out);
        table.insert(key, value);
    }
}

fn fix_value(value: &mut DeValue<'_>, shape: &Shape, path: &str, out: &mut Vec<UnknownKey>) {
    match (value, shape) {
        (DeValue::Table(t), Shape::Table { .. }) => fix_table(t, shape, path, out),
        (DeValue::Array(items), Shape::Array(inner)) => {
            for (i, item) in items.iter_mut().enumerate() {
                fix_value(item.get_mut(), inner, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::RawDevice;
    use crate::schema::shape_of;

    #[test]
    fn renames_a_near_miss_and_removes_the_rest() {
        let text = "name = \"n\"\nrole = \"gpu-node\"\nrack = \"r\"\ncolour = \"red\"\n\
                    bmc = { adress = \"10.0.0.1\", credentails = \"env:X\" }\n\
                    rail = [{ hca = \"mlx5_0\" }, { hca = \"mlx5_1\", mtuu = 9000 }]\n";
        let mut t = DeTable::parse(text).unwrap().into_inner();
        let u = fix(&mut t, &shape_of::<RawDevice>());
        let got: Vec<_> = u.iter().map(|u| (u.path.as_str(), u.suggestion)).collect();
        assert_eq!(
            got,
            [
                ("colour", None),
                ("bmc.adress", Some("address")),
                ("bmc.credentails", Some("credential")),
                ("rail[1].mtuu", Some("mtu")),
            ]
        );
        assert_eq!(u[0].offset, text.find("colour").unwrap());
        assert!(!t.contains_key("colour"));
        let bmc = t.get("bmc").unwrap().get_ref().as_table().unwrap();
        assert!(bmc.contains_key("address") && bmc.contains_key("credential"));
    }

    #[test]
    fn never_renames_onto_a_key_that_is_present() {
        let text =
            "name = \"n\"\nrole = \"gpu-node\"\nrack = \"r\"\nbmc = { address = \"a\", adress = \"b\" }\n";
        let mut t = DeTable::parse(text).unwrap().into_inner();
        let u = fix(&mut t, &shape_of::<RawDevice>());
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].suggestion, None);
        let bmc = t.get("bmc").unwrap().get_ref().as_table().unwrap();
        assert_eq!(bmc.get("address").unwrap().get_ref().as_str(), Some("a"));
    }
}
