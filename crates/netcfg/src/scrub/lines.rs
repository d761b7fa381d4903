//! Line-oriented configs (IOS, NX-OS, EOS, NVUE, ifupdown2 + FRR): the platform's rules, then the
//! fail-closed fallback pass, line by line, every non-secret byte kept.
//!
//! Why one pass per line with the section header in hand: IOS-style configs indent a section's lines
//! under its header, and a rule may hold only inside one section (`key 7 S` under `tacacs server X`).

use std::sync::LazyLock;

use lifeline_types::Platform;

use super::fallback::{self, Mode, Reason};
use super::grammar::{Pattern, Span, tokens};
use super::rules::{self, BlockRule, LineRule, RuleSet};
use super::tag::{TagKey, is_mask};
use super::{Kind, Masked, MaskedBy, Place};

struct CompiledLine {
    kind: Kind,
    section: Option<Pattern>,
    pattern: Pattern,
}

struct CompiledBlock {
    kind: Kind,
    section: Option<Pattern>,
    start: Pattern,
    end: Pattern,
}

pub(super) struct Compiled {
    safe: Vec<CompiledLine>,
    lines: Vec<CompiledLine>,
    blocks: Vec<CompiledBlock>,
}

fn compile(set: &RuleSet) -> Compiled {
    let p = |s| Pattern::parse(s).unwrap_or_else(|e| panic!("{e}"));
    let line = |r: &LineRule| CompiledLine { kind: r.kind, section: r.section.map(p), pattern: p(r.pattern) };
    Compiled {
        safe: set.safe.iter().flat_map(|c| c.iter()).map(line).collect(),
        lines: set.lines.iter().flat_map(|c| c.iter()).map(line).collect(),
        blocks: set
            .blocks
            .iter()
            .map(|b: &BlockRule| CompiledBlock {
                kind: b.kind,
                section: b.section.map(p),
                start: p(b.start),
                end: p(b.end),
            })
            .collect(),
    }
}

static IOS: LazyLock<Compiled> = LazyLock::new(|| compile(&rules::IOS));
static NXOS: LazyLock<Compiled> = LazyLock::new(|| compile(&rules::NXOS));
static EOS: LazyLock<Compiled> = LazyLock::new(|| compile(&rules::EOS));
static NVUE: LazyLock<Compiled> = LazyLock::new(|| compile(&rules::NVUE));

pub(super) fn compiled(platform: Platform) -> Option<&'static Compiled> {
    match platform {
        Platform::Ios => Some(&IOS),
        Platform::Nxos => Some(&NXOS),
        Platform::Eos => Some(&EOS),
        Platform::Cumulus => Some(&NVUE),
        Platform::Sonic => None,
    }
}

fn split_eol(line: &str) -> (&str, &str) {
    let body = line.trim_end_matches(['\n', '\r']);
    (body, &line[body.len()..])
}

