//! Starting and stopping a whole simulated fleet, and the registry of its devices by name.
//!
//! `Fleet::start` binds every listener first and only then writes the endpoints JSON, so a script that
//! waits for that file can connect at once. Every task belongs to the fleet's `JoinSet` and watches its
//! cancellation token: `shutdown().await` stops them in order, dropping the `RunningFleet` aborts them.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lifeline_types::{PowerAction, Role};
use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::actions::{Action, Origin};
use crate::console::HostKind;
use crate::control::DeviceInfo;
use crate::fault::Fault;
use crate::host::{BmcConfig, BmcIdentity, Host, HostConfig, HostError, HostEvent, PowerCommand, Timings};
use crate::listen::{Listeners, StreamHandler};
use crate::redfish::replay::ReplayTree;
use crate::redfish::{RedfishBmc, TlsError};
use crate::spec::{BmcSpec, FleetSpec, GpuSpec, SwitchSpec};

/// How ports are chosen for every device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortPlan {
    /// 443/tcp, 623/udp, 22/tcp (needs root or CAP_NET_BIND_SERVICE).
    Standard,
    /// Standard port + offset (443+N, 623+N, 22+N): each device still has its own address.
    Offset(u16),
    /// Port 0 everywhere: the OS picks, the endpoints list says which (tests).
    Ephemeral,
}

impl PortPlan {
    /// `Standard` when running as root, else `Offset(10000)`.
    pub fn auto() -> PortPlan {
        let root = std::fs::read_to_string("/proc/self/status").ok().is_some_and(|s| {
            s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        });
        if root { PortPlan::Standard } else { PortPlan::Offset(10000) }
    }

    fn port(self, standard: u16, explicit: Option<u16>) -> u16 {
        if let Some(p) = explicit {
            return p;
        }
        match self {
            PortPlan::Standard => standard,
            PortPlan::Offset(n) => standard.saturating_add(n),
            PortPlan::Ephemeral => 0,
        }
    }
}

/// Options of a run.
#[derive(Debug, Clone)]
pub struct SimOptions {
    pub ports: PortPlan,
    /// Where the control API listens (`127.0.0.1:0` by default: read it from the endpoints).
    pub control: SocketAddr,
    /// Multiplies every simulated delay (boot stages, vendor latency). 1.0 = realistic, 0.01 = tests.
    pub time_scale: f64,
    pub timings: Timings,
    /// `--export-node-state DIR`.
    pub export_node_state: Option<PathBuf>,
    /// `--endpoints-json FILE`, written once everything listens.
    pub endpoints_json: Option<PathBuf>,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            ports: PortPlan::auto(),
            control: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            time_scale: 1.0,
            timings: Timings::default(),
            export_node_state: None,
            endpoints_json: None,
        }
    }
}

impl SimOptions {
    /// Ephemeral ports, fast boots: what tests want.
    pub fn for_tests() -> SimOptions {
        SimOptions { ports: PortPlan::Ephemeral, time_scale: 0.01, ..SimOptions::default() }
    }
}

/// Protocol of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EndpointKind {
    Redfish,
    Ipmi,
    Ssh,
    Control,
}

/// One line of the endpoints JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Endpoint {
    pub name: String,
    pub kind: EndpointKind,
    pub address: IpAddr,
    pub port: u16,
    pub username: String,
    pub password: String,
}

/// Why the fleet could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("device name `{name}` is used twice")]
    DuplicateName { name: String },
    #[error("{name}: cannot listen for {kind:?} on {addr}")]
    Bind {
        name: String,
        kind: EndpointKind,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("{name}: TLS setup failed")]
    Tls {
        name: String,
        #[source]
        source: TlsError,
    },
    #[error("{name}: cannot replay its captured Redfish tree")]
    Replay {
        name: String,
        #[source]
        source: crate::redfish::replay::ReplayError,
    },
    #[error("cannot write the endpoints file {path}")]
    Endpoints {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Why a control request on a device failed.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("no device named `{name}`")]
    UnknownDevice { name: String },
    #[error(transparent)]
    Host(#[from] HostError),
    #[error("{name}: `{what}` is not supported on this device")]
    NotSupported { name: String, what: String },
}

