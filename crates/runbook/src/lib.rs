//! # lifeline-runbook: recovery runbooks and their executor
//!
//! A runbook is the recovery loop an operator would type at 3 a.m., written down once: a file in the
//! `runbooks/` library, run by `lifeline runbook run NAME TARGET…` against the engine's typed operations.
//!
//! ## Design decisions
//! - **Format: TOML**, like the inventory and `lifeline.toml`, so one syntax is learnt once and the same
//!   span-keeping parser reports **every** problem of a file at once as `FILE:LINE:COL` ([`check`]): unknown
//!   keys (also keys that belong to another step kind), bad values, `when` conditions that refer to later or
//!   missing steps, `{{variables}}` that are not parameters, `goto`s to nowhere. YAML was rejected: its
//!   implicit typing (`on`/`off` become booleans, which are power actions here) is a trap in exactly this
//!   domain. A file is named after its runbook (`runbooks/gpu-node-recover.toml`).
//! - **Steps** are `[[step]]` tables with a `kind` that maps to one engine operation (power, bmc-reset,
//!   wait-for, console, sel, backup, restore, drain, verify, readmit, notify, exec), optional `when`
//!   ([`cond`]), `on-failure` (stop, continue, goto, escalate), `timeout` and `approve = "required"`.
//! - **Journal**: a row in the store before every step (intent, with the state read before acting) and after
//!   it (outcome, evidence and its digest) — `runbook_journal`, append-only. The runbook's text is stored with
//!   the run, so a resumed run follows the definition it started with.
//! - **Resume** (`lifeline runbook resume RUN`, after `kill -9` at any point): each step's actions carry the
//!   request id `runbook:RUN/STEP#ATTEMPT`, so the engine's idempotency table tells a finished action (its
//!   outcome is replayed, nothing is sent again) from one that never started (run it) and one whose outcome
//!   is unknown. An unknown non-idempotent step is never simply repeated: the executor re-reads the state it
//!   recorded before acting (power state and the BMC's event log for power actions, the running config's
//!   hash for restores) and decides; when it still cannot know, the run pauses in `waiting-approval`.
//! - **One run per target**: a run holds the engine's lease on its target while it executes (its steps'
//!   leases nest under it), and admission refuses a second active run on the same target.
//! - **Blast-radius guard** (`[runbooks.guard]` in `lifeline.toml`): admission is serialised by a store lease
//!   on `runbook-admission`, so across processes at most N runs are active per rack, per role and in the fleet,
//!   and no new run starts when more than X % of the target's rack (same role) is already in recovery. A
//!   refused run is recorded (`refused`, with the reason) and nothing is done.
//! - **Actor**: every run acts as `runbook:<run id>`; every step is audited by the engine's operations under
//!   that actor, and the run's own start, escalation and end are audited too.
//! - **Escalate** keeps the node drained (drains it if it was not) and marks it needs-human: an observation
//!   `needs-human` with the failing step's evidence, the run ends `escalated`.
//! - `exec` runs a program on the jump host, only for runbooks an administrator lists in
//!   `[runbooks] exec-allowed`; its program is fixed in the file (no variable may choose it).
//! - **Typed parameters** ([`params`]): every `[params.NAME]` declares a `type` (enum, bool, integer,
//!   duration, device, string with a pattern); defaults and `--var` values are checked before anything is
//!   touched, and only values fixed in the file may pick a network address.
//! - **Post-conditions** (`[[verify]]`): read-only checks run after the last step on fresh observations
//!   (the boot proven in band, the fault's own rule evaluated again, the running config equal to its
//!   backup, the NOS's own SSH banner, …). A run ends `succeeded` only when they all pass; `runbook check`
//!   refuses a runbook without one.

pub mod check;
pub mod cond;
mod error;
pub mod exec;
pub mod guard;
pub mod library;
mod media_step;
pub mod model;
pub mod params;
mod post;
mod recover;
pub mod ssh_banner;
mod steps;
pub mod view;
mod withdraw;

pub use check::{Checked, check_file, check_str};
pub use error::RunbookError;
pub use exec::{Env, Executor, RunOptions};
pub use library::Library;
pub use model::{Kind, Op, Runbook, Step};
pub use view::{RunView, StepView};
