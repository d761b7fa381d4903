//! Links a BMC hands us (`@odata.id`, `Members@odata.nextLink`, `Location`, `ServerSentEventUri`) are
//! resolved against the BMC's base URL before anything is fetched. Properties, for any link and any page
//! chain:
//! - a resolved link stays on the BMC (same scheme, host and port), never carries a `#fragment`, and
//!   resolving it again gives the same URL;
//! - the client's own paging loop (`follow_pages`, what `Client::members` runs) over a chain of fuzzed
//!   pages: every link it asks for resolves on the BMC, no link is fetched twice (a cycle ends the
//!   listing), at most `MAX_PAGES` pages are read, and every member of every page read is kept (a page
//!   that only repeats members already read ends the listing: the service ignored `$skip`).
//!
//! Input: `LINK \0 PAGE-JSON \0 PAGE-JSON ...`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lifeline_redfish::fuzzing::{follow_pages, resolve_link};
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
        // Paging from the first page, each fetch handing out the next fuzzed page, as a BMC would.
        let Some(first) = pages.first() else { continue };
        let mut asked: Vec<String> = vec!["/page/0".to_owned()];
        let mut served = 0;
        let paged = futures::executor::block_on(follow_pages(first, "/page/0", usize::MAX, MAX_PAGES, |n| {
            assert!(!asked.contains(&n), "{n} fetched twice");
            asked.push(n.clone());
            let resolved = check(&base, &n);
            let page = match resolved {
                Some(_) => pages.get(1 + served).cloned().ok_or_else(|| "404".to_owned()),
                None => Err("not on this BMC".to_owned()),
            };
            if page.is_ok() {
                served += 1;
            }
            async move { page.map(|p| (p, Vec::new())) }
        }));
        assert!(paged.pages <= MAX_PAGES, "{} pages read", paged.pages);
        assert_eq!(paged.pages, 1 + served, "pages counted and pages served differ");
        // Every member of every page read is kept, except a later page that only repeats members already
        // read (a service ignoring `$skip` serves its first page again): that page ends the listing.
        let id = |m: &Value| m.get("@odata.id").and_then(Value::as_str).map(str::to_owned);
        let mut ids = std::collections::HashSet::new();
        let mut expected = 0;
        for (i, p) in pages[..paged.pages].iter().enumerate() {
            let m = p.get("Members").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            let repeat = i > 0 && !m.is_empty() && m.iter().all(|x| id(x).is_some_and(|x| ids.contains(&x)));
            if repeat {
                assert_eq!(i + 1, paged.pages, "a page that repeats members ends the listing");
                break;
            }
            ids.extend(m.iter().filter_map(id));
            expected += m.len();
        }
        assert_eq!(paged.members.len(), expected, "members lost while paging");
        for m in &paged.members {
            if let Some(id) = m.get("@odata.id").and_then(Value::as_str) {
                let _ = check(&base, id);
            }
        }
    }
});