/// A server: the host model and its Redfish face.
#[derive(Debug)]
pub struct ServerDevice {
    pub host: Arc<Host>,
    pub redfish: Arc<RedfishBmc>,
}

/// A switch: where its state lives. The SSH CLI (`crate::switch`) and the optional BMC (a `Host` of kind
/// `Switch`, for IPMI + SOL) hang off this entry, looked up by name in [`Devices`].
#[derive(Debug)]
pub struct SwitchDevice {
    pub spec: SwitchSpec,
    /// Configs, CLI state and host key: what the SSH server (`crate::switch`) serves.
    pub state: Arc<crate::switch::SwitchState>,
    /// The switch's BMC and console, if it has one.
    pub bmc: Option<Arc<Host>>,
    /// Faults routed to the switch itself (config-change, pfc-storm, boot-loop without BMC).
    pub faults: std::sync::Mutex<Vec<Fault>>,
}

/// A device of the fleet.
#[derive(Debug)]
pub enum Device {
    Server(ServerDevice),
    Switch(SwitchDevice),
}

/// Every device by name: what the control API, the CLI and tests look up.
#[derive(Debug, Default)]
pub struct Devices {
    map: BTreeMap<String, Device>,
}

fn phase_name(h: &Host) -> String {
    serde_json::to_value(h.phase()).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

impl Devices {
    pub fn get(&self, name: &str) -> Option<&Device> {
        self.map.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Device)> {
        self.map.iter()
    }

    fn lookup(&self, name: &str) -> Result<&Device, DeviceError> {
        self.map.get(name).ok_or_else(|| DeviceError::UnknownDevice { name: name.to_owned() })
    }

    /// The host model of a server, or the BMC host of a switch.
    pub fn host(&self, name: &str) -> Option<Arc<Host>> {
        match self.map.get(name)? {
            Device::Server(s) => Some(s.host.clone()),
            Device::Switch(s) => s.bmc.clone(),
        }
    }

    pub fn info(&self, name: &str) -> Result<DeviceInfo, DeviceError> {
        Ok(match self.lookup(name)? {
            Device::Server(s) => DeviceInfo {
                name: name.to_owned(),
                kind: "server".into(),
                power: s.host.power_state().to_string(),
                phase: phase_name(&s.host),
                faults: s.host.active_faults().iter().map(Fault::to_string).collect(),
                flavor: Some(s.redfish.flavor.kind.to_string()),
                platform: None,
            },
            Device::Switch(s) => {
                let mut faults: Vec<String> =
                    s.faults.lock().unwrap_or_else(|e| e.into_inner()).iter().map(Fault::to_string).collect();
                if let Some(b) = &s.bmc {
                    faults.extend(b.active_faults().iter().map(Fault::to_string));
                }
                // Kept by the switch state (a power cycle through the BMC clears it there).
                if s.state.mgmt_down() {
                    faults.push(Fault::MgmtDown.to_string());
                }
                DeviceInfo {
                    name: name.to_owned(),
                    kind: "switch".into(),
                    power: s.bmc.as_ref().map_or("on".into(), |b| b.power_state().to_string()),
                    phase: s.bmc.as_ref().map_or("os-up".into(), |b| phase_name(b)),
                    faults,
                    flavor: None,
                    platform: Some(s.spec.platform.to_string()),
                }
            }
        })
    }

    pub fn infos(&self) -> Vec<DeviceInfo> {
        self.map.keys().filter_map(|n| self.info(n).ok()).collect()
    }

    pub fn console_history(&self, name: &str) -> Result<String, DeviceError> {
        self.lookup(name)?;
        self.host(name)
            .map(|h| h.console().history())
            .ok_or_else(|| DeviceError::NotSupported { name: name.into(), what: "console (no BMC)".into() })
    }

    /// Applies a fault; returns once the exported node state reflects it.
    pub async fn inject(&self, name: &str, fault: &Fault) -> Result<DeviceInfo, DeviceError> {
        match self.lookup(name)? {
            Device::Server(s) => {
                s.host.inject(fault)?;
                s.host.flush_export().await;
            }
            Device::Switch(s) => {
                if *fault == Fault::RedfishDown {
                    return Err(DeviceError::NotSupported {
                        name: name.into(),
                        what: "redfish-down (no Redfish)".into(),
                    });
                }
                if *fault == Fault::MgmtDown {
                    s.state.set_mgmt_down(true);
                    return self.info(name);
                }
                let to_bmc = fault.is_bmc_fault() || *fault == Fault::BootLoop;
                match (&s.bmc, to_bmc) {
                    (Some(b), true) => b.inject(fault)?,
                    (None, true) if *fault != Fault::BootLoop => {
                        return Err(DeviceError::NotSupported { name: name.into(), what: fault.to_string() });
                    }
                    _ => {
                        if !matches!(
                            fault,
                            Fault::ConfigChange
                                | Fault::SshKeyChange
                                | Fault::PfcStorm { .. }
                                | Fault::LinkFlap { .. }
                                | Fault::PortMtu { .. }
                                | Fault::Miscabled { .. }
                                | Fault::BootLoop
                        ) {
                            return Err(HostError::FaultNotApplicable {
                                host: name.into(),
                                fault: fault.to_string(),
                            }
                            .into());
                        }
                        if *fault == Fault::SshKeyChange {
                            s.state.rotate_host_key();
                        }
                        if *fault == Fault::BootLoop {
                            s.state.set_looping(true);
                        }
                        if let Fault::PfcStorm { port } = fault {
                            s.state.pfc.start(port);
                        }
                        if let Fault::LinkFlap { port } = fault {
                            s.state.flaps.start(port);
                        }
                        if let Fault::PortMtu { port, mtu } = fault {
                            s.state
                                .set_port_mtu(port, *mtu)
                                .map_err(|what| DeviceError::NotSupported { name: name.into(), what })?;
                        }
                        if let Fault::Miscabled { a, b } = fault {
                            s.state.lldp.swap(a, b);
                        }
                        if *fault == Fault::ConfigChange {
                            let change = s.state.config_change();
                            tracing::info!(
                                switch = name,
                                removed = change.removed,
                                added = change.added,
                                "config-change"
                            );
                        }
                        let mut f = s.faults.lock().unwrap_or_else(|e| e.into_inner());
                        f.retain(|x| x != fault);
                        f.push(fault.clone());
                    }
                }
            }
        }
        self.info(name)
    }

    pub async fn clear(&self, name: &str) -> Result<DeviceInfo, DeviceError> {
        match self.lookup(name)? {
            Device::Server(s) => {
                s.host.clear_faults();
                s.host.flush_export().await;
            }
            Device::Switch(s) => {
                s.faults.lock().unwrap_or_else(|e| e.into_inner()).clear();
                s.state.clear_faults();
                if let Some(b) = &s.bmc {
                    b.clear_faults();
                }
            }
        }
        self.info(name)
    }

    /// What the device was made to do, oldest first (see [`crate::actions`]).
    pub fn actions(&self, name: &str) -> Result<Vec<Action>, DeviceError> {
        Ok(match self.lookup(name)? {
            Device::Server(s) => s.host.actions().entries(),
            Device::Switch(s) => s.state.actions.entries(),
        })
    }

    /// A power action through the sim (not through a BMC protocol), recorded as coming from `origin`.
    pub fn power(&self, name: &str, action: PowerAction, origin: &Origin) -> Result<DeviceInfo, DeviceError> {
        let host = self
            .host(name)
            .ok_or_else(|| DeviceError::NotSupported { name: name.into(), what: "power (no BMC)".into() })?;
        let cmd = match action {
            PowerAction::On => PowerCommand::On,
            PowerAction::Off => PowerCommand::ForceOff,
            PowerAction::Cycle => PowerCommand::PowerCycle,
            PowerAction::Reset => PowerCommand::ForceRestart,
            PowerAction::Soft => PowerCommand::GracefulShutdown,
        };
        host.power_by(cmd, origin)?;
        self.info(name)
    }
}

/// Entry point: `Fleet::start(spec, opts)`.
#[derive(Debug)]
pub struct Fleet;

/// A started fleet. Dropping it stops every task.
#[derive(Debug)]
pub struct RunningFleet {
    devices: Arc<Devices>,
    endpoints: Vec<Endpoint>,
    control_url: String,
    cancel: CancellationToken,
    tasks: JoinSet<()>,
}

impl Drop for RunningFleet {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn bmc_config(name: &str, b: &BmcSpec) -> BmcConfig {
    BmcConfig {
        username: b.username.clone(),
        password: b.password.clone(),
        flavor: b.flavor,
        cipher_suites: if b.cipher_suites.is_empty() {
            b.flavor.default_cipher_suites()
        } else {
            b.cipher_suites.clone()
        },
        session_limit: b.session_limit.unwrap_or_else(|| b.flavor.default_session_limit()),
        identity: BmcIdentity::for_flavor(b.flavor, name),
    }
}

async fn bind_tcp(
    name: &str,
    kind: EndpointKind,
    addr: SocketAddr,
) -> Result<tokio::net::TcpListener, SimError> {
    crate::redfish::bind(addr).await.map_err(|source| SimError::Bind {
        name: name.into(),
        kind,
        addr,
        source,
    })
}

/// Routes the BMC's UDP address to its IPMI lanplus + SOL responder.
fn serve_ipmi(
    name: &str,
    b: &BmcSpec,
    addr: SocketAddr,
    host: &Arc<Host>,
    cancel: &CancellationToken,
    listeners: &mut Listeners,
) -> Result<Endpoint, SimError> {
    let make = |port| -> Arc<dyn crate::listen::DatagramService> {
        crate::ipmi::Endpoint::new(host.clone(), port, cancel.clone())
    };
    let bound = listeners.udp(addr, make).map_err(|source| SimError::Bind {
        name: name.into(),
        kind: EndpointKind::Ipmi,
        addr,
        source,
    })?;
    Ok(Endpoint {
        name: name.into(),
        kind: EndpointKind::Ipmi,
        address: addr.ip(),
        port: bound,
        username: b.username.clone(),
        password: b.password.clone(),
    })
}

fn local_port(l: &tokio::net::TcpListener, fallback: u16) -> u16 {
    l.local_addr().map(|a| a.port()).unwrap_or(fallback)
}

impl Fleet {
    /// Builds every host, binds every listener, starts serving, then writes the endpoints JSON.
    pub async fn start(spec: FleetSpec, opts: SimOptions) -> Result<RunningFleet, SimError> {
        let mut seen = std::collections::HashSet::new();
        for n in spec.names() {
            if !seen.insert(n.to_owned()) {
                return Err(SimError::DuplicateName { name: n.to_owned() });
            }
        }
        let cancel = CancellationToken::new();
        let mut tasks = JoinSet::new();
        let mut endpoints = Vec::new();
        let mut devices = Devices::default();
        let mut listeners = Listeners::for_fleet(spec.servers.len());

        for s in &spec.servers {
            let gpus = if s.role == Role::GpuNode.as_str() {
                s.gpus.clone()
            } else {
                GpuSpec { count: 0, ..s.gpus.clone() }
            };
            let tree = match &s.bmc.replay {
                Some(dir) => Some(Arc::new(
                    ReplayTree::load(dir)
                        .map_err(|source| SimError::Replay { name: s.name.clone(), source })?,
                )),
                None => None,
            };
            // A replayed host starts as the tree was captured (a tree that does not say: as the spec says).
            let powered_on = tree.as_ref().and_then(|t| t.power_on()).unwrap_or(s.powered_on);
            let host = Host::new(HostConfig {
                name: s.name.clone(),
                kind: HostKind::Server,
                gpus,
                rails: s.rails.clone(),
                powered_on,
                timings: opts.timings,
                time_scale: opts.time_scale,
                export_dir: opts.export_node_state.clone(),
                bmc: bmc_config(&s.name, &s.bmc),
            });
            let addr = SocketAddr::new(s.bmc.address, opts.ports.port(443, s.bmc.redfish_port));
            let redfish = match tree {
                Some(t) => RedfishBmc::replaying(host.clone(), s.bmc.address, t),
                None => RedfishBmc::new(host.clone(), s.bmc.address),
            }
            .map_err(|source| SimError::Tls { name: s.name.clone(), source })?;
            let rf = redfish.clone();
            let handler: StreamHandler =
                Arc::new(move |tcp| Box::pin(crate::redfish::serve_connection(tcp, rf.clone())));
            let port = listeners.tcp(addr, handler).map_err(|source| SimError::Bind {
                name: s.name.clone(),
                kind: EndpointKind::Redfish,
                addr,
                source,
            })?;
            endpoints.push(Endpoint {
                name: s.name.clone(),
                kind: EndpointKind::Redfish,
                address: s.bmc.address,
                port,
                username: s.bmc.username.clone(),
                password: s.bmc.password.clone(),
            });
            let udp = SocketAddr::new(s.bmc.address, opts.ports.port(623, s.bmc.ipmi_port));
            endpoints.push(serve_ipmi(&s.name, &s.bmc, udp, &host, &cancel, &mut listeners)?);
            devices.map.insert(s.name.clone(), Device::Server(ServerDevice { host, redfish }));
        }

        for sw in &spec.switches {
            let bmc = sw.bmc.as_ref().map(|b| {
                Host::new(HostConfig {
                    name: sw.name.clone(),
                    kind: HostKind::Switch(sw.platform),
                    gpus: GpuSpec { count: 0, model: String::new() },
                    rails: Vec::new(),
                    powered_on: true,
                    timings: opts.timings,
                    time_scale: opts.time_scale,
                    export_dir: None,
                    bmc: bmc_config(&sw.name, b),
                })
            });
            if let (Some(b), Some(h)) = (&sw.bmc, &bmc) {
                let udp = SocketAddr::new(b.address, opts.ports.port(623, b.ipmi_port));
                endpoints.push(serve_ipmi(&sw.name, b, udp, h, &cancel, &mut listeners)?);
            }
            let mut state = crate::switch::SwitchState::from_spec(sw);
            if let Some(h) = &bmc {
                state = state.with_actions(h.actions().clone());
            }
            let state = Arc::new(state);
            if let Some(h) = &bmc {
                state.set_bmc_host(h);
                tasks.spawn(reset_mgmt_on_power_off(h.clone(), state.clone(), cancel.clone()));
            }
            let addr = SocketAddr::new(sw.address, opts.ports.port(22, sw.ssh_port));
            let listener = bind_tcp(&sw.name, EndpointKind::Ssh, addr).await?;
            endpoints.push(Endpoint {
                name: sw.name.clone(),
                kind: EndpointKind::Ssh,
                address: sw.address,
                port: local_port(&listener, addr.port()),
                username: sw.username.clone(),
                password: sw.password.clone(),
            });
            let cancel_ssh = cancel.clone();
            let st = state.clone();
            let name = sw.name.clone();
            tasks.spawn(async move {
                tokio::select! {
                    r = crate::switch::serve(listener, st) => {
                        if let Err(e) = r {
                            tracing::warn!(switch = name, error = %e, "ssh listener stopped");
                        }
                    }
                    _ = cancel_ssh.cancelled() => {}
                }
            });
            devices.map.insert(
                sw.name.clone(),
                Device::Switch(SwitchDevice {
                    spec: sw.clone(),
                    state,
                    bmc,
                    faults: std::sync::Mutex::new(Vec::new()),
                }),
            );
        }

        tracing::debug!(sockets = listeners.sockets(), "BMC listeners bound");
        listeners.serve(&cancel, &mut tasks);
        let devices = Arc::new(devices);
        let control = bind_tcp("control", EndpointKind::Control, opts.control).await?;
        let control_port = local_port(&control, opts.control.port());
        let control_url = format!("http://{}:{control_port}", opts.control.ip());
        endpoints.push(Endpoint {
            name: "control".into(),
            kind: EndpointKind::Control,
            address: opts.control.ip(),
            port: control_port,
            username: String::new(),
            password: String::new(),
        });
        tasks.spawn(crate::control::serve(control, devices.clone(), cancel.clone()));

        // The node-state tree exists before anyone is told the fleet is up.
        for (_, d) in devices.iter() {
            if let Device::Server(s) = d {
                s.host.flush_export().await;
            }
        }
        if let Some(path) = &opts.endpoints_json {
            write_endpoints(path, &endpoints).await?;
        }
        Ok(RunningFleet { devices, endpoints, control_url, cancel, tasks })
    }
}

/// A switch whose management port hung comes back when it loses power (a cycle through its BMC).
async fn reset_mgmt_on_power_off(
    bmc: Arc<Host>,
    state: Arc<crate::switch::SwitchState>,
    cancel: CancellationToken,
) {
    let mut events = bmc.subscribe_events();
    loop {
        tokio::select! {
            e = events.recv() => match e {
                Ok(HostEvent::Power(lifeline_types::PowerState::Off)) if state.mgmt_down() => {
                    tracing::info!(switch = %state.name, "power lost: management port back");
                    state.set_mgmt_down(false);
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            _ = cancel.cancelled() => return,
        }
    }
}

async fn write_endpoints(path: &Path, endpoints: &[Endpoint]) -> Result<(), SimError> {
    let json = serde_json::to_string_pretty(endpoints).unwrap_or_default() + "\n";
    let path = path.to_owned();
    let p2 = path.clone();
    tokio::task::spawn_blocking(move || {
        let tmp = p2.with_extension("json.tmp");
        std::fs::write(&tmp, json)?;
        std::fs::rename(&tmp, &p2)
    })
    .await
    .unwrap_or_else(|e| Err(std::io::Error::other(e)))
    .map_err(|source| SimError::Endpoints { path, source })
}

impl RunningFleet {
    /// Every endpoint, in the order of the endpoints JSON.
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    /// The endpoint of `name` for `kind`.
    pub fn endpoint(&self, name: &str, kind: EndpointKind) -> Option<&Endpoint> {
        self.endpoints.iter().find(|e| e.name == name && e.kind == kind)
    }

    /// `http://127.0.0.1:PORT` of the control API.
    pub fn control_url(&self) -> &str {
        &self.control_url
    }

    pub fn devices(&self) -> &Arc<Devices> {
        &self.devices
    }

    /// The host model behind a server's BMC (or a switch's BMC).
    pub fn host(&self, name: &str) -> Option<Arc<Host>> {
        self.devices.host(name)
    }

    pub fn redfish(&self, name: &str) -> Option<Arc<RedfishBmc>> {
        match self.devices.get(name)? {
            Device::Server(s) => Some(s.redfish.clone()),
            Device::Switch(_) => None,
        }
    }

    /// Stops every listener and connection and waits for the tasks to end.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        while self.tasks.join_next().await.is_some() {}
    }
}
