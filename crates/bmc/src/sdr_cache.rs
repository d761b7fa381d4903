//! The SDR repository of each IPMI BMC, kept by the pool between connections.
//!
//! Why: reading an SDR costs one round trip per record at best (several on BMCs that refuse whole-record
//! reads), and a health read needs the whole repository before the first sensor can be named. Sensor
//! definitions change only when firmware or hardware does, and the BMC says when: Get SDR Repository Info
//! carries the record count and the most-recent addition and erase timestamps. So a repeated sweep (the
//! demo's live view, `lifeline health` in a loop) asks for that one reply and reads the records again only
//! when it differs. A TTL bounds the damage of a BMC that never updates its timestamps (many report 0).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lifeline_ipmi::Session;
use lifeline_ipmi::wire::sdr::{SdrRecord, SdrRepositoryInfo};
use tokio::time::Instant;

/// Even with unchanged repository info, records older than this are read again.
const TTL: Duration = Duration::from_secs(600);

/// What identifies one version of a BMC's repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RepoVersion {
    record_count: u16,
    last_addition: u32,
    last_erase: u32,
}

impl From<&SdrRepositoryInfo> for RepoVersion {
    fn from(i: &SdrRepositoryInfo) -> Self {
        RepoVersion { record_count: i.record_count, last_addition: i.last_addition, last_erase: i.last_erase }
    }
}

struct Entry {
    version: RepoVersion,
    records: Arc<Vec<SdrRecord>>,
    read_at: Instant,
}

/// Per-pool cache, keyed by BMC name and address (a re-addressed BMC starts afresh).
#[derive(Default)]
pub(crate) struct SdrCache {
    entries: StdMutex<HashMap<String, Entry>>,
    hits: AtomicU64,
    reads: AtomicU64,
}

impl std::fmt::Debug for SdrCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SdrCache")
            .field("hits", &self.hits.load(Ordering::Relaxed))
            .field("reads", &self.reads.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SdrCache {
    /// The repository of the BMC behind `session`: cached when its info is unchanged, else read (and
    /// cached when the info could be read; a BMC without Get SDR Repository Info is read every time).
    pub(crate) async fn records(
        &self,
        key: &str,
        session: &Session,
    ) -> Result<Arc<Vec<SdrRecord>>, lifeline_ipmi::Error> {
        let version = match session.sdr_repository_info().await {
            Ok(info) => Some(RepoVersion::from(&info)),
            Err(lifeline_ipmi::Error::CompletionCode { .. }) => None,
            Err(e) => return Err(e),
        };
        if let Some(v) = version
            && let Some(e) = lock(&self.entries).get(key)
            && e.version == v
            && e.read_at.elapsed() < TTL
        {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(e.records.clone());
        }
        let records = Arc::new(session.sdr_records().await?);
        self.reads.fetch_add(1, Ordering::Relaxed);
        if let Some(version) = version {
            let entry = Entry { version, records: records.clone(), read_at: Instant::now() };
            lock(&self.entries).insert(key.to_owned(), entry);
        }
        Ok(records)
    }

    /// (served from the cache, read from a BMC) since the pool was created.
    pub(crate) fn stats(&self) -> (u64, u64) {
        (self.hits.load(Ordering::Relaxed), self.reads.load(Ordering::Relaxed))
    }
}
