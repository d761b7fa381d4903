//! Where the login page goes after logging in (`web/js/next.js`, run in Node as the page runs it on the
//! query string): a path of this site, never another origin — `/\host`, `/%5Chost`, `/%09/host`, `//host`
//! and schemes all land on the overview page.

use std::path::Path;
use std::process::Command;

/// `(query string, where the page goes)`.
const CASES: &[(&str, &str)] = &[
    ("next=/ui/node/gpu-node-04", "/ui/node/gpu-node-04"),
    ("next=%2Fui%2Faudit%3Ftarget%3Dn1", "/ui/audit?target=n1"),
    ("next=/%5Cevil.example", "/ui/overview"),
    ("next=/%5C%5Cevil.example", "/ui/overview"),
    ("next=/%09/evil.example", "/ui/overview"),
    ("next=/%0A/evil.example", "/ui/overview"),
    ("next=//evil.example", "/ui/overview"),
    ("next=/%2F%2Fevil.example", "/ui/overview"),
    ("next=%2F%2Fevil.example", "/ui/overview"),
    ("next=https://evil.example/", "/ui/overview"),
    ("next=javascript:alert(1)", "/ui/overview"),
    ("next=", "/ui/overview"),
    ("", "/ui/overview"),
];

#[test]
fn next_is_a_same_origin_path_only() {
    let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/js/next.js").canonicalize().unwrap();
    let cases: Vec<&str> = CASES.iter().map(|(q, _)| *q).collect();
    let script = format!(
        "import {{ safeNext }} from {module:?};\n\
         const cases = {cases};\n\
         console.log(JSON.stringify(cases.map((q) => safeNext(new URLSearchParams(q).get('next'), 'https://jump.example:7443'))));",
        module = format!("file://{}", module.display()),
        cases = serde_json::to_string(&cases).unwrap(),
    );
    let out = match Command::new("node").args(["--input-type=module", "-e", &script]).output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && std::env::var_os("CI").is_none() => {
            eprintln!("skipped: no `node` on this machine (CI has it)");
            return;
        }
        Err(e) => panic!("node: {e}"),
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let got: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    for ((q, want), got) in CASES.iter().zip(&got) {
        assert_eq!(got, want, "?{q}");
    }
}
