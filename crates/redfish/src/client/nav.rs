//! Navigation by links: collections (paged, embedded or linked members), the root's collections and typed
//! listings. Member ids differ per vendor, so nothing here builds a path; every path is a link read.

use serde_json::Value;

use super::{Client, Listing, paging};

/// One member of a collection as listed.
pub(super) enum Listed {
    /// Embedded (expanded, or a BMC that always embeds): its id (or a JSON pointer) and document.
    Embedded(String, Value),
    /// A bare link, to be fetched.
    Link(String),
    /// Neither: where it is, for the warning.
    Bad(String),
}

impl Listed {
    pub(super) fn of(collection: &str, i: usize, m: Value) -> Listed {
        let id = m.get("@odata.id").and_then(Value::as_str).map(str::to_owned);
        let embedded = m.as_object().is_some_and(|o| o.keys().any(|k| !k.starts_with('@')));
        match (id, embedded) {
            (Some(id), false) => Listed::Link(id),
            (id, true) => Listed::Embedded(id.unwrap_or_else(|| format!("{collection}#/Members/{i}")), m),
            (None, false) => Listed::Bad(format!("{collection}#/Members/{i}")),
        }
    }
}
use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model::{self, Chassis, ComputerSystem, Manager};

impl Client {
    /// Members of a collection, following `nextLink` pages; embedded members are used as they are, bare links
    /// fetched. A page or member that fails becomes a warning.
    pub async fn members(&self, link: &str) -> Result<Listing<(String, Value)>, RedfishError> {
        self.members_limited(link, usize::MAX).await.map(|(l, _)| l)
    }

    /// Like `members`, reading at most `max` members (no further pages, no further fetches); the flag says
    /// whether more existed.
    pub(crate) async fn members_limited(
        &self,
        link: &str,
        max: usize,
    ) -> Result<(Listing<(String, Value)>, bool), RedfishError> {
        let (members, warnings, more) = self.listed(link, max).await?;
        Ok((self.fetch_listed(link, members, warnings).await?, more))
    }

    /// The members of `link` as listed (embedded, or links fetched concurrently) into a listing.
    pub(super) async fn fetch_listed(
        &self,
        link: &str,
        members: Vec<Value>,
        mut warnings: Vec<FieldWarning>,
    ) -> Result<Listing<(String, Value)>, RedfishError> {
        let fetches = members.into_iter().enumerate().map(|(i, m)| async move {
            match Listed::of(link, i, m) {
                Listed::Link(id) => {
                    self.get_json(&id).await.map(|(v, n)| (id.clone(), v, n)).map_err(|e| (id, Some(e)))
                }
                Listed::Embedded(id, mut v) => {
                    let notes = self.inner.profile.repair(&mut v, &id);
                    Ok((id, v, notes))
                }
                Listed::Bad(at) => Err((at, None)),
            }
        });
        let mut items = Vec::new();
        // A login refused (the session limit, bad credentials) fails every member alike: with none read,
        // that is the answer, not an empty collection (which reads as "the BMC lists no computer system").
        let mut refused = None;
        for r in futures::future::join_all(fetches).await {
            match r {
                Ok((id, v, notes)) => {
                    warnings.extend(notes);
                    items.push((id, v));
                }
                Err((at, Some(e @ (RedfishError::SessionLimit { .. } | RedfishError::Login { .. })))) => {
                    warnings.push(FieldWarning { at, problem: e.to_string() });
                    refused.get_or_insert(e);
                }
                Err((at, e)) => {
                    let problem = e.map_or_else(|| "member is not a link".to_owned(), |e| e.to_string());
                    warnings.push(FieldWarning { at, problem });
                }
            }
        }
        if let (true, Some(e)) = (items.is_empty(), refused) {
            return Err(e);
        }
        Ok(Listing { items, warnings })
    }

