//! Turning what the operator typed (device names, racks, roles, globs, `--bmc URL`) into BMC targets with
//! their passwords resolved — all of them before any BMC is contacted, so a bad credential reference
//! fails the command instead of locking out half a rack with wrong passwords.

use std::io::IsTerminal;

use anyhow::anyhow;
use lifeline_bmc::BmcTarget;
use lifeline_inventory::{Device, credentials};

use crate::args::{BmcSel, Global};
use crate::cmd::inventory;
use crate::exit::Exit;

/// A target plus the inventory's explicit TLS pin (which wins over trust on first use).
pub struct Resolved {
    pub targets: Vec<BmcTarget>,
    /// Devices selected that have no BMC (reported, not fatal for group selections).
    pub skipped: Vec<String>,
}

pub fn target_from_device(d: &Device, password: String) -> Option<BmcTarget> {
    let b = d.bmc.as_ref()?;
    let mut t =
        BmcTarget::new(d.name.to_string(), b.address.to_string(), b.protocol, b.username.clone(), password);
    if let Some(p) = b.port {
        t = t.with_port(p);
    }
    t.tls_pin = b.tls_fingerprint;
    Some(t)
}

pub fn resolve(g: &Global, sel: &BmcSel, default_all: bool) -> Result<Resolved, Exit> {
    let mut targets = Vec::new();
    let mut skipped = Vec::new();
    let names: Vec<String> = if sel.targets.is_empty() && default_all && sel.bmc.is_empty() {
        vec!["all".into()]
    } else {
        sel.targets.clone()
    };
    if !names.is_empty() {
        let inv = inventory::load(g)?;
        let devices = lifeline_inventory::select(&inv, &names).map_err(Exit::usage)?;
        let mut problems = Vec::new();
        for d in devices {
            let Some(b) = &d.bmc else {
                if names.iter().any(|n| n == d.name.as_str()) {
                    problems.push(format!("`{}` has no BMC in the inventory", d.name));
                } else {
                    skipped.push(d.name.to_string());
                }
                continue;
            };
            match credentials::resolve(&b.credential) {
                Ok(pw) => targets.extend(target_from_device(d, pw)),
                Err(e) => problems.push(format!("`{}`: credential `{}`: {e}", d.name, b.credential)),
            }
        }
        if !problems.is_empty() {
            return Err(Exit::usage(anyhow!("no BMC was contacted because:\n  {}", problems.join("\n  "))));
        }
    }
    if !sel.bmc.is_empty() {
        let password = bmc_password()?;
        for url in &sel.bmc {
            targets.push(BmcTarget::parse_url(url, password.clone()).map_err(Exit::usage)?);
        }
    }
    if targets.is_empty() {
        return Err(Exit::usage(anyhow!(
            "no BMC selected (name devices, racks, roles or globs, or pass --bmc URL)"
        )));
    }
    Ok(Resolved { targets, skipped })
}

/// `LIFELINE_BMC_PASSWORD`, else a prompt on the terminal — never a command-line argument (it would show
/// in `ps` and shell history).
fn bmc_password() -> Result<String, Exit> {
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

/// Asks before a destructive action unless `--yes`; refuses without a terminal to ask on.
pub fn confirm(question: &str, yes: bool) -> Result<(), Exit> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(Exit::usage(anyhow!("{question}: refusing without --yes (no terminal to confirm on)")));
    }
    eprint!("{question} [y/N] ");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map_err(Exit::from)?;
    if matches!(line.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        Err(Exit::failed(anyhow!("not confirmed; nothing was done")))
    }
}
