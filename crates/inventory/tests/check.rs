//! Checks the inventory checker against the shipped example and against deliberately broken copies.

use std::path::Path;

use lifeline_inventory::{check_str, select};
use proptest::prelude::*;

mod support;
use support::*;

#[test]
fn example_is_valid_and_complete() {
    let r = check_str(&example_path(), &example());
    let errs: Vec<_> = r.errors().collect();
    assert!(errs.is_empty(), "{errs:#?}");
    let inv = r.inventory.expect("model");
    assert_eq!(inv.sites.len(), 1);
    assert_eq!(inv.racks.len(), 2);
    let gpu: Vec<_> = inv.devices.iter().filter(|d| d.role == lifeline_types::Role::GpuNode).collect();
    assert_eq!(gpu.len(), 8);
    for d in &gpu {
        assert_eq!(d.gpus.as_ref().unwrap().count, 8, "{}", d.name);
        assert_eq!(d.backend_rails().count(), 8, "{}", d.name);
        assert_eq!(d.storage_rails().count(), 2, "{}", d.name);
    }
    let count = |role| inv.devices.iter().filter(|d| d.role == role).count();
    assert_eq!(count(lifeline_types::Role::HeadNode), 2);
    assert_eq!(count(lifeline_types::Role::StorageServer), 1);
    let switches: Vec<_> = inv.devices.iter().filter_map(|d| d.switch.as_ref().map(|s| (d, s))).collect();
    use lifeline_types::{Fabric::*, Platform::*, Tier::*};
    let has = |p, f, t| {
        switches.iter().filter(|(_, s)| s.platform == p && s.fabric == f && s.tier == Some(t)).count()
    };
    assert_eq!(has(Sonic, Backend, Leaf), 2);
    assert_eq!(has(Sonic, Backend, Spine), 1);
    assert_eq!(has(Eos, Storage, Leaf), 1);
    assert_eq!(has(Cumulus, Frontend, Leaf), 1);
    assert_eq!(has(Ios, Oob, Leaf), 1);
    // Everything the simulator must serve is on loopback.
    for d in &inv.devices {
        for a in [
            d.bmc.as_ref().map(|b| b.address.to_string()),
            d.management.as_ref().map(|m| m.address.to_string()),
        ]
        .into_iter()
        .flatten()
        {
            assert!(a.starts_with("127."), "{} has non-loopback {a}", d.name);
        }
    }
}

#[test]
fn reports_every_problem_with_its_location() {
    let base = example();
    let mut t = edit(&base, "name = \"gpu-node-02\"", "name = \"gpu-node-01\"");
    t = edit(
        &t,
        "rack = \"r01\"\nmodel = \"HGX H100 8-GPU\"\ngroups = [\"training\", \"pod-1\"]\nbmc = { address = \"127.10.1.3\"",
        "rack = \"r01\"\nmodel = \"HGX H100 8-GPU\"\ncolour = \"red\"\ngroups = [\"training\", \"pod-1\"]\nbmc = { address = \"127.10.1.3\"",
    );
    t = edit(
        &t,
        "bmc = { address = \"127.10.1.5\", protocol",
        "bmc = { address = \"127.10.1.5\", password = \"calvin\", protocol",
    );
    let errs = errors(&t);
    assert_eq!(errs.len(), 3, "{errs:#?}");
    let dup_line = line_of(
        &t,
        "name = \"gpu-node-01\"\nrole = \"gpu-node\"\nrack = \"r01\"\nmodel = \"HGX H100 8-GPU\"\ngroups = [\"training\", \"pod-1\"]\nbmc = { address = \"127.10.1.2\"",
    );
    let first_line = line_of(&t, "name = \"gpu-node-01\"");
    assert!(
        errs.iter().any(|e| e.starts_with(&format!(
            "inv.toml:{dup_line}:8: duplicate device name `gpu-node-01` (first defined at line {first_line})"
        ))),
        "{errs:#?}"
    );
    let colour_line = line_of(&t, "colour = ");
    assert!(
        errs.iter()
            .any(|e| e == &format!("inv.toml:{colour_line}:1: unknown key `colour` in device `gpu-node-03`")),
        "{errs:#?}"
    );
    let pw_line = line_of(&t, "password = \"calvin\"");
    assert!(
        errs.iter()
            .any(|e| e.starts_with(&format!("inv.toml:{pw_line}:")) && e.contains("plaintext password")),
        "{errs:#?}"
    );
}

