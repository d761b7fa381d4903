//! The library in `runbooks/` checks clean, and a broken copy reports every problem at once with
//! FILE:LINE:COL.

use std::path::Path;

use lifeline_runbook::{Library, check_str};
use lifeline_test_utils::workspace_root;

#[test]
fn the_library_checks_clean_and_files_are_named_after_their_runbook() {
    let lib = Library { dir: workspace_root().join("runbooks") };
    let all = lib.check_all().unwrap();
    assert_eq!(all.len(), 8, "eight runbooks: {all:?}");
    for (path, c) in &all {
        assert!(!c.has_errors(), "{}: {:#?}", path.display(), c.diagnostics);
        let rb = c.runbook.as_ref().unwrap();
        assert_eq!(path.file_stem().unwrap().to_str().unwrap(), rb.name);
        let text = std::fs::read_to_string(path).unwrap();
        for header in ["# Fault:", "# Touches:", "# Never:", "# Worst case:"] {
            assert!(text.contains(header), "{} lacks `{header}`", path.display());
        }
    }
    let names: Vec<String> = lib.list().unwrap().into_iter().map(|l| l.name).collect();
    for n in [
        "bmc-unreachable",
        "gpu-node-recover",
        "pfc-storm",
        "rail-down",
        "reinstall",
        "slurm-controller-reset",
        "switch-boot-loop",
        "switch-config-restore",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
    }
}

#[test]
fn a_broken_copy_reports_every_problem_at_once() {
    let good = std::fs::read_to_string(workspace_root().join("runbooks/gpu-node-recover.toml")).unwrap();
    let broken = good
        .replace("targets = [\"gpu-node\"]", "targets = [\"gpu-nodes\"]\ncolour = \"red\"")
        .replace("action = \"{{reset}}\"", "action = \"{{rest}}\"\nreason = \"x\"")
        .replace("when = \"verify.passed\"", "when = \"verfy.passed\"")
        .replace("kind = \"verify\"", "kind = \"verifyy\"")
        .replace(
            "timeout = \"5m\"\non-failure = \"escalate\"",
            "timeout = \"5 parsecs\"\non-failure = \"explode\"",
        );
    let path = Path::new("runbooks/gpu-node-recover.toml");
    let c = check_str(path, &broken);
    assert!(c.runbook.is_none());
    let lines: Vec<String> = c.diagnostics.iter().map(ToString::to_string).collect();
    let text = lines.join("\n");
    for want in [
        "unknown key `colour`",
        "`targets`",
        "unknown variable `{{rest}}`",
        "unknown key `reason` in `power` step `reset` (it belongs to `drain` steps)",
        "`when` refers to `verfy`",
        "unknown step kind `verifyy`",
        "is not a duration",
        "`on-failure` `explode`",
    ] {
        assert!(text.contains(want), "missing `{want}` in:\n{text}");
    }
    assert!(lines.len() >= 8, "{text}");
    let re = regex_lite(&lines[0]);
    assert!(re, "not FILE:LINE:COL: {}", lines[0]);
    // Each location points at the line that has the problem.
    let colour = c.diagnostics.iter().find(|d| d.message.contains("colour")).unwrap();
    assert_eq!(
        broken.lines().nth(colour.line - 1).unwrap().trim_start().get(..colour.col.min(1) + 5),
        Some("colour")
    );
}

fn regex_lite(s: &str) -> bool {
    let mut it = s.splitn(4, ':');
    let (f, l, c) = (it.next().unwrap_or(""), it.next().unwrap_or(""), it.next().unwrap_or(""));
    f.ends_with("gpu-node-recover.toml") && l.parse::<usize>().is_ok() && c.parse::<usize>().is_ok()
}

#[test]
fn missing_steps_and_goto_to_nowhere_are_reported() {
    let text = "name = \"x\"\ndescription = \"d\"\ntargets = [\"switch\"]\nfault = \"f\"\ntouches = \"t\"\nnever-touches = \"n\"\nworst-case = \"w\"\n\n[[step]]\nname = \"a\"\nkind = \"backup\"\non-failure = \"goto\"\ngoto = \"nowhere\"\n\n[[step]]\nname = \"a\"\nkind = \"wait-for\"\npower = \"on\"\ntcp = \"frontend:22\"\n";
    let c = check_str(Path::new("x.toml"), text);
    let text = c.diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    assert!(text.contains("`goto` names no step: `nowhere`"), "{text}");
    assert!(text.contains("step name `a` is used twice"), "{text}");
    assert!(text.contains("needs exactly one of power, bmc, tcp, ssh, scheduler"), "{text}");
}
