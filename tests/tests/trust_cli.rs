//! `lifeline bmc trust` against a real Redfish server (sushy-static over HTTPS) that replaces its
//! certificate: the look shows the pinned and the presented fingerprint and re-pins nothing without a
//! confirmation; `--fingerprint` with anything but what is presented now (the old pin, a stale look) is
//! refused naming both; the presented one re-pins, and the BMC is reachable again.

use std::process::Output;

use lifeline_test_utils::{TlsStatic, lifeline_bin, output_json, output_text, presented_fingerprint};

struct Cli {
    dir: tempfile::TempDir,
}

impl Cli {
    fn new(bmc: &TlsStatic) -> Cli {
        let dir = tempfile::tempdir().unwrap();
        let pw = dir.path().join("bmc-pass");
        std::fs::write(&pw, "password\n").unwrap();
        std::fs::set_permissions(&pw, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let inv = format!(
            "[cluster]\nname = \"k\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
             credential = \"file:{}\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
             [[device]]\nname = \"node\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{}\", port = {}, protocol = \"redfish\" }}\n",
            pw.display(),
            bmc.ip,
            bmc.port
        );
        std::fs::write(dir.path().join("inventory.toml"), inv).unwrap();
        Cli { dir }
    }

    fn run(&self, args: &[&str]) -> Output {
        std::process::Command::new(lifeline_bin())
            .args(args)
            .env("LIFELINE_INVENTORY", self.dir.path().join("inventory.toml"))
            .env("LIFELINE_DATA_DIR", self.dir.path().join("data"))
            .env_remove("LIFELINE_CONFIG")
            .env_remove("LIFELINE_DATABASE_URL")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    }
}

#[test]
fn bmc_trust_shows_both_fingerprints_and_repins_only_the_confirmed_one() {
    let Some(mut bmc) = TlsStatic::start() else { return };
    let cli = Cli::new(&bmc);
    let first = bmc.fingerprint.clone();

    // Nothing pinned yet: the look shows the presented certificate; the operator confirms it.
    let o = cli.run(&["bmc", "trust", "node", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "nothing pinned yet, and a look confirms nothing: {}",
        output_text(&o)
    );
    assert_eq!(presented_fingerprint(&o), first);
    let o = cli.run(&["bmc", "trust", "node", "--fingerprint", &first]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(output_text(&o).contains(&format!("node: pinned {first}")), "{}", output_text(&o));

    // The certificate is replaced.
    bmc.restart_with_new_certificate();
    let second = bmc.fingerprint.clone();
    let o = cli.run(&["bmc", "trust", "node"]);
    let t = output_text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!("node: pinned    {first}")), "{t}");
    assert!(t.contains(&format!("node: presented {second}")), "{t}");
    assert!(t.contains(&format!("--fingerprint {second}")), "{t}");

    // The old pin confirmed: refused, both named, nothing stored (the look still shows the old pin).
    let o = cli.run(&["bmc", "trust", "node", "--fingerprint", &first]);
    let t = output_text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!("presents {second}, not the confirmed {first}")), "{t}");
    let v = output_json(&cli.run(&["bmc", "trust", "node", "--json"]));
    assert_eq!(v["views"][0]["pinned"].as_str(), Some(&*first), "{v}");

    // A stale look: the certificate changes once more before the confirmation.
    bmc.restart_with_new_certificate();
    let third = bmc.fingerprint.clone();
    let o = cli.run(&["bmc", "trust", "node", "--fingerprint", &second]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    assert!(output_text(&o).contains(&format!("presents {third}")), "{}", output_text(&o));

    // A malformed fingerprint is a usage error.
    let o = cli.run(&["bmc", "trust", "node", "--fingerprint", "yes"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));

    // Confirmed with what is presented now.
    let o = cli.run(&["bmc", "trust", "node", "--fingerprint", &third]);
    let t = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains(&format!("node: re-pinned {third} (was {first})")), "{t}");
    let o = cli.run(&["bmc", "trust", "node"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(output_text(&o).contains("node: pin unchanged"), "{}", output_text(&o));
}
