//! Byte offsets to `line:col`, because operators fix files in editors, not hex dumps.

use std::fmt;
use std::path::{Path, PathBuf};

/// One problem found in an inventory file, located precisely enough to jump to it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub col: usize,
    pub severity: Severity,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    Warning,
    Error,
}

impl fmt::Display for Diagnostic {
    /// `FILE:LINE:COL: message` (errors) or `FILE:LINE:COL: warning: message`, the format editors and CI
    /// annotators already understand.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file.display(), self.line, self.col)?;
        if self.severity == Severity::Warning {
            f.write_str("warning: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Maps byte offsets of one source text to line and column.
#[derive(Debug, Clone)]
pub struct SourceMap {
    file: PathBuf,
    line_starts: Vec<usize>,
    text: String,
}

impl SourceMap {
    pub fn new(file: &Path, text: &str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self { file: file.to_path_buf(), line_starts, text: text.to_owned() }
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// 1-based line and column of a byte offset (clamped to the text).
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let col = self.text.get(start..offset).map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }

    pub fn diag(&self, offset: usize, severity: Severity, message: impl Into<String>) -> Diagnostic {
        let (line, col) = self.line_col(offset);
        Diagnostic { file: self.file.clone(), line, col, severity, message: message.into() }
    }

    pub fn error(&self, offset: usize, message: impl Into<String>) -> Diagnostic {
        self.diag(offset, Severity::Error, message)
    }

    pub fn warning(&self, offset: usize, message: impl Into<String>) -> Diagnostic {
        self.diag(offset, Severity::Warning, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn maps_offsets() {
        let m = SourceMap::new(Path::new("f.toml"), "ab\ncd\n\nxé z");
        assert_eq!(m.line_col(0), (1, 1));
        assert_eq!(m.line_col(1), (1, 2));
        assert_eq!(m.line_col(3), (2, 1));
        assert_eq!(m.line_col(6), (3, 1));
        // `é` is two bytes but one column.
        assert_eq!(m.line_col(10), (4, 3));
        assert_eq!(m.line_col(1000), (4, 5));
    }

    proptest! {
        #[test]
        fn never_panics(text in ".{0,200}", off in 0usize..400) {
            let m = SourceMap::new(Path::new("x"), &text);
            let (l, c) = m.line_col(off);
            prop_assert!(l >= 1 && c >= 1);
        }
    }
}
