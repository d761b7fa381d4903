//! Reading only what is new in an event log: the entries after the one a previous read ended on (its
//! mark), plus the newest `keep` for display, instead of the whole log every time.
//!
//! Why positional: the order a BMC lists a log in is its own (bmcweb and iDRAC newest first, HPE iLO 5 and
//! Cray oldest first), and what is new is what lies on the newer side of the mark in that order. The order
//! is read from the first page's numeric ids; a log whose order cannot be told, a mark that is not found
//! (the log was cleared, or the mark rotated out), or a service that does not honour `$skip` is read
//! whole, as without a mark, so the shortcut can cost a request but never an entry. A mark entry found
//! with another `Created` than the mark's is not the mark (a cleared log reusing ids).
//!
//! - Newest first: pages are followed (`@odata.nextLink`) until the page holding the mark, and no
//!   further.
//! - Oldest first, paged: the tail is read backwards with `$skip`/`$top` from `Members@odata.count`
//!   (DSP0266 "Query parameters"), one page at a time, until the page holding the mark; the first page
//!   (which says the count and the page size) is read anyway.
//! - One page: the members on the newer side of the mark are the only ones fetched where the collection
//!   lists bare links.
//!
//! Bounded as a whole read is: at most `max` members and the client's page limit; a read that runs out of
//! either before it reaches the mark says so (`more`), and the caller reports the log as not read to its
//! end.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Client, Listing, paging};
use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model;

/// Where a log was read up to: its newest entry then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryMark {
    /// The log service's `@odata.id`.
    pub log: String,
    /// The entry's `Id`.
    pub id: String,
    /// Its `Created`, when it had one.
    pub created: Option<DateTime<Utc>>,
}

/// How a log lists its entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    OldestFirst,
    NewestFirst,
}

/// A member's id: the document's `Id`, else its link's last segment.
fn member_id(m: &Value) -> Option<&str> {
    m.get("Id").and_then(Value::as_str).or_else(|| {
        let link = m.get("@odata.id").and_then(Value::as_str)?;
        link.trim_end_matches('/').rsplit('/').next()
    })
}

/// The order of a page from its members' numeric ids (strictly rising or falling); `None` when it cannot
/// be told (fewer than two numeric ids, or neither).
pub fn order_of(members: &[Value]) -> Option<Order> {
    let ids: Vec<u64> = members.iter().filter_map(|m| member_id(m)?.parse().ok()).collect();
    if ids.len() < 2 || ids.len() != members.len() {
        return None;
    }
    if ids.windows(2).all(|w| w[0] < w[1]) {
        Some(Order::OldestFirst)
    } else if ids.windows(2).all(|w| w[0] > w[1]) {
        Some(Order::NewestFirst)
    } else {
        None
    }
}

/// Where the mark is in `members`: the member with its id (and, when both say, its `Created`).
pub fn mark_at(members: &[Value], mark: &EntryMark) -> Option<usize> {
    members.iter().position(|m| {
        member_id(m) == Some(mark.id.as_str())
            && match (mark.created, m.get("Created").and_then(Value::as_str)) {
                (Some(want), Some(got)) => DateTime::parse_from_rfc3339(got).is_ok_and(|t| t == want),
                _ => true,
            }
    })
}

/// The members to keep of a log read back to its mark at `at`, in the BMC's order: every one on the newer
/// side of the mark and the mark itself, and at least the newest `keep`.
pub fn newer_side(members: Vec<Value>, order: Order, at: usize, keep: usize) -> Vec<Value> {
    let n = members.len();
    match order {
        Order::NewestFirst => members.into_iter().take((at + 1).max(keep)).collect(),
        Order::OldestFirst => members.into_iter().skip(at.min(n.saturating_sub(keep))).collect(),
    }
}

/// What a read since a mark did (tests count it against a whole read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinceRead {
    /// The log was read back to its mark (not whole).
    pub to_mark: bool,
}

