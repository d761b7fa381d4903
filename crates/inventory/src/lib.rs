//! Lifeline's inventory: what exists in the cluster, loaded from TOML and validated.
//!
//! The inventory file is the source of truth for which BMCs, switches and rails exist; everything else
//! (the store, the simulator, the agent's expectations) is derived from it. See `inventory/README.md` for
//! the format. Problems are reported all at once, as `FILE:LINE:COL: message`.

mod check;
pub mod credentials;
pub mod import;
pub mod keys;
mod location;
mod model;
mod raw;
pub mod schema;
mod select;
pub mod suggest;
mod timeouts;
pub mod tomlcheck;

use std::path::{Path, PathBuf};

pub use check::{Report, check_str};
pub use location::{Diagnostic, Severity, SourceMap};
pub use model::*;
pub use select::{SelectError, select};

/// Why an inventory could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error("cannot read inventory file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("inventory {path} has {count} problem(s):\n{listing}")]
    Invalid { path: PathBuf, count: usize, listing: String, diagnostics: Vec<Diagnostic> },
}

/// Checks a file, returning every diagnostic (and the model when there are no errors).
pub fn check_file(path: &Path) -> Result<Report, InventoryError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| InventoryError::Read { path: path.to_path_buf(), source })?;
    Ok(check_str(path, &text))
}

/// Loads a file that must be valid; warnings are returned beside the model.
pub fn load(path: &Path) -> Result<(Inventory, Vec<Diagnostic>), InventoryError> {
    let report = check_file(path)?;
    match report.inventory {
        Some(inv) => Ok((inv, report.diagnostics)),
        None => {
            let errors: Vec<Diagnostic> =
                report.diagnostics.into_iter().filter(|d| d.severity == Severity::Error).collect();
            let listing = errors.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n");
            Err(InventoryError::Invalid {
                path: path.to_path_buf(),
                count: errors.len(),
                listing,
                diagnostics: errors,
            })
        }
    }
}

impl Inventory {
    pub fn device(&self, name: &str) -> Option<&Device> {
        self.devices.iter().find(|d| d.name.as_str() == name)
    }
}
