//! Following a collection's `@odata.nextLink` pages. Kept apart from the HTTP client, generic over how a
//! page is fetched, so that the very loop the client runs is what the fuzz target drives with BMC-made
//! page chains (cycles, self-links, broken pages), not a copy of it.

use std::collections::HashSet;
use std::future::Future;

use serde_json::Value;

use crate::doc::FieldWarning;
use crate::model;

/// What paging through a collection gave.
#[derive(Debug)]
pub struct Paged {
    /// Members of every page read, in order (at most `max` plus the rest of the page that crossed it).
    pub members: Vec<Value>,
    pub warnings: Vec<FieldWarning>,
    /// Pages read, the first included.
    pub pages: usize,
    /// Pages left unread because `max` members were already there.
    pub unread_pages: bool,
}

/// Reads the members of `first` (the collection at `link`) and follows its next links through `fetch`,
/// until there is none, `max` members are in hand, `max_pages` pages were read, or a link comes back that
/// was already read (a BMC whose last page points at the first would otherwise be re-read until
/// `max_pages`). A page that cannot be fetched ends the listing with a warning, not an error: the members
/// already read are still good.
pub async fn follow_pages<F, Fut>(first: &Value, link: &str, max: usize, max_pages: usize, fetch: F) -> Paged
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<(Value, Vec<FieldWarning>), String>>,
{
    follow_pages_until(first, link, max, max_pages, fetch, |_| false).await
}

/// [`follow_pages`] that also stops once `stop` says the members read so far are enough (a log listed
/// newest first, read back to where it was read last time).
pub async fn follow_pages_until<F, Fut, S>(
    first: &Value,
    link: &str,
    max: usize,
    max_pages: usize,
    mut fetch: F,
    stop: S,
) -> Paged
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<(Value, Vec<FieldWarning>), String>>,
    S: Fn(&[Value]) -> bool,
{
    let mut warnings = Vec::new();
    let (mut members, mut next) = model::collection_members(first, link, &mut warnings);
    let mut ids: HashSet<String> = members.iter().filter_map(member_id).map(str::to_owned).collect();
    let mut seen: HashSet<String> = HashSet::from([link.to_owned()]);
    let mut pages = 1;
    let mut unread_pages = false;
    while let Some(n) = next.take() {
        if members.len() >= max {
            unread_pages = true;
            break;
        }
        if stop(&members) {
            break;
        }
        if !seen.insert(n.clone()) {
            warnings.push(FieldWarning {
                at: link.to_owned(),
                problem: format!("page {n} links back to a page already read"),
            });
            break;
        }
        if pages >= max_pages {
            warnings
                .push(FieldWarning { at: link.to_owned(), problem: format!("stopped after {pages} pages") });
            break;
        }
        match fetch(n.clone()).await {
            Ok((d, notes)) => {
                warnings.extend(notes);
                let (m, nx) = model::collection_members(&d, &n, &mut warnings);
                pages += 1;
                // A service that ignores the page's query (`$skip`: sushy-static, the simulator's replay of
                // a capture that holds the first page only, some BMCs) serves the first page again: its
                // members are not new entries, and the rest of the collection cannot be read.
                if !m.is_empty() && m.iter().all(|x| member_id(x).is_some_and(|id| ids.contains(id))) {
                    warnings.push(FieldWarning {
                        at: n,
                        problem:
                            "next page repeats members already read (the service ignored the page's query)"
                                .to_owned(),
                    });
                    break;
                }
                ids.extend(m.iter().filter_map(member_id).map(str::to_owned));
                members.extend(m);
                next = nx;
            }
            Err(e) => warnings.push(FieldWarning { at: n, problem: format!("next page unreadable: {e}") }),
        }
    }
    Paged { members, warnings, pages, unread_pages }
}

