//! One console's scanner: bytes in (as the link delivers them), findings out.
//!
//! Per console it holds the splitter's partial line (bounded), the few captures `context` rules remember
//! for their next lines, and the kernel-start times inside the boot-loop window (bounded by
//! `boot_loop.boots`). Every complete line goes through the rule set's `RegexSet` with `is_match` first
//! (no allocation: most console lines are ordinary); only a line that matches pays for the captures.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::lines::{Line, LineSplitter};
use super::rules::{FindingKind, RuleSet, Severity};

/// Longest line text a finding carries.
const MAX_FINDING_LINE: usize = 512;

/// Something a console said that matters.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// The rule's id (`boot-loop` for the scanner's own finding).
    #[serde(serialize_with = "ser_str")]
    pub rule: Arc<str>,
    pub kind: FindingKind,
    pub severity: Severity,
    /// When the line's last byte arrived.
    pub ts: DateTime<Utc>,
    /// The cleaned line (escapes removed, at most 512 bytes).
    pub line: String,
    /// Named captures of the rule, filled from the same line's other matches and remembered context;
    /// `pci` normalised to lowercase `dddd:bb:dd`.
    pub fields: BTreeMap<String, String>,
}

fn ser_str<S: serde::Serializer>(v: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v)
}

impl Finding {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    /// The NVIDIA Xid number, for `gpu-xid` findings.
    pub fn xid(&self) -> Option<u32> {
        self.field("xid")?.parse().ok()
    }

    /// The GPU's (or NIC's) PCI address as `dddd:bb:dd`.
    pub fn pci(&self) -> Option<&str> {
        self.field("pci")
    }
}

/// Scans one console's output. Not shared: one per console, fed in order.
#[derive(Debug)]
pub struct ConsoleScanner {
    lines: LineSplitter,
    state: State,
}

#[derive(Debug)]
struct State {
    rules: Arc<RuleSet>,
    /// (field, value, lines it is still valid for), from context rules.
    context: Vec<(String, String, u32)>,
    boots: VecDeque<DateTime<Utc>>,
    lines_scanned: u64,
}

impl ConsoleScanner {
    pub fn new(rules: Arc<RuleSet>) -> ConsoleScanner {
        ConsoleScanner::with_splitter(rules, LineSplitter::default())
    }

    pub fn with_splitter(rules: Arc<RuleSet>, lines: LineSplitter) -> ConsoleScanner {
        ConsoleScanner {
            lines,
            state: State { rules, context: Vec::new(), boots: VecDeque::new(), lines_scanned: 0 },
        }
    }

    /// Feeds a chunk received at `ts`; findings of the lines it completes are appended to `out`.
    pub fn feed(&mut self, ts: DateTime<Utc>, chunk: &[u8], out: &mut Vec<Finding>) {
        let state = &mut self.state;
        self.lines.feed(chunk, |l| state.scan(ts, l, out));
    }

    /// Scans one complete line (already split; escapes are not removed here).
    pub fn scan_line(&mut self, ts: DateTime<Utc>, line: &str, out: &mut Vec<Finding>) {
        self.state.scan(ts, Line { bytes: line.as_bytes(), truncated: false }, out);
    }

    /// The link dropped: the partial line is not continued by what comes next.
    pub fn link_lost(&mut self) {
        self.lines.reset();
        self.state.context.clear();
    }

    /// Complete lines scanned so far.
    pub fn lines_scanned(&self) -> u64 {
        self.state.lines_scanned
    }

    /// Bytes held between lines (partial line, remembered context, boot times): the per-console cost.
    pub fn held_bytes(&self) -> usize {
        self.lines.pending()
            + self.state.context.iter().map(|(k, v, _)| k.len() + v.len()).sum::<usize>()
            + self.state.boots.len() * std::mem::size_of::<DateTime<Utc>>()
    }
}

fn normalise(name: &str, value: &str) -> String {
    if name == "pci" { value.to_ascii_lowercase() } else { value.trim().to_owned() }
}

