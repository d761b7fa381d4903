//! `lifeline`: the operator's command line. Thin: it parses arguments, loads configuration and calls the
//! engine crates; exit codes are stable (see `exit.rs`).

mod adapters;
mod args;
mod cmd;
mod config;
mod exit;
mod fleet;
mod logging;
mod targets;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = args::Cli::parse();
    logging::init(&args.global);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return exit::Code::Internal.into();
        }
    };
    let code = runtime.block_on(cmd::run(args));
    code.into()
}
