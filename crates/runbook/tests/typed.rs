//! Typed parameters, slots and post-conditions as `runbook check` sees them: every parameter declares a
//! type, no variable picks a program or an address, and a runbook without a post-condition is refused.

use std::path::Path;

use lifeline_runbook::check_str;

const HEAD: &str = "name = \"x\"\ndescription = \"d\"\ntargets = [\"gpu-node\"]\nfault = \"f\"\ntouches = \"t\"\nnever-touches = \"n\"\nworst-case = \"w\"\n";
const POST: &str = "\n[[verify]]\nname = \"gone\"\nkind = \"fault-cleared\"\n";

fn problems(body: &str) -> String {
    let c = check_str(Path::new("x.toml"), &format!("{HEAD}{body}"));
    c.diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

#[test]
fn a_runbook_without_a_post_condition_is_refused() {
    let text = problems("[[step]]\nname = \"a\"\nkind = \"power\"\naction = \"cycle\"\n");
    assert!(text.contains("missing `[[verify]]`"), "{text}");
    let text = problems(&format!("[[step]]\nname = \"a\"\nkind = \"power\"\naction = \"cycle\"\n{POST}"));
    assert!(text.is_empty(), "{text}");
}

#[test]
fn post_conditions_only_read() {
    let body = "[[step]]\nname = \"a\"\nkind = \"power\"\naction = \"on\"\n\n[[verify]]\nname = \"b\"\nkind = \"power\"\naction = \"cycle\"\n\n[[verify]]\nname = \"c\"\nkind = \"fault-cleared\"\nwhen = \"a.ok\"\n";
    let text = problems(body);
    assert!(text.contains("post-condition `b`: a `power` step acts"), "{text}");
    assert!(text.contains("post-condition `c` takes no `when`"), "{text}");
    let text = problems(&format!("[[step]]\nname = \"a\"\nkind = \"fault-cleared\"\n{POST}"));
    assert!(text.contains("`fault-cleared` is a post-condition"), "{text}");
}

#[test]
fn every_parameter_declares_a_type_and_its_default_fits_it() {
    let body = format!(
        "[params.reset]\ndefault = \"cycle\"\ndescription = \"\"\n\n[params.n]\ntype = \"integer\"\nmax = 4\ndefault = \"9\"\n\n[params.mode]\ntype = \"enum\"\nvalues = [\"a\"]\npattern = \"x\"\ndefault = \"b\"\n\n[params.s]\ntype = \"string\"\ndefault = \"x\"\n\n[[step]]\nname = \"a\"\nkind = \"power\"\naction = \"on\"\n{POST}"
    );
    let text = problems(&body);
    for want in [
        "parameter `reset` needs a `type`",
        "`default` of `n`: 9 is out of range",
        "`pattern` does not go with `type = \"enum\"`",
        "`default` of `mode`: `b` is not allowed (allowed: a)",
        "parameter `s` of type string needs a `pattern`",
    ] {
        assert!(text.contains(want), "missing `{want}` in:\n{text}");
    }
}

#[test]
fn no_variable_picks_a_program_or_an_address() {
    let body = format!(
        "[params.cmd]\ntype = \"string\"\npattern = \".*\"\ndefault = \"/bin/true\"\n\n[params.host]\ntype = \"string\"\npattern = \".*\"\ndefault = \"frontend:22\"\n\n[params.port]\ntype = \"string\"\npattern = \"[A-Za-z0-9]+\"\ndefault = \"Ethernet0\"\n\n[[step]]\nname = \"a\"\nkind = \"exec\"\ncommand = [\"{{{{cmd}}}}\", \"{{{{port}}}}\"]\n\n[[step]]\nname = \"b\"\nkind = \"wait-for\"\nssh = \"{{{{host}}}}\"\n\n[[step]]\nname = \"c\"\nkind = \"notify\"\nurl = \"http://{{{{host}}}}/x\"\nmessage = \"m\"\n{POST}"
    );
    let text = problems(&body);
    assert!(text.contains("`{{cmd}}` cannot be used here: the program of an `exec` step is fixed"), "{text}");
    assert_eq!(
        text.matches("a network address may only take a variable of type `enum`").count(),
        2,
        "{text}"
    );
    assert!(!text.contains("`{{port}}` cannot"), "a patterned argument is a typed slot: {text}");
}

#[test]
fn a_fixed_set_takes_only_an_enum_within_it() {
    let body = format!(
        "[params.reset]\ntype = \"enum\"\nvalues = [\"cycle\", \"explode\"]\ndefault = \"cycle\"\n\n[params.free]\ntype = \"string\"\npattern = \".*\"\ndefault = \"on\"\n\n[[step]]\nname = \"a\"\nkind = \"power\"\naction = \"{{{{reset}}}}\"\n\n[[step]]\nname = \"b\"\nkind = \"power\"\naction = \"{{{{free}}}}\"\n{POST}"
    );
    let text = problems(&body);
    assert!(text.contains("whose value `explode` it does not accept"), "{text}");
    assert!(text.contains("`action` takes `{{free}}` of type string: it must be an `enum`"), "{text}");
}

#[test]
fn a_stored_copy_from_before_types_still_reads() {
    let text = format!(
        "{HEAD}[params.reset]\ndefault = \"cycle\"\ndescription = \"\"\n\n[[step]]\nname = \"a\"\nkind = \"power\"\naction = \"on\"\n"
    );
    let rb = lifeline_runbook::library::parse_stored("x", &text).expect("a run's old copy must resume");
    assert!(rb.post.is_empty());
    assert!(check_str(Path::new("x.toml"), &text).has_errors(), "but `check` refuses it");
}
