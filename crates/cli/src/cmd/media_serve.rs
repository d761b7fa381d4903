//! `lifeline media insert TARGET... --serve FILE`: this host serves FILE (the engine's image server, on
//! the OOB address of `[image-server]`), each BMC gets a URL with a token of its own, and the command
//! keeps serving while the BMCs read the image: until the tokens expire, or Ctrl-C / SIGTERM, after
//! which every token is revoked and what was served is audited (`media.serve`).

use std::path::Path;

use anyhow::anyhow;
use lifeline_bmc::MediaRequest;
use lifeline_bmc::media::MediaUrl;
use lifeline_engine::image_serve::{ImageServer, Settings};

use super::{MediaInsertArgs, any_failed, image_credentials, render_acts};
use crate::args::{BmcSel, Global};
use crate::cmd::bmc::select;
use crate::cmd::lifeline;
use crate::exit::{CmdResult, Exit, verdict};
use crate::prompt::confirm_bmcs;

pub(super) async fn insert_served(g: &Global, a: MediaInsertArgs, file: &Path) -> CmdResult {
    let l = lifeline(g)?.with_bmc_options(|o| o.fanout = 64);
    let settings = Settings::from_config(&l.config.config.image_server)
        .map_err(|e| Exit::usage(anyhow!("media insert --serve: {e}")))?;
    if a.words.iter().any(|w| w.contains("://")) {
        return Err(Exit::usage(anyhow!("media insert --serve FILE takes targets only, not a URL")));
    }
    let credentials = image_credentials(a.image_user)?;
    let sel = select(&l, &BmcSel { targets: a.words, bmc: a.bmc }, false)?;
    let what = if a.boot_once { "media insert --boot-once" } else { "media insert" };
    confirm_bmcs(what, &sel, a.yes)?;
    let server = ImageServer::start(&settings).await.map_err(|e| Exit::failed(anyhow!("{e}")))?;
    // A placeholder the engine replaces per BMC with its own token's URL.
    let template = MediaRequest {
        image: MediaUrl::parse(&format!("https://{}/", server.addr()))
            .map_err(|e| Exit::failed(anyhow!("{e}")))?,
        boot_once: a.boot_once,
        write_protected: !a.writable,
        credentials,
    };
    let rows = match l.media_insert_served(&sel, &server, file, template).await {
        Ok(r) => r,
        Err(e) => {
            l.media_serve_end(server, file).await?;
            return Err(e.into());
        }
    };
    render_acts(g, &rows)?;
    let inserted =
        rows.iter().any(|r| r.result.as_ref().is_ok_and(|a| a.fresh().is_some_and(|x| x.confirmed)));
    if inserted && let Some(until) = server.last_deadline() {
        let left = until.saturating_duration_since(std::time::Instant::now());
        eprintln!(
            "serving {} at https://{} (certificate sha256 {}) for {}; Ctrl-C stops (the URLs then answer 404)",
            file.display(),
            server.addr(),
            server.fingerprint(),
            humantime::format_duration(std::time::Duration::from_secs(left.as_secs())),
        );
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| Exit::failed(anyhow!("cannot watch SIGTERM: {e}")))?;
        tokio::select! {
            _ = tokio::time::sleep_until(until.into()) => {}
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    let (served, refused) = l.media_serve_end(server, file).await?;
    let (req, ranges, bytes) =
        served.iter().fold((0, 0, 0), |(a, b, c), s| (a + s.requests, b + s.ranges, c + s.bytes));
    eprintln!(
        "stopped serving {}: {req} requests ({ranges} ranges), {bytes} bytes, {refused} refused",
        file.display()
    );
    l.close().await;
    Ok(verdict(any_failed(&rows)))
}
