//! The runbook crate's errors; each maps to the engine's classification for exit codes.

use lifeline_engine::{EngineError, ErrorClass};

#[derive(Debug, thiserror::Error)]
pub enum RunbookError {
    #[error("no runbook `{name}` in {dir}")]
    NotFound { name: String, dir: String },
    #[error("runbook {path} has problems:\n  {}", problems.join("\n  "))]
    Invalid { path: String, problems: Vec<String> },
    #[error("cannot read the runbook library {dir}")]
    Library {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no run `{id}`")]
    NoRun { id: String },
    #[error("`{target}` is a {role}; runbook `{runbook}` applies to {expected}")]
    WrongTarget { runbook: String, target: String, role: String, expected: String },
    #[error("runbook `{runbook}` has nothing to run on in `{targets}`: {why}")]
    NoTargets { runbook: String, targets: String, why: String },
    #[error("bad --var `{var}`: {why}")]
    BadVar { var: String, why: String },
    #[error("run {id} is {state}: {what}")]
    State { id: String, state: String, what: String },
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl RunbookError {
    pub fn class(&self) -> ErrorClass {
        match self {
            RunbookError::NotFound { .. } | RunbookError::NoRun { .. } => ErrorClass::NotFound,
            RunbookError::Invalid { .. }
            | RunbookError::WrongTarget { .. }
            | RunbookError::BadVar { .. }
            | RunbookError::NoTargets { .. } => ErrorClass::Usage,
            RunbookError::Library { .. } => ErrorClass::Usage,
            RunbookError::State { .. } => ErrorClass::Conflict,
            RunbookError::Engine(e) => e.class(),
        }
    }

    pub fn chain(&self) -> String {
        lifeline_engine::error_chain(self)
    }
}

pub type Result<T, E = RunbookError> = std::result::Result<T, E>;
