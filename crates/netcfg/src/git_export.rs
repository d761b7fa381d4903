//! Export config versions to a git repository: one file per switch, one commit per version, like
//! Oxidized's git output, so operators can use the tools they already know (`git log -p leaf1`).
//!
//! Why git2 and not the git binary: no dependency on what is installed on the jump host, no shell
//! quoting, and errors come back typed. Export is incremental: commits carry a
//! `Lifeline-Version: DEVICE vN` trailer, and versions already in HEAD's history are skipped.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use git2::{Repository, Signature, Time};
use lifeline_types::DeviceName;

use crate::blobs::{BlobError, BlobStore};
use crate::index::{IndexError, VersionIndex, VersionRecord};

#[derive(Debug, thiserror::Error)]
pub enum GitExportError {
    #[error("git repository at {dir}")]
    Git {
        dir: PathBuf,
        #[source]
        source: git2::Error,
    },
    #[error("version index")]
    Index(#[source] IndexError),
    #[error("blob of {device} v{version}")]
    Blob {
        device: DeviceName,
        version: u32,
        #[source]
        source: BlobError,
    },
    #[error("writing {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("export task failed")]
    Join(#[source] tokio::task::JoinError),
}

const TRAILER: &str = "Lifeline-Version: ";

/// Export every version of every device not yet in `dir`'s history. Returns the number of commits made.
pub async fn export_git(
    dir: &Path,
    index: &dyn VersionIndex,
    blobs: &BlobStore,
) -> Result<usize, GitExportError> {
    let mut all: Vec<VersionRecord> = Vec::new();
    for d in index.devices().await.map_err(GitExportError::Index)? {
        all.extend(index.list(&d).await.map_err(GitExportError::Index)?);
    }
    all.sort_by(|a, b| (a.taken_at, &a.device, a.version).cmp(&(b.taken_at, &b.device, b.version)));

    let dir2 = dir.to_owned();
    let done = tokio::task::spawn_blocking(move || exported(&dir2)).await.map_err(GitExportError::Join)??;
    let mut todo = Vec::new();
    for rec in all {
        if done.contains(&marker(&rec.device, rec.version)) {
            continue;
        }
        let bytes = blobs.get(&rec.blob).await.map_err(|source| GitExportError::Blob {
            device: rec.device.clone(),
            version: rec.version,
            source,
        })?;
        todo.push((rec, bytes));
    }
    let dir = dir.to_owned();
    tokio::task::spawn_blocking(move || commit_all(&dir, todo)).await.map_err(GitExportError::Join)?
}

fn marker(device: &DeviceName, version: u32) -> String {
    format!("{device} v{version}")
}

fn open_or_init(dir: &Path) -> Result<Repository, GitExportError> {
    let ge = |source| GitExportError::Git { dir: dir.to_owned(), source };
    match Repository::open(dir) {
        Ok(r) => Ok(r),
        Err(_) => {
            std::fs::create_dir_all(dir)
                .map_err(|source| GitExportError::Io { path: dir.to_owned(), source })?;
            Repository::init(dir).map_err(ge)
        }
    }
}

fn exported(dir: &Path) -> Result<HashSet<String>, GitExportError> {
    let mut set = HashSet::new();
    let repo = match Repository::open(dir) {
        Ok(r) => r,
        Err(_) => return Ok(set),
    };
    let ge = |source| GitExportError::Git { dir: dir.to_owned(), source };
    let Ok(head) = repo.head() else { return Ok(set) };
    let mut walk = repo.revwalk().map_err(ge)?;
    walk.push(head.target().expect("HEAD points at a commit")).map_err(ge)?;
    for oid in walk {
        let commit = repo.find_commit(oid.map_err(ge)?).map_err(ge)?;
        for line in commit.message().unwrap_or("").lines() {
            if let Some(m) = line.strip_prefix(TRAILER) {
                set.insert(m.trim().to_owned());
            }
        }
    }
    Ok(set)
}

fn commit_all(dir: &Path, todo: Vec<(VersionRecord, Vec<u8>)>) -> Result<usize, GitExportError> {
    let repo = open_or_init(dir)?;
    let ge = |source| GitExportError::Git { dir: dir.to_owned(), source };
    let mut count = 0;
    for (rec, bytes) in todo {
        let file = rec.device.as_str().to_owned();
        let path = dir.join(&file);
        std::fs::write(&path, &bytes).map_err(|source| GitExportError::Io { path: path.clone(), source })?;
        let mut idx = repo.index().map_err(ge)?;
        idx.add_path(Path::new(&file)).map_err(ge)?;
        idx.write().map_err(ge)?;
        let tree_id = idx.write_tree().map_err(ge)?;
        let tree = repo.find_tree(tree_id).map_err(ge)?;
        let when = Time::new(rec.taken_at.timestamp(), 0);
        let sig = Signature::new("lifeline", "lifeline@localhost", &when).map_err(ge)?;
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let msg = format!(
            "{} v{} ({})\n\n{TRAILER}{}\n",
            rec.device,
            rec.version,
            rec.platform,
            marker(&rec.device, rec.version)
        );
        repo.commit(Some("HEAD"), &sig, &sig, &msg, &tree, &parents).map_err(ge)?;
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::MemoryIndex;
    use chrono::TimeZone;
    use lifeline_types::Platform;

    #[tokio::test]
    async fn one_file_per_switch_one_commit_per_version_incremental() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = BlobStore::new(dir.path().join("blobs"));
        let index = MemoryIndex::default();
        let leaf = DeviceName::new("leaf1").unwrap();
        let spine = DeviceName::new("spine1").unwrap();
        let t = |m| chrono::Utc.with_ymd_and_hms(2026, 1, 1, 0, m, 0).unwrap();
        for (d, text, at) in [
            (&leaf, "hostname leaf1\n", t(1)),
            (&spine, "hostname spine1\n", t(2)),
            (&leaf, "hostname leaf1\nmtu 9000\n", t(3)),
        ] {
            let id = blobs.put(text.as_bytes().to_vec()).await.unwrap();
            index.record(d, Platform::Eos, &id, text.len() as u64, at, false).await.unwrap();
        }
        let repo_dir = dir.path().join("git");
        assert_eq!(export_git(&repo_dir, &index, &blobs).await.unwrap(), 3);
        assert_eq!(std::fs::read_to_string(repo_dir.join("leaf1")).unwrap(), "hostname leaf1\nmtu 9000\n");
        assert_eq!(std::fs::read_to_string(repo_dir.join("spine1")).unwrap(), "hostname spine1\n");
        let repo = Repository::open(&repo_dir).unwrap();
        let mut walk = repo.revwalk().unwrap();
        walk.push_head().unwrap();
        let msgs: Vec<String> = walk
            .map(|o| repo.find_commit(o.unwrap()).unwrap().summary().unwrap().unwrap().to_owned())
            .collect();
        assert_eq!(msgs, vec!["leaf1 v2 (eos)", "spine1 v1 (eos)", "leaf1 v1 (eos)"]);
        let head = repo.head().unwrap().peel_to_commit().unwrap();
        assert_eq!(head.time().seconds(), t(3).timestamp());
        // Nothing new: nothing committed. A new version: one commit.
        assert_eq!(export_git(&repo_dir, &index, &blobs).await.unwrap(), 0);
        let id = blobs.put(b"hostname spine1\nmtu 9000\n".to_vec()).await.unwrap();
        index.record(&spine, Platform::Eos, &id, 10, t(4), false).await.unwrap();
        assert_eq!(export_git(&repo_dir, &index, &blobs).await.unwrap(), 1);
    }
}
