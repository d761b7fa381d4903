//! Asking the operator: a hidden password prompt for `--bmc` URLs, and confirmation of destructive actions
//! that lists what will be hit and, for anything wider than one node or any control-plane device, makes the
//! operator type the count.

use std::io::IsTerminal;

use anyhow::anyhow;
use lifeline_engine::BmcSelection;

use crate::exit::Exit;

/// `LIFELINE_BMC_PASSWORD`, else a prompt on the terminal — never a command-line argument (it would show
/// in `ps` and shell history).
pub fn bmc_password() -> Result<String, Exit> {
    if let Ok(p) = std::env::var("LIFELINE_BMC_PASSWORD") {
        return Ok(p);
    }
    if !std::io::stdin().is_terminal() {
        return Err(Exit::usage(anyhow!(
            "--bmc needs a password: set LIFELINE_BMC_PASSWORD (no terminal to prompt on)"
        )));
    }
    prompt_hidden("BMC password: ").map_err(Exit::usage)
}

fn prompt_hidden(prompt: &str) -> anyhow::Result<String> {
    use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
    use std::io::Write;
    let stdin = std::io::stdin();
    let saved = tcgetattr(&stdin)?;
    let mut quiet = saved.clone();
    quiet.local_flags.remove(LocalFlags::ECHO);
    eprint!("{prompt}");
    std::io::stderr().flush()?;
    tcsetattr(&stdin, SetArg::TCSANOW, &quiet)?;
    let mut line = String::new();
    let read = stdin.read_line(&mut line);
    tcsetattr(&stdin, SetArg::TCSANOW, &saved)?;
    eprintln!();
    read?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

fn read_answer() -> Result<String, Exit> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map_err(Exit::internal)?;
    Ok(line.trim().to_owned())
}

/// Asks before a destructive action unless `--yes`; refuses without a terminal to ask on.
pub fn confirm(question: &str, yes: bool) -> Result<(), Exit> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(Exit::usage(anyhow!("{question}: refusing without --yes (no terminal to confirm on)")));
    }
    eprint!("{question} [y/N] ");
    if matches!(read_answer()?.as_str(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(Exit::failed(anyhow!("not confirmed; nothing was done")))
    }
}

/// Asks for the number of targets typed back (more than one target, or a control-plane device), unless
/// `--yes`; refuses without a terminal.
pub fn confirm_count(question: &str, n: usize, yes: bool) -> Result<(), Exit> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(Exit::usage(anyhow!("{question}: refusing without --yes (no terminal to confirm on)")));
    }
    eprint!("{question}\ntype {n} to go ahead: ");
    if read_answer()? == n.to_string() {
        return Ok(());
    }
    Err(Exit::failed(anyhow!("not confirmed; nothing was done")))
}

/// Confirms an action on BMCs: lists them grouped by role; more than one, or any head node, storage server
/// or switch, needs the number typed back (a stray `y` must not cycle a rack).
pub fn confirm_bmcs(what: &str, sel: &BmcSelection, yes: bool) -> Result<(), Exit> {
    let n = sel.bmcs.len();
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(Exit::usage(anyhow!(
            "{what} {n} BMC(s): refusing without --yes (no terminal to confirm on)"
        )));
    }
    eprintln!("{what} will hit {n} BMC(s):");
    for (role, names) in sel.by_role() {
        eprintln!("  {role} ({}): {}", names.len(), names.join(", "));
    }
    if n > 1 || sel.hits_control_plane() {
        if sel.hits_control_plane() {
            eprintln!("this includes control-plane devices (head nodes, storage, switches)");
        }
        eprint!("type {n} to go ahead: ");
        if read_answer()? == n.to_string() {
            return Ok(());
        }
        return Err(Exit::failed(anyhow!("not confirmed; nothing was done")));
    }
    eprint!("go ahead? [y/N] ");
    if matches!(read_answer()?.as_str(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(Exit::failed(anyhow!("not confirmed; nothing was done")))
    }
}