    /// The members of a collection as it lists them (documents or bare links), at most `max`, following
    /// `nextLink` pages; the flag says whether more existed.
    pub(super) async fn listed(
        &self,
        link: &str,
        max: usize,
    ) -> Result<(Vec<Value>, Vec<FieldWarning>, bool), RedfishError> {
        let (doc, mut warnings) = self.get_json(link).await?;
        let paged = paging::follow_pages(&doc, link, max, self.inner.opts.max_pages, |n| async move {
            self.get_json(&n).await.map_err(|e| e.to_string())
        })
        .await;
        tracing::debug!(bmc = self.bmc(), collection = link, pages = paged.pages, "collection read");
        warnings.extend(paged.warnings);
        let mut members = paged.members;
        let mut short = false;
        // A BMC that serves fewer members than `Members@odata.count` without a next link pages by query
        // (`$skip`, DSP0266 "Query parameters"): ask for the rest, page after page, within `max_pages`.
        let count = doc.get("Members@odata.count").and_then(Value::as_u64).map(|n| n as usize);
        let paged_by_link =
            doc.get("Members@odata.nextLink").is_some() || paged.pages > 1 || paged.unread_pages;
        if let (Some(count), false) = (count, link.contains('?') || paged_by_link) {
            let mut pages = 1;
            while members.len() < count.min(max) && pages < self.inner.opts.max_pages {
                let next = format!("{link}?$skip={}", members.len());
                match self.get_json(&next).await {
                    Ok((page, _)) => {
                        let got = page.get("Members").and_then(Value::as_array).cloned().unwrap_or_default();
                        if got.is_empty() {
                            break;
                        }
                        members.extend(got);
                        pages += 1;
                    }
                    Err(e) => {
                        warnings.push(FieldWarning { at: next, problem: format!("page unreadable: {e}") });
                        break;
                    }
                }
            }
            short = members.len() < count.min(max);
            if short {
                warnings.push(FieldWarning {
                    at: link.to_owned(),
                    problem: format!("read {} of the {count} members it lists", members.len()),
                });
            }
        }
        // `Members@odata.count` is the whole collection's size (DSP0266): with that many in hand, a next
        // link that fails (Intel and the DMTF mockups link a `$skiptoken` page past the end) hides nothing.
        let complete = count.is_some_and(|c| members.len() >= c);
        let more = members.len() > max
            || short
            || (!complete && (paged.unread_pages || warnings.iter().any(|w| w.problem.contains("page"))));
        members.truncate(max);
        Ok((members, warnings, more))
    }

    /// [`Client::listed`] with the members embedded where the BMC says it can (`$expand=.`, one level),
    /// read as listed when it refuses after all (see [`Client::members_expanded`]); a BMC that ignores the
    /// query lists bare links, which the caller fetches as usual.
    pub(super) async fn listed_expanded(
        &self,
        link: &str,
    ) -> Result<(Vec<Value>, Vec<FieldWarning>), RedfishError> {
        self.listed_expanded_or(link, false).await
    }

    /// [`Client::listed_expanded`] for a link that was guessed: a 404 says it is not there, so it is not
    /// read again without the query.
    pub(super) async fn listed_expanded_unless_missing(
        &self,
        link: &str,
    ) -> Result<(Vec<Value>, Vec<FieldWarning>), RedfishError> {
        self.listed_expanded_or(link, true).await
    }

    /// `missing_is_final`: a 404 to `$expand` ends the read (otherwise every 4xx and 501 is taken as the
    /// query refused, and the collection is read as listed).
    async fn listed_expanded_or(
        &self,
        link: &str,
        missing_is_final: bool,
    ) -> Result<(Vec<Value>, Vec<FieldWarning>), RedfishError> {
        if self.expands(link) {
            match self.listed(&format!("{link}?$expand=.($levels=1)"), usize::MAX).await {
                Ok((m, w, _)) => return Ok((m, w)),
                Err(RedfishError::Status { status, .. })
                    if expand_refused(status) && !(missing_is_final && status == 404) =>
                {
                    tracing::debug!(bmc = %self.bmc(), %link, status, "$expand refused; reading members one by one")
                }
                Err(e) => return Err(e),
            }
        }
        self.listed(link, usize::MAX).await.map(|(m, w, _)| (m, w))
    }