impl Client {
    /// The members of the log entries collection `link` new since `mark`, with at least the newest `keep`
    /// (see the module's doc), at most `max`; the flag says whether the read stopped short of the mark.
    pub(crate) async fn members_since(
        &self,
        link: &str,
        max: usize,
        keep: usize,
        mark: &EntryMark,
    ) -> Result<(Listing<(String, Value)>, bool, SinceRead), RedfishError> {
        let (first, mut warnings) = self.get_json(link).await?;
        let (members, next) = model::collection_members(&first, link, &mut warnings);
        let count = first.get("Members@odata.count").and_then(Value::as_u64).map(|n| n as usize);
        let whole = |why: &str| {
            tracing::debug!(bmc = self.bmc(), log = link, why, "reading the whole log");
        };
        let Some(order) = order_of(&members) else {
            whole("order unknown");
            let (l, more) = self.members_limited(link, max).await?;
            return Ok((l, more, SinceRead::default()));
        };
        let read = match order {
            Order::NewestFirst => {
                let paged = paging::follow_pages_until(
                    &first,
                    link,
                    max,
                    self.inner.opts.max_pages,
                    |n| async move { self.get_json(&n).await.map_err(|e| e.to_string()) },
                    |ms| mark_at(ms, mark).is_some_and(|at| ms.len() >= keep.max(at + 1)),
                )
                .await;
                warnings.extend(paged.warnings);
                mark_at(&paged.members, mark).map(|at| newer_side(paged.members, order, at, keep))
            }
            Order::OldestFirst if next.is_none() && count.is_none_or(|c| members.len() >= c) => {
                mark_at(&members, mark).map(|at| newer_side(members, order, at, keep))
            }
            Order::OldestFirst => match count {
                Some(count) => self.tail_since(link, &members, count, max, keep, mark, &mut warnings).await?,
                None => None,
            },
        };
        match read {
            Some(listed) if listed.len() <= max => {
                tracing::debug!(
                    bmc = self.bmc(),
                    log = link,
                    members = listed.len(),
                    "read back to the mark"
                );
                Ok((self.fetch_listed(link, listed, warnings).await?, false, SinceRead { to_mark: true }))
            }
            _ => {
                whole("mark not reached");
                let (l, more) = self.members_limited(link, max).await?;
                Ok((l, more, SinceRead::default()))
            }
        }
    }

