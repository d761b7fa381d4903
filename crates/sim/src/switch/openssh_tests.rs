//! The simulated switches checked with the real OpenSSH client (`ssh`, password via `sshpass`):
//! each platform's show command over an exec request and over an interactive `-tt` shell.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use lifeline_types::Platform;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::{SwitchState, serve};

fn tools_present() -> bool {
    let ok = ["ssh", "sshpass"].iter().all(|t| {
        std::process::Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !ok {
        assert!(
            std::env::var("OOB_PEERS_REQUIRED").as_deref() != Ok("1"),
            "ssh and sshpass required (apt openssh-client sshpass)"
        );
        eprintln!("SKIP: ssh/sshpass not installed");
    }
    ok
}

fn show_command(p: Platform) -> &'static str {
    match p {
        Platform::Sonic => "show runningconfiguration all",
        Platform::Cumulus => "nv config show -o commands",
        _ => "show running-config",
    }
}

async fn ssh(addr: std::net::SocketAddr, tty: bool, remote: Option<&str>, stdin: &str) -> (i32, String) {
    let port = addr.port().to_string();
    let host = format!("admin@{}", addr.ip());
    let mut args = vec![
        "-p",
        "pw-9",
        "ssh",
        "-p",
        &port,
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "LogLevel=ERROR",
        "-o",
        "PubkeyAuthentication=no",
        "-o",
        "ConnectTimeout=10",
    ];
    if tty {
        args.push("-tt");
    }
    args.push(&host);
    if let Some(r) = remote {
        args.push(r);
    }
    let mut child = Command::new("sshpass")
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn sshpass");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.as_bytes()).await.expect("write stdin");
    // Keep stdin open for the interactive case: `exit` ends the session, not EOF.
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("ssh finished")
        .expect("ssh ran");
    drop(input);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[tokio::test]
async fn openssh_client_runs_each_platform_show_command() {
    if !tools_present() {
        return;
    }
    let ip = std::net::Ipv4Addr::new(
        127,
        77,
        (std::process::id() % 250) as u8,
        1 + (std::process::id() / 250 % 250) as u8,
    );
    for p in Platform::ALL {
        let l = tokio::net::TcpListener::bind((ip, 0)).await.expect("bind");
        let addr = l.local_addr().expect("addr");
        let state = Arc::new(SwitchState::new("leaf3", *p, "leaf", "admin", "pw-9"));
        let task = tokio::spawn(serve(l, state.clone()));
        let body = state.running_config();
        let marker = body.lines().find(|l| l.contains("10.255.0.10")).expect("syslog line").trim().to_owned();

        // Exec request.
        let (code, out) = ssh(addr, false, Some(show_command(*p)), "").await;
        assert_eq!(code, 0, "{p}: {out}");
        assert!(out.contains(&marker), "{p} exec output:\n{out}");

        // Interactive shell under a tty, with the platform's prompt, enable and paging off.
        let script = match p {
            Platform::Ios | Platform::Nxos | Platform::Eos => {
                "enable\nterminal length 0\nshow running-config\nexit\n"
            }
            _ => &format!("{}\nexit\n", show_command(*p)),
        };
        let (code, out) = ssh(addr, true, None, script).await;
        assert_eq!(code, 0, "{p}: {out}");
        assert!(out.contains(&marker), "{p} shell output:\n{out}");
        let prompt = match p {
            Platform::Sonic => "admin@leaf3:~$ ".to_owned(),
            Platform::Cumulus => "admin@leaf3:mgmt:~$ ".to_owned(),
            _ => "leaf3#".to_owned(),
        };
        assert!(out.contains(&prompt), "{p}: no prompt `{prompt}` in:\n{out}");
        // A wrong password is refused by the real client too.
        task.abort();
    }
}