pub(super) fn scrub_lines(config: &str, rules: &Compiled, key: &TagKey, report: &mut Vec<Masked>) -> String {
    let mut out = String::with_capacity(config.len());
    // The current top-level section header (IOS/EOS/NX-OS indent a section's lines under it).
    let mut section: Option<(String, Vec<Span>)> = None;
    let mut in_block: Option<&CompiledBlock> = None;
    // Inside a banner: the text that ends it.
    let mut banner: Option<String> = None;
    for (n, line) in config.split_inclusive('\n').enumerate() {
        let n = n + 1;
        let (body, eol) = split_eol(line);
        let toks = tokens(body);
        let indented = body.starts_with([' ', '\t']);
        if let Some(end) = &banner {
            // Banner text is prose for people: only values that look like secrets are masked.
            if body.trim() == end || (end != "EOF" && body.contains(end.as_str())) {
                banner = None;
            }
            let spans = fallback::scan(body, &toks, &[], Mode::Values).into_iter().map(|(sp, w)| (sp, by(w)));
            out.push_str(&mask_spans(body, spans.collect(), key, n, report));
            out.push_str(eol);
            continue;
        }
        if !indented && toks.first().is_some_and(|&(s, e)| body[s..e].eq_ignore_ascii_case("banner")) {
            banner = banner_end(body, &toks);
        }
        if let Some(b) = in_block {
            if b.end.matches(body, &toks).is_some() {
                in_block = None;
                out.push_str(line);
            } else if toks.is_empty() {
                out.push_str(line);
            } else {
                // Every byte of a key or certificate body is secret: keep only the indentation.
                let secret = &body[toks[0].0..];
                out.push_str(&body[..toks[0].0]);
                if is_mask(secret) {
                    out.push_str(secret);
                } else {
                    out.push_str(&key.mask(secret));
                    report.push(Masked {
                        at: Place::Line(n),
                        by: MaskedBy::Rule(b.kind),
                        tag: key.mask(secret),
                    });
                }
                out.push_str(eol);
            }
            continue;
        }
        if !indented && !toks.is_empty() {
            section = Some((body.to_owned(), toks.clone()));
        }
        let in_section = |p: &Option<Pattern>| match (p, &section) {
            (None, _) => true,
            (Some(p), Some((head, htoks))) => indented && p.matches(head, htoks).is_some(),
            (Some(_), None) => false,
        };
        if rules.safe.iter().any(|r| in_section(&r.section) && r.pattern.matches(body, &toks).is_some()) {
            out.push_str(line);
            continue;
        }
        if let Some(b) =
            rules.blocks.iter().find(|b| in_section(&b.section) && b.start.matches(body, &toks).is_some())
        {
            in_block = Some(b);
            out.push_str(line);
            continue;
        }
        let owner = rules
            .lines
            .iter()
            .filter(|r| in_section(&r.section))
            .find_map(|r| r.pattern.matches(body, &toks).map(|spans| (r, spans)));
        let mut spans: Vec<(Span, MaskedBy)> = Vec::new();
        match &owner {
            // A rule without a secret declares the line safe.
            Some((r, s)) if s.is_empty() && !r.pattern.has_secret() => {}
            Some((r, s)) => {
                spans.extend(s.iter().map(|&sp| (sp, MaskedBy::Rule(r.kind))));
                let found = fallback::scan(body, &toks, s, Mode::Unmistakable);
                spans.extend(found.into_iter().map(|(sp, why)| (sp, by(why))));
            }
            None => {
                let mode = if banner.is_some() { Mode::Values } else { Mode::Full };
                spans
                    .extend(fallback::scan(body, &toks, &[], mode).into_iter().map(|(sp, why)| (sp, by(why))))
            }
        }
        out.push_str(&mask_spans(body, spans, key, n, report));
        out.push_str(eol);
    }
    out
}

/// Where a banner that starts on this line ends: IOS/NX-OS `banner motd ^C…^C` (a delimiter, possibly
/// on the same line), EOS `banner login` (the text runs to a line `EOF`); `None` if it ends here.
fn banner_end(body: &str, toks: &[Span]) -> Option<String> {
    match toks.get(2) {
        None if toks.len() == 2 => Some("EOF".into()),
        None => None,
        Some(&(s, _)) => {
            let rest = &body[s..];
            let delim: String = if rest.starts_with('^') {
                rest.chars().take(2).collect()
            } else {
                rest.chars().take(1).collect()
            };
            (!rest[delim.len()..].contains(delim.as_str())).then_some(delim)
        }
    }
}

fn by(why: Reason) -> MaskedBy {
    MaskedBy::Fallback(why)
}

/// `body` with each span replaced by its tag (an empty span, or one already masked, stays as it is).
pub(super) fn mask_spans(
    body: &str,
    mut spans: Vec<(Span, MaskedBy)>,
    key: &TagKey,
    line: usize,
    report: &mut Vec<Masked>,
) -> String {
    if spans.is_empty() {
        return body.to_owned();
    }
    spans.sort_by_key(|(s, _)| *s);
    let mut out = String::with_capacity(body.len());
    let mut at = 0;
    for ((start, end), why) in spans {
        if start < at {
            continue;
        }
        out.push_str(&body[at..start]);
        let secret = &body[start..end];
        if secret.is_empty() || is_mask(secret) || empty_quotes(secret) {
            out.push_str(secret);
        } else {
            let tag = key.mask(secret);
            out.push_str(&tag);
            report.push(Masked { at: Place::Line(line), by: why, tag });
        }
        at = end;
    }
    out.push_str(&body[at..]);
    out
}

/// `''` / `""`: an empty value written quoted (a user without a password must not look like one with).
fn empty_quotes(s: &str) -> bool {
    s == "''" || s == "\"\""
}
