//! Finding a BMC's log services, and the entries of its event logs, in as few round trips as the BMC
//! allows. Navigation is Managers/Systems -> each member -> its `LogServices` -> each service -> `Entries`:
//! five round trips on a BMC without `$expand`, three with it. On a BMC 200 ms away that chain was most of
//! a first-contact health sweep.
//!
//! Why guessing is safe: since Redfish 1.6 (DSP0266, "Resource URI patterns") every resource's URI is fixed
//! by its schema: a Manager's or System's log services are at `{member}/LogServices`, a log service's
//! entries at `{service}/Entries`. So while a member (or a service) is read, the collection it must link is
//! read at the same time; the guess is used only when the document read then names exactly that link, and
//! the link the document names is read when it names another one (older BMCs), so a wrong guess costs one
//! request, never a wrong answer. A Manager is the exception: it is read only for that link, so when its
//! guessed collection answers with services under it, the Manager is not read at all (and it is, one round
//! trip later, when the collection does not answer). Entries are only guessed for services whose id
//! already says they hold the event history (`SEL`, `EventLog`, `IML`, ...), so journals and dumps are
//! never read on a guess.

use serde_json::Value;

use super::Client;
use super::nav::Listed;
use super::since::EntryMark;
use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model::{ComputerSystem, LogService, Manager};

/// A collection's members as read (at most a limit), and whether more existed.
pub(super) type Limited = (super::Listing<(String, Value)>, bool);

/// A log service found, with its entries when they were read at the same time (the guessed link and what
/// reading it gave: members, and whether more existed).
pub(super) struct Found {
    pub service: LogService,
    pub entries: Option<(String, Result<Limited, RedfishError>)>,
}

/// Log services and what could not be read.
#[derive(Default)]
pub(super) struct FoundLogs {
    pub services: Vec<Found>,
    pub warnings: Vec<FieldWarning>,
    /// A guessed collection answered 404 to `$expand` ([`Read::Guess`]): to read as listed if the member
    /// turns out to name it.
    pub expand_missing: bool,
    /// The collection was read, and every member it lists lies under its link (so it is the collection
    /// at that link, not a redirect or an error page elsewhere).
    pub listed: bool,
}

/// How a `LogServices` collection is read.
#[derive(Clone, Copy, PartialEq)]
enum Read {
    /// Named by the member: with `$expand` where offered, as listed when that is refused.
    Named,
    /// Guessed while the member is read: a 404 to `$expand` ends the read. On a BMC without the
    /// collection (the simulator's iDRAC- and iLO-like systems) reading it again without the query made
    /// the member's visit a round trip longer; a BMC that answers 404 to a query it does not support
    /// (sushy-static) gets the collection read as listed once the member names it.
    Guess,
    /// As listed, no query.
    Plain,
}

/// Ids by which [`LogService::kind`] already knows an event history (its Id is its URI's last segment),
/// and `Log1`: Supermicro's SEL (`LogEntryType: SEL`), as in the DMTF mockups.
fn names_an_event_log(link: &str) -> bool {
    let last = link.trim_end_matches('/').rsplit('/').next().unwrap_or("").to_ascii_lowercase();
    matches!(last.as_str(), "sel" | "ipmisel" | "eventlog" | "event" | "iml" | "iel" | "log1")
}

fn child(link: &str, name: &str) -> String {
    format!("{}/{name}", link.trim_end_matches('/'))
}

