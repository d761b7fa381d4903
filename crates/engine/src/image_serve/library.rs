//! The images `lifeline serve` serves by name: the regular files directly in `[image-server] images`.
//!
//! Why names and not paths: a name comes from a request (the API's `served_image`, a runbook's `--var`),
//! and nothing from a request may reach the file system beyond that one directory. So a name is a plain
//! file name (letters, digits, `.`, `_`, `-`; no `/`, no `..`, not hidden), looked up in the directory
//! without following a link out of it, and it must be a regular file there; anything else is refused
//! with an error naming it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::ImageServeError;

/// One image of the directory, as listed (`GET /api/v1/media/images`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ImageInfo {
    /// The file name: what `served_image` and a runbook's `served-image` take.
    pub name: String,
    /// Bytes.
    pub size: u64,
    /// Last modified (RFC 3339, UTC).
    pub modified: Option<String>,
}

/// The images directory of `[image-server] images`.
#[derive(Debug, Clone)]
pub struct Images {
    dir: PathBuf,
}

/// Whether `name` may name an image: the same rule as a served file's name in its URL.
pub fn plain_name(name: &str) -> bool {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    !name.is_empty() && name.len() <= 255 && !name.starts_with('.') && name.chars().all(plain)
}

impl Images {
    pub fn new(dir: impl Into<PathBuf>) -> Images {
        Images { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn refuse(&self, name: &str, why: impl Into<String>) -> ImageServeError {
        ImageServeError::NotServed { name: name.to_owned(), dir: self.dir.clone(), why: why.into() }
    }

    /// The file `name` names: a plain name of a regular file directly in the directory (a link is not
    /// followed: one could lead out of it).
    pub fn resolve(&self, name: &str) -> Result<PathBuf, ImageServeError> {
        if !plain_name(name) {
            return Err(self.refuse(
                name,
                "an image is named by its file name alone (letters, digits, '.', '_', '-'; no '/' or '..')",
            ));
        }
        let path = self.dir.join(name);
        let meta = std::fs::symlink_metadata(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => self.refuse(name, "no such image"),
            _ => self.refuse(name, e.to_string()),
        })?;
        if !meta.file_type().is_file() {
            return Err(self.refuse(name, "not a regular file"));
        }
        Ok(path)
    }

    /// Every image of the directory, by name (files whose names a URL cannot carry unchanged, links and
    /// subdirectories are left out: they cannot be served).
    pub fn list(&self) -> Result<Vec<ImageInfo>, ImageServeError> {
        let dir_err = |e: std::io::Error| ImageServeError::ImagesDir { dir: self.dir.clone(), source: e };
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(dir_err)? {
            let entry = entry.map_err(dir_err)?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            if !plain_name(&name) || !meta.file_type().is_file() {
                continue;
            }
            let modified = meta.modified().ok().map(|t| {
                chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            });
            out.push(ImageInfo { name, size: meta.len(), modified });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_directly_in_the_directory_are_served_by_name() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("images");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("ubuntu-24.04.iso"), b"iso").unwrap();
        std::fs::write(root.path().join("secret.iso"), b"outside").unwrap();
        std::fs::create_dir(dir.join("sub.iso")).unwrap();
        std::fs::write(dir.join(".hidden.iso"), b"h").unwrap();
        std::os::unix::fs::symlink(root.path().join("secret.iso"), dir.join("link.iso")).unwrap();
        let images = Images::new(&dir);

        assert_eq!(images.resolve("ubuntu-24.04.iso").unwrap(), dir.join("ubuntu-24.04.iso"));
        for (name, why) in [
            ("../secret.iso", "file name alone"),
            ("..", "file name alone"),
            ("sub.iso/../../secret.iso", "file name alone"),
            ("/etc/passwd", "file name alone"),
            (".hidden.iso", "file name alone"),
            ("", "file name alone"),
            ("a b.iso", "file name alone"),
            ("sub.iso", "not a regular file"),
            ("link.iso", "not a regular file"),
            ("missing.iso", "no such image"),
        ] {
            let e = images.resolve(name).unwrap_err().to_string();
            assert!(e.contains(why), "{name}: {e}");
            assert!(e.contains(&format!("`{name}`")), "the error names the image: {e}");
            assert!(e.contains(&dir.display().to_string()), "and the directory: {e}");
        }
        let listed: Vec<_> = images.list().unwrap().into_iter().map(|i| (i.name, i.size)).collect();
        assert_eq!(listed, [("ubuntu-24.04.iso".to_owned(), 3)]);
        let gone = Images::new(root.path().join("nowhere")).list().unwrap_err().to_string();
        assert!(gone.contains("nowhere"), "{gone}");
    }

    proptest::proptest! {
        /// Whatever a request names, what is resolved is a file directly in the directory.
        #[test]
        fn a_resolved_name_never_leaves_the_directory(name in "[a./]{0,8}|\\PC{0,20}") {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("d");
            std::fs::create_dir_all(dir.join("a")).unwrap();
            for f in ["a.a", "a/a", "aa"] {
                std::fs::write(dir.join(f), b"x").unwrap();
                std::fs::write(root.path().join(f.replace('/', "")), b"outside").unwrap();
            }
            if let Ok(p) = Images::new(&dir).resolve(&name) {
                proptest::prop_assert_eq!(p.parent(), Some(dir.as_path()));
                proptest::prop_assert!(std::fs::symlink_metadata(&p).unwrap().is_file());
            }
        }
    }
}
