//! Log services and their entries: finding the BMC's event logs under Managers and Systems, reading a
//! bounded number of entries, clearing a log.

use reqwest::Method;

use super::{Client, Listing};
use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model::{self, LogEntries, LogService};

impl Client {
    /// Log services behind a `LogServices` collection link (of a Manager, System or Chassis).
    pub async fn log_services(&self, link: &str) -> Result<Listing<LogService>, RedfishError> {
        self.typed(link, LogService::from_value, |l| &mut l.warnings).await
    }

    /// Entries of a log, at most `max` (newest-first order is the BMC's; many serve oldest first).
    pub async fn log_entries(&self, log: &LogService, max: usize) -> Result<LogEntries, RedfishError> {
        let Some(link) = &log.entries else {
            return Err(RedfishError::Missing {
                bmc: self.bmc().to_owned(),
                url: log.odata_id.clone(),
                what: "Entries link",
            });
        };
        let (l, more) = self.members_limited(link, max).await?;
        let mut out = LogEntries {
            log: log.odata_id.clone(),
            warnings: l.warnings,
            truncated: more,
            ..Default::default()
        };
        for (id, v) in l.items {
            out.entries.push(model::log_entry_from_value(&v, &id, &mut out.warnings));
        }
        Ok(out)
    }

    /// Every SEL-like log on the BMC (Managers first, then Systems), with up to `max` entries each. A log is
    /// SEL-like by its type or name; when no log on the BMC is, logs whose entries are `EntryType: SEL` are
    /// used (the DMTF mockup names its SEL "Log1").
    pub async fn sel(&self, max: usize) -> Result<Listing<LogEntries>, RedfishError> {
        let mut out = Listing::default();
        let mut holders: Vec<String> = Vec::new();
        if self.inner.root.managers.is_some() {
            let m = self.managers().await?;
            out.warnings.extend(m.warnings);
            holders.extend(m.items.into_iter().filter_map(|m| m.log_services));
        }
        if self.inner.root.systems.is_some() {
            let s = self.systems().await?;
            out.warnings.extend(s.warnings);
            holders.extend(s.items.into_iter().filter_map(|s| s.log_services));
        }
        let mut all = Vec::new();
        for h in holders {
            match self.log_services(&h).await {
                Ok(l) => {
                    out.warnings.extend(l.warnings);
                    all.extend(l.items);
                }
                Err(e) => {
                    out.warnings.push(FieldWarning { at: h.clone(), problem: format!("unreadable: {e}") })
                }
            }
        }
        let named: Vec<&LogService> = all.iter().filter(|l| l.is_sel()).collect();
        let by_name = !named.is_empty();
        let candidates = if by_name { named } else { all.iter().collect() };
        for log in candidates {
            match self.log_entries(log, max).await {
                Ok(e) if by_name || e.entries.iter().any(|x| x.entry_type.as_deref() == Some("SEL")) => {
                    out.items.push(e)
                }
                Ok(_) => {}
                Err(e) => out
                    .warnings
                    .push(FieldWarning { at: log.odata_id.clone(), problem: format!("unreadable: {e}") }),
            }
        }
        Ok(out)
    }

    pub async fn clear_log(&self, log: &LogService) -> Result<(), RedfishError> {
        let target = log.clear_target.clone().ok_or_else(|| RedfishError::Missing {
            bmc: self.bmc().to_owned(),
            url: log.odata_id.clone(),
            what: "#LogService.ClearLog action",
        })?;
        self.send_json(Method::POST, &target, Some(&serde_json::json!({}))).await.map(|_| ())
    }
}