#[test]
fn addresses_subnets_and_credentials() {
    let base = example();
    let t = edit(
        &base,
        "bmc = { address = \"127.10.1.21\"",
        "bmc = { address = \"10.9.9.9\", credential = \"admin:hunter2\"",
    );
    let t = edit(&t, "address = \"127.100.3.4\"", "address = \"127.100.3.400\"");
    let t =
        edit(&t, "oob-subnets = [\"127.10.0.0/16\"]", "oob-subnets = [\"127.10.0.0/16\", \"300.1.0.0/16\"]");
    let t =
        edit(&t, "management = { address = \"127.10.2.6\" }", "management = { address = \"127.10.2.5\" }");
    let t = edit(
        &t,
        "bmc = { address = \"127.10.1.31\"",
        "bmc = { address = \"127.10.1.31\", credential = \"file:/nonexistent/secret\"",
    );
    let errs = errors(&t).join("\n");
    for want in [
        "BMC address 10.9.9.9 is outside the declared OOB subnets",
        "plaintext credential in [device.bmc] of `head-node-01`",
        "invalid address `127.100.3.400` in rail.address of `gpu-node-04`",
        "invalid CIDR `300.1.0.0/16` in cluster.oob-subnets",
        "duplicate address 127.10.2.5: management address of `oob-sw-01` is also the management address of `frontend-leaf-01`",
        "credential `file:/nonexistent/secret` (used by `storage-01`) cannot be resolved",
    ] {
        assert!(errs.contains(want), "missing `{want}` in:\n{errs}");
    }
}

#[test]
fn rails_must_match_gpus_and_switches_need_a_platform() {
    let base = example();
    let t = edit(
        &base,
        "  { hca = \"mlx5_7\", netdev = \"rdma7\", fabric = \"backend\", subnet = \"127.100.7.0/24\", address = \"127.100.7.8\", rate-gbps = 400, mtu = 9000, link-layer = \"ethernet\", leaf = \"backend-leaf-02\", port = \"Ethernet248\" },\n",
        "",
    );
    let t = edit(&t, "platform = \"eos\"\n", "");
    let t = edit(&t, "platform = \"cumulus\"", "platform = \"junos\"");
    let errs = errors(&t).join("\n");
    assert!(errs.contains("`gpu-node-08` declares 8 GPUs but 7 backend rails"), "{errs}");
    assert!(errs.contains("switch `storage-leaf-01` has no platform"), "{errs}");
    assert!(errs.contains("platform: unknown Platform `junos`"), "{errs}");
}

#[test]
fn syntax_and_type_errors_do_not_hide_other_problems() {
    let base = example();
    let t = edit(
        &base,
        "gpus = { count = 8, model = \"NVIDIA H100 80GB HBM3\" }\nrail = [\n  { hca = \"mlx5_0\", netdev = \"rdma0\", fabric = \"backend\", subnet = \"127.100.0.0/24\", address = \"127.100.0.1\"",
        "gpus = { count = \"eight\", model = \"NVIDIA H100 80GB HBM3\" }\nrail = [\n  { hca = \"mlx5_0\", netdev = \"rdma0\", fabric = \"backend\", subnet = \"127.100.0.0/24\", address = \"127.100.0.1\"",
    );
    let t = edit(&t, "name = \"oob-sw-01\"", "name = \"OOB_SW\"");
    let errs = errors(&t).join("\n");
    assert!(errs.contains("invalid device `gpu-node-01`"), "{errs}");
    assert!(errs.contains("invalid device name"), "{errs}");
    let broken = format!("{t}\n[[device]\n");
    let errs = errors(&broken).join("\n");
    assert!(errs.contains("syntax error"), "{errs}");
}

