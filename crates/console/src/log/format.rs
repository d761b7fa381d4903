//! The console log record: one text line per chunk received from the host, with its arrival time.
//!
//! Why text and escaped: logs must stay greppable and `less`-able at 3 a.m., one chunk per line keeps
//! timestamps exact without guessing where lines end, and escaping (`\r`, `\n`, `\e`, `\xNN`) makes every
//! byte round-trip (binary garbage on a console included). The parser is lenient: an odd line yields
//! `None` and the reader skips it instead of failing the whole log.
//!
//! ```text
//! 2026-11-21T02:01:05.123456Z o Booting `SONiC-OS'\r\n
//! 2026-11-21T02:01:09.500000Z m console link lost: keepalive failed; reconnecting
//! ```

use chrono::{DateTime, SecondsFormat, Utc};

/// What a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecordKind {
    /// Bytes the host printed.
    Output,
    /// Lifeline's own note (gap, reconnect, steal, writer change, break).
    Marker,
}

/// One log record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    pub ts: DateTime<Utc>,
    pub kind: RecordKind,
    pub data: Vec<u8>,
}

impl LogRecord {
    /// What `lifeline console log` prints: output as is, markers on their own line.
    pub fn render(&self) -> Vec<u8> {
        match self.kind {
            RecordKind::Output => self.data.clone(),
            RecordKind::Marker => format!(
                "\r\n[lifeline {}] {}\r\n",
                self.ts.to_rfc3339_opts(SecondsFormat::Millis, true),
                String::from_utf8_lossy(&self.data)
            )
            .into_bytes(),
        }
    }
}

/// Append `r` as one line (with its `\n`).
pub fn encode_record(r: &LogRecord, out: &mut Vec<u8>) {
    out.extend_from_slice(r.ts.to_rfc3339_opts(SecondsFormat::Micros, true).as_bytes());
    out.extend_from_slice(match r.kind {
        RecordKind::Output => b" o ",
        RecordKind::Marker => b" m ",
    });
    for &b in &r.data {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x1b => out.extend_from_slice(b"\\e"),
            0x20..=0x7e => out.push(b),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[b'\\', b'x', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
            }
        }
    }
    out.push(b'\n');
}

/// Parse one line (with or without its `\n`). `None` for lines that are not records.
pub fn parse_record(line: &[u8]) -> Option<LogRecord> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let sp = line.iter().position(|&b| b == b' ')?;
    let ts = std::str::from_utf8(&line[..sp]).ok()?;
    let ts = DateTime::parse_from_rfc3339(ts).ok()?.with_timezone(&Utc);
    // Records carry microseconds; finer input is truncated so a parsed record re-encodes identically.
    let ts = DateTime::from_timestamp_micros(ts.timestamp_micros())?;
    let rest = &line[sp + 1..];
    let (kind, payload) = match rest {
        [b'o', b' ', p @ ..] => (RecordKind::Output, p),
        [b'm', b' ', p @ ..] => (RecordKind::Marker, p),
        [b'o'] => (RecordKind::Output, &[][..]),
        [b'm'] => (RecordKind::Marker, &[][..]),
        _ => return None,
    };
    Some(LogRecord { ts, kind, data: unescape(payload) })
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Undo the escaping; unknown escapes are kept literally (lenient).
fn unescape(p: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        if p[i] != b'\\' || i + 1 >= p.len() {
            out.push(p[i]);
            i += 1;
            continue;
        }
        match p[i + 1] {
            b'\\' => out.push(b'\\'),
            b'r' => out.push(b'\r'),
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'e' => out.push(0x1b),
            b'x' => {
                if let (Some(h), Some(l)) =
                    (p.get(i + 2).and_then(|&b| hex(b)), p.get(i + 3).and_then(|&b| hex(b)))
                {
                    out.push(h << 4 | l);
                    i += 4;
                    continue;
                }
                out.extend_from_slice(b"\\x");
            }
            other => out.extend_from_slice(&[b'\\', other]),
        }
        i += 2;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    #[test]
    fn a_record_is_one_readable_line() {
        let r = LogRecord {
            ts: Utc.with_ymd_and_hms(2026, 11, 21, 2, 1, 5).unwrap()
                + chrono::Duration::microseconds(123_456),
            kind: RecordKind::Output,
            data: b"Booting `SONiC'\r\n\x1b[2J\\\xff".to_vec(),
        };
        let mut v = Vec::new();
        encode_record(&r, &mut v);
        assert_eq!(
            String::from_utf8(v.clone()).unwrap(),
            "2026-11-21T02:01:05.123456Z o Booting `SONiC'\\r\\n\\e[2J\\\\\\xff\n"
        );
        assert_eq!(parse_record(&v), Some(r));
        assert_eq!(parse_record(b"garbage"), None);
        assert_eq!(parse_record(b"2026-11-21T02:01:05Z x what"), None);
    }

    proptest! {
        #[test]
        fn encode_then_parse_round_trips(data in prop::collection::vec(any::<u8>(), 0..300),
                                         micros in 0i64..4_000_000_000_000_000, marker in any::<bool>()) {
            let ts = DateTime::from_timestamp_micros(micros).unwrap();
            let kind = if marker { RecordKind::Marker } else { RecordKind::Output };
            let r = LogRecord { ts, kind, data };
            let mut v = Vec::new();
            encode_record(&r, &mut v);
            prop_assert_eq!(v.iter().filter(|&&b| b == b'\n').count(), 1);
            prop_assert_eq!(parse_record(&v), Some(r));
        }

        #[test]
        fn parse_never_panics(line in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse_record(&line);
        }
    }
}
