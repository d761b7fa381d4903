//! Shared by the in-process tests: a server state over a temporary data dir and the example inventory,
//! with one user (and token) per role.

#![allow(dead_code)]

use std::sync::Arc;

use lifeline_engine::{Identity, Lifeline, Settings};
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
    let audit = state.audit_as("test").await.unwrap();
    let mut tokens = Vec::new();
    for role in [Role::Viewer, Role::Operator, Role::Admin] {
        let name = format!("{}-user", role.as_str());
        accounts::user_add(&state.base, &audit, &name, role, "correct horse battery").await.unwrap();
        let t = accounts::token_create(&state.base, &audit, &name, None, None).await.unwrap();
        tokens.push((role, t.token));
    }
    Fixture { state, tokens, _dir: dir }
}

/// Settings for a store in `dir` over an inventory of one device `name` (role head-node) whose BMC is `bmc`
/// (an inline TOML table), its password `password` in a 0600 file; `config`: the text of lifeline.toml.
pub fn one_bmc_settings(dir: &std::path::Path, name: &str, bmc: &str, config: Option<&str>) -> Settings {
    let pw = dir.join("bmc-pass");
    std::fs::write(&pw, "password\n").unwrap();
    std::fs::set_permissions(&pw, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let inv = dir.join("inventory.toml");
    std::fs::write(
        &inv,
        format!(
            "[cluster]\nname = \"k\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
             credential = \"file:{}\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
             [[device]]\nname = \"{name}\"\nrole = \"head-node\"\nrack = \"r\"\nbmc = {bmc}\n",
            pw.display(),
        ),
    )
    .unwrap();
    let config = config.map(|text| {
        let cfg = dir.join("lifeline.toml");
        std::fs::write(&cfg, text).unwrap();
        cfg
    });
    Settings { config, inventory: Some(inv), data_dir: Some(dir.join("data")), ..Settings::default() }
}
