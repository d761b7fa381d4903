//! One module per verb; each returns an exit code or an `Exit` carrying one.

mod audit;
mod backup;
pub mod bmc;
mod console;
mod demo;
pub mod inventory;
pub mod sim;
mod verify;

use crate::args::{Cli, Command};
use crate::exit::{Code, Exit};

pub async fn run(cli: Cli) -> Code {
    let result = match cli.command {
        Command::Inventory(c) => inventory::run(&cli.global, c).await,
        Command::Audit(c) => audit::run(&cli.global, c).await,
        Command::Sim(a) => sim::run(&cli.global, a).await,
        Command::Demo(a) => demo::run(&cli.global, a).await,
        Command::Console(a) => console::run(&cli.global, a).await,
        Command::Backup(c) => backup::run(&cli.global, c).await,
        Command::Verify(a) => verify::verify(&cli.global, a).await,
        Command::Drain(a) => verify::drain(&cli.global, a).await,
        Command::Power(a) => bmc::power(&cli.global, a).await,
        Command::Health(a) => bmc::health(&cli.global, a).await,
        Command::Sel(a) => bmc::sel(&cli.global, a).await,
        Command::Sweep(a) => bmc::sweep(&cli.global, a).await,
        Command::Bmc(c) => bmc::bmc(&cli.global, c).await,
    };
    match result {
        Ok(code) => code,
        Err(Exit { code, error }) => {
            eprintln!("error: {error:#}");
            code
        }
    }
}

/// Prints a serializable value as pretty JSON on stdout.
pub fn print_json(v: &impl serde::Serialize) -> Result<(), Exit> {
    let text = serde_json::to_string_pretty(v)?;
    println!("{text}");
    Ok(())
}

/// Who is acting, for the audit log: the Unix user behind the CLI.
pub fn actor() -> String {
    let uid = nix::unistd::getuid();
    let user = std::env::var("SUDO_USER")
        .ok()
        .or_else(|| nix::unistd::User::from_uid(uid).ok().flatten().map(|u| u.name))
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| format!("uid{uid}"));
    format!("cli:{user}")
}

/// Writes one audit row as the current actor. Commands call it before they report success, so nothing
/// that happened is missing from the log.
pub async fn audit(
    store: &lifeline_store::Store,
    action: &str,
    target: &str,
    outcome: &str,
    detail: serde_json::Value,
) -> Result<(), Exit> {
    store
        .audit(&lifeline_store::AuditEntry {
            actor: actor(),
            action: action.into(),
            target: target.into(),
            outcome: outcome.into(),
            detail,
            request_id: None,
        })
        .await?;
    Ok(())
}
