//! Where sysfs and procfs are read from.
//!
//! The same checks must run on a live node (`/sys`, `/proc`) and on a simulator's or a fixture's recorded
//! tree, so every read goes through these roots. Evidence always names the LOGICAL path (`/sys/...`), the
//! path an operator would `cat` on the node; the report's `sources` records which root was used.

use std::path::{Path, PathBuf};

/// Roots standing in for `/sys` and `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    pub sysfs: PathBuf,
    pub proc: PathBuf,
    /// Directory of recorded `ethtool -S <if>` outputs, one file per interface (the simulator's
    /// `DIR/<node>/ethtool/`). `None` on a live node: `ethtool -S` is run instead.
    pub ethtool: Option<PathBuf>,
}

impl Default for Roots {
    fn default() -> Self {
        Roots { sysfs: PathBuf::from("/sys"), proc: PathBuf::from("/proc"), ethtool: None }
    }
}

/// A read file: its trimmed content and the logical path to show.
#[derive(Debug, Clone)]
pub struct Read {
    pub logical: String,
    pub result: Result<String, String>,
}

impl Roots {
    /// Roots for a recorded node tree laid out as the simulator exports it: `DIR/sysfs` (for `/sys`),
    /// `DIR/proc` (for `/proc`) and `DIR/ethtool/<if>`.
    pub fn for_tree(dir: &Path) -> Roots {
        Roots { sysfs: dir.join("sysfs"), proc: dir.join("proc"), ethtool: Some(dir.join("ethtool")) }
    }

    /// True when reading the live kernel trees (verbs and ethtool only make sense then).
    pub fn is_live(&self) -> bool {
        self.sysfs == Path::new("/sys")
    }

    pub fn sys_path(&self, rel: &str) -> (PathBuf, String) {
        (self.sysfs.join(rel), format!("/sys/{rel}"))
    }

    pub fn proc_path(&self, rel: &str) -> (PathBuf, String) {
        (self.proc.join(rel), format!("/proc/{rel}"))
    }

    /// Reads `/sys/<rel>`, trimmed.
    pub fn sys(&self, rel: &str) -> Read {
        let (real, logical) = self.sys_path(rel);
        read(real, logical)
    }

    /// Reads `/proc/<rel>` (not trimmed: tables keep their lines).
    pub fn proc(&self, rel: &str) -> Read {
        let (real, logical) = self.proc_path(rel);
        read(real, logical)
    }

    pub fn sys_exists(&self, rel: &str) -> bool {
        self.sysfs.join(rel).exists()
    }

    /// Names in a `/sys/<rel>` directory, sorted (numerically when all are numbers).
    pub fn sys_list(&self, rel: &str) -> Result<Vec<String>, String> {
        let (real, logical) = self.sys_path(rel);
        let entries = std::fs::read_dir(&real).map_err(|e| format!("{logical}: {e}"))?;
        let mut names: Vec<String> =
            entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort_by(|a, b| match (a.parse::<u64>(), b.parse::<u64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => a.cmp(b),
        });
        Ok(names)
    }
}

fn read(real: PathBuf, logical: String) -> Read {
    let result = std::fs::read_to_string(&real).map(|s| s.trim().to_owned()).map_err(|e| e.to_string());
    Read { logical, result }
}
