//! Console expect scripts in runbook files: `script = [ { expect = "login:" }, { send = "root\r" }, … ]`,
//! each item one action with its modifiers, checked with locations like the rest of the file.

use std::time::Duration;

use super::{Cx, Val};

/// Parses a console step's `script`: an array of inline tables, each one action (`expect`, `send`, `key`,
/// `sleep`, `break`) with its modifiers. Returns the step list and the texts holding templates (for the
/// reference check); `None` after reporting a problem.
/// A parsed console script.
pub(super) type Script = Vec<lifeline_console::Step>;

pub(super) fn console_script(
    cx: &mut Cx,
    v: &Val<'_>,
    label: &str,
) -> Option<(Vec<(usize, String)>, Script)> {
    use lifeline_console::{Key, On, Step as S};
    const ACTIONS: &[&str] = &["expect", "send", "key", "sleep", "break"];
    let Some(items) = v.get_ref().as_array() else {
        cx.err(
            v.span().start,
            format!("`script` must be an array of tables, found {}", v.get_ref().type_str()),
        );
        return None;
    };
    if items.is_empty() {
        cx.err(v.span().start, format!("console step `{label}`: `script` is empty"));
        return None;
    }
    let mut ok = true;
    let mut texts = Vec::new();
    let mut steps = Vec::new();
    for item in items.iter() {
        let Some(t) = item.get_ref().as_table() else {
            cx.err(
                item.span().start,
                format!(
                    "a `script` item must be a table such as {{ expect = \"login:\" }}, found {}",
                    item.get_ref().type_str()
                ),
            );
            ok = false;
            continue;
        };
        let actions: Vec<&str> =
            t.iter().map(|(k, _)| k.get_ref().as_ref()).filter(|k| ACTIONS.contains(k)).collect();
        if actions.len() != 1 {
            cx.err(
                item.span().start,
                format!(
                    "a `script` item needs exactly one of {} (found {})",
                    ACTIONS.join(", "),
                    actions.len()
                ),
            );
            ok = false;
            continue;
        }
        let action = actions[0];
        let allowed: &[&str] = match action {
            "expect" => &["expect", "timeout", "on"],
            "key" => &["key", "count"],
            other => std::slice::from_ref(ACTIONS.iter().find(|a| **a == other).expect("an action")),
        };
        for (k, _) in t.iter() {
            let key = k.get_ref().as_ref();
            if !allowed.contains(&key) {
                cx.err(k.span().start, format!("unknown key `{key}` in a `{action}` script item"));
                ok = false;
            }
        }
        let get = |k: &str| t.get(k);
        let val = get(action).expect("present");
        let step = match action {
            "expect" => {
                let Some(pattern) = cx.string(val, "expect") else {
                    ok = false;
                    continue;
                };
                if let Err(e) = regex::Regex::new(&untemplated(&pattern)) {
                    cx.err(val.span().start, format!("`expect` is not a valid regular expression: {e}"));
                    ok = false;
                }
                let timeout =
                    get("timeout").and_then(|v| cx.duration(v, "timeout")).unwrap_or(Duration::from_secs(30));
                let on = match get("on").map(|v| (v, cx.string(v, "on"))) {
                    None => On::Stream,
                    Some((_, Some(s))) if s == "stream" => On::Stream,
                    Some((_, Some(s))) if s == "screen" => On::Screen,
                    Some((v, s)) => {
                        if let Some(s) = s {
                            cx.err(v.span().start, format!("`on` `{s}` (expected one of: stream, screen)"));
                        }
                        ok = false;
                        continue;
                    }
                };
                texts.push((val.span().start, pattern.clone()));
                S::Expect { pattern, on, timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX) }
            }
            "send" => {
                let Some(text) = cx.string(val, "send") else {
                    ok = false;
                    continue;
                };
                texts.push((val.span().start, text.clone()));
                S::Send { text }
            }
            "key" => {
                let Some(name) = cx.string(val, "key") else {
                    ok = false;
                    continue;
                };
                let Ok(key) = serde_json::from_value::<Key>(serde_json::json!(name)) else {
                    cx.err(
                        val.span().start,
                        format!(
                            "unknown key `{name}` (expected one of: enter, esc, up, down, left, right, tab, \
                             backspace, ctrl-c, ctrl-d, ctrl-u, space, f2, f12)"
                        ),
                    );
                    ok = false;
                    continue;
                };
                let count = match get("count") {
                    None => 1,
                    Some(v) => match v
                        .get_ref()
                        .as_integer()
                        .and_then(|i| i.as_str().replace('_', "").parse::<u32>().ok())
                    {
                        Some(n) if (1..=100).contains(&n) => n,
                        _ => {
                            cx.err(v.span().start, "`count` must be a whole number from 1 to 100");
                            ok = false;
                            continue;
                        }
                    },
                };
                S::Key { key, count }
            }
            "sleep" => {
                let Some(d) = cx.duration(val, "sleep") else {
                    ok = false;
                    continue;
                };
                S::Sleep { ms: u64::try_from(d.as_millis()).unwrap_or(u64::MAX) }
            }
            _ => {
                if cx.boolean(val, "break") != Some(true) {
                    if val.get_ref().as_bool() == Some(false) {
                        cx.err(val.span().start, "`break = false` does nothing: remove the item");
                    }
                    ok = false;
                    continue;
                }
                S::Break
            }
        };
        steps.push(step);
    }
    ok.then_some((texts, steps))
}

/// A pattern with its `{{templates}}` replaced by plain text, to check the regex around them (the values
/// are only known at run time).
pub(super) fn untemplated(p: &str) -> String {
    let re = regex::Regex::new(r"\{\{[^}]*\}\}").expect("a valid regex");
    re.replace_all(p, "x").into_owned()
}