    /// An oldest-first paged log read backwards from its end with `$skip`/`$top` until the page holding
    /// `mark`: the members on its newer side (oldest first). `None`: the service does not page by query as
    /// asked, or the mark was not reached within the bounds (the caller reads the log whole).
    #[allow(clippy::too_many_arguments)]
    async fn tail_since(
        &self,
        link: &str,
        head: &[Value],
        count: usize,
        max: usize,
        keep: usize,
        mark: &EntryMark,
        warnings: &mut Vec<FieldWarning>,
    ) -> Result<Option<Vec<Value>>, RedfishError> {
        let size = head.len();
        if size == 0 {
            return Ok(None);
        }
        // Pages from the newest back: `chunks[0]` is the newest.
        let mut chunks: Vec<Vec<Value>> = Vec::new();
        let mut end = count;
        let mut pages = 1;
        let mut held = 0;
        loop {
            if end <= size {
                chunks.push(head[..end].to_vec());
                break;
            }
            if pages >= self.inner.opts.max_pages || held >= max {
                warnings.push(FieldWarning {
                    at: link.to_owned(),
                    problem: format!("stopped after {pages} pages before the entry read last time"),
                });
                return Ok(None);
            }
            let start = end.saturating_sub(size).max(size);
            let url = format!("{link}?$skip={start}&$top={}", end - start);
            let (page, notes) = self.get_json(&url).await?;
            warnings.extend(notes);
            let (got, _) = model::collection_members(&page, &url, warnings);
            pages += 1;
            // A service that ignores the query answers with the first page again (or another length).
            let honoured = got.len() == end - start
                && member_id(&got[0]) != member_id(&head[0])
                && (got.len() < 2 || order_of(&got) == Some(Order::OldestFirst));
            if !honoured {
                tracing::debug!(bmc = self.bmc(), log = link, "the service does not page by $skip/$top");
                return Ok(None);
            }
            held += got.len();
            let found = mark_at(&got, mark).is_some();
            chunks.push(got);
            end = start;
            if found && held >= keep {
                break;
            }
        }
        let all: Vec<Value> = chunks.into_iter().rev().flatten().collect();
        Ok(mark_at(&all, mark).map(|at| newer_side(all, Order::OldestFirst, at, keep)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entries(ids: &[u64]) -> Vec<Value> {
        ids.iter()
            .map(|i| json!({"@odata.id": format!("/l/Entries/{i}"), "Id": i.to_string(), "Created": format!("2024-01-01T00:00:{:02}Z", i % 60)}))
            .collect()
    }

    fn mark(id: u64) -> EntryMark {
        EntryMark {
            log: "/l".into(),
            id: id.to_string(),
            created: DateTime::parse_from_rfc3339(&format!("2024-01-01T00:00:{:02}Z", id % 60))
                .ok()
                .map(|t| t.with_timezone(&Utc)),
        }
    }

    fn ids(v: &[Value]) -> Vec<&str> {
        v.iter().filter_map(member_id).collect()
    }

    #[test]
    fn the_order_is_read_from_numeric_ids() {
        assert_eq!(order_of(&entries(&[1, 2, 3])), Some(Order::OldestFirst));
        assert_eq!(order_of(&entries(&[9, 4, 1])), Some(Order::NewestFirst));
        assert_eq!(order_of(&entries(&[1, 3, 2])), None);
        assert_eq!(order_of(&entries(&[7])), None);
        assert_eq!(order_of(&[json!({"@odata.id": "/l/Entries/1700000000_1"}), json!({"Id": "x"})]), None);
    }

    #[test]
    fn the_mark_is_its_id_and_its_time() {
        let es = entries(&[1, 2, 3]);
        assert_eq!(mark_at(&es, &mark(2)), Some(1));
        let reused = EntryMark { created: mark(50).created, ..mark(2) };
        assert_eq!(mark_at(&es, &reused), None, "the same id at another time: a cleared log");
        let links = vec![json!({"@odata.id": "/l/Entries/2"})];
        assert_eq!(mark_at(&links, &mark(2)), Some(0), "a bare link has no time to compare");
    }

    #[test]
    fn the_newer_side_keeps_the_mark_and_the_newest_n() {
        assert_eq!(ids(&newer_side(entries(&[1, 2, 3, 4, 5]), Order::OldestFirst, 2, 1)), ["3", "4", "5"]);
        assert_eq!(ids(&newer_side(entries(&[1, 2, 3, 4, 5]), Order::OldestFirst, 4, 3)), ["3", "4", "5"]);
        assert_eq!(ids(&newer_side(entries(&[5, 4, 3, 2, 1]), Order::NewestFirst, 1, 1)), ["5", "4"]);
        assert_eq!(ids(&newer_side(entries(&[5, 4, 3, 2, 1]), Order::NewestFirst, 0, 3)), ["5", "4", "3"]);
    }

    proptest::proptest! {
        /// Whatever the log and the mark, every member newer than the mark is kept.
        #[test]
        fn nothing_newer_than_the_mark_is_dropped(n in 1u64..60, m in 0u64..60, keep in 0usize..10, newest_first: bool) {
            let mut asc: Vec<u64> = (1..=n).collect();
            if newest_first { asc.reverse(); }
            let es = entries(&asc);
            let order = if newest_first { Order::NewestFirst } else { Order::OldestFirst };
            if let Some(at) = mark_at(&es, &mark(m)) {
                let kept = newer_side(es, order, at, keep);
                let got: Vec<u64> = ids(&kept).iter().map(|i| i.parse().unwrap()).collect();
                for want in (m + 1)..=n { proptest::prop_assert!(got.contains(&want)); }
                proptest::prop_assert!(got.len() >= keep.min(n as usize));
            }
        }
    }
}
