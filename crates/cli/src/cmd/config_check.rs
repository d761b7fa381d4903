//! `lifeline config check [FILE]`: the server configuration's every problem at once (unknown keys with
//! "did you mean", types, durations, cron, addresses), as FILE:LINE:COL. The checking is the engine's
//! (`lifeline_engine::config_check`); this is reading the file and printing.

use std::path::PathBuf;

use anyhow::{Context, anyhow};
use clap::Subcommand;
use serde_json::json;

use crate::args::Global;
use crate::cmd::print_json;
use crate::exit::{CmdResult, Code, Exit};
use crate::outln;

#[derive(Debug, Subcommand)]
pub enum ConfigCmd {
    /// Check a server configuration file (default: --config / $LIFELINE_CONFIG); every problem is printed
    /// as FILE:LINE:COL: message. Exit 0 valid, 1 invalid, 2 when there is no file to read.
    Check {
        /// The file to check.
        file: Option<PathBuf>,
    },
}

pub fn run(g: &Global, cmd: ConfigCmd) -> CmdResult {
    match cmd {
        ConfigCmd::Check { file } => check(g, file),
    }
}

fn check(g: &Global, file: Option<PathBuf>) -> CmdResult {
    let Some(file) = file.or_else(|| g.config.clone()) else {
        return Err(Exit::usage(anyhow!(
            "no configuration file: name one, or pass --config / set LIFELINE_CONFIG"
        )));
    };
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("reading {}", file.display()))
        .map_err(Exit::usage)?;
    let diagnostics = lifeline_engine::config_check::check(&file, &text);
    if g.json {
        print_json(&json!({ "file": file, "valid": diagnostics.is_empty(), "diagnostics": diagnostics }))?;
    } else {
        for d in &diagnostics {
            outln!("{d}");
        }
        match diagnostics.len() {
            0 => outln!("{}: ok", file.display()),
            n => outln!("{}: {n} problem(s)", file.display()),
        }
    }
    Ok(if diagnostics.is_empty() { Code::Ok } else { Code::Failed })
}