#[test]
fn selection_by_name_rack_role_group_and_glob() {
    let r = check_str(&example_path(), &example());
    let inv = r.inventory.unwrap();
    let names = |t: &[&str]| -> Vec<String> {
        let t: Vec<String> = t.iter().map(|s| s.to_string()).collect();
        select(&inv, &t).unwrap().iter().map(|d| d.name.to_string()).collect()
    };
    assert_eq!(names(&["gpu-node-0[1-2]"]), ["gpu-node-01", "gpu-node-02"]);
    assert_eq!(names(&["r01"]).len(), 8);
    assert_eq!(names(&["switch"]).len(), 6);
    assert_eq!(names(&["pod-2", "gpu-node-05"]).len(), 4);
    assert_eq!(names(&["all"]).len(), inv.devices.len());
    let err = select(&inv, &["gpu-node-99".to_string()]).unwrap_err();
    assert!(err.to_string().contains("gpu-node-99"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn checker_never_panics(text in "(\\[\\[device\\]\\]\n|\\[cluster\\]\n|name = \"[a-z0-9-]{0,8}\"\n|role = \"[a-z-]{0,10}\"\n|rack = \"r0[12]\"\n|bmc = \\{ address = \"[0-9.]{0,15}\" \\}\n|[a-z]{1,6} = [0-9]{1,3}\n|.{0,20}\n){0,30}") {
        let _ = check_str(Path::new("x.toml"), &text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(text in "\\PC{0,300}") {
        let _ = check_str(Path::new("x.toml"), &text);
    }
}

#[test]
fn switch_ssh_timeouts_per_device_and_default() {
    use std::time::Duration;
    let t = example();
    let t = edit(
        &t,
        "management = { address = \"127.10.2.1\" }",
        "management = { address = \"127.10.2.1\", timeouts = { command = \"5m\", total = \"10m\", prompt = 15 } }",
    );
    let t = edit(&t, "[defaults.management]\n", "[defaults.management]\ntimeouts = { connect = \"3s\" }\n");
    let r = check_str(Path::new("inv.toml"), &t);
    let errs: Vec<_> = r.errors().collect();
    assert!(errs.is_empty(), "{errs:#?}");
    let inv = r.inventory.unwrap();
    let with = inv
        .devices
        .iter()
        .find(|d| d.management.as_ref().is_some_and(|m| m.address.to_string() == "127.10.2.1"));
    let m = with.unwrap().management.as_ref().unwrap();
    assert_eq!(m.timeouts.command, Some(Duration::from_secs(300)));
    assert_eq!(m.timeouts.total, Some(Duration::from_secs(600)));
    assert_eq!(m.timeouts.prompt, Some(Duration::from_secs(15)));
    assert_eq!(m.timeouts.connect, Some(Duration::from_secs(3)), "the default applies");
    assert_eq!(m.timeouts.auth, None);
    let json = serde_json::to_value(m.timeouts).unwrap();
    assert_eq!(json["command"], "5m");
    // Every other switch gets the default connect timeout only.
    let other = inv
        .devices
        .iter()
        .find(|d| d.management.as_ref().is_some_and(|m| m.address.to_string() == "127.10.2.2"));
    assert_eq!(other.unwrap().management.as_ref().unwrap().timeouts.command, None);
}

#[test]
fn bad_switch_ssh_timeouts_are_reported_where_written() {
    let base = example();
    let bad = edit(
        &base,
        "management = { address = \"127.10.2.1\" }",
        "management = { address = \"127.10.2.1\", timeouts = { command = \"5x\", auth = 0, prompt = \"2h\" } }",
    );
    let errs = errors(&bad);
    let line = line_of(&bad, "timeouts = { command");
    for needle in ["`5x` is not a duration", "a timeout of `0` is zero", "longer than the 1h limit"] {
        assert!(
            errs.iter().any(|e| e.contains(needle) && e.contains(&format!(":{line}:"))),
            "{needle}: {errs:#?}"
        );
    }
    let short = edit(
        &base,
        "management = { address = \"127.10.2.1\" }",
        "management = { address = \"127.10.2.1\", timeouts = { command = \"2m\", total = \"30s\" } }",
    );
    let errs = errors(&short);
    assert!(
        errs.iter().any(|e| e.contains("timeouts.total (30s) is shorter than timeouts.command (2m)")),
        "{errs:#?}"
    );
}

#[test]
fn plain_http_redfish_is_explicit() {
    let base = example();
    let t = edit(
        &base,
        "bmc = { address = \"127.10.1.1\", protocol = \"redfish\"",
        "bmc = { address = \"127.10.1.1\", protocol = \"redfish\", tls = false",
    );
    let checked = check_str(Path::new("inv.toml"), &t);
    assert!(errors(&t).is_empty(), "{:?}", errors(&t));
    let inv = checked.inventory.expect("valid");
    let plain: Vec<_> = inv
        .devices
        .iter()
        .filter(|d| d.bmc.as_ref().is_some_and(|b| !b.tls))
        .map(|d| d.name.to_string())
        .collect();
    assert_eq!(plain.len(), 1, "only the device that says so: {plain:?}");
    // A pin on a service without TLS is a contradiction.
    let pinned = edit(
        &t,
        "tls = false",
        "tls = false, tls-fingerprint = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"",
    );
    assert!(
        errors(&pinned).iter().any(|e| e.contains("`tls = false` with a `tls-fingerprint`")),
        "{:?}",
        errors(&pinned)
    );
    let bad = edit(&t, "tls = false", "tls = \"no\"");
    assert!(!errors(&bad).is_empty());
}

// --- one typo is one error, with the key that was meant (the checker renames a near-miss key and checks on)

#[test]
fn a_misspelt_default_credential_is_one_error_with_a_suggestion() {
    // Every BMC takes its credential from [defaults.bmc]: before, each one also said it had none.
    let t = edit(
        &example(),
        "credential = \"env:LIFELINE_BMC_PASSWORD\"",
        "credentails = \"env:LIFELINE_BMC_PASSWORD\"",
    );
    let errs = errors(&t);
    let line = line_of(&t, "credentails");
    assert_eq!(
        errs,
        [format!("inv.toml:{line}:1: unknown key `defaults.bmc.credentails` (did you mean `credential`?)")]
    );
}

#[test]
fn a_misspelt_required_key_is_one_error_and_the_device_is_still_checked() {
    let t = edit(&example(), "bmc = { address = \"127.10.1.3\"", "bmc = { adress = \"127.10.1.3\"");
    let errs = errors(&t);
    let line = line_of(&t, "adress");
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(
        errs[0].starts_with(&format!("inv.toml:{line}:"))
            && errs[0]
                .ends_with("unknown key `bmc.adress` in device `gpu-node-03` (did you mean `address`?)"),
        "{errs:#?}"
    );
    // The renamed value is checked like any other: a bad address behind the typo is still found.
    let t = edit(&example(), "bmc = { address = \"127.10.1.3\"", "bmc = { adress = \"10.9.9.9\"");
    let errs = errors(&t);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(errs.iter().any(|e| e.contains("outside the declared OOB subnets")), "{errs:#?}");
}

#[test]
fn misspelt_top_level_and_underscored_keys() {
    let t = example().replace("[[device]]", "[[devices]]");
    let errs = errors(&t);
    let n = t.matches("[[devices]]").count();
    assert!(n > 1);
    // Every `[[devices]]` header names the same key: one error at the first.
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(errs[0].ends_with("unknown key `devices` (did you mean `device`?)"), "{errs:#?}");

    // The first rail of the first device.
    let t = example().replacen("rate-gbps = 400", "rate_gbps = 400", 1);
    let errs = errors(&t);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(
        errs[0]
            .contains("unknown key `rail[0].rate_gbps` in device `gpu-node-01` (did you mean `rate-gbps`?)"),
        "{errs:#?}"
    );
}

#[test]
fn an_unrelated_key_is_reported_without_a_guess() {
    let t = edit(&example(), "[defaults.bmc]\n", "[defaults.bmc]\ncolour = \"red\"\n");
    let errs = errors(&t);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(errs[0].ends_with("unknown key `defaults.bmc.colour`"), "{errs:#?}");
}

#[test]
fn config_source_is_checked_against_the_platform() {
    use lifeline_types::ConfigSource;
    let base = example();
    let t = edit(&base, "platform = \"cumulus\"", "platform = \"cumulus\"\nconfig-source = \"files\"");
    let r = check_str(Path::new("inv.toml"), &t);
    assert!(r.errors().next().is_none(), "{:#?}", r.errors().collect::<Vec<_>>());
    let inv = r.inventory.unwrap();
    let source = |platform: lifeline_types::Platform| {
        inv.devices
            .iter()
            .filter_map(|d| d.switch.as_ref())
            .find(|s| s.platform == platform)
            .map(|s| s.config_source)
    };
    assert_eq!(source(lifeline_types::Platform::Cumulus), Some(ConfigSource::Files));
    assert_eq!(source(lifeline_types::Platform::Eos), Some(ConfigSource::Running), "the default");

    // `files` on EOS, `saved` on Cumulus, a word no platform has, and the key on a server: each one error
    // where it is written, naming what that platform allows.
    let t = edit(&base, "platform = \"eos\"", "platform = \"eos\"\nconfig-source = \"files\"");
    let t = edit(&t, "platform = \"cumulus\"", "platform = \"cumulus\"\nconfig-source = \"saved\"");
    let t = edit(&t, "platform = \"ios\"", "platform = \"ios\"\nconfig-source = \"startup\"");
    let errs = errors(&t);
    assert_eq!(errs.len(), 3, "{errs:#?}");
    let all = errs.join("\n");
    assert!(
        all.contains("config-source `files` does not apply to eos switch")
            && all.contains("expected one of: running"),
        "{all}"
    );
    assert!(
        all.contains("config-source `saved` does not apply to cumulus switch")
            && all.contains("running, files"),
        "{all}"
    );
    assert!(all.contains("config-source: unknown ConfigSource `startup`"), "{all}");
    let line = line_of(&t, "config-source = \"files\"");
    assert!(errs.iter().any(|e| e.contains(&format!("inv.toml:{line}:"))), "{all}");
}