fn same_link(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// Which holder collection: how to read a member's `LogServices` link (and its field warnings).
#[derive(Clone, Copy)]
pub(super) enum Holder {
    Managers,
    Systems,
}

impl Holder {
    fn log_services(self, v: &Value, at: &str) -> (Option<String>, Vec<FieldWarning>) {
        match self {
            Holder::Managers => {
                let m = Manager::from_value(v, at);
                (m.log_services, m.warnings)
            }
            Holder::Systems => {
                let s = ComputerSystem::from_value(v, at);
                (s.log_services, s.warnings)
            }
        }
    }
}

impl Client {
    /// The log services of every member of a Managers or Systems collection. The collection failing is an
    /// error (as listing it would be); a member or a `LogServices` collection failing is a warning.
    pub(super) async fn holder_log_services(
        &self,
        collection: &str,
        holder: Holder,
        max: usize,
        marked: &[EntryMark],
    ) -> Result<FoundLogs, RedfishError> {
        let (members, warnings) = self.listed_expanded(collection).await?;
        let mut out = FoundLogs { warnings, ..FoundLogs::default() };
        let per_member = members.into_iter().enumerate().map(|(i, m)| async move {
            let mut found = FoundLogs::default();
            let (id, doc) = match Listed::of(collection, i, m) {
                Listed::Bad(at) => {
                    found.warnings.push(FieldWarning { at, problem: "member is not a link".into() });
                    return found;
                }
                Listed::Embedded(id, mut v) => {
                    found.warnings.extend(self.inner.profile.repair(&mut v, &id));
                    let (link, w) = holder.log_services(&v, &id);
                    found.warnings.extend(w);
                    if let Some(link) = link {
                        self.log_services_found(&link, Read::Named, max, marked, &mut found).await;
                    }
                    return found;
                }
                Listed::Link(id) => {
                    let guess = child(&id, "LogServices");
                    let mut guessed = FoundLogs::default();
                    let doc = match holder {
                        // A Manager is read here only for its LogServices link: when the collection the
                        // schema puts at `{manager}/LogServices` answers, listing only services under it,
                        // that is the link, and the Manager is not read (one request fewer per BMC at first
                        // contact). When it does not, the Manager says where its log services are (one
                        // round trip more, on those BMCs only).
                        Holder::Managers => {
                            self.log_services_found(&guess, Read::Guess, max, marked, &mut guessed).await;
                            if guessed.listed {
                                return guessed;
                            }
                            self.get_json(&id).await
                        }
                        // The system document is needed anyway (power, health): it and the collection it
                        // must link, at once.
                        Holder::Systems => {
                            let (doc, ()) = tokio::join!(
                                self.get_json(&id),
                                self.log_services_found(&guess, Read::Guess, max, marked, &mut guessed)
                            );
                            doc
                        }
                    };
                    match doc {
                        Ok((v, notes)) => {
                            found.warnings.extend(notes);
                            let (link, w) = holder.log_services(&v, &id);
                            found.warnings.extend(w);
                            (id, link.map(|l| (l, guess, guessed)))
                        }
                        Err(e) => {
                            found.warnings.push(FieldWarning { at: id, problem: e.to_string() });
                            return found;
                        }
                    }
                }
            };
            match doc {
                None => tracing::debug!(bmc = %self.bmc(), member = %id, "no LogServices"),
                Some((link, guess, guessed)) if same_link(&link, &guess) && guessed.expand_missing => {
                    self.log_services_found(&link, Read::Plain, max, marked, &mut found).await
                }
                Some((link, guess, guessed)) if same_link(&link, &guess) => {
                    found.services.extend(guessed.services);
                    found.warnings.extend(guessed.warnings);
                }
                Some((link, _, _)) => {
                    self.log_services_found(&link, Read::Named, max, marked, &mut found).await
                }
            }
            found
        });
        for f in futures::future::join_all(per_member).await {
            out.services.extend(f.services);
            out.warnings.extend(f.warnings);
        }
        Ok(out)
    }

    /// The services of one `LogServices` collection into `out` (failures as warnings); the entries of the
    /// ones whose link names an event log are read while their documents are, unless a previous read
    /// marked them (`marked`: they are read since their mark afterwards, not whole on a guess).
    async fn log_services_found(
        &self,
        link: &str,
        how: Read,
        max: usize,
        marked: &[EntryMark],
        out: &mut FoundLogs,
    ) {
        let listed = match how {
            Read::Named => self.listed_expanded(link).await,
            Read::Guess => self.listed_expanded_unless_missing(link).await,
            Read::Plain => self.listed(link, usize::MAX).await.map(|(m, w, _)| (m, w)),
        };
        let (members, warnings) = match listed {
            Ok(l) => l,
            Err(RedfishError::Status { status: 404, .. }) if how == Read::Guess && self.expands(link) => {
                out.expand_missing = true;
                return;
            }
            Err(e) => {
                out.warnings.push(FieldWarning { at: link.to_owned(), problem: format!("unreadable: {e}") });
                return;
            }
        };
        out.warnings.extend(warnings);
        let under = format!("{}/", link.trim_end_matches('/'));
        out.listed = members
            .iter()
            .all(|m| m.get("@odata.id").and_then(Value::as_str).is_some_and(|id| id.starts_with(&under)));
        let reads = members.into_iter().enumerate().map(|(i, m)| async move {
            match Listed::of(link, i, m) {
                Listed::Bad(at) => Err(FieldWarning { at, problem: "member is not a link".into() }),
                Listed::Embedded(id, mut v) => {
                    let notes = self.inner.profile.repair(&mut v, &id);
                    Ok((LogService::from_value(&v, &id), notes, None))
                }
                Listed::Link(id)
                    if names_an_event_log(&id) && !marked.iter().any(|m| same_link(&m.log, &id)) =>
                {
                    let entries = child(&id, "Entries");
                    let (doc, read) = tokio::join!(self.get_json(&id), self.members_limited(&entries, max));
                    let (v, notes) =
                        doc.map_err(|e| FieldWarning { at: id.clone(), problem: e.to_string() })?;
                    Ok((LogService::from_value(&v, &id), notes, Some((entries, read))))
                }
                Listed::Link(id) => {
                    let (v, notes) = self
                        .get_json(&id)
                        .await
                        .map_err(|e| FieldWarning { at: id.clone(), problem: e.to_string() })?;
                    Ok((LogService::from_value(&v, &id), notes, None))
                }
            }
        });
        for r in futures::future::join_all(reads).await {
            match r {
                Ok((mut service, notes, entries)) => {
                    out.warnings.extend(notes);
                    out.warnings.append(&mut service.warnings);
                    out.services.push(Found { service, entries });
                }
                Err(w) => out.warnings.push(w),
            }
        }
    }
}

/// The entries read on a guess, when the service's document names exactly that link.
pub(super) fn guessed_entries(f: &mut Found) -> Option<Result<Limited, RedfishError>> {
    let named = f.service.entries.as_deref()?;
    match f.entries.take() {
        Some((guess, read)) if same_link(named, &guess) => Some(read),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_event_history_ids_are_guessed() {
        for l in ["/redfish/v1/Managers/1/LogServices/SEL", "/x/LogServices/EventLog/", "/x/LogServices/Log1"]
        {
            assert!(names_an_event_log(l), "{l}");
        }
        for l in [
            "/x/LogServices/Journal",
            "/x/LogServices/Dump",
            "/x/LogServices/PostCodes",
            "/x/LogServices/Log2",
        ] {
            assert!(!names_an_event_log(l), "{l}");
        }
        assert!(same_link("/a/b/", "/a/b"));
        assert_eq!(child("/a/b/", "Entries"), "/a/b/Entries");
    }
}
