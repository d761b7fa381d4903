//! The runbook library: the `runbooks/` directory, one file per runbook, named after it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::check::{Checked, check_file};
use crate::error::{Result, RunbookError};
use crate::model::Runbook;

/// A directory of runbooks.
#[derive(Debug, Clone)]
pub struct Library {
    pub dir: PathBuf,
}

/// One line of `lifeline runbook list`.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub name: String,
    pub description: String,
    pub targets: Vec<lifeline_types::Role>,
    pub fault: String,
    pub steps: usize,
    pub file: PathBuf,
}

impl Library {
    /// `dir`, or the configuration's `[runbooks] dir`, or `./runbooks`.
    pub fn new(dir: Option<PathBuf>, config: &lifeline_engine::ServerConfig) -> Library {
        Library {
            dir: dir.or_else(|| config.runbooks.dir.clone()).unwrap_or_else(|| PathBuf::from("runbooks")),
        }
    }

    /// Every `*.toml` file, sorted.
    pub fn files(&self) -> Result<Vec<PathBuf>> {
        let rd = std::fs::read_dir(&self.dir)
            .map_err(|source| RunbookError::Library { dir: self.dir.display().to_string(), source })?;
        let mut out: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        out.sort();
        Ok(out)
    }

    /// Checks every file.
    pub fn check_all(&self) -> Result<Vec<(PathBuf, Checked)>> {
        Ok(self.files()?.into_iter().map(|p| (p.clone(), check_file(&p))).collect())
    }

    /// The runbooks that check clean (a broken file is left out of the list; `check` names it).
    pub fn list(&self) -> Result<Vec<Listed>> {
        Ok(self
            .check_all()?
            .into_iter()
            .filter_map(|(file, c)| {
                c.runbook.map(|r| Listed {
                    name: r.name,
                    description: r.description,
                    targets: r.targets,
                    fault: r.fault,
                    steps: r.steps.len(),
                    file,
                })
            })
            .collect())
    }

    /// Loads and checks one runbook by name (or by path when `name` names a file).
    pub fn load(&self, name: &str) -> Result<(Runbook, String)> {
        let path = if name.ends_with(".toml") || name.contains('/') {
            PathBuf::from(name)
        } else {
            self.dir.join(format!("{name}.toml"))
        };
        load_file(&path, name, &self.dir)
    }
}

fn load_file(path: &Path, name: &str, dir: &Path) -> Result<(Runbook, String)> {
    let text = std::fs::read_to_string(path)
        .map_err(|_| RunbookError::NotFound { name: name.into(), dir: dir.display().to_string() })?;
    let c = crate::check::check_str(path, &text);
    match c.runbook {
        Some(r) if !c.has_errors() => Ok((r, text)),
        _ => Err(RunbookError::Invalid {
            path: path.display().to_string(),
            problems: c.diagnostics.iter().map(ToString::to_string).collect(),
        }),
    }
}

/// Parses stored definition text (a run's copy) without touching the library.
pub fn parse_stored(name: &str, text: &str) -> Result<Runbook> {
    let c = crate::check::check_stored(Path::new(&format!("{name}.toml")), text);
    match c.runbook {
        Some(r) => Ok(r),
        None => Err(RunbookError::Invalid {
            path: format!("(stored copy of {name})"),
            problems: c.diagnostics.iter().map(ToString::to_string).collect(),
        }),
    }
}
