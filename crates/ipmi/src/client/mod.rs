//! Async IPMI 2.0 lanplus client (tokio UDP). See the crate docs for the design.

mod boot;
mod error;
mod handshake;
mod mux;
mod ops;
mod record;
mod session;
mod sessionless;
mod sol;
mod timing;
mod transport;

pub use boot::BootWrite;
pub use error::{Error, Result};
pub use mux::{Mux, MuxStats, RouteKey, route_key};
pub use ops::{SensorStatus, SensorValue, User};
pub use record::{RecordFuture, SessionRecord, SessionRecorder};
pub use session::{ClientConfig, LinkCounters, LinkStats, Session, Timing};
pub use sessionless::{get_channel_auth_caps, get_channel_cipher_suites, sessionless};
pub use sol::{Sol, SolConfig, SolEvent, SolWriter};
