//! Slurm hostlist expressions: `gpu[01-16]`, `n[1-3,7],login01`, `rack[1-2]-node[01-04]`.
//!
//! slurm.conf names nodes by ranges, and an import that misread one would invent or drop machines, so the
//! expansion follows Slurm's own (`scontrol show hostnames`, checked against it in the tests): commas
//! outside brackets separate names, each bracket is a list of numbers and ranges, a range keeps the
//! zero-padding of its lower bound, and several brackets in one name multiply.

/// Why an expression could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostlistError {
    #[error("unbalanced `[` or `]` in `{0}`")]
    Unbalanced(String),
    #[error("bad range `{range}` in `{expr}` (expected e.g. `01-16` or `1,3,5-7`)")]
    BadRange { expr: String, range: String },
    #[error("`{0}` expands to more than {MAX_HOSTS} names")]
    TooMany(String),
}

/// No slurm.conf line names more nodes than this; a larger expansion is a typo (`[1-1000000]`).
pub const MAX_HOSTS: usize = 65_536;

/// Expands a hostlist expression into names, in Slurm's order.
pub fn expand(expr: &str) -> Result<Vec<String>, HostlistError> {
    let mut out = Vec::new();
    for part in split_top(expr)? {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let names = expand_one(part, expr)?;
        if out.len() + names.len() > MAX_HOSTS {
            return Err(HostlistError::TooMany(expr.to_owned()));
        }
        out.extend(names);
    }
    Ok(out)
}

/// Splits at commas that are outside brackets.
fn split_top(expr: &str) -> Result<Vec<&str>, HostlistError> {
    split_outside(expr, '[', ']').ok_or_else(|| HostlistError::Unbalanced(expr.to_owned()))
}

/// Splits `s` at commas outside `open`…`close` (one level deep); `None` when they do not balance. Shared
/// by hostlists (`n[1,3],m1`) and slurm.conf's `Gres` (`gpu:a100:4(S:0,1),gpu:v100:4`).
pub(super) fn split_outside(s: &str, open: char, close: char) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
        } else if c == ',' && depth == 0 {
            parts.push(&s[start..i]);
            start = i + 1;
        }
        if !(0..=1).contains(&depth) {
            return None;
        }
    }
    if depth != 0 {
        return None;
    }
    parts.push(&s[start..]);
    Some(parts)
}

/// One name with zero or more brackets: the product of the brackets' values, leftmost slowest.
fn expand_one(part: &str, expr: &str) -> Result<Vec<String>, HostlistError> {
    let Some(open) = part.find('[') else { return Ok(vec![part.to_owned()]) };
    let close =
        part[open..].find(']').map(|c| open + c).ok_or_else(|| HostlistError::Unbalanced(expr.to_owned()))?;
    let prefix = &part[..open];
    let values = range_values(&part[open + 1..close], expr)?;
    let rests = expand_one(&part[close + 1..], expr)?;
    if values.len().saturating_mul(rests.len()) > MAX_HOSTS {
        return Err(HostlistError::TooMany(expr.to_owned()));
    }
    let mut out = Vec::with_capacity(values.len() * rests.len());
    for v in &values {
        for r in &rests {
            out.push(format!("{prefix}{v}{r}"));
        }
    }
    Ok(out)
}

/// `01-03,7` → `01 02 03 7`.
fn range_values(list: &str, expr: &str) -> Result<Vec<String>, HostlistError> {
    let bad = |range: &str| HostlistError::BadRange { expr: expr.to_owned(), range: range.to_owned() };
    let mut out = Vec::new();
    for item in list.split(',') {
        let item = item.trim();
        let digits = |s: &str| !s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit());
        match item.split_once('-') {
            None if digits(item) => out.push(item.to_owned()),
            Some((lo, hi)) if digits(lo) && digits(hi) => {
                let (a, b): (u64, u64) =
                    (lo.parse().map_err(|_| bad(item))?, hi.parse().map_err(|_| bad(item))?);
                if b < a {
                    return Err(bad(item));
                }
                if b - a >= MAX_HOSTS as u64 {
                    return Err(HostlistError::TooMany(expr.to_owned()));
                }
                let width = lo.len();
                for n in a..=b {
                    out.push(format!("{n:0width$}"));
                }
            }
            _ => return Err(bad(item)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn e(s: &str) -> Vec<String> {
        expand(s).unwrap()
    }

    #[test]
    fn forms_slurm_uses() {
        assert_eq!(e("gpu[01-03]"), ["gpu01", "gpu02", "gpu03"]);
        assert_eq!(e("n[1-2,5],login01"), ["n1", "n2", "n5", "login01"]);
        assert_eq!(e("r[1-2]-n[08-10]"), ["r1-n08", "r1-n09", "r1-n10", "r2-n08", "r2-n09", "r2-n10"]);
        assert_eq!(e("n[098-101]"), ["n098", "n099", "n100", "n101"]);
        assert_eq!(e("single"), ["single"]);
        assert!(matches!(expand("gpu[1-"), Err(HostlistError::Unbalanced(_))));
        assert!(matches!(expand("gpu[3-1]"), Err(HostlistError::BadRange { .. })));
        assert!(matches!(expand("gpu[a-b]"), Err(HostlistError::BadRange { .. })));
        assert!(matches!(expand("g[0-99999999]"), Err(HostlistError::TooMany(_))));
    }

    proptest! {
        #[test]
        fn never_panics(s in "[a-z0-9\\[\\],-]{0,24}") {
            let _ = expand(&s);
        }

        /// A range of width w from lo to hi gives hi-lo+1 names, each with the prefix and at least w digits.
        #[test]
        fn counts_and_padding(lo in 0u32..500, len in 0u32..50, w in 1usize..5) {
            let hi = lo + len;
            let names = expand(&format!("x[{lo:0w$}-{hi}]")).unwrap();
            prop_assert_eq!(names.len() as u32, len + 1);
            for n in &names {
                prop_assert!(n.len() > w);
            }
        }
    }
}
