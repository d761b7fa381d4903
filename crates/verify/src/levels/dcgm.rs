//! `dcgmi diag -r N` results, from the text grid or the `-j` JSON.
//!
//! The text grid: section rows (`|-----  Deployment  ---+---|`, `+-----  Hardware  ---+---+`), result rows
//! `| GPU Memory | Fail - All |`, detail rows named `Info` / `Warning` that belong to the test above them,
//! `Error` rows (a diagnostic that could not even run its test, e.g. pending row remaps), and cells that
//! DCGM wraps mid-word onto rows with an empty first cell. The JSON: DCGM 2/3 print
//! `{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name", "results": [{"gpu_ids",
//! "status", "warnings", "info"}]}]}], "version"}}` (with `null` entries and, seen in DCGM's own tests,
//! text before the JSON); DCGM 4 prints `{"DCGM Diagnostic": ...}` with `entity_id` per result.

use serde_json::Value;

use super::{LevelError, first_line};

const TOOL: &str = "dcgmi diag";

/// One test's status as DCGM prints it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiagStatus {
    Pass,
    Fail,
    Warn,
    Skip,
    NotRun,
    /// A status word this parser does not know (kept, and never read as a pass).
    Other(String),
}

impl DiagStatus {
    fn parse(word: &str) -> DiagStatus {
        match word.trim().to_ascii_lowercase().as_str() {
            "pass" | "passed" => DiagStatus::Pass,
            "fail" | "failed" | "failure" => DiagStatus::Fail,
            "warn" | "warning" => DiagStatus::Warn,
            "skip" | "skipped" => DiagStatus::Skip,
            "not run" | "notrun" | "not_run" => DiagStatus::NotRun,
            other => DiagStatus::Other(other.to_owned()),
        }
    }
}

/// One test (or one GPU's result of a test, in the JSON).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DiagTest {
    pub category: String,
    pub name: String,
    pub status: DiagStatus,
    /// Which GPUs the status is for: `All`, `GPU 2`, `0,1,2` (text: after the dash; JSON: gpu_ids).
    pub gpus: Option<String>,
    /// Warning and Info text DCGM attached to the test.
    pub details: Vec<String>,
}

/// A parsed diagnostic run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DcgmDiag {
    pub version: Option<String>,
    pub driver: Option<String>,
    pub tests: Vec<DiagTest>,
    /// `Error` rows and JSON runtime errors: the diagnostic could not do (part of) its job.
    pub errors: Vec<String>,
}

/// Either form: JSON when the output holds a JSON object, else the text grid.
pub fn parse_dcgmi(output: &str) -> Result<DcgmDiag, LevelError> {
    if output.contains("{")
        && (output.contains("\"DCGM GPU Diagnostic\"") || output.contains("\"DCGM Diagnostic\""))
    {
        parse_dcgmi_json(output)
    } else {
        parse_dcgmi_text(output)
    }
}

fn cells(line: &str) -> Option<(String, String)> {
    let inner = line.trim().strip_prefix('|')?;
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let (name, value) = inner.split_once('|')?;
    // One pad space each side is DCGM's; a second leading space is a real space of a wrapped cell.
    let value = value.strip_prefix(' ').unwrap_or(value).trim_end();
    Some((name.trim().to_owned(), value.to_owned()))
}

/// `|-----  Hardware  -----+----|` or `+-----  Stress  ----+---+` → `Hardware`.
fn section(line: &str) -> Option<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').or_else(|| t.strip_prefix('+'))?;
    let first = t.split(['+', '|']).next()?;
    if !first.trim_start().starts_with("---") {
        return None;
    }
    let name = first.trim().trim_matches('-').trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// The text grid of `dcgmi diag`.
