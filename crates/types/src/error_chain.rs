//! One line for an error and its causes, the form every table row, JSON result and log message uses.
//! One definition, so the CLI, the server, the engine and the BMC layer print a failure the same way.

/// `error: cause: cause…` on one line. A cause whose text the line already holds is left out: wrappers
/// that display their source's message (`cannot reach n1: connection refused`) would otherwise print it
/// twice. Empty messages are skipped.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut line = String::new();
    let mut cur = Some(e);
    while let Some(err) = cur {
        let text = err.to_string();
        if !text.is_empty() && !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
        cur = err.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct E(&'static str, Option<Box<E>>);
    impl std::fmt::Display for E {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for E {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn causes_in_order_repeats_and_empties_folded() {
        let leaf = E("connection refused", None);
        assert_eq!(error_chain(&leaf), "connection refused");
        let e = E("leaf1", Some(Box::new(E("backup", Some(Box::new(leaf))))));
        assert_eq!(error_chain(&e), "leaf1: backup: connection refused");
        let wrapper =
            E("cannot reach n1: timed out", Some(Box::new(E("", Some(Box::new(E("timed out", None)))))));
        assert_eq!(error_chain(&wrapper), "cannot reach n1: timed out");
    }
}
