//! `lifeline`: the operator's command line. Thin: it parses arguments, loads configuration and calls the
//! engine crate; exit codes are stable (see `exit.rs`).

mod args;
mod cmd;
mod exit;
mod fleet;
mod logging;
mod out;
mod prompt;

use clap::Parser;

/// The server's allocator for every verb (one binary): see `lifeline_server::ServerAllocator`.
#[global_allocator]
static GLOBAL: lifeline_server::ServerAllocator = lifeline_server::ServerAllocator;

/// The example inventory shipped with the source tree, for `lifeline demo` without `--inventory`: found
/// next to the current directory (a checkout) or relative to the binary (`target/<profile>/lifeline`).
pub fn bin_relative_example() -> std::path::PathBuf {
    let rel = std::path::Path::new("inventory/example-cluster.toml");
    if rel.exists() {
        return rel.to_path_buf();
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(root) = exe.ancestors().nth(3)
        && root.join(rel).exists()
    {
        return root.join(rel);
    }
    rel.to_path_buf()
}

fn main() -> std::process::ExitCode {
    let args = args::Cli::parse();
    // Everything Lifeline writes (the store, console logs, config blobs, keys) is private to its user.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    // No transparent huge pages, even where the system enables them for every mapping (`always`): the
    // allocator returns freed memory within milliseconds, and a huge page touched again is zeroed whole
    // (see `mimalloc` in the workspace manifest). An error only means an old kernel.
    let _ = nix::sys::prctl::set_thp_disable(true);
    // Several TLS stacks are linked (reqwest, kube, russh); pick one crypto provider for the process so
    // none of them has to guess. An error only means one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    logging::init(&args.global);
    // 8 MiB per worker (tokio's default is 2 MiB): a runbook step polls an engine operation through the
    // executor, the lease scope, the audit and the BMC layers, and an unoptimised build's poll frames are
    // large (a virtual media step overflowed 2 MiB in a debug build).
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(8 * 1024 * 1024)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return exit::Code::Internal.into();
        }
    };
    let code = runtime.block_on(cmd::run(args));
    code.into()
}
