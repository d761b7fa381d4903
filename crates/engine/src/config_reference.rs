//! The configuration reference (`docs/configuration.md`), generated from the configuration types.
//!
//! A hand-kept key table drifts from the code: keys are added in one and not the other. So the reference is
//! made from the types themselves — the keys, their nesting and their TOML types from the types' own
//! `Deserialize` (`lifeline_inventory::schema`), the meaning of each key from its doc comment in
//! `config.rs` — and a test fails when the page's generated part differs from what this makes
//! (`LIFELINE_BLESS=1` rewrites it).

use std::collections::HashMap;

use lifeline_inventory::schema::{Shape, shape_of};

use crate::config::ServerConfig;

/// Marks the generated part of `docs/configuration.md`.
pub const BEGIN: &str = "<!-- BEGIN GENERATED: `lifeline_engine::config_reference`; edit the doc comments in crates/engine/src/config.rs -->";
pub const END: &str = "<!-- END GENERATED -->";

const SOURCE: &str = include_str!("config.rs");

/// A struct of `config.rs` as written: its doc comment, and each field's doc, type and serde default.
#[derive(Debug, Default)]
struct Written {
    doc: String,
    fields: HashMap<String, Field>,
}

#[derive(Debug, Default)]
struct Field {
    doc: String,
    ty: String,
    has_default: bool,
}

/// Reads the doc comments of `config.rs`'s structs (the source is this crate's own, so its shape is known:
/// `///` lines, then attributes, then `pub struct X {` or `pub field: Type,`).
fn written(source: &str) -> HashMap<String, Written> {
    let mut out: HashMap<String, Written> = HashMap::new();
    let mut doc: Vec<String> = Vec::new();
    let mut default = false;
    let mut current: Option<String> = None;
    for line in source.lines() {
        let t = line.trim();
        if let Some(d) = t.strip_prefix("///") {
            doc.push(d.strip_prefix(' ').unwrap_or(d).to_owned());
            continue;
        }
        if t.starts_with("#[") {
            default |= t.starts_with("#[serde(default");
            continue;
        }
        if let Some(rest) = t.strip_prefix("pub struct ") {
            let name = rest.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap_or("");
            if rest.trim_end().ends_with('{') {
                out.insert(name.to_owned(), Written { doc: doc.join("\n"), fields: HashMap::new() });
                current = Some(name.to_owned());
            }
        } else if line.starts_with('}') {
            current = None;
        } else if let (Some(s), Some(rest)) = (&current, t.strip_prefix("pub "))
            && let Some((name, ty)) = rest.split_once(':')
        {
            let field = Field {
                doc: doc.join(" ").trim().to_owned(),
                ty: ty.trim().trim_end_matches(',').to_owned(),
                has_default: default,
            };
            if let Some(w) = out.get_mut(s) {
                w.fields.insert(name.trim().to_owned(), field);
            }
        }
        doc.clear();
        default = false;
    }
    out
}

/// The generated reference (the part of `docs/configuration.md` between [`BEGIN`] and [`END`]).
pub fn markdown() -> String {
    let written = written(SOURCE);
    let mut out = String::new();
    section(&mut out, &written, &shape_of::<ServerConfig>(), "", false);
    out
}

fn section(out: &mut String, written: &HashMap<String, Written>, shape: &Shape, path: &str, array: bool) {
    let Shape::Table { name, fields } = shape else { return };
    let w = written.get(*name);
    let heading = match (path.is_empty(), array) {
        (true, _) => "Top level".to_owned(),
        (false, true) => format!("`[[{path}]]`"),
        (false, false) => format!("`[{path}]`"),
    };
    out.push_str(&format!("### {heading}\n\n"));
    if let Some(w) = w.filter(|w| !w.doc.is_empty()) {
        out.push_str(w.doc.trim());
        out.push_str("\n\n");
    }
    let mut nested = Vec::new();
    let mut rows = Vec::new();
    for (key, field_shape) in fields {
        let child = if path.is_empty() { (*key).to_owned() } else { format!("{path}.{key}") };
        match field_shape {
            Shape::Table { .. } => nested.push((child, field_shape, false)),
            Shape::Array(inner) if matches!(inner.as_ref(), Shape::Table { .. }) => {
                nested.push((child, inner.as_ref(), true))
            }
            _ => {
                let f = w.and_then(|w| w.fields.get(&key.replace('-', "_")));
                let ty = f.map(|f| type_of(field_shape, f)).unwrap_or_else(|| field_shape.describe());
                let doc = f.map(|f| f.doc.as_str()).filter(|d| !d.is_empty()).unwrap_or("(undocumented)");
                rows.push(format!("| `{key}` | {ty} | {} |\n", doc.replace('|', "\\|")));
            }
        }
    }
    if !rows.is_empty() {
        out.push_str("| key | type | meaning |\n|---|---|---|\n");
        for r in rows {
            out.push_str(&r);
        }
        out.push('\n');
    }
    for (child, s, array) in nested {
        section(out, written, s, &child, array);
    }
}

fn type_of(shape: &Shape, f: &Field) -> String {
    let base = match shape {
        Shape::Word(words) => words.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(" \\| "),
        _ if f.ty.contains("PathBuf") => "path".to_owned(),
        Shape::Array(inner) => format!("list of {}s", inner.describe()),
        other => other.describe(),
    };
    // serde requires every field without a default, a `Vec` too; only an `Option` may be absent.
    let optional = f.has_default || f.ty.starts_with("Option<");
    if optional { base } else { format!("{base}, required") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md")
    }

    /// `docs/configuration.md` carries the reference made from the types; `LIFELINE_BLESS=1` rewrites it.
    #[test]
    fn the_reference_page_is_current() {
        let text = std::fs::read_to_string(page()).unwrap();
        let (Some(b), Some(e)) = (text.find(BEGIN), text.find(END)) else {
            panic!("docs/configuration.md lacks the generated markers {BEGIN} … {END}");
        };
        let current = &text[b + BEGIN.len()..e];
        let made = format!("\n\n{}", markdown());
        if current != made {
            if std::env::var_os("LIFELINE_BLESS").is_some() {
                let new = format!("{}{BEGIN}{made}{}", &text[..b], &text[e..]);
                std::fs::write(page(), new).unwrap();
                return;
            }
            panic!(
                "docs/configuration.md's reference is stale: run `LIFELINE_BLESS=1 cargo test -p lifeline-engine \
                 --lib config_reference` and commit the page"
            );
        }
    }

    #[test]
    fn every_key_is_documented() {
        let md = markdown();
        assert!(!md.contains("(undocumented)"), "a configuration key has no doc comment:\n{md}");
        for key in
            ["`sweep-interval`", "`[[fault-policy]]`", "`[runbooks.guard]`", "`max-in-recovery-percent`"]
        {
            assert!(md.contains(key), "{key} missing:\n{md}");
        }
        assert!(md.contains("| `mode` | `auto` \\| `approve` \\| `notify` |"), "{md}");
        assert!(md.contains("| `cron` | string, required |"), "{md}");
        assert!(md.contains("| `targets` | list of strings, required |"), "backup-schedule targets: {md}");
        assert!(md.contains("| `inventory` | path |"), "{md}");
    }
}
