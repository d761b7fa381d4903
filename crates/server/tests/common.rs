//! Shared by the in-process tests: a server state over a temporary data dir and the example inventory,
//! with one user (and token) per role.

#![allow(dead_code)]

use std::sync::Arc;

use lifeline_engine::{AuditService, Identity, Lifeline, Settings};
use lifeline_server::{AppState, Role, SystemClock, accounts};

pub struct Fixture {
    pub state: AppState,
    pub tokens: Vec<(Role, String)>,
    pub _dir: tempfile::TempDir,
}

pub fn example_inventory() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../inventory/example-cluster.toml")
}

pub async fn fixture() -> Fixture {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        inventory: Some(example_inventory()),
        data_dir: Some(dir.path().join("data")),
        ..Settings::default()
    };
    let base = Lifeline::new(&settings, Identity::new("server")).unwrap();
    let state = lifeline_server::serve::state(base, Arc::new(SystemClock), false).await.unwrap();
    let audit = AuditService::new(state.store.clone(), "test");
    let mut tokens = Vec::new();
    for role in [Role::Viewer, Role::Operator, Role::Admin] {
        let name = format!("{}-user", role.as_str());
        accounts::user_add(&state.store, &audit, &name, role, "correct horse battery").await.unwrap();
        let t = accounts::token_create(&state.store, &audit, &name, None, None).await.unwrap();
        tokens.push((role, t.token));
    }
    Fixture { state, tokens, _dir: dir }
}
