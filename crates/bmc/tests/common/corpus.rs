//! The real-capture Redfish corpus (third-party data kept outside the repository, see
//! docs/redfish-corpus.md): where it is, and one tree unpacked for a test.

use std::path::{Path, PathBuf};

/// Where the captured trees are. They are third-party data, not kept in this repository: beside the
/// project's peers (`shared/redfish-corpus`) or wherever `LIFELINE_REDFISH_CORPUS` points (the folder with
/// the `.tar.gz` trees listed in `crates/redfish/tests/corpus/SOURCES`). Without it the tests skip loudly,
/// and fail with `LIFELINE_REDFISH_CORPUS_REQUIRED=1`.
pub fn corpus_dir() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = std::env::var_os("LIFELINE_REDFISH_CORPUS")
        .map(PathBuf::from)
        .into_iter()
        .chain([manifest.join("../../../shared/redfish-corpus"), manifest.join("../../../redfish-corpus")]);
    for c in candidates {
        if c.join("hpe-ilo5-dl325-gen10plus.tar.gz").is_file() {
            return Some(c);
        }
    }
    let why =
        "Redfish capture corpus not found (set LIFELINE_REDFISH_CORPUS to the folder of its .tar.gz trees)";
    if std::env::var("LIFELINE_REDFISH_CORPUS_REQUIRED").is_ok_and(|v| v == "1") {
        panic!("{why}");
    }
    eprintln!("SKIP: {why}");
    None
}

/// The tree `name` unpacked into a fresh directory (kept while the returned guard lives).
pub fn unpack(name: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    let archive = corpus_dir()?.join(format!("{name}.tar.gz"));
    assert!(archive.is_file(), "corpus tree {} missing", archive.display());
    let dir = tempfile::tempdir().unwrap();
    let st = std::process::Command::new("tar").arg("-xzf").arg(&archive).arg("-C").arg(dir.path()).status();
    assert!(st.expect("run tar").success(), "unpacking {}", archive.display());
    let root = dir.path().join(name);
    Some((dir, root))
}
