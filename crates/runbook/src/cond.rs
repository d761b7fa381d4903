//! `when` conditions and `{{name}}` templates: the only expression language runbooks have, kept tiny so that
//! a reviewer can read every condition at a glance.
//!
//! A condition is `TERM (and|or TERM)*` (`and` binds tighter), a term is `[not] REF [== VALUE | != VALUE]`, a
//! reference is `STEP.OUTPUT` (an earlier step's result: `ok`, `failed`, `skipped`, `state`, and the kind's
//! own outputs such as `passed`, `matched`, `drifted`) or `var.NAME`. A bare reference is true when the
//! value is `true`, a non-empty string other than `false`, or a non-zero number.

use std::collections::BTreeMap;

use serde::Serialize;

/// A parsed condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(into = "String")]
pub struct Cond {
    text: String,
    /// Disjunction of conjunctions.
    any: Vec<Vec<Term>>,
}

impl From<Cond> for String {
    fn from(c: Cond) -> String {
        c.text
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Term {
    negate: bool,
    reference: Ref,
    compare: Option<(bool, String)>,
}

/// What a condition refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ref {
    Step { step: String, output: String },
    Var(String),
}

/// Why a condition does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CondError {
    pub message: String,
}

fn err(message: impl Into<String>) -> CondError {
    CondError { message: message.into() }
}

fn tokens(s: &str) -> Result<Vec<String>, CondError> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '\'' || c == '"' {
            chars.next();
            let mut lit = String::from("'");
            loop {
                match chars.next() {
                    Some(q) if q == c => break,
                    Some(x) => lit.push(x),
                    None => return Err(err("unterminated quoted value")),
                }
            }
            out.push(lit);
        } else if c == '=' || c == '!' {
            chars.next();
            if chars.next() != Some('=') {
                return Err(err(format!("expected `{c}=`")));
            }
            out.push(format!("{c}="));
        } else {
            let mut w = String::new();
            while let Some(&x) = chars.peek() {
                if x.is_whitespace() || x == '=' || x == '!' {
                    break;
                }
                w.push(x);
                chars.next();
            }
            out.push(w);
        }
    }
    Ok(out)
}

fn reference(w: &str) -> Result<Ref, CondError> {
    let (a, b) = w.split_once('.').ok_or_else(|| err(format!("`{w}` is not STEP.OUTPUT or var.NAME")))?;
    if a.is_empty() || b.is_empty() || b.contains('.') {
        return Err(err(format!("`{w}` is not STEP.OUTPUT or var.NAME")));
    }
    Ok(if a == "var" { Ref::Var(b.into()) } else { Ref::Step { step: a.into(), output: b.into() } })
}

