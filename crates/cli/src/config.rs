//! Resolving where things are: the inventory file, the data directory, the database.
//!
//! Order for the inventory: `--inventory`, `$LIFELINE_INVENTORY` (both via clap), then the `inventory` key of
//! the server config (`--config`, `$LIFELINE_CONFIG`, or `/etc/lifeline/lifeline.toml` when present).

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use crate::args::Global;
use crate::exit::Exit;

/// The part of the server configuration the CLI needs (the server adds its own sections later).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServerConfig {
    pub inventory: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub database_url: Option<String>,
    /// Switch backup schedules, one per device group (run by `lifeline serve`; shown by `backup schedule`).
    #[serde(default)]
    pub backup_schedule: Vec<toml::Spanned<BackupSchedule>>,
}

/// `[[backup-schedule]]`: when to back up which switches.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BackupSchedule {
    /// Inventory selectors: groups, racks, roles, names or globs.
    pub targets: Vec<String>,
    /// 5-field cron expression (minute hour day-of-month month day-of-week), UTC.
    pub cron: String,
    /// Spread the start over this long, per device, stable across restarts (e.g. `15m`).
    #[serde(default)]
    pub jitter: Option<String>,
    /// Attempts per run, with exponential backoff between them.
    #[serde(default = "default_retries")]
    pub retries: u32,
}

fn default_retries() -> u32 {
    3
}

const SYSTEM_CONFIG: &str = "/etc/lifeline/lifeline.toml";

/// The server config's text too, for messages that point at a line.
pub fn server_config_text(g: &Global) -> Result<Option<(PathBuf, String)>, Exit> {
    let (path, _) = server_config(g)?;
    Ok(match path {
        Some(p) => {
            let text = std::fs::read_to_string(&p).map_err(Exit::from)?;
            Some((p, text))
        }
        None => None,
    })
}

pub fn server_config(g: &Global) -> Result<(Option<PathBuf>, ServerConfig), Exit> {
    let path = match &g.config {
        Some(p) => p.clone(),
        None if Path::new(SYSTEM_CONFIG).exists() => PathBuf::from(SYSTEM_CONFIG),
        None => return Ok((None, ServerConfig::default())),
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read config file {}", path.display()))
        .map_err(Exit::usage)?;
    let cfg: ServerConfig = toml::from_str(&text).map_err(|e| {
        let at = e.span().map(|s| {
            let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
            format!(":{line}")
        });
        Exit::usage(anyhow::anyhow!("{}{}: {}", path.display(), at.unwrap_or_default(), e.message()))
    })?;
    // Relative paths in the config are relative to the config file.
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let fix = |p: Option<PathBuf>| p.map(|p| if p.is_relative() { base.join(p) } else { p });
    Ok((
        Some(path),
        ServerConfig {
            inventory: fix(cfg.inventory),
            data_dir: fix(cfg.data_dir),
            database_url: cfg.database_url,
            backup_schedule: cfg.backup_schedule,
        },
    ))
}

pub fn inventory_path(g: &Global) -> Result<PathBuf, Exit> {
    if let Some(p) = &g.inventory {
        return Ok(p.clone());
    }
    let (cfg_path, cfg) = server_config(g)?;
    cfg.inventory.ok_or_else(|| {
        let hint =
            cfg_path.map(|p| format!(" (and {} has no `inventory` key)", p.display())).unwrap_or_default();
        Exit::usage(anyhow::anyhow!(
            "no inventory given: pass --inventory FILE or set LIFELINE_INVENTORY{hint}"
        ))
    })
}

pub fn data_dir(g: &Global) -> Result<PathBuf, Exit> {
    if let Some(d) = &g.data_dir {
        return Ok(d.clone());
    }
    let (_, cfg) = server_config(g)?;
    if let Some(d) = cfg.data_dir {
        return Ok(d);
    }
    // Per-user state directory, so running the CLI never needs root.
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    Ok(base.join("lifeline"))
}

pub fn database_url(g: &Global) -> Result<Option<String>, Exit> {
    if let Some(u) = &g.database_url {
        return Ok(Some(u.clone()));
    }
    Ok(server_config(g)?.1.database_url)
}

pub async fn open_store(g: &Global) -> Result<lifeline_store::Store, Exit> {
    let dir = data_dir(g)?;
    let url = database_url(g)?;
    lifeline_store::Store::open(&dir, url.as_deref()).await.map_err(Exit::from)
}
