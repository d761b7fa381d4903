//! `lifeline backup scrub-check` as an operator runs it: the binary on files, its output and its
//! exit status (1 when the fallback fired, 0 when only rules masked, 2 for a bad platform).

use std::process::Command;

fn file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lifeline-scrub-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lifeline")).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn reports_rules_and_the_fallback_and_exits_by_it() {
    let unknown = file(
        "unknown.cfg",
        "hostname r1\nenable secret 0 Yy8pass\nfoo-agent shared-password 0 Zz9pass\nend\n",
    );
    let known =
        file("known.cfg", "hostname r2\nenable secret 0 Yy8pass\nsnmp-server community PubC RO\nend\n");
    let (code, out, err) = run(&["backup", "scrub-check", unknown.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("ios (guessed; --platform to choose): 2 masked, 1 by the fallback"), "{out}");
    assert!(out.contains("line 2") && out.contains("rule: enable / root secret"), "{out}");
    assert!(out.contains("FALLBACK: follows the secret-like keyword `shared-password`"), "{out}");
    assert!(!out.contains("Yy8pass") && !out.contains("Zz9pass"), "{out}");
    let (code, out, _) = run(&["backup", "scrub-check", "--platform", "eos", known.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(": eos: 2 masked, 0 by the fallback"), "{out}");
    let (code, _, err) = run(&["backup", "scrub-check", "--platform", "junos", known.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--platform `junos`"), "{err}");
    let (code, out, _) = run(&["--json", "backup", "scrub-check", unknown.to_str().unwrap()]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outcome"], "fallback");
    assert_eq!(v["files"][0]["by_fallback"], 1);
}