    /// [`Client::members`] in one request where the BMC says it can embed members (`$expand=.`, one
    /// level): a Sensors collection of 40 sensors is one GET instead of 41. A BMC that refuses the query
    /// after all (4xx/501: the root promised more than it does) is read member by member.
    pub async fn members_expanded(&self, link: &str) -> Result<Listing<(String, Value)>, RedfishError> {
        if self.expands(link) {
            match self.members(&format!("{link}?$expand=.($levels=1)")).await {
                Ok(l) => return Ok(l),
                Err(RedfishError::Status { status, .. }) if expand_refused(status) => {
                    tracing::debug!(bmc = %self.bmc(), %link, status, "$expand refused; reading members one by one")
                }
                Err(e) => return Err(e),
            }
        }
        self.members(link).await
    }

    /// Whether to ask for `link` with its members embedded: the BMC says it can, the link has no query of
    /// its own, and the collection as listed is not already in hand from the first contact (`early`), where
    /// asking again would be a round trip more.
    pub(super) fn expands(&self, link: &str) -> bool {
        self.inner.root.expand
            && !link.contains('?')
            && !self.inner.early.as_ref().is_some_and(|e| e.covers(link))
    }

    fn root_link(&self, link: &Option<String>, what: &'static str) -> Result<String, RedfishError> {
        link.clone().ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: "/redfish/v1/".into(),
            what,
        })
    }

    pub async fn systems(&self) -> Result<Listing<ComputerSystem>, RedfishError> {
        let link = self.root_link(&self.inner.root.systems, "Systems link")?;
        self.typed(&link, ComputerSystem::from_value, |s| &mut s.warnings).await
    }

    pub async fn system(&self, link: &str) -> Result<ComputerSystem, RedfishError> {
        let (v, notes) = self.get_json(link).await?;
        let mut s = ComputerSystem::from_value(&v, link);
        s.warnings.splice(0..0, notes);
        Ok(s)
    }

    pub async fn chassis(&self) -> Result<Listing<Chassis>, RedfishError> {
        let link = self.root_link(&self.inner.root.chassis, "Chassis link")?;
        self.typed(&link, Chassis::from_value, |c| &mut c.warnings).await
    }

    pub async fn managers(&self) -> Result<Listing<Manager>, RedfishError> {
        let link = self.root_link(&self.inner.root.managers, "Managers link")?;
        self.typed(&link, Manager::from_value, |m| &mut m.warnings).await
    }

    pub(super) async fn typed<T>(
        &self,
        link: &str,
        parse: fn(&Value, &str) -> T,
        warnings_of: fn(&mut T) -> &mut Vec<FieldWarning>,
    ) -> Result<Listing<T>, RedfishError> {
        let l = self.members_expanded(link).await?;
        let mut warnings = l.warnings;
        let items = l
            .items
            .into_iter()
            .map(|(id, v)| {
                let mut t = parse(&v, &id);
                warnings.append(warnings_of(&mut t));
                t
            })
            .collect();
        Ok(Listing { items, warnings })
    }

    pub async fn session_service(&self) -> Result<Option<model::SessionService>, RedfishError> {
        let Some(link) = &self.inner.root.session_service else { return Ok(None) };
        let (v, notes) = self.get_json(link).await?;
        let mut s = model::SessionService::from_value(&v, link);
        s.warnings.splice(0..0, notes);
        Ok(Some(s))
    }

    pub async fn event_service(&self) -> Result<Option<model::EventService>, RedfishError> {
        let Some(link) = &self.inner.root.event_service else { return Ok(None) };
        let (v, notes) = self.get_json(link).await?;
        let mut s = model::EventService::from_value(&v, link);
        s.warnings.splice(0..0, notes);
        Ok(Some(s))
    }
}

/// Whether an error status to a `$expand` read refuses the query (4xx, 501: read the collection as listed)
/// rather than the caller: a 401 or 403 refuses the credentials or the privilege, which the plain read
/// would only be refused again, one more failed login toward the BMC's lockout of the account (with HTTP
/// Basic every request is a login).
fn expand_refused(status: u16) -> bool {
    (400..=501).contains(&status) && !matches!(status, 401 | 403)
}
