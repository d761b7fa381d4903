//! # lifeline-ipmi: IPMI 2.0 lanplus, RMCP+ and Serial-over-LAN
//!
//! Two layers:
//! - [`wire`] (always compiled, pure: no tokio, no I/O, no randomness): RMCP/ASF, the
//!   IPMI 1.5 and RMCP+ session headers, integrity (HMAC-SHA1-96, HMAC-SHA256-128) and
//!   confidentiality (AES-CBC-128), RAKP maths for both the console and the BMC side,
//!   the command codecs Lifeline uses, SDR/SEL records and the SOL packet. The
//!   simulator (`lifeline-sim`) depends on this layer only (`default-features = false`),
//!   so the client is never tested against itself.
//! - [`client`] (feature `client`, default): an async session over tokio UDP with
//!   cipher suite 17 -> 3 fallback, retransmission with backoff, sequence handling,
//!   Close Session on close/drop, chunked SDR reads, SEL, power, users and raw SOL.
//!
//! ## What comes from `ipmi-rs` 0.6 and why the rest is ours
//! Taken from ipmi-rs (where its types genuinely fit): the completion-code names
//! (`CompletionErrorCode`, used in error messages), the sensor type table (`SensorType`)
//! and unit table (`Unit`) for human names; and its SDR record parser is used in tests as
//! an independent check of our SDR encoder.
//! Written here because ipmi-rs cannot do it: its transport is synchronous (we need
//! tokio and thousands of concurrent sessions), hard-codes cipher suite 3 (we need 17 with
//! a fallback), never sends Close Session (orphans fill a BMC's small session table), has
//! no SOL at all, and its SDR iterator reads whole records with length 0xFF, which
//! OpenIPMI answers with 0xCA, so it returns no records there (measured against
//! ipmi_sim). It also has no BMC side, which the simulator needs; and its record types
//! cannot be encoded. Our codecs are therefore symmetric (encode and decode) and
//! property-tested for round trips and for never panicking on arbitrary input.

#[cfg(feature = "client")]
pub mod client;
pub mod wire;

#[cfg(feature = "client")]
pub use client::{ClientConfig, Error, Session, Sol, SolConfig, SolEvent};
pub use wire::{Privilege, crypto::CipherSuite};
