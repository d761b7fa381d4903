//! The `ssh-banner` post-condition against real SSH servers: OpenSSH's `sshd` passes for a platform whose
//! NOS runs OpenSSH and fails for IOS; FakeNOS (paramiko, standing in for an IOS, EOS and SONiC switch)
//! sends its own banner, which no platform's pattern takes; a port that accepts and stays silent, and one
//! that refuses, fail with what was seen. The checker refuses an address not from the inventory.

use std::path::Path;
use std::time::Duration;

use lifeline_runbook::ssh_banner::{platform_pattern, probe};
use lifeline_types::Platform;
use regex::Regex;

const QUICK: Duration = Duration::from_millis(1500);
const EVERY: Duration = Duration::from_millis(200);

fn re(p: &str) -> Regex {
    Regex::new(p).unwrap()
}

#[tokio::test]
async fn real_openssh_passes_for_an_openssh_platform_and_not_for_ios() {
    let Some(sshd) = lifeline_test_utils::start_sshd("") else { return };
    let addr = format!("{}:{}", sshd.addr, sshd.port);
    let p = probe(&addr, &re(platform_pattern(Platform::Sonic)), "platform sonic", QUICK, EVERY).await;
    assert!(p.matched, "{p:?}");
    assert!(p.banner.as_deref().unwrap().starts_with("SSH-2.0-OpenSSH_"), "{p:?}");
    let p = probe(&addr, &re(platform_pattern(Platform::Ios)), "platform ios", QUICK, EVERY).await;
    assert!(!p.matched, "{p:?}");
    assert!(p.attempts > 1, "it kept looking until the time was up: {p:?}");
    assert!(p.last_error.as_deref().unwrap().contains("does not match"), "{p:?}");
}

#[tokio::test]
async fn fakenos_banner_is_no_platforms_but_a_runbook_pattern_can_name_it() {
    let Some(rows) = lifeline_test_utils::peer_endpoints("switches") else { return };
    for row in &rows {
        let addr = format!("{}:{}", row[1], row[2]);
        let platform = match row[5].as_str() {
            "cisco_ios" => Platform::Ios,
            "arista_eos" => Platform::Eos,
            _ => Platform::Sonic,
        };
        let p = probe(&addr, &re(platform_pattern(platform)), "platform", QUICK, EVERY).await;
        assert!(!p.matched, "{}: {p:?}", row[0]);
        assert!(p.banner.as_deref().unwrap_or_default().starts_with("SSH-2.0-paramiko_"), "{p:?}");
        let p = probe(&addr, &re(r"^SSH-2\.0-paramiko_"), "runbook", QUICK, EVERY).await;
        assert!(p.matched && p.attempts == 1, "{}: {p:?}", row[0]);
    }
}

#[tokio::test]
async fn a_silent_port_and_a_closed_port_fail_with_what_was_seen() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let p = probe(&addr, &re(platform_pattern(Platform::Sonic)), "platform sonic", QUICK, EVERY).await;
    assert!(!p.matched && p.banner.is_none(), "{p:?}");
    assert!(p.last_error.as_deref().unwrap().starts_with("no banner within"), "{p:?}");
    hold.abort();

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap().to_string();
    drop(closed);
    let p = probe(&addr, &re(platform_pattern(Platform::Sonic)), "platform sonic", QUICK, EVERY).await;
    assert!(!p.matched, "{p:?}");
    assert!(p.last_error.as_deref().unwrap().starts_with("connect:"), "{p:?}");
}

#[test]
fn the_checker_takes_only_inventory_addresses_and_a_valid_pattern() {
    let head = "name = \"x\"\ndescription = \"d\"\ntargets = [\"switch\"]\nfault = \"f\"\ntouches = \"t\"\nnever-touches = \"n\"\nworst-case = \"w\"\n\n[[step]]\nname = \"a\"\nkind = \"power\"\naction = \"on\"\n\n";
    let problems = |post: &str| {
        let c = lifeline_runbook::check_str(Path::new("x.toml"), &format!("{head}{post}"));
        c.diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
    };
    let ok = problems("[[verify]]\nname = \"nos\"\nkind = \"ssh-banner\"\n");
    assert!(ok.is_empty(), "{ok}");
    let ok = problems(
        "[[verify]]\nname = \"nos\"\nkind = \"ssh-banner\"\nssh = \"frontend\"\nexpect = '^SSH-2\\.0-OpenSSH_9'\ninterval = \"1s\"\ntimeout = \"30s\"\n",
    );
    assert!(ok.is_empty(), "{ok}");
    let bad = problems("[[verify]]\nname = \"nos\"\nkind = \"ssh-banner\"\nssh = \"10.0.0.1:22\"\n");
    assert!(bad.contains("`ssh` `10.0.0.1:22` (expected one of: management, frontend)"), "{bad}");
    let bad = problems("[[verify]]\nname = \"nos\"\nkind = \"ssh-banner\"\nexpect = \"(\"\n");
    assert!(bad.contains("`expect` is not a valid regular expression"), "{bad}");
}
