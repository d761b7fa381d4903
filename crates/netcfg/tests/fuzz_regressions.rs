//! Inputs the fuzz targets (`crates/netcfg/fuzz`) found, kept as ordinary tests.

use lifeline_netcfg::{diff, text};

/// The `text` target's input as shell bytes (platform byte, split byte, then the bytes).
const DIFF_CRASH: &[u8] = &[
    0x01, 0x80, 0x00, 0x03, 0x00, 0x23, 0x42, 0x23, 0x00, 0x2d, 0x80, 0x23, 0xd9, 0xb0, 0xac, 0x9f, 0xd0,
    0xdf, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d,
    0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d,
    0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d,
    0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d,
    0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d,
    0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d,
    0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x65, 0x20, 0xc4, 0x23, 0x72,
];

/// `text`: the hunks of a diff between two texts made of lone carriage returns underflowed computing a
/// hunk's length (a panic in debug builds, a wrapped length in release).
#[test]
fn hunks_of_carriage_return_lines() {
    let raw = &DIFF_CRASH[2..];
    let pages: Vec<(usize, usize)> = raw
        .chunks(2)
        .take(4)
        .map(|c| (usize::from(c[0]), usize::from(c[0]) + usize::from(*c.last().unwrap_or(&0) % 16)))
        .collect();
    let s = String::from_utf8_lossy(&text::remove_pages(raw, &pages)).into_owned();
    let cut = usize::from(DIFF_CRASH[1]) * s.len() / 256;
    let cut = (0..=cut).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
    let (old, new) = s.split_at(cut);
    let hunks = diff::hunks(old, new);
    let first = &hunks[0];
    // `-1,4 +1,3`: the first line deleted, three carriage-return lines kept.
    assert_eq!((first.old_start, first.old_len, first.new_start, first.new_len), (1, 4, 1, 3));
    for h in &hunks {
        let old_lines = h.lines.iter().filter(|(k, _)| *k != diff::LineKind::Added).count();
        let new_lines = h.lines.iter().filter(|(k, _)| *k != diff::LineKind::Removed).count();
        assert_eq!((h.old_len, h.new_len), (old_lines, new_lines), "{h:?}");
    }
}

/// `text` (SONiC): a secret holding a raw tab made the config invalid JSON, so `canonical` kept it as text;
/// scrubbing then replaced the secret with `<removed>`, which made it valid JSON, and a second `normalise`
/// pretty-printed it: a stored version did not compare equal to itself normalised again.
#[test]
fn sonic_normalise_is_idempotent_when_scrubbing_makes_the_json_valid() {
    use lifeline_netcfg::driver_for;
    use lifeline_netcfg::platform::normalise;
    use lifeline_types::Platform;
    let d = driver_for(Platform::Sonic);
    let config = "{\n  \"DEVICE_METADATA\": {\"localhost\": {\"hostname\": \"leaf-sonic-1\"}},\n  \
                  \"TACPLUS\": {\"global\": {\"auth_type\": \"login\", \"passkey\": \"So\tnicTac01\"}}\n}\n";
    let key = lifeline_netcfg::scrub::TagKey::from_bytes([1; 32]);
    let once = normalise(d.as_ref(), config, &key);
    assert!(!once.contains("So\tnicTac01"), "secret kept: {once}");
    assert_eq!(normalise(d.as_ref(), &once, &key), once, "normalise is not idempotent");
}

/// `text` (SONiC): a 123-digit number canonicalised to `2.2222222222222226e+122`, which serde_json's default
/// (fast, not correctly rounded) float parser read back one ULP away, so a stored version did not compare
/// equal to itself canonicalised again (fixed by its `float_roundtrip` feature). The input is also a seed.
#[test]
fn sonic_long_numbers_canonicalise_once() {
    use lifeline_netcfg::driver_for;
    use lifeline_types::Platform;
    let d = driver_for(Platform::Sonic);
    let long = format!("{{\"A\": {}}}", "2".repeat(123));
    for config in [long.as_str(), r#"{"A": 1e2, "B": 0.1, "C": 18446744073709551616}"#] {
        let once = d.canonical(config);
        assert_eq!(d.canonical(&once), once, "{config}");
    }
}
