//! Taking GPU nodes out of training and putting them back, in Slurm and Kubernetes, touching only what
//! Lifeline itself did.
//!
//! Existing health tools resume nodes an administrator drained on purpose. Here ownership is explicit:
//! Slurm drains carry a reason starting with [`REASON_PREFIX`], Kubernetes quarantines carry the
//! [`kube::TAINT_KEY`] taint and Lifeline's annotations. A resume/uncordon only ever undoes those marks, and
//! only on the strength of a PASSING agent report whose digest is recorded in every [`Decision`] (the lead
//! stores it in the audit log).
//!
//! [`drain`] (which drain is ours, `scontrol show node` parsed) is always built; the adapters, with
//! their async clients, come with the default `adapters` feature. `lifeline-agent` builds without it, so
//! the node-side `health-check` decides "is this our drain" by the same rule without tokio or kube.

pub mod drain;
#[cfg(feature = "adapters")]
pub mod kube;
#[cfg(feature = "adapters")]
pub mod slurm;

#[cfg(feature = "adapters")]
pub use decision::*;
pub use drain::REASON_PREFIX;

#[cfg(feature = "adapters")]
mod decision;
