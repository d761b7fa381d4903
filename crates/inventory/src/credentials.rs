//! Resolving credential references: reading the secret, and checking that it *could* be read.
//!
//! A `file:` secret must not be readable by group or others (0600 or stricter): a BMC password in a
//! world-readable file is a finding in every audit. An `env:` reference is only a warning when unset at
//! check time, because `inventory check` often runs on a laptop or in CI, not where the service runs.

use std::path::Path;

use lifeline_types::CredentialRef;

/// What checking a reference found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    Ok,
    Warning(String),
    Error(String),
}

/// Why a secret could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("environment variable `{name}` is not set")]
    EnvUnset { name: String },
    #[error("cannot read credential file {path}")]
    File {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "credential file {path} has mode {mode:04o}; it must not be readable by group or others (chmod 600)"
    )]
    Mode { path: std::path::PathBuf, mode: u32 },
    #[error("credential file {path} is empty")]
    Empty { path: std::path::PathBuf },
    #[error("sealed secret `{name}` needs the server's secret store, which is not available here")]
    SealedUnavailable { name: String },
}

/// Checks a reference without keeping the secret.
pub fn check(r: &CredentialRef) -> Resolution {
    match r {
        CredentialRef::Env(name) => match std::env::var_os(name) {
            Some(_) => Resolution::Ok,
            None => Resolution::Warning(format!(
                "environment variable `{name}` is not set here; it must be set where Lifeline runs"
            )),
        },
        CredentialRef::File(path) => match file_mode_ok(path) {
            Ok(()) => Resolution::Ok,
            Err(e) => Resolution::Error(e.to_string()),
        },
        CredentialRef::Sealed(name) => {
            Resolution::Warning(format!("sealed secret `{name}` is resolved by the server's secret store"))
        }
    }
}

fn file_mode_ok(path: &Path) -> Result<(), CredentialError> {
    let meta =
        std::fs::metadata(path).map_err(|source| CredentialError::File { path: path.into(), source })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(CredentialError::Mode { path: path.into(), mode });
        }
    }
    if meta.len() == 0 {
        return Err(CredentialError::Empty { path: path.into() });
    }
    Ok(())
}

/// Reads the secret behind a reference: the first line of a file or the variable's value, trimmed of the
/// trailing newline (and nothing else: passwords may contain spaces).
pub fn resolve(r: &CredentialRef) -> Result<String, CredentialError> {
    match r {
        CredentialRef::Env(name) => {
            std::env::var(name).map_err(|_| CredentialError::EnvUnset { name: name.clone() })
        }
        CredentialRef::File(path) => {
            file_mode_ok(path)?;
            let text = std::fs::read_to_string(path)
                .map_err(|source| CredentialError::File { path: path.clone(), source })?;
            let line = text.lines().next().unwrap_or("").trim_end_matches('\r').to_owned();
            if line.is_empty() {
                return Err(CredentialError::Empty { path: path.clone() });
            }
            Ok(line)
        }
        CredentialRef::Sealed(name) => Err(CredentialError::SealedUnavailable { name: name.clone() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn file_mode_is_enforced() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("secret");
        std::fs::File::create(&p).unwrap().write_all(b"s3cret pass\nignored\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let r = CredentialRef::File(p.clone());
        assert!(matches!(resolve(&r), Err(CredentialError::Mode { mode: 0o644, .. })));
        assert!(matches!(check(&r), Resolution::Error(m) if m.contains("chmod 600")));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(resolve(&r).unwrap(), "s3cret pass");
        assert_eq!(check(&r), Resolution::Ok);
        let missing = CredentialRef::File(dir.path().join("nope"));
        assert!(matches!(check(&missing), Resolution::Error(_)));
    }

    #[test]
    fn env_unset_is_a_warning() {
        let r = CredentialRef::Env("LIFELINE_TEST_SURELY_UNSET_VAR".into());
        assert!(matches!(check(&r), Resolution::Warning(_)));
        assert!(matches!(resolve(&r), Err(CredentialError::EnvUnset { .. })));
    }
}
