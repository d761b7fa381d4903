//! `lifeline backup scrub-check FILE… [--platform P]`: scrub config files offline and print what the
//! platform rules masked and what the fail-closed fallback masked and why; exit 1 when the fallback
//! fired (a rule should be written for that form). Needs no store and no switch.

use std::path::PathBuf;

use anyhow::{Context, anyhow};
use lifeline_netcfg::scrub::check::check;
use lifeline_netcfg::scrub::{MaskedBy, TagKey};
use lifeline_types::Platform;

use crate::args::Global;
use crate::cmd::print_json;
use crate::exit::{CmdResult, Code, Exit};
use crate::outln;

pub fn run(g: &Global, files: &[PathBuf], platform: Option<&str>) -> CmdResult {
    let platform = match platform {
        Some(p) => Some(p.parse::<Platform>().map_err(|_| {
            Exit::usage(anyhow!("--platform `{p}`: not one of sonic, eos, cumulus, ios, nxos"))
        })?),
        None => None,
    };
    // Tags only need to be stable within this run: a fresh key, so no tag here matches a stored one.
    let key = TagKey::random();
    let mut fired = false;
    let mut reports = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f)
            .with_context(|| format!("reading {}", f.display()))
            .map_err(Exit::usage)?;
        let c = check(&text, platform, &key);
        let fallback = c.scrubbed.by_fallback().count();
        fired |= fallback > 0;
        if g.json {
            reports.push(serde_json::json!({
                "file": f, "platform": c.platform, "platform_guessed": c.guessed,
                "masked": c.scrubbed.masked, "by_fallback": fallback,
            }));
            continue;
        }
        let how = if c.guessed { " (guessed; --platform to choose)" } else { "" };
        outln!(
            "{}: {}{how}: {} masked, {fallback} by the fallback",
            f.display(),
            c.platform,
            c.scrubbed.masked.len()
        );
        for m in &c.scrubbed.masked {
            match &m.by {
                MaskedBy::Rule(kind) => {
                    outln!("  {:<10} {}  rule: {}", m.at.to_string(), m.tag, kind.label())
                }
                MaskedBy::Fallback(why) => outln!("  {:<10} {}  FALLBACK: {why}", m.at.to_string(), m.tag),
            }
        }
    }
    if g.json {
        print_json(
            &serde_json::json!({ "outcome": if fired { "fallback" } else { "ok" }, "files": reports }),
        )?;
    } else if fired {
        outln!("the fallback masked values no platform rule knows: add a rule (or a safe form) for each");
    }
    Ok(if fired { Code::Failed } else { Code::Ok })
}
