//! Switch configuration backup, diff and restore over SSH.
//!
//! Why a crate of its own: the switch side of out-of-band recovery (back up every switch, notice what
//! changed, put a known-good config back on a spare) has nothing to do with BMC protocols, and keeping
//! it apart lets the CLI, the server's scheduler and the tests drive the same library.
//!
//! Layers, bottom up:
//! - [`ssh`]: russh client with TOFU host-key pinning, algorithm profiles, exec or PTY shell;
//! - [`platform`]: one driver per network OS (fetch, volatile lines, completeness, restore plan);
//! - [`scrub`]: secret masking (pure);
//! - [`blobs`], [`index`]: content-addressed config blobs and the version index trait;
//! - [`backup`], [`restore`]: orchestration; [`diff`], [`git_export`], [`schedule`];
//! - [`show`]: one version's text (scrubbed or sealed raw) and the history with digests.
//! - [`counters`]: interface, link-flap and PFC counters per platform (commands, lenient parsers, what rose).
//! - [`lldp`]: LLDP neighbours per platform (command, lenient parsers, SSH read) against the inventory's cabling.

pub mod backup;
pub mod blobs;
pub mod counters;
pub mod diff;
pub mod git_export;
pub mod index;
pub mod lldp;
pub mod platform;
pub mod restore;
pub mod schedule;
pub mod scrub;
pub mod show;
pub mod ssh;
pub mod text;

pub use backup::{BackupContext, BackupOutcome, BackupTarget, DeviceResult, backup_all, backup_one};
pub use blobs::{BlobId, BlobStore};
pub use index::{
    HostKeyPins, IndexError, MemoryHostKeyPins, MemoryIndex, MemoryRawStore, RawStore, VersionIndex,
    VersionRecord,
};
pub use platform::{Driver, driver_for, driver_with_source};
pub use ssh::{AlgorithmProfile, SshAuth, SshError, SshTarget, TimeoutOverrides, Timeouts, Transport};
