//! Lifeline's simulated fleet: BMCs (Redfish, IPMI lanplus + SOL), SSH switches, a host model behind each
//! BMC and fault injection, all on loopback and speaking the real protocols on the wire.
//!
//! Modelled on omicron's `sp-sim`: the simulator shares wire and schema types with the clients and never
//! depends on a client crate, so no client is ever tested only against itself.
//!
//! Running a fleet (what `lifeline sim` does):
//! ```no_run
//! # async fn demo() -> Result<(), lifeline_sim::SimError> {
//! use lifeline_sim::{Fleet, FleetSpec, PortPlan, SimOptions};
//! let opts = SimOptions {
//!     ports: PortPlan::auto(), // 443/623/22 as root, else +10000
//!     time_scale: 1.0,
//!     endpoints_json: Some("endpoints.json".into()),
//!     export_node_state: Some("node-state".into()),
//!     ..SimOptions::default()
//! };
//! let fleet = Fleet::start(FleetSpec::generate(4, 2), opts).await?;
//! for e in fleet.endpoints() {
//!     println!("{} {:?} {}:{}", e.name, e.kind, e.address, e.port);
//! }
//! tokio::signal::ctrl_c().await.ok();
//! fleet.shutdown().await;
//! # Ok(()) }
//! ```
//! Faults from another process: `lifeline_sim::control::Client::inject(url, "gpu-node-01", "rail-down=mlx5_3")`.

pub mod accounts;
pub mod actions;
pub mod bios;
pub mod bootloader;
pub mod console;
pub mod control;
pub mod fault;
pub mod firmware;
pub mod fleet;
pub mod host;
pub mod ipmi;
mod lazy_channel;
mod listen;
pub mod media;
pub mod media_mount;
pub mod node_state;
pub mod redfish;
pub mod sel;
pub mod sensors;
pub mod spec;
pub mod switch;

pub use fault::{Fault, FaultParseError};
pub use fleet::{Endpoint, EndpointKind, Fleet, PortPlan, RunningFleet, SimError, SimOptions};
pub use host::{Host, HostConfig, HostEvent, Phase, PowerCommand};
pub use spec::{
    BmcSpec, FleetSpec, GpuSpec, LinkLayer, LldpPeer, RailSpec, RedfishFlavor, ServerSpec, SwitchSpec,
};
