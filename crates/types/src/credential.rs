//! Credential *references*: an inventory names where a secret lives, never the secret itself.
//!
//! Resolving a reference (reading the environment, checking a file's mode) is I/O and lives in the
//! inventory crate; this type only knows the syntax, so every crate agrees on it.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where a username/password (or key) comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum CredentialRef {
    /// `env:NAME` — an environment variable holding `user:password` (or just the password when the
    /// username is given separately).
    Env(String),
    /// `file:PATH` — a file, mode 0600 or stricter, holding `user:password` on its first line.
    File(PathBuf),
    /// `sealed:NAME` — a secret sealed in Lifeline's store.
    Sealed(String),
}

/// Why a string is not a credential reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialRefError {
    #[error(
        "credential must be a reference (`env:NAME`, `file:PATH` or `sealed:NAME`), not a plaintext secret"
    )]
    Plaintext,
    #[error("credential reference `{scheme}:` has an empty name")]
    EmptyName { scheme: &'static str },
    #[error(
        "environment variable name `{name}` may only hold A-Z, a-z, 0-9 and `_` and must not start with a digit"
    )]
    BadEnvName { name: String },
}

impl CredentialRef {
    pub fn scheme(&self) -> &'static str {
        match self {
            CredentialRef::Env(_) => "env",
            CredentialRef::File(_) => "file",
            CredentialRef::Sealed(_) => "sealed",
        }
    }
}

impl FromStr for CredentialRef {
    type Err = CredentialRefError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (scheme, rest) = s.split_once(':').ok_or(CredentialRefError::Plaintext)?;
        match scheme {
            "env" => {
                if rest.is_empty() {
                    return Err(CredentialRefError::EmptyName { scheme: "env" });
                }
                let ok = rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !rest.as_bytes()[0].is_ascii_digit();
                if !ok {
                    return Err(CredentialRefError::BadEnvName { name: rest.to_owned() });
                }
                Ok(CredentialRef::Env(rest.to_owned()))
            }
            "file" if rest.is_empty() => Err(CredentialRefError::EmptyName { scheme: "file" }),
            "file" => Ok(CredentialRef::File(PathBuf::from(rest))),
            "sealed" if rest.is_empty() => Err(CredentialRefError::EmptyName { scheme: "sealed" }),
            "sealed" => Ok(CredentialRef::Sealed(rest.to_owned())),
            // Anything else — `hunter2`, `admin:password`, `https://…` — is treated as a secret that
            // somebody pasted into a file that ends up in git.
            _ => Err(CredentialRefError::Plaintext),
        }
    }
}

impl TryFrom<String> for CredentialRef {
    type Error = CredentialRefError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<CredentialRef> for String {
    fn from(c: CredentialRef) -> String {
        c.to_string()
    }
}

impl fmt::Display for CredentialRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CredentialRef::Env(n) => write!(f, "env:{n}"),
            CredentialRef::File(p) => write!(f, "file:{}", p.display()),
            CredentialRef::Sealed(n) => write!(f, "sealed:{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_references() {
        assert_eq!("env:BMC_PASS".parse(), Ok(CredentialRef::Env("BMC_PASS".into())));
        assert_eq!("file:/etc/lifeline/bmc".parse(), Ok(CredentialRef::File("/etc/lifeline/bmc".into())));
        assert_eq!("sealed:rack1".parse(), Ok(CredentialRef::Sealed("rack1".into())));
    }

    #[test]
    fn rejects_plaintext() {
        for s in ["hunter2", "admin:password", "calvin", "root:0penBmc", "ADMIN"] {
            assert_eq!(s.parse::<CredentialRef>(), Err(CredentialRefError::Plaintext), "{s}");
        }
        assert!(matches!("env:".parse::<CredentialRef>(), Err(CredentialRefError::EmptyName { .. })));
        assert!(matches!("env:1X".parse::<CredentialRef>(), Err(CredentialRefError::BadEnvName { .. })));
    }

    proptest! {
        #[test]
        fn display_round_trips(name in "[A-Z_][A-Z0-9_]{0,20}", path in "/[a-z/]{1,30}") {
            for c in [CredentialRef::Env(name.clone()), CredentialRef::File(path.clone().into()), CredentialRef::Sealed(name.clone())] {
                prop_assert_eq!(c.to_string().parse::<CredentialRef>().unwrap(), c);
            }
        }
    }
}
