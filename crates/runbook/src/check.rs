//! Turns a runbook file into a [`Runbook`], reporting **every** problem at once as FILE:LINE:COL.
//!
//! The file is parsed into TOML's span-keeping tree (`DeTable::parse_recoverable`, as the inventory check
//! does) and walked by hand: which keys a step may have depends on its `kind`, and a hand walk reports an
//! unknown or misplaced key, a bad value and a dangling reference in one pass without serde's
//! untagged/flatten machinery, which loses locations and stops at the first error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use lifeline_inventory::{Diagnostic, Severity, SourceMap};
use lifeline_types::Role;
use sha2::Digest;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::cond::{Cond, Ref, template_refs};
use crate::model::*;

#[path = "check_script.rs"]
mod script;
use script::{console_script, untemplated};
#[path = "check_params.rs"]
mod params;
use crate::params::Slot;

/// The outcome of checking one file.
#[derive(Debug)]
pub struct Checked {
    pub diagnostics: Vec<Diagnostic>,
    /// Present when there were no errors.
    pub runbook: Option<Runbook>,
}

impl Checked {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }
}

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "targets",
    "fault",
    "touches",
    "never-touches",
    "worst-case",
    "params",
    "step",
    "verify",
];
const STEP_KEYS: &[&str] =
    &["name", "kind", "description", "when", "on-failure", "goto", "timeout", "approve"];
/// Variables every run has besides its parameters.
/// `fault` and `fault-kind`: the fault record that started the run (empty for a run started by hand).
pub const BUILTIN_VARS: &[&str] = &["target", "run", "runbook", "fault", "fault-kind"];

type Val<'a> = Spanned<DeValue<'a>>;

struct Cx {
    map: SourceMap,
    diags: Vec<Diagnostic>,
    /// Reading a run's stored copy: rules added after it was written (typed parameters, a required
    /// post-condition) do not make it unreadable.
    stored: bool,
}

impl Cx {
    fn err(&mut self, offset: usize, msg: impl Into<String>) {
        self.diags.push(self.map.error(offset, msg));
    }

    fn string(&mut self, v: &Val<'_>, what: &str) -> Option<String> {
        match v.get_ref().as_str() {
            Some(s) => Some(s.to_owned()),
            None => {
                self.err(
                    v.span().start,
                    format!("`{what}` must be a string, found {}", v.get_ref().type_str()),
                );
                None
            }
        }
    }

    fn boolean(&mut self, v: &Val<'_>, what: &str) -> Option<bool> {
        let b = v.get_ref().as_bool();
        if b.is_none() {
            self.err(
                v.span().start,
                format!("`{what}` must be true or false, found {}", v.get_ref().type_str()),
            );
        }
        b
    }

    fn duration(&mut self, v: &Val<'_>, what: &str) -> Option<Duration> {
        let s = self.string(v, what)?;
        match humantime::parse_duration(&s) {
            Ok(d) => Some(d),
            Err(e) => {
                self.err(v.span().start, format!("`{what}`: `{s}` is not a duration ({e}; e.g. 30s, 5m)"));
                None
            }
        }
    }

    fn strings(&mut self, v: &Val<'_>, what: &str) -> Option<Vec<(usize, String)>> {
        let Some(a) = v.get_ref().as_array() else {
            self.err(
                v.span().start,
                format!("`{what}` must be an array of strings, found {}", v.get_ref().type_str()),
            );
            return None;
        };
        let mut out = Vec::new();
        for item in a.iter() {
            out.push((item.span().start, self.string(item, what)?));
        }
        Some(out)
    }
}

/// One string argument with where it is and what it is used as, kept for the reference checks.
struct Arg {
    at: usize,
    text: String,
    slot: Slot,
}

/// Checks runbook text as if read from `file`. The file must be named after the runbook.
pub fn check_str(file: &Path, text: &str) -> Checked {
    check_text(file, text, false)
}

/// Reads a run's stored copy of its runbook (see [`Cx::stored`]).
pub fn check_stored(file: &Path, text: &str) -> Checked {
    check_text(file, text, true)
}