impl Cond {
    pub fn parse(text: &str) -> Result<Cond, CondError> {
        let toks = tokens(text)?;
        if toks.is_empty() {
            return Err(err("empty condition"));
        }
        let mut any = vec![Vec::new()];
        let mut i = 0;
        loop {
            let mut negate = false;
            while toks.get(i).map(String::as_str) == Some("not") {
                negate = !negate;
                i += 1;
            }
            let w = toks.get(i).ok_or_else(|| err("condition ends where a reference was expected"))?;
            if w.starts_with('\'') || matches!(w.as_str(), "and" | "or" | "==" | "!=") {
                return Err(err(format!(
                    "expected STEP.OUTPUT or var.NAME, found `{}`",
                    w.trim_start_matches('\'')
                )));
            }
            let reference = reference(w)?;
            i += 1;
            let mut compare = None;
            if let Some(op) = toks.get(i).filter(|t| *t == "==" || *t == "!=") {
                let eq = op == "==";
                let v = toks.get(i + 1).ok_or_else(|| err(format!("`{op}` needs a value")))?;
                compare = Some((eq, v.trim_start_matches('\'').to_owned()));
                i += 2;
            }
            any.last_mut().expect("one group").push(Term { negate, reference, compare });
            match toks.get(i).map(String::as_str) {
                None => break,
                Some("and") => i += 1,
                Some("or") => {
                    any.push(Vec::new());
                    i += 1;
                }
                Some(other) => return Err(err(format!("expected `and` or `or`, found `{other}`"))),
            }
        }
        Ok(Cond { text: text.to_owned(), any })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Every reference, for the checker.
    pub fn references(&self) -> impl Iterator<Item = &Ref> {
        self.any.iter().flatten().map(|t| &t.reference)
    }

    /// Evaluates against earlier steps' outputs and the run's variables. An output of a step that did not
    /// run is `null` (false).
    pub fn eval(
        &self,
        outputs: &BTreeMap<String, serde_json::Value>,
        vars: &BTreeMap<String, String>,
    ) -> bool {
        self.any.iter().any(|all| {
            all.iter().all(|t| {
                let v = match &t.reference {
                    Ref::Step { step, output } => {
                        outputs.get(step).and_then(|o| o.get(output)).cloned().unwrap_or_default()
                    }
                    Ref::Var(n) => {
                        vars.get(n).map(|s| serde_json::Value::String(s.clone())).unwrap_or_default()
                    }
                };
                let r = match &t.compare {
                    None => truthy(&v),
                    Some((eq, lit)) => (text_of(&v) == *lit) == *eq,
                };
                r != t.negate
            })
        })
    }
}

fn text_of(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn truthy(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        serde_json::Value::String(s) => !s.is_empty() && s != "false",
        serde_json::Value::Null => false,
        _ => true,
    }
}

/// The `{{name}}` references in a template, with their byte offsets in it.
pub fn template_refs(s: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut rest = s;
    let mut base = 0;
    while let Some(i) = rest.find("{{") {
        let Some(j) = rest[i + 2..].find("}}") else { break };
        out.push((base + i, rest[i + 2..i + 2 + j].trim().to_owned()));
        base += i + 2 + j + 2;
        rest = &rest[i + 2 + j + 2..];
    }
    out
}

/// Replaces every `{{name}}` with its value; unknown names are an error naming them.
pub fn render(s: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        let Some(j) = rest[i + 2..].find("}}") else { break };
        let name = rest[i + 2..i + 2 + j].trim();
        let v = vars.get(name).ok_or_else(|| format!("unknown variable `{{{{{name}}}}}`"))?;
        out.push_str(&rest[..i]);
        out.push_str(v);
        rest = &rest[i + 2 + j + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn conditions_parse_and_evaluate() {
        let mut out = BTreeMap::new();
        out.insert("verify".to_owned(), json!({ "passed": false, "verdict": "fail", "ok": true }));
        let vars = BTreeMap::from([("mode".to_owned(), "shut".to_owned())]);
        let t = |s: &str| Cond::parse(s).unwrap().eval(&out, &vars);
        assert!(!t("verify.passed"));
        assert!(t("not verify.passed"));
        assert!(t("verify.verdict == 'fail'"));
        assert!(t("verify.verdict != \"pass\" and var.mode == shut"));
        assert!(t("verify.passed or verify.ok"));
        assert!(!t("verify.passed or other.ok"), "a step that did not run is false");
        assert!(Cond::parse("verify").is_err());
        assert!(Cond::parse("verify.passed and").is_err());
        assert!(Cond::parse("a.b c.d").is_err());
        assert!(Cond::parse("a.b == 'x").is_err());
    }

    #[test]
    fn templates_render_and_name_unknowns() {
        let vars = BTreeMap::from([("target".to_owned(), "n1".to_owned())]);
        assert_eq!(render("drain {{ target }} now", &vars).unwrap(), "drain n1 now");
        assert!(render("{{nope}}", &vars).unwrap_err().contains("nope"));
        assert_eq!(template_refs("a {{x}} b {{ y }}"), vec![(2, "x".to_owned()), (10, "y".to_owned())]);
    }

    proptest! {
        #[test]
        fn parsing_never_panics(s in "\\PC{0,40}") {
            let _ = Cond::parse(&s);
            let _ = template_refs(&s);
            let _ = render(&s, &BTreeMap::new());
        }

        #[test]
        fn text_without_braces_renders_unchanged(s in "[^{}]{0,40}") {
            prop_assert_eq!(render(&s, &BTreeMap::new()).unwrap(), s);
        }
    }
}
