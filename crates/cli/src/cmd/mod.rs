//! One module per verb: arguments in, engine operation, rendering out. Exit codes come from `exit.rs`.

pub mod accounts;
mod audit;
mod backup;
pub mod bios;
pub mod bmc;
pub mod bmcops;
mod cabling;
pub mod config_check;
mod console;
pub mod db;
mod demo;
mod demo_replicas;
pub mod discover;
pub mod firmware;
pub mod import;
pub mod inventory;
pub mod media;
mod probation;
mod remote;
pub mod runbook;
mod scrub_check;
pub mod server;
pub mod sim;
pub mod sim_summary;
mod trust;
pub mod verify;

use lifeline_engine::{Identity, Lifeline, Settings};

use crate::args::{Cli, Command, Global};
use crate::exit::{Code, Exit};

pub async fn run(cli: Cli) -> Code {
    if let Some(url) = cli.global.server.clone()
        && let Some(r) = remote::run(&cli.global, &url, &cli.command).await
    {
        return finish(r);
    }
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
        Command::Boot(a) => bmcops::boot(&cli.global, a).await,
        Command::Sdr(a) => bmcops::sdr(&cli.global, a).await,
        Command::Fru(a) => bmcops::fru(&cli.global, a).await,
        Command::Events(a) => accounts::events(&cli.global, a).await,
        Command::Serve(a) => server::serve(&cli.global, a).await,
        Command::User(c) => server::user(&cli.global, c).await,
        Command::Token(c) => server::token(&cli.global, c).await,
        Command::Fault(c) => server::fault(&cli.global, c).await,
        Command::Runbook(c) => runbook::run(&cli.global, c).await,
        Command::Db(c) => db::run(&cli.global, c).await,
        Command::Media(c) => media::run(&cli.global, c).await,
        Command::Bios(c) => bios::run(&cli.global, c).await,
        Command::Firmware(c) => firmware::run(&cli.global, c).await,
        Command::Config(c) => config_check::run(&cli.global, c),
        Command::Discover(a) => discover::run(&cli.global, a).await,
    };
    finish(result)
}

fn finish(result: crate::exit::CmdResult) -> Code {
    match result {
        Ok(code) => code,
        Err(Exit { code, error }) => {
            if let Some(e) = error {
                eprintln!("error: {e:#}");
            }
            code
        }
    }
}

pub fn settings(g: &Global) -> Settings {
    Settings {
        config: g.config.clone(),
        inventory: g.inventory.clone(),
        data_dir: g.data_dir.clone(),
        database_url: g.database_url.clone(),
    }
}

/// The engine context for this command, acting as the Unix user.
pub fn lifeline(g: &Global) -> Result<Lifeline, Exit> {
    let identity =
        Identity { actor: lifeline_engine::cli_actor(), request_id: g.request_id.clone(), wait: g.wait };
    Ok(Lifeline::new(&settings(g), identity)?)
}

/// Prints a serializable value as pretty JSON on stdout.
pub fn print_json(v: &impl serde::Serialize) -> Result<(), Exit> {
    crate::out::json(v)
}