fn check_text(file: &Path, text: &str, stored: bool) -> Checked {
    let mut cx = Cx { map: SourceMap::new(file, text), diags: Vec::new(), stored };
    let (root, syntax) = DeTable::parse_recoverable(text);
    for e in syntax {
        let at = e.span().map_or(0, |s| s.start);
        cx.err(at, format!("syntax error: {}", e.message().trim()));
    }
    let root = root.into_inner();
    let mut top: BTreeMap<String, Val<'_>> = BTreeMap::new();
    for (k, v) in root.iter() {
        let key = k.get_ref().to_string();
        if TOP_KEYS.contains(&key.as_str()) {
            top.insert(key, v.clone());
        } else {
            cx.err(k.span().start, format!("unknown key `{key}` (expected one of: {})", TOP_KEYS.join(", ")));
        }
    }
    let need = |cx: &mut Cx, key: &str| -> Option<String> {
        match top.get(key) {
            Some(v) => cx.string(v, key),
            None => {
                cx.err(0, format!("missing `{key}`"));
                None
            }
        }
    };
    let name = need(&mut cx, "name");
    let description = need(&mut cx, "description");
    let fault = need(&mut cx, "fault");
    let touches = need(&mut cx, "touches");
    let never_touches = need(&mut cx, "never-touches");
    let worst_case = need(&mut cx, "worst-case");
    if let (Some(n), Some(v)) = (&name, top.get("name")) {
        if n.is_empty() || !n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
            cx.err(v.span().start, format!("`name` `{n}`: lowercase letters, digits and `-` only"));
        }
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        if file.extension().is_some_and(|e| e == "toml") && stem != n {
            cx.err(
                v.span().start,
                format!("runbook `{n}` must be in a file named `{n}.toml`, not `{stem}.toml`"),
            );
        }
    }
    let mut targets = Vec::new();
    match top.get("targets") {
        None => cx.err(0, "missing `targets` (the roles it applies to, e.g. [\"gpu-node\"])"),
        Some(v) => {
            for (at, s) in cx.strings(v, "targets").unwrap_or_default() {
                match s.parse::<Role>() {
                    Ok(r) => targets.push(r),
                    Err(e) => cx.err(at, format!("`targets`: {e}")),
                }
            }
        }
    }
    let params = params::params(&mut cx, top.get("params"));
    let main_steps = steps(&mut cx, top.get("step"), &params, false);
    let post = match top.get("verify") {
        Some(v) => steps(&mut cx, Some(v), &params, true),
        None if cx.stored => Vec::new(),
        None => {
            cx.err(
                0,
                "missing `[[verify]]`: a runbook needs at least one post-condition (a read-only check that proves the fault is gone, e.g. `kind = \"fault-cleared\"` or a `wait-for` on the boot or the management port)",
            );
            Vec::new()
        }
    };
    let step_names: BTreeSet<&str> = main_steps.iter().map(|s| s.name.as_str()).collect();
    for p in &post {
        if step_names.contains(p.name.as_str()) {
            cx.err(0, format!("post-condition `{}` has the name of a step; pick another", p.name));
        }
    }
    let mut diagnostics = cx.diags;
    diagnostics.sort_by_key(|d| (d.line, d.col));
    diagnostics.dedup();
    let ok = !diagnostics.iter().any(|d| d.severity == Severity::Error);
    let runbook = match (ok, name, description, fault, touches, never_touches, worst_case) {
        (
            true,
            Some(name),
            Some(description),
            Some(fault),
            Some(touches),
            Some(never_touches),
            Some(worst_case),
        ) => Some(Runbook {
            name,
            description,
            targets,
            fault,
            touches,
            never_touches,
            worst_case,
            params,
            steps: main_steps,
            post,
            digest: format!("sha256:{}", hex::encode(sha2::Sha256::digest(text.as_bytes()))),
        }),
        _ => None,
    };
    Checked { diagnostics, runbook }
}