impl State {
    fn scan(&mut self, ts: DateTime<Utc>, line: Line<'_>, out: &mut Vec<Finding>) {
        self.lines_scanned += 1;
        // Context ages by one line whether or not this line matches.
        self.context.retain_mut(|(_, _, left)| {
            *left = left.saturating_sub(1);
            *left > 0
        });
        let text = String::from_utf8_lossy(line.bytes);
        // Most lines hold none of the rules' literals: one SIMD literal scan and done.
        if let Some(p) = &self.rules.prefilter
            && !p.is_match(&text)
        {
            return;
        }
        if !self.rules.set.is_match(&text) {
            return;
        }
        let rules = self.rules.clone();
        // Captures of every rule that matched this line, in rule order.
        let mut hits: Vec<(usize, BTreeMap<String, String>)> = Vec::new();
        for i in rules.set.matches(&text).iter() {
            let rule = &rules.rules[i];
            let Some(caps) = rule.regex.captures(&text) else { continue };
            let mut fields = BTreeMap::new();
            for name in rule.regex.capture_names().flatten() {
                if let Some(m) = caps.name(name) {
                    fields.insert(name.to_owned(), normalise(name, m.as_str()));
                }
            }
            if rule.kind == FindingKind::Context {
                for (k, v) in &fields {
                    self.context.retain(|(ck, _, _)| ck != k);
                    // +1: the ageing at the start of the next line must leave `remember_lines` lines.
                    self.context.push((k.clone(), v.clone(), rule.remember_lines + 1));
                }
            }
            hits.push((i, fields));
        }
        let line_text: String = {
            let mut end = text.len().min(MAX_FINDING_LINE);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text[..end].to_owned()
        };
        let start = out.len();
        for (i, own) in &hits {
            let rule = &rules.rules[*i];
            if rule.kind == FindingKind::Context {
                continue;
            }
            let mut fields = own.clone();
            // A field this rule names but did not capture: from another match on this line, else context.
            for name in rule.regex.capture_names().flatten() {
                if fields.contains_key(name) {
                    continue;
                }
                let same_line = hits.iter().find_map(|(_, f)| f.get(name));
                let remembered = self.context.iter().find(|(k, _, _)| k == name).map(|(_, v, _)| v);
                if let Some(v) = same_line.or(remembered) {
                    fields.insert(name.to_owned(), v.clone());
                }
            }
            let severity = rule.severity_for(|f| fields.get(f).cloned());
            out.push(Finding {
                rule: rule.id.clone(),
                kind: rule.kind,
                severity,
                ts,
                line: line_text.clone(),
                fields,
            });
        }
        let booted = out[start..].iter().any(|f| f.kind == FindingKind::Boot);
        if booted {
            self.boot(ts, &line_text, out);
        }
    }

    fn boot(&mut self, ts: DateTime<Utc>, line: &str, out: &mut Vec<Finding>) {
        let Some(bl) = self.rules.boot_loop else { return };
        let window = chrono::Duration::from_std(bl.window).unwrap_or(chrono::Duration::MAX);
        while self.boots.front().is_some_and(|t| ts.signed_duration_since(*t) > window) {
            self.boots.pop_front();
        }
        self.boots.push_back(ts);
        if self.boots.len() >= bl.boots as usize {
            let first = self.boots.front().copied().unwrap_or(ts);
            let mut fields = BTreeMap::new();
            fields.insert("boots".to_owned(), self.boots.len().to_string());
            fields.insert("seconds".to_owned(), ts.signed_duration_since(first).num_seconds().to_string());
            fields.insert("window_secs".to_owned(), bl.window.as_secs().to_string());
            out.push(Finding {
                rule: Arc::from("boot-loop"),
                kind: FindingKind::BootLoop,
                severity: Severity::Critical,
                ts,
                line: line.to_owned(),
                fields,
            });
            self.boots.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).expect("ts")
    }

    #[test]
    fn three_kernel_starts_in_the_window_are_a_boot_loop_and_slow_reboots_are_not() {
        let mut s = ConsoleScanner::new(RuleSet::builtin());
        let mut out = Vec::new();
        let banner =
            b"[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) #45-Ubuntu SMP\r\n";
        for t in [0, 2000, 4000] {
            s.feed(at(t), banner, &mut out);
        }
        assert!(out.iter().all(|f| f.kind == FindingKind::Boot), "{out:?}");
        out.clear();
        for t in [5000, 5100, 5200] {
            s.feed(at(t), banner, &mut out);
        }
        let loops: Vec<&Finding> = out.iter().filter(|f| f.kind == FindingKind::BootLoop).collect();
        assert_eq!(loops.len(), 1, "{out:?}");
        assert_eq!(loops[0].field("boots"), Some("3"));
        assert_eq!(loops[0].field("seconds"), Some("200"));
        assert_eq!(loops[0].severity, Severity::Critical);
    }

    #[test]
    fn context_fills_a_later_line_and_expires() {
        let mut s = ConsoleScanner::new(RuleSet::builtin());
        let mut out = Vec::new();
        s.feed(at(0), b"[ 1843.308145] NVRM: The NVIDIA GPU 0000:B3:00.0\n", &mut out);
        assert!(out.is_empty(), "a context rule raises nothing: {out:?}");
        s.feed(at(0), b"    NVRM: (PCI ID: 10de:26b5) installed in this system has\n", &mut out);
        s.feed(at(0), b"    NVRM: fallen off the bus and is not responding to commands.\n", &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].pci(), Some("0000:b3:00"));
        out.clear();
        for _ in 0..5 {
            s.feed(at(1), b"unrelated\n", &mut out);
        }
        s.feed(at(1), b"NVRM: fallen off the bus and is not responding to commands.\n", &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].pci(), None, "context must expire: {out:?}");
    }

    #[test]
    fn memory_held_per_console_is_bounded() {
        let mut s = ConsoleScanner::new(RuleSet::builtin());
        let mut out = Vec::new();
        let junk = vec![b'z'; 1 << 20];
        s.feed(at(0), &junk, &mut out);
        assert!(s.held_bytes() <= super::super::lines::DEFAULT_MAX_LINE + 64, "{}", s.held_bytes());
        s.feed(at(0), b"\n", &mut out);
        assert!(s.held_bytes() < 64);
    }
}
