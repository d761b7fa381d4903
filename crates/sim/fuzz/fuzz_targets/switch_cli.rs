//! The simulated switch CLI on anything typed into an SSH shell or exec channel, on every platform:
//! lines, pager keys and Ctrl-D in any order. Properties: it never panics; the prompt always looks like a
//! prompt of its platform (or is empty while it reads raw input); the running and saved configs stay
//! readable; an exec session never pages unless told to (`terminal length`).
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use lifeline_sim::switch::{Cli, SwitchState};
use lifeline_types::Platform;
use std::sync::Arc;

#[derive(Arbitrary, Debug)]
enum Typed {
    Line(String),
    Known(u8, String),
    PageKey(u8),
    CtrlD,
}

const KNOWN: &[&str] = &[
    "enable",
    "terminal length 0",
    "show running-config",
    "show startup-config",
    "show version",
    "configure terminal",
    "hostname ",
    "end",
    "copy running-config startup-config",
    "write memory",
    "copy terminal: startup-config",
    "reload",
    "show runningconfiguration all",
    "config save -y",
    "config reload -y",
    "cat > /tmp/x <<'EOF'",
    "EOF",
    "nv config apply -y",
    "nv set ",
    "nv unset ",
    "nv config show -o commands",
    "sudo config replace /tmp/x",
    "exit",
    "tclsh",
    "tclquit",
    "y",
    "configure replace flash:x force",
    "dir",
    "show interfaces counters",
];

#[derive(Arbitrary, Debug)]
struct Input {
    platform: u8,
    exec: bool,
    typed: Vec<Typed>,
}

fuzz_target!(|input: Input| {
    let platform = Platform::ALL[usize::from(input.platform) % Platform::ALL.len()];
    let state = Arc::new(SwitchState::new("sw-fuzz", platform, "leaf", "admin", "admin"));
    let mut cli = Cli::new(state.clone(), input.exec);
    let mut asked_paging = false;
    for t in input.typed.iter().take(64) {
        let reply = match t {
            Typed::Line(l) => cli.line(l),
            Typed::Known(i, rest) => cli.line(&format!("{}{rest}", KNOWN[usize::from(*i) % KNOWN.len()])),
            Typed::PageKey(k) => {
                if !cli.paging() {
                    continue;
                }
                cli.page_key(*k)
            }
            Typed::CtrlD => cli.ctrl_d(),
        };
        // `terminal length N` turns the pager on even in an exec session (the simulator follows the
        // command; `Cli::new`'s "never page" holds only until then).
        if let Typed::Line(l) | Typed::Known(_, l) = t
            && (l.contains("terminal")
                || matches!(t, Typed::Known(i, _) if KNOWN[usize::from(*i) % KNOWN.len()].starts_with("terminal")))
        {
            asked_paging = true;
        }
        if input.exec && !asked_paging {
            assert!(!cli.paging(), "an exec session paged");
        }
        let p = cli.prompt();
        assert!(
            p.is_empty() || p.ends_with(['#', '>', ' ']),
            "{platform}: odd prompt {p:?} after {t:?} -> {reply:?}"
        );
        if reply.close {
            break;
        }
    }
    let _ = (state.running_config(), state.saved_config(), state.show_running(), state.show_version());
});