fn steps(cx: &mut Cx, v: Option<&Val<'_>>, params: &[Param], post: bool) -> Vec<Step> {
    let table = if post { "verify" } else { "step" };
    let Some(v) = v else {
        cx.err(0, "missing `[[step]]`: a runbook needs at least one step");
        return Vec::new();
    };
    let Some(items) = v.get_ref().as_array() else {
        cx.err(v.span().start, format!("`{table}` must be an array of tables (`[[{table}]]`)"));
        return Vec::new();
    };
    let vars: BTreeMap<String, String> = params
        .iter()
        .map(|p| (p.name.clone(), p.default.clone()))
        .chain(BUILTIN_VARS.iter().map(|b| ((*b).to_owned(), String::new())))
        .collect();
    let names: Vec<(usize, Option<String>)> = items
        .iter()
        .map(|it| {
            let n = it.get_ref().as_table().and_then(|t| t.get("name")).and_then(|n| n.get_ref().as_str());
            (it.span().start, n.map(str::to_owned))
        })
        .collect();
    let all_names: BTreeSet<String> = names.iter().filter_map(|(_, n)| n.clone()).collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(t) = item.get_ref().as_table() else {
            cx.err(item.span().start, format!("each `{table}` must be a table"));
            continue;
        };
        let earlier: BTreeSet<String> = names[..i].iter().filter_map(|(_, n)| n.clone()).collect();
        let known = Known { vars: &vars, params, earlier: &earlier, all: &all_names, post };
        if let Some(s) = step(cx, item.span().start, t, &known) {
            if !seen.insert(s.name.clone()) {
                cx.err(item.span().start, format!("step name `{}` is used twice", s.name));
            }
            out.push(s);
        }
    }
    out
}

/// What a step may refer to.
struct Known<'a> {
    /// Parameter defaults and the built-in variables.
    vars: &'a BTreeMap<String, String>,
    params: &'a [Param],
    earlier: &'a BTreeSet<String>,
    all: &'a BTreeSet<String>,
    /// A post-condition (`[[verify]]`): read-only kinds, no `when`, no approval.
    post: bool,
}

