//! Finding the real peers started by `shared/peers/start-*.sh` (ipmi_sim, sushy-tools, fakenos, Slurm).

/// One whitespace-separated row of an `endpoints.txt`.
pub type PeerRow = Vec<String>;

/// Whether a missing peer is a failure (`OOB_PEERS_REQUIRED=1`, set in CI) or a loud skip.
pub fn peers_required() -> bool {
    std::env::var("OOB_PEERS_REQUIRED").as_deref() == Ok("1")
}

/// Rows of `$OOB_PEERS_RUN/<kind>/endpoints.txt` (default run dir `/tmp/oob-peers`), `#` lines dropped.
/// `None` (after printing `SKIP: …`) when the peer is not running and not required; panics when required.
pub fn peer_endpoints(kind: &str) -> Option<Vec<PeerRow>> {
    let run = std::env::var("OOB_PEERS_RUN").unwrap_or_else(|_| "/tmp/oob-peers".into());
    let path = format!("{run}/{kind}/endpoints.txt");
    match std::fs::read_to_string(&path) {
        Ok(s) => Some(
            s.lines()
                .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
                .map(|l| l.split_whitespace().map(String::from).collect())
                .collect(),
        ),
        Err(_) if peers_required() => {
            panic!("{kind} peer required (OOB_PEERS_REQUIRED=1) but {path} is missing")
        }
        Err(_) => {
            eprintln!("SKIP: no {kind} peer at {path} (run shared/peers/start-*.sh)");
            None
        }
    }
}
