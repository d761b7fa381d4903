//! Lifeline's simulated fleet: BMCs (Redfish, IPMI lanplus + SOL), SSH switches, a host model behind each
//! BMC and fault injection, all on loopback and speaking the real protocols on the wire.
//!
//! Modelled on omicron's `sp-sim`: the simulator shares wire and schema types with the clients and never
//! depends on a client crate, so no client is ever tested only against itself.

pub mod bootloader;
pub mod console;
pub mod control;
pub mod fault;
pub mod fleet;
pub mod host;
pub mod node_state;
pub mod redfish;
pub mod sel;
pub mod sensors;
pub mod spec;
pub mod switch;

pub use fault::{Fault, FaultParseError};
pub use fleet::{Endpoint, EndpointKind, Fleet, PortPlan, RunningFleet, SimError, SimOptions};
pub use host::{Host, HostConfig, HostEvent, Phase, PowerCommand};
pub use spec::{BmcSpec, FleetSpec, GpuSpec, LinkLayer, RailSpec, RedfishFlavor, ServerSpec, SwitchSpec};
