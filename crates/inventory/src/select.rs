//! Target selection: how an operator names "these machines" on the command line.
//!
//! A target is a device name, a rack, a role (`gpu-node`), a group, a site, `all`, or a glob over device
//! names (`gpu-node-0[1-4]`, `*-leaf-*`). Several targets are a union, in inventory order, without duplicates.

use globset::Glob;

use crate::model::{Device, Inventory};

#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    #[error("target `{target}` matches no device, rack, role, group or site in the inventory")]
    NoMatch { target: String },
    #[error("target `{target}` is not a valid glob")]
    BadGlob {
        target: String,
        #[source]
        source: globset::Error,
    },
}

/// Resolves targets to devices. Every target must match something: a typo must not silently shrink a
/// power-off to fewer machines (or grow it).
pub fn select<'a>(inv: &'a Inventory, targets: &[String]) -> Result<Vec<&'a Device>, SelectError> {
    let mut picked = vec![false; inv.devices.len()];
    for t in targets {
        let is_glob = t.contains(['*', '?', '[']);
        let matcher = if is_glob {
            Some(
                Glob::new(t)
                    .map_err(|source| SelectError::BadGlob { target: t.clone(), source })?
                    .compile_matcher(),
            )
        } else {
            None
        };
        let mut any = false;
        for (i, d) in inv.devices.iter().enumerate() {
            let hit = match &matcher {
                Some(m) => m.is_match(d.name.as_str()),
                None => {
                    t == "all"
                        || d.name.as_str() == t
                        || &d.rack == t
                        || &d.site == t
                        || d.role.as_str() == t
                        || d.groups.iter().any(|g| g == t)
                }
            };
            if hit {
                picked[i] = true;
                any = true;
            }
        }
        if !any {
            return Err(SelectError::NoMatch { target: t.clone() });
        }
    }
    Ok(inv.devices.iter().zip(picked).filter(|(_, p)| *p).map(|(d, _)| d).collect())
}