fn step(cx: &mut Cx, at: usize, t: &DeTable<'_>, k: &Known<'_>) -> Option<Step> {
    let (vars, earlier, all) = (k.vars, k.earlier, k.all);
    let get = |k: &str| t.get(k);
    let name = match get("name") {
        Some(v) => cx.string(v, "name"),
        None => {
            cx.err(at, "step without a `name`");
            None
        }
    };
    let label = name.clone().unwrap_or_else(|| "?".into());
    let kind = match get("kind") {
        None => {
            cx.err(at, format!("step `{label}` has no `kind` (one of: {})", kinds()));
            None
        }
        Some(v) => cx.string(v, "kind").and_then(|k| match Kind::ALL.iter().find(|(s, _)| *s == k) {
            Some((_, kind)) => Some(*kind),
            None => {
                cx.err(v.span().start, format!("unknown step kind `{k}` (expected one of: {})", kinds()));
                None
            }
        }),
    };
    for (k, _) in t.iter() {
        let key = k.get_ref().as_ref();
        let ok = STEP_KEYS.contains(&key) || kind.is_none_or(|kd| kd.keys().contains(&key));
        if !ok {
            let kd = kind.map(Kind::as_str).unwrap_or_default();
            let hint = Kind::ALL
                .iter()
                .find(|(_, x)| x.keys().contains(&key))
                .map(|(s, _)| format!(" (it belongs to `{s}` steps)"))
                .unwrap_or_default();
            cx.err(k.span().start, format!("unknown key `{key}` in `{kd}` step `{label}`{hint}"));
        }
    }
    if k.post {
        if let Some(kd) = kind
            && !Kind::POST.contains(&kd)
        {
            let allowed = Kind::POST.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ");
            cx.err(at, format!("post-condition `{label}`: a `{}` step acts; `[[verify]]` takes read-only kinds ({allowed})", kd.as_str()));
        }
        for key in ["when", "approve", "goto"] {
            if let Some(v) = get(key) {
                cx.err(
                    v.span().start,
                    format!("post-condition `{label}` takes no `{key}`: it always runs, after the last step"),
                );
            }
        }
    } else if kind == Some(Kind::FaultCleared) {
        cx.err(at, format!("step `{label}`: `fault-cleared` is a post-condition; put it in `[[verify]]`"));
    }
    let mut args: Vec<Arg> = Vec::new();
    let mut arg = |cx: &mut Cx, key: &str, required: bool| -> Option<String> {
        match get(key) {
            Some(v) => {
                let s = cx.string(v, key)?;
                let slot = match key {
                    "tcp" | "ssh" | "url" | "image" => Slot::Address,
                    "served-image" => Slot::ServedImage,
                    "switch" | "node" | "to" => Slot::DeviceName,
                    _ => Slot::Argument,
                };
                args.push(Arg { at: v.span().start, text: s.clone(), slot });
                Some(s)
            }
            None if required => {
                cx.err(at, format!("step `{label}` needs `{key}`"));
                None
            }
            None => None,
        }
    };
    let resolved = |s: &str| crate::cond::render(s, vars).ok();
    // A value from a fixed set: a variable there must be an `enum` whose every value is in the set, so no
    // `--var` can reach the step with a value it does not take.
    let one_of = |cx: &mut Cx, key: &str, s: &Option<String>, allowed: &[&str]| {
        let (Some(s), Some(v)) = (s, get(key)) else { return };
        let refs = template_refs(s);
        for (_, n) in &refs {
            match k.params.iter().find(|p| &p.name == n) {
                Some(p) => match &p.ty {
                    crate::params::ParamType::Enum { values } => {
                        for val in values.iter().filter(|x| !allowed.contains(&x.as_str())) {
                            cx.err(
                                v.span().start,
                                format!("`{key}` takes `{{{{{n}}}}}`, whose value `{val}` it does not accept (expected one of: {})", allowed.join(", ")),
                            );
                        }
                    }
                    other => cx.err(
                        v.span().start,
                        format!(
                            "`{key}` takes `{{{{{n}}}}}` of type {}: it must be an `enum` of {}",
                            other.name(),
                            allowed.join(", ")
                        ),
                    ),
                },
                None if BUILTIN_VARS.contains(&n.as_str()) => {
                    cx.err(v.span().start, format!("`{key}` cannot take the built-in `{{{{{n}}}}}`"))
                }
                None => {}
            }
        }
        if refs.is_empty() && !allowed.contains(&s.as_str()) {
            cx.err(v.span().start, format!("`{key}` `{s}` (expected one of: {})", allowed.join(", ")));
        }
    };
    let op = match kind? {
        Kind::Power => {
            let action = arg(cx, "action", true);
            one_of(cx, "action", &action, &["on", "off", "cycle", "reset", "soft"]);
            Op::Power { action: action? }
        }
        Kind::BmcReset => {
            let protocol = arg(cx, "protocol", false);
            one_of(cx, "protocol", &protocol, &["auto", "redfish", "ipmi"]);
            Op::BmcReset { protocol }
        }
        Kind::WaitFor => {
            let present: Vec<(&str, WaitWhat)> = [
                ("power", WaitWhat::Power),
                ("bmc", WaitWhat::Bmc),
                ("tcp", WaitWhat::Tcp),
                ("ssh", WaitWhat::Ssh),
                ("scheduler", WaitWhat::Scheduler),
                ("console", WaitWhat::Console),
                ("boot", WaitWhat::Boot),
            ]
            .into_iter()
            .filter(|(k, _)| get(k).is_some())
            .collect();
            if present.len() != 1 {
                cx.err(
                    at,
                    format!("`wait-for` step `{label}` needs exactly one of power, bmc, tcp, ssh, scheduler, console, boot"),
                );
            }
            if let Some(v) = get("pattern") {
                match cx.string(v, "pattern") {
                    Some(_) if get("boot").is_none() => {
                        cx.err(v.span().start, "`pattern` goes with `boot` (the login prompt to look for)")
                    }
                    Some(p) => {
                        if let Err(e) = regex::Regex::new(&p) {
                            cx.err(
                                v.span().start,
                                format!("`pattern` is not a valid regular expression: {e}"),
                            );
                        }
                    }
                    None => {}
                }
            }
            let interval = get("interval")
                .and_then(|v| cx.duration(v, "interval"))
                .map(|d| humantime::format_duration(d).to_string());
            let (key, what) = *present.first()?;
            let value = arg(cx, key, true);
            match what {
                WaitWhat::Power => one_of(cx, key, &value, &["on", "off"]),
                WaitWhat::Boot => one_of(cx, key, &value, &["os-running"]),
                WaitWhat::Bmc => one_of(cx, key, &value, &["reachable", "redfish", "ipmi", "both"]),
                WaitWhat::Scheduler => {
                    one_of(cx, key, &value, &["responding", "drained", "drained-by-lifeline", "in-service"])
                }
                WaitWhat::Console => {
                    if let (Some(p), Some(v)) = (&value, get(key))
                        && let Err(e) = regex::Regex::new(&untemplated(p))
                    {
                        cx.err(v.span().start, format!("`console` is not a valid regular expression: {e}"));
                    }
                }
                WaitWhat::Tcp | WaitWhat::Ssh => {
                    if let (Some(s), Some(v)) = (&value, get(key))
                        && let Some(r) = resolved(s)
                        && what == WaitWhat::Tcp
                        && !r.contains(':')
                        && r != "management"
                    {
                        cx.err(
                            v.span().start,
                            format!(
                                "`tcp` `{r}`: expected HOST:PORT (frontend:22, management:22 or an address) or `management` (its inventory port)"
                            ),
                        );
                    }
                }
            }
            let node = arg(cx, "node", false);
            let pattern = get("pattern").and_then(|v| v.get_ref().as_str().map(str::to_owned));
            Op::WaitFor { what, value: value?, node, interval, pattern }
        }
        Kind::Console => {
            let rescue = arg(cx, "rescue", false);
            one_of(cx, "rescue", &rescue, &["onie", "u-boot", "grub", "aboot"]);
            let bootloader_wait = get("bootloader-wait")
                .and_then(|v| cx.duration(v, "bootloader-wait"))
                .map(|d| humantime::format_duration(d).to_string());
            let script = match get("script") {
                Some(v) => {
                    let parsed = console_script(cx, v, &label);
                    for (a, text) in parsed.iter().flat_map(|(args, _)| args) {
                        args.push(Arg { at: *a, text: text.clone(), slot: Slot::Argument });
                    }
                    Some(parsed.map(|(_, steps)| steps))
                }
                None => None,
            };
            match (get("rescue").is_some(), &script) {
                (true, Some(_)) => {
                    cx.err(at, format!("console step `{label}` takes `rescue` or `script`, not both"))
                }
                (false, None) => cx.err(
                    at,
                    format!(
                        "console step `{label}` needs `rescue` (a bootloader) or `script` (expect/send steps)"
                    ),
                ),
                _ => {}
            }
            if get("rescue").is_some() && rescue.is_none() {
                return None;
            }
            Op::Console { rescue, bootloader_wait, script: script.unwrap_or(Some(Vec::new()))? }
        }
        Kind::Sel => {
            let pattern = arg(cx, "match", false);
            if let (Some(p), Some(v)) = (&pattern, get("match"))
                && let Err(e) = regex::Regex::new(p)
            {
                cx.err(v.span().start, format!("`match` is not a valid regular expression: {e}"));
            }
            let clear = get("clear").and_then(|v| cx.boolean(v, "clear")).unwrap_or(false);
            let newest = match get("newest") {
                Some(v) => match v
                    .get_ref()
                    .as_integer()
                    .and_then(|i| i.as_str().replace('_', "").parse::<usize>().ok())
                {
                    Some(n) if n > 0 => n,
                    _ => {
                        cx.err(v.span().start, "`newest` must be a positive integer");
                        50
                    }
                },
                None => 50,
            };
            Op::Sel { pattern, clear, newest }
        }
        Kind::Backup => Op::Backup { switch: arg(cx, "switch", false) },
        Kind::Restore => {
            let switch = arg(cx, "switch", false);
            let version = arg(cx, "version", false);
            if let (Some(s), Some(v)) = (&version, get("version"))
                && let Some(r) = resolved(s)
                && r != "last-good"
                && r != "latest"
                && r.parse::<u32>().is_err()
            {
                cx.err(
                    v.span().start,
                    format!("`version` `{r}`: expected last-good, latest or a version number"),
                );
            }
            let to = arg(cx, "to", false);
            let compare_only =
                get("compare-only").and_then(|v| cx.boolean(v, "compare-only")).unwrap_or(false);
            let require_equal =
                get("require-equal").and_then(|v| cx.boolean(v, "require-equal")).unwrap_or(false);
            if require_equal && !compare_only {
                cx.err(at, format!("step `{label}`: `require-equal` needs `compare-only = true`"));
            }
            let allow_scrubbed =
                get("allow-scrubbed").and_then(|v| cx.boolean(v, "allow-scrubbed")).unwrap_or(false);
            Op::Restore { switch, version, to, compare_only, require_equal, allow_scrubbed }
        }
        Kind::Drain => Op::Drain { reason: arg(cx, "reason", true)? },
        Kind::Verify => Op::Verify,
        Kind::Readmit => Op::Readmit,
        Kind::Notify => {
            let url = arg(cx, "url", true);
            if let (Some(u), Some(v)) = (&url, get("url"))
                && !u.starts_with("http://")
                && !u.starts_with("https://")
                && !u.starts_with("{{")
            {
                cx.err(v.span().start, format!("`url` `{u}`: expected an http:// or https:// URL"));
            }
            let message = arg(cx, "message", true);
            Op::Notify { url: url?, message: message? }
        }
        Kind::Media => {
            let action = arg(cx, "action", true);
            one_of(cx, "action", &action, &["insert", "eject"]);
            let image = arg(cx, "image", false);
            let served_image = arg(cx, "served-image", false);
            let boot_once = get("boot-once").and_then(|v| cx.boolean(v, "boot-once")).unwrap_or(false);
            match (action.as_deref(), &image, &served_image) {
                (Some("insert"), None, None) => cx.err(
                    at,
                    format!("step `{label}`: `action = \"insert\"` needs `image` (a URL) or `served-image`"),
                ),
                (Some("insert"), Some(_), Some(_)) => cx.err(
                    at,
                    format!(
                        "step `{label}`: give `image` (a URL) or `served-image` (a served file), not both"
                    ),
                ),
                (Some("eject"), i, s) if i.is_some() || s.is_some() => {
                    cx.err(at, format!("step `{label}`: `eject` takes no image"))
                }
                _ => {}
            }
            if let (Some(n), Some(v)) = (&served_image, get("served-image"))
                && !n.contains("{{")
                && !lifeline_engine::image_serve::library::plain_name(n)
            {
                cx.err(
                    v.span().start,
                    format!("`served-image` `{n}`: a served image is named by its file name alone (no '/' or '..')"),
                );
            }
            if let (Some(u), Some(v)) = (&image, get("image"))
                && !u.contains("{{")
                && let Err(e) = lifeline_engine::ops::media::MediaUrl::parse(u)
            {
                cx.err(v.span().start, format!("`image`: {e}"));
            }
            Op::Media { action: action?, image, served_image, boot_once }
        }
        Kind::FaultCleared => {
            let fault = arg(cx, "fault", false);
            one_of(cx, "fault", &fault, crate::model::FAULT_KINDS);
            Op::FaultCleared { fault }
        }
        Kind::SshBanner => {
            let ssh = arg(cx, "ssh", false).unwrap_or_else(|| "management".into());
            one_of(cx, "ssh", &Some(ssh.clone()), crate::ssh_banner::ADDRESSES);
            let expect = arg(cx, "expect", false).unwrap_or_else(|| crate::ssh_banner::PLATFORM.into());
            if let (Some(v), false, Err(e)) =
                (get("expect"), expect.contains("{{"), regex::Regex::new(&expect))
            {
                cx.err(v.span().start, format!("`expect` is not a valid regular expression: {e}"));
            }
            let interval = get("interval").and_then(|v| cx.duration(v, "interval"));
            Op::SshBanner {
                ssh,
                expect,
                interval: interval.map(|d| humantime::format_duration(d).to_string()),
            }
        }
        Kind::Exec => {
            let command = match get("command") {
                Some(v) => cx.strings(v, "command").map(|c| {
                    for (i, (a, s)) in c.iter().enumerate() {
                        let slot = if i == 0 { Slot::Program } else { Slot::Argument };
                        args.push(Arg { at: *a, text: s.clone(), slot });
                    }
                    c.into_iter().map(|(_, s)| s).collect::<Vec<_>>()
                }),
                None => {
                    cx.err(at, format!("step `{label}` needs `command` (an array: program and arguments)"));
                    None
                }
            };
            match command {
                Some(c) if c.is_empty() => {
                    cx.err(at, "`command` is empty");
                    None
                }
                other => other.map(|command| Op::Exec { command }),
            }?
        }
    };
    let when = get("when").and_then(|v| {
        let s = cx.string(v, "when")?;
        match Cond::parse(&s) {
            Ok(c) => {
                for r in c.references() {
                    match r {
                        Ref::Step { step, .. } if !earlier.contains(step) => {
                            let why = if all.contains(step) { "a later step" } else { "no such step" };
                            cx.err(
                                v.span().start,
                                format!(
                                    "`when` refers to `{step}`: {why} (only earlier steps' results are known)"
                                ),
                            );
                        }
                        Ref::Var(n) if !vars.contains_key(n) => {
                            cx.err(v.span().start, format!("`when` refers to unknown parameter `{n}`"))
                        }
                        _ => {}
                    }
                }
                Some(c)
            }
            Err(e) => {
                cx.err(v.span().start, format!("`when`: {e}"));
                None
            }
        }
    });
    for a in &args {
        for (off, n) in template_refs(&a.text) {
            // +1: the opening quote of the string.
            let here = a.at + 1 + off;
            if !vars.contains_key(&n) {
                cx.err(here, format!("unknown variable `{{{{{n}}}}}` (parameters: {})", known(vars)));
                continue;
            }
            let allowed = match k.params.iter().find(|p| p.name == n) {
                Some(p) => a.slot.allows(&p.ty),
                // `target` is a checked inventory device, `run` and `runbook` are Lifeline's own: they
                // may fill an argument or name a device, never pick a program or an address.
                None => matches!(a.slot, Slot::Argument | Slot::DeviceName),
            };
            if !allowed {
                cx.err(here, format!("`{{{{{n}}}}}` cannot be used here: {}", a.slot.describe()));
            }
        }
    }
    let goto = get("goto").and_then(|v| cx.string(v, "goto").map(|s| (v.span().start, s)));
    let on_failure = match get("on-failure") {
        None if k.post => OnFailure::Escalate,
        Some(v) if k.post => match cx.string(v, "on-failure").as_deref() {
            Some("stop") => OnFailure::Stop,
            Some("escalate") | None => OnFailure::Escalate,
            Some(other) => {
                cx.err(
                    v.span().start,
                    format!("`on-failure` `{other}` of a post-condition (expected stop (the run fails) or escalate)"),
                );
                OnFailure::Escalate
            }
        },
        None => {
            if let Some((gat, _)) = &goto {
                cx.err(*gat, "`goto` needs `on-failure = \"goto\"`");
            }
            OnFailure::Stop
        }
        Some(v) => match cx.string(v, "on-failure").as_deref() {
            Some("stop") => OnFailure::Stop,
            Some("continue") => OnFailure::Continue,
            Some("escalate") => OnFailure::Escalate,
            Some("goto") => match goto {
                Some((gat, g)) => {
                    if !all.contains(&g) {
                        cx.err(gat, format!("`goto` names no step: `{g}`"));
                    } else if Some(&g) == name.as_ref() {
                        cx.err(gat, "a step cannot `goto` itself");
                    }
                    OnFailure::Goto(g)
                }
                None => {
                    cx.err(v.span().start, "`on-failure = \"goto\"` needs `goto = \"STEP\"`");
                    OnFailure::Stop
                }
            },
            Some(other) => {
                cx.err(
                    v.span().start,
                    format!("`on-failure` `{other}` (expected one of: stop, continue, goto, escalate)"),
                );
                OnFailure::Stop
            }
            None => OnFailure::Stop,
        },
    };
    let timeout = get("timeout").and_then(|v| cx.duration(v, "timeout"));
    let approve = match get("approve") {
        None => false,
        Some(v) => match cx.string(v, "approve").as_deref() {
            Some("required") => true,
            Some("none") | None => false,
            Some(other) => {
                cx.err(v.span().start, format!("`approve` `{other}` (expected `required` or `none`)"));
                false
            }
        },
    };
    if let Some(d) = get("description") {
        cx.string(d, "description");
    }
    let kind = kind?;
    Some(Step {
        name: name?,
        kind,
        op,
        when,
        on_failure,
        timeout: timeout.unwrap_or(kind.default_timeout()),
        approve,
    })
}

fn kinds() -> String {
    Kind::ALL.iter().map(|(s, _)| *s).collect::<Vec<_>>().join(", ")
}

fn known(vars: &BTreeMap<String, String>) -> String {
    vars.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
}

/// Checks a file on disk.
pub fn check_file(path: &Path) -> Checked {
    match std::fs::read_to_string(path) {
        Ok(text) => check_str(path, &text),
        Err(e) => Checked {
            diagnostics: vec![Diagnostic {
                file: path.to_path_buf(),
                line: 1,
                col: 1,
                severity: Severity::Error,
                message: format!("cannot read: {e}"),
            }],
            runbook: None,
        },
    }
}
