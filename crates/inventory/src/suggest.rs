//! "Did you mean `credential`?": the nearest known word to a misspelt one.
//!
//! One definition, shared by the inventory checker, the server configuration checker and the runbook
//! checker, so a typo is answered the same way everywhere. Case and `-`/`_` are ignored first (`rate_gbps`
//! means `rate-gbps`); otherwise the closest word by optimal string alignment distance wins when it is close
//! enough that the suggestion is likely right (a third of the word's length, at least one edit).

/// The candidate nearest to `word`, if one is near enough to suggest.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let norm = |s: &str| s.to_ascii_lowercase().replace('_', "-");
    let w = norm(word);
    let limit = (w.chars().count() / 3).max(1);
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        let d = strsim::osa_distance(&w, &norm(c));
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEYS: &[&str] =
        &["address", "port", "protocol", "username", "credential", "tls-fingerprint", "tls"];

    #[test]
    fn common_typos() {
        assert_eq!(nearest("credentails", KEYS.iter().copied()), Some("credential"));
        assert_eq!(nearest("credentials", KEYS.iter().copied()), Some("credential"));
        assert_eq!(nearest("adress", KEYS.iter().copied()), Some("address"));
        assert_eq!(nearest("user-name", KEYS.iter().copied()), Some("username"));
        assert_eq!(nearest("tls_fingerprint", KEYS.iter().copied()), Some("tls-fingerprint"));
        assert_eq!(nearest("Protocol", KEYS.iter().copied()), Some("protocol"));
        assert_eq!(nearest("colour", KEYS.iter().copied()), None);
        assert_eq!(nearest("location", ["description", "rack", "name"]), None);
        assert_eq!(nearest("x", KEYS.iter().copied()), None);
    }

    proptest! {
        /// A known word is its own nearest; one edit to a word of 3+ letters is still found.
        #[test]
        fn exact_and_one_edit(i in 0..KEYS.len(), at in 0usize..20, c in proptest::char::range('a', 'z')) {
            let k = KEYS[i];
            prop_assert_eq!(nearest(k, KEYS.iter().copied()), Some(k));
            let mut s: Vec<char> = k.chars().collect();
            let at = at % s.len();
            s[at] = c;
            let typo: String = s.into_iter().collect();
            // A substitution can land nearer another key (`tls` → `tcs` is as near `tls` as ever); the
            // answer is always a key at distance one or less.
            if let Some(found) = nearest(&typo, KEYS.iter().copied()) {
                prop_assert!(strsim::osa_distance(&typo, found) <= 1, "{} -> {}", typo, found);
            } else {
                prop_assert!(false, "{} found nothing", typo);
            }
        }
    }
}
