//! Links a BMC hands us (`@odata.id`, `Members@odata.nextLink`, `Location`, `ServerSentEventUri`) are
//! resolved against the BMC's base URL before anything is fetched. Properties, for any link and any page
//! chain:
//! - a resolved link stays on the BMC (same scheme, host and port), never carries a `#fragment`, and
//!   resolving it again gives the same URL;
//! - paging through `nextLink`s (as the client's `members` does: resolve, read the page's members, follow
//!   the next link, at most `MAX_PAGES`) never leaves the BMC and counts every member of every page read.
//!
//! Input: `LINK \0 PAGE-JSON \0 PAGE-JSON ...`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lifeline_redfish::fuzzing::resolve_link;
use lifeline_redfish::model;
use reqwest::Url;
use serde_json::Value;

const BASES: &[&str] = &["https://127.0.0.1/", "https://[::1]:8443/redfish/v1/", "http://bmc-01.mgmt:8000/"];
const MAX_PAGES: usize = 8;

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

fn check(base: &Url, link: &str) -> Option<Url> {
    let u = resolve_link("fuzz-bmc", base, link).ok()?;
    assert!(same_origin(&u, base), "{link:?} left {base} for {u}");
    assert!(u.fragment().is_none(), "{u} keeps a fragment");
    let again = resolve_link("fuzz-bmc", base, u.as_str()).expect("a resolved link resolves again");
    assert_eq!(again, u, "resolving is not idempotent");
    Some(u)
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|b| *b == 0);
    let link = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let pages: Vec<Value> = parts.map(|p| serde_json::from_slice(p).unwrap_or(Value::Null)).collect();
    for b in BASES {
        let base = Url::parse(b).expect("base URLs parse");
        let _ = check(&base, &link);
        // Paging from the first page, following nextLinks through the fuzzed pages in order.
        let mut warnings = Vec::new();
        let mut total = 0;
        let mut expected = 0;
        for (i, page) in pages.iter().take(MAX_PAGES).enumerate() {
            let (members, next) = model::collection_members(page, &format!("/page/{i}"), &mut warnings);
            total += members.len();
            expected += page.get("Members").and_then(Value::as_array).map_or(0, Vec::len);
            for m in &members {
                if let Some(id) = m.get("@odata.id").and_then(Value::as_str) {
                    let _ = check(&base, id);
                }
            }
            match next {
                Some(n) if check(&base, &n).is_some() => {}
                _ => break,
            }
        }
        assert_eq!(total, expected, "members lost while paging");
    }
});