fn member_id(m: &Value) -> Option<&str> {
    m.get("@odata.id").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page(ids: &[&str], next: Option<&str>) -> Value {
        let members: Vec<Value> = ids.iter().map(|i| json!({ "@odata.id": i })).collect();
        match next {
            Some(n) => json!({ "Members": members, "Members@odata.nextLink": n }),
            None => json!({ "Members": members }),
        }
    }

    fn run(first: Value, max: usize, max_pages: usize, pages: Vec<(&str, Value)>) -> (Paged, Vec<String>) {
        let mut fetched = Vec::new();
        let out = futures::executor::block_on(follow_pages(&first, "/c", max, max_pages, |n| {
            fetched.push(n.clone());
            let found = pages.iter().find(|(l, _)| *l == n).map(|(_, v)| (v.clone(), Vec::new()));
            async move { found.ok_or_else(|| format!("404 {n}")) }
        }));
        (out, fetched)
    }

    #[test]
    fn reads_every_page_once() {
        let (p, fetched) =
            run(page(&["/a"], Some("/c?p=2")), usize::MAX, 20, vec![("/c?p=2", page(&["/b", "/c1"], None))]);
        assert_eq!(p.members.len(), 3);
        assert_eq!((p.pages, fetched.len()), (2, 1));
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn a_page_cycle_is_read_once_and_reported() {
        let (p, fetched) =
            run(page(&["/a"], Some("/c?p=2")), usize::MAX, 20, vec![("/c?p=2", page(&["/b"], Some("/c")))]);
        assert_eq!(fetched, vec!["/c?p=2"]);
        assert_eq!(p.members.len(), 2);
        assert!(p.warnings.iter().any(|w| w.problem.contains("already read")), "{:?}", p.warnings);
    }

    #[test]
    fn stops_at_the_page_limit_and_at_max_members() {
        let chain: Vec<(String, Value)> = (2..40)
            .map(|i| (format!("/c?p={i}"), page(&[&format!("/m{i}")], Some(&format!("/c?p={}", i + 1)))))
            .collect();
        let chain: Vec<(&str, Value)> = chain.iter().map(|(l, v)| (l.as_str(), v.clone())).collect();
        let (p, fetched) = run(page(&["/m"], Some("/c?p=2")), usize::MAX, 5, chain.clone());
        assert_eq!((p.pages, fetched.len()), (5, 4));
        assert!(p.warnings.iter().any(|w| w.problem == "stopped after 5 pages"));
        let (p, fetched) = run(page(&["/m"], Some("/c?p=2")), 3, 20, chain);
        assert_eq!((p.members.len(), fetched.len()), (3, 2));
        assert!(p.unread_pages);
    }

    #[test]
    fn a_page_served_again_for_the_next_one_ends_the_listing_without_duplicates() {
        let first = page(&["/a", "/b"], Some("/c?$skip=2"));
        let (p, fetched) = run(first.clone(), usize::MAX, 20, vec![("/c?$skip=2", first)]);
        assert_eq!(fetched, vec!["/c?$skip=2"]);
        assert_eq!(p.members.len(), 2);
        assert!(p.warnings.iter().any(|w| w.problem.contains("repeats members")), "{:?}", p.warnings);
    }

    #[test]
    fn stops_where_the_caller_has_enough() {
        let chain: Vec<(String, Value)> = (2..10)
            .map(|i| (format!("/c?p={i}"), page(&[&format!("/m{i}")], Some(&format!("/c?p={}", i + 1)))))
            .collect();
        let chain: Vec<(&str, Value)> = chain.iter().map(|(l, v)| (l.as_str(), v.clone())).collect();
        let first = page(&["/m1"], Some("/c?p=2"));
        let mut fetched = Vec::new();
        let p = futures::executor::block_on(follow_pages_until(
            &first,
            "/c",
            usize::MAX,
            20,
            |n| {
                fetched.push(n.clone());
                let found = chain.iter().find(|(l, _)| *l == n).map(|(_, v)| (v.clone(), Vec::new()));
                async move { found.ok_or_else(|| format!("404 {n}")) }
            },
            |ms| ms.iter().any(|m| m["@odata.id"] == "/m3"),
        ));
        assert_eq!(fetched, ["/c?p=2", "/c?p=3"], "no page past the one holding /m3");
        assert!(!p.unread_pages);
        assert_eq!(p.members.len(), 3);
    }

    #[test]
    fn an_unreadable_page_keeps_what_was_read() {
        let (p, _) = run(page(&["/a", "/b"], Some("/gone")), usize::MAX, 20, vec![]);
        assert_eq!(p.members.len(), 2);
        assert!(p.warnings.iter().any(|w| w.at == "/gone" && w.problem.contains("404")));
    }
}
