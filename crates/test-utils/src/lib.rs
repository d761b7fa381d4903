//! The one harness every integration and end-to-end test uses (dev-dependency only).
//!
//! Tests run in parallel, one process each (nextest), so everything here hands out per-test resources:
//! a fresh loopback address, a fresh PostgreSQL database, a fresh data directory. Real third-party peers
//! (`../shared/peers/`) are started once by `.ci/run`; tests find them through their endpoints files and,
//! with `OOB_PEERS_REQUIRED=1`, fail instead of skipping when one is missing.

mod bin;
mod ipmi_sim;
mod loopback;
mod peers;
mod postgres;
pub mod redfish_tree;
mod serve;
mod sim;
mod sshd;
mod tls;
mod tls_peer;
mod udp_relay;
mod wait;

pub use bin::{agent_bin, lifeline_bin, workspace_root};
pub use ipmi_sim::{IPMI_SIM_BASE_PORT, IpmiSims, have, peers_dir, skip_or_fail};
pub use loopback::unique_loopback;
pub use peers::{PeerRow, peer_endpoints, peers_required};
pub use postgres::{TestDatabase, create_database_blocking, pg_text_rows, postgres_url};
pub use serve::{ServeProcess, add_user, add_user_args, healthz_ok};
pub use sim::{SimProcess, http_get, output_json, output_text, presented_fingerprint, three_flavour_sim};
pub use sshd::{Sshd, start_sshd, start_sshd_in};
pub use tls::accept_any_certificate;
pub use tls_peer::TlsStatic;
pub use udp_relay::UdpRelay;
pub use wait::{wait_until, wait_until_async};
