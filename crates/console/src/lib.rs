//! # lifeline-console: dependable serial consoles
//!
//! Operators juggle `ipmitool sol activate`, conserver and ConMan; sessions get stuck ("SOL payload
//! already active"), BMCs drop them, and nobody keeps the log. This crate makes the console a tool:
//!
//! - [`transport`]: one [`ConsoleTransport`] interface over IPMI SOL (on `lifeline-ipmi`'s SOL
//!   primitive, plus keepalive, the busy/steal policy and safe teardown), SSH (OpenBMC host console)
//!   and an in-memory line for tests, benchmarks and the simulator.
//! - [`manager`]: at most one BMC session per console, many viewers, one writer, automatic reconnect
//!   with the gap marked in the log, bounded buffers (a slow viewer lags, the session never waits).
//! - [`log`]: every byte, timestamped, in size-rotated files, indexed via [`ConsoleLogIndex`].
//! - [`attach`]: `lifeline console TARGET` (raw mode restored on every exit path, `~.` `~B` `~W` `~?`).
//! - [`scan`]: the console as a sensor — rules as data find panics, Xids, lockups, link-downs and boot
//!   loops in every console's output as it arrives, published as typed findings.
//! - [`expect`] and [`profiles`]: a `vt100` screen model, waits on screen or stream, keys, transcripts,
//!   runbook steps, and bootloader profiles (ONIE, U-Boot, GRUB, Aboot) that look before they type.

pub mod attach;
pub mod boot_loop;
pub mod csi_clamp;
pub mod error;
pub mod escape;
pub mod expect;
pub mod log;
pub mod manager;
pub mod profiles;
pub mod replay;
pub mod scan;
pub mod transport;
pub mod utf8_carry;

pub use attach::{Detach, RawModeGuard, attach_io, attach_terminal};
pub use error::{ConsoleError, LogError, TransportError};
pub use expect::{ConsoleIo, Expect, ExpectError, Key, LinkIo, On, Pattern, Primed, Step};
pub use log::{ConsoleLogIndex, DirLogIndex, LogFileEntry, LogReader, LogRecord, RecordKind};
pub use manager::{
    AttachOptions, ConsoleEvent, ConsoleInfo, ConsoleManager, ConsoleStatus, ManagerConfig, Viewer,
    ViewerEvent, WriteMode,
};
pub use profiles::{Bootloader, RescueOptions, RescueReport, break_into_rescue};
pub use replay::Replay;
pub use scan::{ConsoleFinding, ConsoleScanner, Finding, FindingKind, RuleSet, Severity};
pub use transport::memory::{HostInput, MemoryHost, MemoryHostWriter, MemoryTransport, memory_line};
pub use transport::sol::SolTransport;
pub use transport::ssh::{SshLogin, SshTransport};
pub use transport::{ConsoleLink, ConsoleTransport, LinkEvent, OpenOptions, OpenReport};
