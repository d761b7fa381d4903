//! A config change's restore is offered once per answer: while the offered run waits (or runs), and for the
//! correlation window after an operator answered it (rejected it, or it ran), the same evidence on the next
//! counters read or rail fault offers nothing new. Past the window it is offered again.

use std::sync::Arc;

use lifeline_engine::switch_evidence::RestoreOffer;
use lifeline_engine::{Identity, Lifeline, Settings};
use lifeline_server::{AppState, SystemClock};

const LEAF: &str = "backend-leaf-01";

async fn state(dir: &std::path::Path, correlation: &str) -> AppState {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cfg = dir.join("lifeline.toml");
    std::fs::write(
        &cfg,
        format!(
            "[runbooks]\ndir = \"{}\"\n\n[correlation]\n{correlation}\n",
            root.join("runbooks").display()
        ),
    )
    .unwrap();
    let settings = Settings {
        config: Some(cfg),
        inventory: Some(root.join("inventory/example-cluster.toml")),
        data_dir: Some(dir.join("data")),
        ..Settings::default()
    };
    let base = Lifeline::new(&settings, Identity::new("server")).unwrap();
    lifeline_server::serve::state(base, Arc::new(SystemClock), false).await.unwrap()
}

/// The runs on the leaf: (id, state), newest first.
async fn runs(s: &AppState) -> Vec<(String, String)> {
    s.base
        .runs_recent(100)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.target == LEAF)
        .map(|r| (r.id, r.state.to_string()))
        .collect()
}

/// A fault the change explains, an offer of v1, and the operator rejecting it; the runs after the same
/// evidence comes again `after_ms` later.
async fn offered_rejected_and_seen_again(correlation: &str, after_ms: u64) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let s = state(dir.path(), correlation).await;
    let f = lifeline_server::faults::raise(
        &s,
        "shared-rail-down",
        LEAF,
        "critical",
        "rail mlx5_0 down on 3 nodes; backend-leaf-01 config changed",
        serde_json::json!({}),
    )
    .await
    .unwrap();
    let offer = RestoreOffer { switch: LEAF.into(), version: 1, runbook: "switch-config-restore".into() };
    lifeline_server::faults::offer_restore(&s, &f, &offer).await;
    let first = runs(&s).await;
    assert_eq!(first.len(), 1, "offered: {first:?}");
    assert_eq!(first[0].1, "waiting-approval", "never started without an approval: {first:?}");
    // Seen again while it waits: the waiting run answers it.
    lifeline_server::faults::offer_restore(&s, &f, &offer).await;
    assert_eq!(runs(&s).await.len(), 1, "offered twice while the first waits");

    // The operator rejects the offer (aborts the waiting run, as the API's abort does).
    let x = s.runbooks.executor(s.base.with_identity(Identity::new("ann")));
    x.abort(&first[0].0).await.unwrap();
    let after = runs(&s).await;
    assert_eq!(after[0].1, "aborted", "{after:?}");
    tokio::time::sleep(std::time::Duration::from_millis(after_ms)).await;
    lifeline_server::faults::offer_restore(&s, &f, &offer).await;
    runs(&s).await
}

#[tokio::test]
async fn a_rejected_restore_is_not_offered_again_within_the_window() {
    let runs = offered_rejected_and_seen_again("window = \"10m\"", 0).await;
    assert_eq!(runs.len(), 1, "offered again right after the operator rejected it: {runs:?}");
}

#[tokio::test]
async fn past_the_window_it_is_offered_again() {
    let runs = offered_rejected_and_seen_again("hold = \"0s\"\nwindow = \"50ms\"", 200).await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0].1, "waiting-approval", "the new offer waits for an approval: {runs:?}");
}
