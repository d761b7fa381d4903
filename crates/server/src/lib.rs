//! # lifeline-server: `lifeline serve`, the jump-host service
//!
//! An axum application over the engine (`lifeline-engine`), shaped like omicron's `gateway`: one shared
//! context ([`state::AppState`]) handed to every handler and scheduled job, thin handlers that call the
//! engine as the caller (`web:<user>`, the `Idempotency-Key` as request id), and one error mapping
//! ([`error`]) from the engine's error classes to HTTP statuses.
//!
//! - [`access`]: the route table — every route with the least role that may call it; the router, the
//!   access layer and the OpenAPI document ([`openapi`]) are built from it.
//! - [`auth`], [`accounts`]: users (argon2id), sessions (cookie + CSRF), API tokens; [`login_limit`]:
//!   lockout per (user, source) and refused logins audited in bounded rows.
//! - [`api`]: the JSON API under `/api/v1`, one module per concern; [`fleet_state`]: the one definition of
//!   each device state the overview, the fleet filter and the grid show.
//! - [`runbooks`]: runbook runs driven in the background by the server (from the API, from the fault
//!   policy, resumed on start, stopped at a step boundary on SIGTERM).
//! - [`scheduler`]: scheduled backups, fleet sweeps, the always-on console logger; [`faults`] turns what
//!   they see into fault records, [`policy`] decides which runbook answers each (a [`policy::FaultResponder`]
//!   carries it out), [`webhook`] tells the outside.
//! - [`replica`]: several replicas on one PostgreSQL database: membership, and work claimed with fencing
//!   (backup slots, console loggers, runbook runs) so each runs in exactly one place.
//! - [`tls`]: the operator's certificate or a self-signed one; [`serve`]: start and graceful stop;
//!   [`sdnotify`]: readiness and watchdog for systemd's `Type=notify`.
//! - [`client`]: the CLI's `--server URL` mode.
//! - [`web`]: the web console's embedded pages and the security headers; [`live`]: its SSE updates;
//!   [`streams`]: how many of those streams and console WebSockets a user or an address may hold.

pub mod access;
pub mod accounts;
pub mod api;
pub mod auth;
pub mod client;
pub mod error;
pub mod faults;
pub mod fleet_state;
pub mod live;
pub mod login_limit;
pub mod metrics;
pub mod openapi;
pub mod origin;
pub mod policy;
pub mod probation;
pub mod replica;
pub mod runbooks;
pub mod scheduler;
pub mod sdnotify;
pub mod serve;
pub mod state;
pub mod streams;
pub mod tls;
pub mod web;
pub mod webhook;

pub use auth::Role;
/// The allocator a process running the server installs (`#[global_allocator]` in the `lifeline` binary
/// and the server benchmarks): a sweep of 10,000 BMCs frees a few hundred MiB that glibc's malloc kept in
/// its arenas between sweeps (measured: 84 MiB live, 373 MiB free but held); mimalloc gives it back.
pub use mimalloc::MiMalloc as ServerAllocator;
pub use serve::{Running, ServeError, ServeOptions, serve, start};
pub use state::{AppState, Clock, SystemClock};
