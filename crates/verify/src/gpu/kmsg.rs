//! XIDs since boot from the kernel log.
//!
//! NVML's critical-XID events only report what happens while we wait, but an XID 79 logged an hour ago
//! (before the recovery) matters just as much; the NVIDIA driver logs every XID to the kernel ring buffer as
//! `NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus.`, so we read `/dev/kmsg`.

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// An XID line: (PCI domain, bus, device), code, rest of the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XidLine {
    pub pci: (u32, u8, u8),
    pub code: u64,
    pub message: String,
}

/// Parses one kernel log record (a `/dev/kmsg` record `prio,seq,ts,flags;text` or plain dmesg text).
pub fn parse_xid(record: &str) -> Option<XidLine> {
    let text = record.split_once(';').map_or(record, |(_, t)| t);
    let rest = &text[text.find("NVRM: Xid (")? + "NVRM: Xid (".len()..];
    let (id, rest) = rest.split_once("):")?;
    let id = id.strip_prefix("PCI:").unwrap_or(id);
    let pci = parse_pci(id)?;
    let rest = rest.trim_start();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let code = digits.parse().ok()?;
    let message = rest[digits.len()..].trim_start_matches(',').trim().lines().next().unwrap_or("").to_owned();
    Some(XidLine { pci, code, message })
}

/// Parses `0000:18:00` or NVML's `00000000:18:00.0` into (domain, bus, device).
pub fn parse_pci(id: &str) -> Option<(u32, u8, u8)> {
    let mut parts = id.trim().split(':');
    let domain = u32::from_str_radix(parts.next()?, 16).ok()?;
    let bus = u8::from_str_radix(parts.next()?, 16).ok()?;
    let dev = parts.next()?;
    let dev = dev.split('.').next()?;
    let dev = u8::from_str_radix(dev, 16).ok()?;
    if parts.next().is_some() {
        return None;
    }
    Some((domain, bus, dev))
}

/// Reads every record currently in the kernel ring buffer without blocking.
pub fn read_kmsg(path: &Path) -> std::io::Result<Vec<String>> {
    let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.push(String::from_utf8_lossy(&buf[..n]).into_owned()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            // A record overwritten while we read (EPIPE): skip it and go on.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) => return Err(e),
        }
        if out.len() > 1_000_000 {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_driver_lines() {
        let x = parse_xid("4,1234,5678,-;NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.")
            .unwrap();
        assert_eq!(x.pci, (0, 0x18, 0));
        assert_eq!(x.code, 79);
        assert_eq!(x.message, "pid=0, GPU has fallen off the bus.");
        assert_eq!(parse_pci("00000000:DB:00.0"), Some((0, 0xdb, 0)));
        assert!(parse_xid("eth0: link up").is_none());
    }

    proptest! {
        #[test]
        fn never_panics(s in "(?s).{0,120}") {
            let _ = parse_xid(&s);
            let _ = parse_xid(&format!("NVRM: Xid ({s}"));
            let _ = parse_pci(&s);
        }
    }
}