pub fn parse_dcgmi_text(output: &str) -> Result<DcgmDiag, LevelError> {
    if output.trim().is_empty() {
        return Err(LevelError::Empty { tool: TOOL });
    }
    let mut diag = DcgmDiag { version: None, driver: None, tests: Vec::new(), errors: Vec::new() };
    let mut category = String::new();
    let mut saw_grid = false;
    // Where a wrapped continuation goes: a test's detail, an error, a metadata value, or a status cell.
    enum Last {
        None,
        Detail(usize),
        Error,
        Meta,
    }
    let mut last = Last::None;
    let mut meta_key = String::new();
    for line in output.lines() {
        if let Some(s) = section(line) {
            category = s;
            last = Last::None;
            continue;
        }
        let Some((name, value)) = cells(line) else { continue };
        if name == "Diagnostic" && value.trim() == "Result" {
            saw_grid = true;
            continue;
        }
        if name.is_empty() {
            let piece = value.as_str();
            match last {
                Last::Detail(i) => {
                    if let Some(d) = diag.tests.get_mut(i).and_then(|t| t.details.last_mut()) {
                        d.push_str(piece);
                    }
                }
                Last::Error => {
                    if let Some(e) = diag.errors.last_mut() {
                        e.push_str(piece);
                    }
                }
                Last::Meta => {
                    let slot = match meta_key.as_str() {
                        "DCGM Version" => diag.version.as_mut(),
                        "Driver Version Detected" => diag.driver.as_mut(),
                        _ => None,
                    };
                    if let Some(s) = slot {
                        s.push_str(piece.trim());
                    }
                }
                Last::None => {}
            }
            continue;
        }
        let value = value.trim().to_owned();
        match name.as_str() {
            "Info" | "Warning" => {
                if let Some(i) = diag.tests.len().checked_sub(1) {
                    diag.tests[i].details.push(value);
                    last = Last::Detail(i);
                }
            }
            "Error" => {
                diag.errors.push(value);
                last = Last::Error;
            }
            _ if category.eq_ignore_ascii_case("Metadata") => {
                match name.as_str() {
                    "DCGM Version" => diag.version = Some(value),
                    "Driver Version Detected" => diag.driver = Some(value),
                    _ => {}
                }
                meta_key = name;
                last = Last::Meta;
            }
            _ => {
                let (status, gpus) = match value.split_once(" - ") {
                    Some((s, g)) => (s, Some(g.trim().to_owned())),
                    None => (value.as_str(), None),
                };
                diag.tests.push(DiagTest {
                    category: category.clone(),
                    name,
                    status: DiagStatus::parse(status),
                    gpus,
                    details: Vec::new(),
                });
                last = Last::None;
            }
        }
    }
    if !saw_grid && diag.tests.is_empty() && diag.errors.is_empty() {
        return Err(LevelError::Unparseable { tool: TOOL, what: "result grid", detail: first_line(output) });
    }
    if diag.tests.is_empty() && diag.errors.is_empty() {
        return Err(LevelError::Unparseable {
            tool: TOOL,
            what: "test results",
            detail: "the grid is empty".into(),
        });
    }
    Ok(diag)
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Object(o) => ["warning", "message", "info", "error"]
            .iter()
            .find_map(|k| o.get(*k).and_then(Value::as_str).map(str::to_owned)),
        _ => None,
    }
}

fn texts(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a.iter().filter_map(text_of).collect(),
        Some(other) => text_of(other).into_iter().collect(),
        None => Vec::new(),
    }
}

/// The `-j` JSON of `dcgmi diag` (anything before the first `{` is ignored).
pub fn parse_dcgmi_json(output: &str) -> Result<DcgmDiag, LevelError> {
    if output.trim().is_empty() {
        return Err(LevelError::Empty { tool: TOOL });
    }
    let start = output.find('{').ok_or_else(|| LevelError::Unparseable {
        tool: TOOL,
        what: "JSON object",
        detail: first_line(output),
    })?;
    let doc: Value = serde_json::Deserializer::from_str(&output[start..])
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .ok_or_else(|| LevelError::Unparseable {
            tool: TOOL,
            what: "valid JSON",
            detail: first_line(&output[start..]),
        })?;
    let root = ["DCGM GPU Diagnostic", "DCGM Diagnostic"].iter().find_map(|k| doc.get(*k)).unwrap_or(&doc);
    let mut diag = DcgmDiag {
        version: root.get("version").and_then(text_of),
        driver: root.get("Driver Version Detected").or_else(|| root.get("driver_version")).and_then(text_of),
        tests: Vec::new(),
        errors: texts(root.get("runtime_error")),
    };
    let categories = root.get("test_categories").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    for cat in categories {
        let category = cat.get("category").and_then(text_of).unwrap_or_default();
        for test in cat.get("tests").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
            let Some(name) = test.get("name").and_then(text_of) else { continue };
            let results = test.get("results").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
            for r in results.iter().filter(|r| r.is_object()) {
                let status = r.get("status").and_then(text_of).unwrap_or_default();
                let gpus = r.get("gpu_ids").or_else(|| r.get("entity_id")).and_then(text_of);
                let mut details = texts(r.get("warnings"));
                details.extend(texts(r.get("info")));
                diag.tests.push(DiagTest {
                    category: category.clone(),
                    name: name.clone(),
                    status: DiagStatus::parse(&status),
                    gpus,
                    details,
                });
            }
            // DCGM 4 puts a test-level summary beside (or instead of) per-entity results.
            if results.is_empty()
                && let Some(s) = test.get("test_summary").and_then(|s| s.get("status")).and_then(text_of)
            {
                diag.tests.push(DiagTest {
                    category: category.clone(),
                    name: name.clone(),
                    status: DiagStatus::parse(&s),
                    gpus: None,
                    details: Vec::new(),
                });
            }
        }
    }
    if diag.tests.is_empty() && diag.errors.is_empty() {
        return Err(LevelError::Unparseable {
            tool: TOOL,
            what: "test results",
            detail: format!("JSON with no test_categories/tests/results (version {:?})", diag.version),
        });
    }
    Ok(diag)
}
