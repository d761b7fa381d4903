//! Stable exit codes, documented in the README: scripts and runbooks branch on them. The engine's error
//! class decides the code, here and only here.

use std::process::ExitCode;

use lifeline_engine::{EngineError, ErrorClass};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Everything checked or done.
    Ok = 0,
    /// The command ran and found problems, or an action failed, was refused or conflicted with another.
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

/// The one mapping from an error class to an exit code.
pub fn code_of(class: ErrorClass) -> Code {
    match class {
        ErrorClass::Usage | ErrorClass::NotFound => Code::Usage,
        ErrorClass::Refused | ErrorClass::Failed | ErrorClass::Conflict => Code::Failed,
        ErrorClass::Unavailable => Code::Internal,
    }
}

/// An error that knows its exit code.
#[derive(Debug)]
pub struct Exit {
    pub code: Code,
    /// `None`: end quietly (a closed output pipe).
    pub error: Option<anyhow::Error>,
}

impl Exit {
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Exit { code: Code::Usage, error: Some(error.into()) }
    }

    pub fn failed(error: impl Into<anyhow::Error>) -> Self {
        Exit { code: Code::Failed, error: Some(error.into()) }
    }

    pub fn internal(error: impl Into<anyhow::Error>) -> Self {
        Exit { code: Code::Internal, error: Some(error.into()) }
    }

    /// Writing our output failed. A reader that went away (`| head -1`) is not an error: we stop quietly
    /// with success, like `cat` and `grep` do.
    pub fn io(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Exit { code: Code::Ok, error: None }
        } else {
            Exit::internal(anyhow::Error::new(e).context("writing output"))
        }
    }
}

impl From<EngineError> for Exit {
    fn from(e: EngineError) -> Self {
        Exit { code: code_of(e.class()), error: Some(anyhow::anyhow!("{}", e.chain())) }
    }
}

impl From<std::io::Error> for Exit {
    fn from(e: std::io::Error) -> Self {
        Exit::io(e)
    }
}

impl From<serde_json::Error> for Exit {
    fn from(e: serde_json::Error) -> Self {
        Exit::internal(e)
    }
}

/// Result of a command: `Ok(code)` for commands that finish with a verdict (0 or 1).
pub type CmdResult = Result<Code, Exit>;

/// Exit 1 when any of `failed`, else 0.
pub fn verdict(failed: bool) -> Code {
    if failed { Code::Failed } else { Code::Ok }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_its_code() {
        let all = [
            (ErrorClass::Usage, 2),
            (ErrorClass::NotFound, 2),
            (ErrorClass::Refused, 1),
            (ErrorClass::Failed, 1),
            (ErrorClass::Conflict, 1),
            (ErrorClass::Unavailable, 3),
        ];
        for (class, code) in all {
            assert_eq!(code_of(class) as u8, code, "{class:?}");
        }
        assert_eq!(Exit::io(std::io::Error::from(std::io::ErrorKind::BrokenPipe)).code, Code::Ok);
    }
}
