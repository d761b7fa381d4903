//! Stable exit codes, documented in the README: scripts and runbooks branch on them.

use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Everything checked or done.
    Ok = 0,
    /// The command ran and found problems, or an action failed (invalid inventory, BMC refused, …).
    Failed = 1,
    /// The command line was wrong or named something that does not exist (clap also uses 2).
    Usage = 2,
    /// Lifeline itself could not work: store unreachable, runtime failure.
    Internal = 3,
}

impl From<Code> for ExitCode {
    fn from(c: Code) -> ExitCode {
        ExitCode::from(c as u8)
    }
}

/// An error that knows its exit code; everything else maps to `Internal`.
#[derive(Debug)]
pub struct Exit {
    pub code: Code,
    pub error: anyhow::Error,
}

impl Exit {
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Exit { code: Code::Usage, error: error.into() }
    }

    pub fn failed(error: impl Into<anyhow::Error>) -> Self {
        Exit { code: Code::Failed, error: error.into() }
    }
}

impl<E: Into<anyhow::Error>> From<E> for Exit {
    fn from(e: E) -> Self {
        Exit { code: Code::Internal, error: e.into() }
    }
}

/// Result of a command: `Ok(code)` for commands that finish with a verdict (0 or 1).
pub type CmdResult = Result<Code, Exit>;
