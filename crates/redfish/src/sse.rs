//! Server-Sent Events parser (pure, incremental).
//!
//! Why our own: Redfish `ServerSentEventUri` streams are long-lived and come from BMCs we do not trust to
//! behave; the parser must bound memory (an event that never ends must not grow without limit), accept all
//! three line endings, and give the same events however the bytes are chunked. It does no I/O so it can be
//! property-tested; the client feeds it (see `Client::event_stream`).

use serde::Serialize;

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SseEvent {
    /// `event:` field (empty means the default `message`).
    pub event: String,
    /// `data:` lines joined with `\n`.
    pub data: String,
    /// Last `id:` seen (persists across events, as the spec says).
    pub id: Option<String>,
    /// `retry:` in milliseconds, if this event carried one.
    pub retry: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("an event grew beyond {limit} bytes without ending")]
    EventTooLarge { limit: usize },
}

/// Incremental parser: `push` bytes as they arrive, get complete events back.
#[derive(Debug)]
pub struct SseParser {
    max_event_bytes: usize,
    line: Vec<u8>,
    /// Previous chunk ended in `\r`: a following `\n` belongs to that line ending.
    skip_lf: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: Option<String>,
    retry: Option<u64>,
    pending_bytes: usize,
    first_line: bool,
    /// The limit was exceeded: nothing more is parsed (set once events completed before it were returned).
    failed: Option<SseError>,
}

impl SseParser {
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            max_event_bytes,
            line: Vec::new(),
            skip_lf: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
            last_id: None,
            retry: None,
            pending_bytes: 0,
            first_line: true,
            failed: None,
        }
    }

    /// Events completed by `bytes`. When an event outgrows the limit, the events completed before it in the
    /// same bytes are still returned (a valid alert must not be lost because junk followed it in one read);
    /// the error then comes from [`SseParser::failure`] and from every later `push`.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut out = Vec::new();
        for &b in bytes {
            if self.skip_lf {
                self.skip_lf = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\r' => {
                    self.skip_lf = true;
                    self.end_line(&mut out);
                }
                b'\n' => self.end_line(&mut out),
                _ => {
                    self.line.push(b);
                    self.pending_bytes += 1;
                    if self.pending_bytes > self.max_event_bytes {
                        let e = SseError::EventTooLarge { limit: self.max_event_bytes };
                        self.failed = Some(e.clone());
                        return if out.is_empty() { Err(e) } else { Ok(out) };
                    }
                }
            }
        }
        Ok(out)
    }

    /// Why the parser stopped, once an event outgrew the limit.
    pub fn failure(&self) -> Option<&SseError> {
        self.failed.as_ref()
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let raw = std::mem::take(&mut self.line);
        let mut line = String::from_utf8_lossy(&raw).into_owned();
        if self.first_line {
            self.first_line = false;
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_owned();
            }
        }
        if line.is_empty() {
            if self.has_data {
                let mut data = std::mem::take(&mut self.data);
                if data.ends_with('\n') {
                    data.pop();
                }
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data,
                    id: self.last_id.clone(),
                    retry: self.retry.take(),
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            self.pending_bytes = 0;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f.to_owned(), v.strip_prefix(' ').unwrap_or(v).to_owned()),
            None => (line.clone(), String::new()),
        };
        match field.as_str() {
            "event" => self.event = value,
            "data" => {
                self.data.push_str(&value);
                self.data.push('\n');
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = Some(value),
            "retry" if !value.is_empty() && value.bytes().all(|c| c.is_ascii_digit()) => {
                self.retry = value.parse().ok()
            }
            _ => {}
        }
    }
}

/// Encode events in the wire format (used by tests and by anyone serving SSE in-process).
pub fn encode(events: &[SseEvent]) -> String {
    let mut s = String::new();
    for e in events {
        if !e.event.is_empty() {
            s.push_str(&format!("event: {}\n", e.event));
        }
        if let Some(id) = &e.id {
            s.push_str(&format!("id: {id}\n"));
        }
        if let Some(r) = e.retry {
            s.push_str(&format!("retry: {r}\n"));
        }
        for line in e.data.split('\n') {
            s.push_str(&format!("data: {line}\n"));
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spec_examples() {
        let mut p = SseParser::new(1 << 16);
        let text = ": comment\r\ndata: first\r\ndata:second\r\n\r\nevent: alert\nid: 7\ndata\n\nretry: 500\rdata: x\r\r";
        let ev = p.push(text.as_bytes()).unwrap();
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[0].data, "first\nsecond");
        assert_eq!(ev[1].event, "alert");
        assert_eq!(ev[1].id.as_deref(), Some("7"));
        assert_eq!(ev[1].data, "");
        assert_eq!(ev[2].retry, Some(500));
        assert_eq!(ev[2].id.as_deref(), Some("7"), "id persists");
    }

    #[test]
    fn bounded_event_size() {
        let mut p = SseParser::new(10);
        assert_eq!(p.push(b"data: 12345678901234"), Err(SseError::EventTooLarge { limit: 10 }));
        let mut p = SseParser::new(10);
        // Many small events within the limit each.
        for _ in 0..100 {
            assert_eq!(p.push(b"data: abc\n\n").unwrap().len(), 1);
        }
    }

    fn event() -> impl Strategy<Value = SseEvent> {
        (
            "[a-zA-Z]{0,8}",
            proptest::collection::vec("[^\r\n]{0,20}", 1..4),
            proptest::option::of("[a-z0-9]{1,6}"),
            proptest::option::of(0u64..100_000),
        )
            .prop_map(|(event, lines, id, retry)| SseEvent {
                event,
                data: lines.join("\n"),
                id,
                retry,
            })
    }

    proptest! {
        #[test]
        fn encode_then_parse_round_trips(events in proptest::collection::vec(event(), 0..6)) {
            let mut p = SseParser::new(1 << 20);
            let got = p.push(encode(&events).as_bytes()).unwrap();
            // The parser carries `id` forward, the encoder only writes it when set: compare with that rule.
            let mut last = None;
            let want: Vec<SseEvent> = events.iter().map(|e| {
                if e.id.is_some() { last = e.id.clone(); }
                // A data value starting with a space loses exactly one leading space on the wire ("data:  x").
                SseEvent { id: last.clone(), ..e.clone() }
            }).collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn chunking_does_not_matter(bytes in proptest::collection::vec(any::<u8>(), 0..400), cut in proptest::collection::vec(0usize..400, 0..8)) {
            let mut whole = SseParser::new(1 << 20);
            let a = whole.push(&bytes).unwrap();
            let mut cuts: Vec<usize> = cut.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort();
            let mut pieces = SseParser::new(1 << 20);
            let mut b = Vec::new();
            let mut start = 0;
            for c in cuts.into_iter().chain([bytes.len()]) {
                b.extend(pieces.push(&bytes[start..c]).unwrap());
                start = c;
            }
            prop_assert_eq!(a, b);
        }

        #[test]
        fn never_panics_and_respects_limit(bytes in proptest::collection::vec(any::<u8>(), 0..2000), limit in 1usize..64) {
            let mut p = SseParser::new(limit);
            if let Ok(events) = p.push(&bytes) {
                for e in events {
                    prop_assert!(e.data.len() <= limit * 3 + 4, "event of {} bytes passed a {} byte limit", e.data.len(), limit);
                }
            }
        }
    }
}
