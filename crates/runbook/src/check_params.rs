//! The `[params.NAME]` tables of a runbook file: each declares its `type` (see [`crate::params`]) and
//! its default is checked against it, every problem reported with its place.

use toml::de::DeValue;

use super::{Cx, Val};
use crate::model::Param;
use crate::params::{ParamType, TYPES};

const PARAM_KEYS: &[&str] = &["default", "description", "type", "values", "pattern", "min", "max", "roles"];

pub(super) fn params(cx: &mut Cx, v: Option<&Val<'_>>) -> Vec<Param> {
    let Some(v) = v else { return Vec::new() };
    let Some(t) = v.get_ref().as_table() else {
        cx.err(v.span().start, "`params` must be a table of `[params.NAME]` tables");
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, pv) in t.iter() {
        let name = k.get_ref().to_string();
        if super::BUILTIN_VARS.contains(&name.as_str()) {
            cx.err(k.span().start, format!("parameter `{name}` is built in; pick another name"));
        }
        let Some(pt) = pv.get_ref().as_table() else {
            cx.err(
                pv.span().start,
                format!("parameter `{name}` must be a table with `type`, `default` and `description`"),
            );
            continue;
        };
        let (mut default, mut description) = (None, String::new());
        for (pk, x) in pt.iter() {
            match pk.get_ref().as_ref() {
                "default" => {
                    default = match x.get_ref() {
                        DeValue::String(s) => Some(s.to_string()),
                        DeValue::Integer(i) => Some(i.as_str().to_owned()),
                        DeValue::Boolean(b) => Some(b.to_string()),
                        other => {
                            cx.err(
                                x.span().start,
                                format!(
                                    "`default` of `{name}` must be a string, integer or boolean, found {}",
                                    other.type_str()
                                ),
                            );
                            None
                        }
                    }
                }
                "description" => description = cx.string(x, "description").unwrap_or_default(),
                k if PARAM_KEYS.contains(&k) => {}
                other => cx.err(
                    pk.span().start,
                    format!(
                        "unknown key `{other}` in parameter `{name}` (expected one of: {})",
                        PARAM_KEYS.join(", ")
                    ),
                ),
            }
        }
        let ty = param_type(cx, &name, pv.span().start, |k| pt.get(k));
        match (default, ty) {
            (Some(default), Some(ty)) => {
                if let Err(why) = ty.check(&default, &default) {
                    let at = pt.get("default").map_or(pv.span().start, |d| d.span().start);
                    cx.err(at, format!("`default` of `{name}`: {why}"));
                }
                out.push(Param { name, default, description, ty });
            }
            (None, _) => cx.err(pv.span().start, format!("parameter `{name}` needs a `default`")),
            (Some(_), None) => {}
        }
    }
    out
}

/// The parameter's type from `type` and the keys that go with it. A stored run's copy written before
/// parameters were typed (`cx.stored`) reads a missing `type` as a string of anything.
fn param_type<'a>(
    cx: &mut Cx,
    name: &str,
    at: usize,
    get: impl Fn(&str) -> Option<&'a Val<'a>>,
) -> Option<ParamType> {
    let Some(tv) = get("type") else {
        if cx.stored {
            return Some(ParamType::String { pattern: ".*".into() });
        }
        cx.err(at, format!("parameter `{name}` needs a `type` (one of: {})", TYPES.join(", ")));
        return None;
    };
    let t = cx.string(tv, "type")?;
    let misplaced = |cx: &mut Cx, keys: &[&str]| {
        for k in ["values", "pattern", "min", "max", "roles"] {
            if !keys.contains(&k)
                && let Some(v) = get(k)
            {
                cx.err(
                    v.span().start,
                    format!("`{k}` does not go with `type = \"{t}\"` (parameter `{name}`)"),
                );
            }
        }
    };
    let int = |cx: &mut Cx, k: &str| -> Option<i64> {
        let v = get(k)?;
        let n = v.get_ref().as_integer().and_then(|i| i.as_str().replace('_', "").parse().ok());
        if n.is_none() {
            cx.err(v.span().start, format!("`{k}` of `{name}` must be an integer"));
        }
        n
    };
    Some(match t.as_str() {
        "enum" => {
            misplaced(cx, &["values"]);
            let Some(v) = get("values") else {
                cx.err(tv.span().start, format!("parameter `{name}` of type enum needs `values = [...]`"));
                return None;
            };
            let values: Vec<String> = cx.strings(v, "values")?.into_iter().map(|(_, s)| s).collect();
            if values.is_empty() {
                cx.err(v.span().start, format!("`values` of `{name}` is empty"));
                return None;
            }
            ParamType::Enum { values }
        }
        "bool" => {
            misplaced(cx, &[]);
            ParamType::Bool
        }
        "integer" => {
            misplaced(cx, &["min", "max"]);
            ParamType::Integer { min: int(cx, "min"), max: int(cx, "max") }
        }
        "duration" => {
            misplaced(cx, &[]);
            ParamType::Duration
        }
        "device" => {
            misplaced(cx, &["roles"]);
            let mut roles = Vec::new();
            if let Some(v) = get("roles") {
                for (a, s) in cx.strings(v, "roles").unwrap_or_default() {
                    match s.parse() {
                        Ok(r) => roles.push(r),
                        Err(e) => cx.err(a, format!("`roles` of `{name}`: {e}")),
                    }
                }
            }
            ParamType::Device { roles }
        }
        "served-image" => {
            misplaced(cx, &[]);
            ParamType::ServedImage
        }
        "string" => {
            misplaced(cx, &["pattern"]);
            let Some(v) = get("pattern") else {
                cx.err(
                    tv.span().start,
                    format!(
                        "parameter `{name}` of type string needs a `pattern` (the values it may take, as a regular expression)"
                    ),
                );
                return None;
            };
            let pattern = cx.string(v, "pattern")?;
            if let Err(e) = crate::params::anchored(&pattern) {
                cx.err(
                    v.span().start,
                    format!("`pattern` of `{name}` is not a valid regular expression: {e}"),
                );
                return None;
            }
            ParamType::String { pattern }
        }
        other => {
            cx.err(
                tv.span().start,
                format!("`type` `{other}` of `{name}` (expected one of: {})", TYPES.join(", ")),
            );
            return None;
        }
    })
}
