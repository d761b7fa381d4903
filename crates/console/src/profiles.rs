//! Bootloader profiles: how to break into ONIE, U-Boot, GRUB and Arista Aboot and reach a rescue shell,
//! looking at the screen before every key.
//!
//! Why screen-first: keys at the wrong moment do harm. A Ctrl-C that lands in Aboot's window traps an
//! Arista switch in the Aboot shell (no autoboot), one that lands later does nothing useful; an arrow
//! key pressed after GRUB's countdown expired goes to the booting kernel. So every profile waits until
//! the screen shows the exact state it needs (the prompt is the last line, the countdown is still
//! running, the highlighted entry is the one it wants) before sending the next key, verifies the
//! reaction, and when it missed a window it never repeats the key blindly: it waits for the next boot
//! (a boot-looping switch comes back to its bootloader) up to `attempts` times.

use std::time::Duration;

use regex::Regex;

use crate::expect::{ConsoleIo, Expect, ExpectError, Key, Pattern};

/// Which bootloader a console shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bootloader {
    /// x86 ONIE behind GRUB (SONiC): main menu "ONIE" -> ONIE menu "ONIE: Rescue".
    Onie,
    /// U-Boot (ARM/PowerPC switches with ONIE in flash): stop autoboot, `run onie_rescue`.
    UBoot,
    /// Plain GRUB 2: "Advanced options" -> "(recovery mode)" -> maintenance shell.
    Grub,
    /// Arista Aboot: Ctrl-C only while "Press Control-C now to enter Aboot shell" is showing.
    Aboot,
}

impl Bootloader {
    /// What the profile ends in.
    pub fn goal(self) -> &'static str {
        match self {
            Bootloader::Onie | Bootloader::UBoot => "ONIE rescue shell",
            Bootloader::Grub => "recovery-mode root shell",
            Bootloader::Aboot => "Aboot shell",
        }
    }
}

/// Guess the bootloader from what the screen shows (`None`: nothing recognisable yet).
pub fn detect(screen: &str) -> Option<Bootloader> {
    if screen.contains("Aboot") {
        Some(Bootloader::Aboot)
    } else if screen.contains("Hit any key to stop autoboot") || screen.contains("U-Boot") {
        Some(Bootloader::UBoot)
    } else if screen.contains("ONIE") {
        Some(Bootloader::Onie)
    } else if screen.contains("GNU GRUB") {
        Some(Bootloader::Grub)
    } else {
        None
    }
}

/// Knobs of a rescue run.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RescueOptions {
    /// How long to wait for the bootloader to show up (a whole boot cycle, with margin).
    pub wait_for_bootloader: Duration,
    /// One interaction: a key and its visible reaction.
    pub step_timeout: Duration,
    /// Boot cycles to try when a window was missed.
    pub attempts: u32,
    /// U-Boot command that boots ONIE in rescue mode.
    pub uboot_rescue_command: String,
    /// Root password for GRUB recovery mode if the system asks for one.
    pub root_password: Option<String>,
}

impl Default for RescueOptions {
    fn default() -> Self {
        RescueOptions {
            wait_for_bootloader: Duration::from_secs(300),
            step_timeout: Duration::from_secs(10),
            attempts: 3,
            uboot_rescue_command: "run onie_rescue".into(),
            root_password: None,
        }
    }
}

/// The outcome of a successful rescue.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RescueReport {
    pub bootloader: Bootloader,
    /// Boot cycles used (1 = the first window was caught).
    pub attempts: u32,
    /// The prompt line the run ended at.
    pub prompt: String,
}

/// Why one attempt did not finish.
enum Attempt {
    /// A window closed before our key landed: wait for the next boot.
    Missed(String),
    Fatal(ExpectError),
}

impl From<ExpectError> for Attempt {
    fn from(e: ExpectError) -> Self {
        Attempt::Fatal(e)
    }
}

/// Break into `bootloader` and reach its rescue shell. The console must be writable.
pub async fn break_into_rescue<C: ConsoleIo>(
    e: &mut Expect<C>,
    bootloader: Bootloader,
    opts: &RescueOptions,
) -> Result<RescueReport, ExpectError> {
    let attempts = opts.attempts.max(1);
    let mut last_miss = String::new();
    for attempt in 1..=attempts {
        e.note(format!("{bootloader:?}: attempt {attempt} of {attempts}, goal: {}", bootloader.goal()));
        await_bootloader(e, opts.wait_for_bootloader).await?;
        let r = match bootloader {
            Bootloader::Aboot => aboot(e, opts).await,
            Bootloader::UBoot => uboot(e, opts).await,
            Bootloader::Onie => onie(e, opts).await,
            Bootloader::Grub => grub(e, opts).await,
        };
        match r {
            Ok(()) => {
                let prompt = e.last_line();
                e.note(format!("reached the {}: {prompt:?}", bootloader.goal()));
                return Ok(RescueReport { bootloader, attempts: attempt, prompt });
            }
            Err(Attempt::Missed(why)) => {
                e.note(format!("missed the window ({why}); waiting for the next boot"));
                last_miss = why;
            }
            Err(Attempt::Fatal(err)) => return Err(err),
        }
    }
    Err(ExpectError::Profile {
        console: e.console().to_owned(),
        what: format!("{bootloader:?}: missed the bootloader window {attempts} times (last: {last_miss})"),
    })
}

/// Waits until some bootloader shows on the screen; fails early, saying what repeats, when the console
/// loops through the same pre-bootloader output (a POST or firmware reset loop: no key can help, and the
/// whole `within` would otherwise be spent).
async fn await_bootloader<C: ConsoleIo>(e: &mut Expect<C>, within: Duration) -> Result<(), ExpectError> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if detect(&e.screen()).is_some() || detect(&e.stream_text()).is_some() {
            return Ok(());
        }
        if let Some(block) = crate::boot_loop::repeating_block(&e.stream_text()) {
            let what = format!(
                "the console repeats the same output without reaching a bootloader (a POST or firmware reset \
                 loop?); each cycle begins: {}",
                block.join(" | ")
            );
            e.note(what.clone());
            return Err(ExpectError::Profile { console: e.console().to_owned(), what });
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            // The profile's own wait reports the timeout with the screen it saw.
            return Ok(());
        }
        if !e.read_some(left.min(Duration::from_millis(500))).await && e.is_closed() {
            return Ok(());
        }
    }
}

/// A GRUB menu as read off the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Menu {
    pub entries: Vec<String>,
    pub selected: Option<usize>,
}

/// Read a GRUB menu box (`|*entry |` rows; ASCII or Unicode borders) from screen rows; `None` unless
/// both borders are on screen.
pub fn parse_menu(rows: &[String]) -> Option<Menu> {
    let mut entries = Vec::new();
    let mut selected = None;
    let mut in_box = false;
    let mut complete = false;
    for row in rows {
        let t = row.trim();
        let is_border = (t.starts_with('+') && t.ends_with('+') && t.contains("--"))
            || t.starts_with('┌')
            || t.starts_with('└');
        if is_border {
            if in_box {
                complete = true;
                break;
            }
            in_box = true;
            continue;
        }
        if !in_box {
            continue;
        }
        let inner = t
            .strip_prefix('|')
            .or_else(|| t.strip_prefix('│'))
            .and_then(|s| s.strip_suffix('|').or_else(|| s.strip_suffix('│')));
        let Some(inner) = inner else { continue };
        let (sel, text) = match inner.strip_prefix('*') {
            Some(rest) => (true, rest.trim()),
            None => (false, inner.trim()),
        };
        if text.is_empty() {
            continue;
        }
        if sel {
            selected = Some(entries.len());
        }
        entries.push(text.to_owned());
    }
    // Only a whole box counts: a redraw still arriving must not be mistaken for a shorter menu.
    (complete && !entries.is_empty()).then_some(Menu { entries, selected })
}

/// The complete menu on screen (a redraw arriving in several SOL packets is waited for); `None` when
/// no complete menu with a highlighted entry shows up within `within`.
async fn current_menu<C: ConsoleIo>(e: &mut Expect<C>, within: Duration) -> Option<Menu> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(m) = parse_menu(&e.rows())
            && m.selected.is_some()
        {
            return Some(m);
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() || !e.read_some(left).await && tokio::time::Instant::now() >= deadline {
            return None;
        }
    }
}

/// Wait until a GRUB menu (with a highlighted entry) is on screen.
async fn wait_menu<C: ConsoleIo>(e: &mut Expect<C>, within: Duration) -> Result<Menu, Attempt> {
    match current_menu(e, within).await {
        Some(m) => Ok(m),
        None => Err(Attempt::Fatal(ExpectError::Profile {
            console: e.console().to_owned(),
            what: format!(
                "no GRUB menu on screen within {}; screen: {:?}",
                lifeline_types::Human(within),
                e.last_line()
            ),
        })),
    }
}

/// Move the highlight to the entry matching `want` (checking the screen after every key) and press
/// Enter. The first key also stops GRUB's countdown.
async fn pick<C: ConsoleIo>(
    e: &mut Expect<C>,
    want: &Regex,
    opts: &RescueOptions,
) -> Result<String, Attempt> {
    for _ in 0..32 {
        let menu = current_menu(e, opts.step_timeout)
            .await
            .ok_or_else(|| Attempt::Missed("the menu left the screen".into()))?;
        let Some(target) = menu.entries.iter().position(|t| want.is_match(t)) else {
            return Err(Attempt::Fatal(ExpectError::Profile {
                console: e.console().to_owned(),
                what: format!("no menu entry matches /{}/; the menu shows {:?}", want.as_str(), menu.entries),
            }));
        };
        let sel = menu.selected.ok_or_else(|| Attempt::Missed("no highlighted entry".into()))?;
        let entry = menu.entries[target].clone();
        if sel == target {
            e.note(format!("highlighted {entry:?}; pressing Enter"));
            e.clear_stream();
            e.send_key(Key::Enter).await?;
            return Ok(entry);
        }
        let (key, next) = if sel < target { (Key::Down, sel + 1) } else { (Key::Up, sel - 1) };
        let expect_sel = format!(r"[|│]\*{}\s*[|│]", regex::escape(&menu.entries[next]));
        e.send_key(key).await?;
        match e.expect(Pattern::screen(&expect_sel), opts.step_timeout).await {
            Ok(_) => {}
            Err(ExpectError::Timeout { .. }) => {
                return Err(Attempt::Missed("the menu did not react to the arrow key".into()));
            }
            Err(err) => return Err(err.into()),
        }
    }
    Err(Attempt::Missed("could not reach the menu entry".into()))
}

/// Makes `target` visible on the menu: if the current menu lacks it, pick `via` (a submenu or a chained
/// bootloader) and wait until `appears` shows on the screen and the new menu is drawn.
async fn reach_entry<C: ConsoleIo>(
    e: &mut Expect<C>,
    target: &Regex,
    via: &Regex,
    appears: &str,
    missed: &str,
    opts: &RescueOptions,
) -> Result<(), Attempt> {
    let menu = parse_menu(&e.rows()).unwrap_or(Menu { entries: vec![], selected: None });
    if menu.entries.iter().any(|t| target.is_match(t)) {
        return Ok(());
    }
    pick(e, via, opts).await?;
    match e.expect(Pattern::screen(appears), opts.step_timeout).await {
        Ok(_) => {}
        Err(ExpectError::Timeout { .. }) => return Err(Attempt::Missed(missed.into())),
        Err(err) => return Err(err.into()),
    }
    wait_menu(e, opts.step_timeout).await.map(|_| ())
}

async fn onie<C: ConsoleIo>(e: &mut Expect<C>, opts: &RescueOptions) -> Result<(), Attempt> {
    wait_menu(e, opts.wait_for_bootloader).await?;
    let rescue = Regex::new(r"^ONIE: Rescue$").expect("static regex");
    // On the NOS's GRUB, chainload ONIE's own menu first.
    let via = Regex::new(r"^ONIE$").expect("static regex");
    reach_entry(e, &rescue, &via, r"[|│][* ]ONIE: Rescue", "ONIE's menu did not appear", opts).await?;
    pick(e, &rescue, opts).await?;
    onie_activate(e, opts).await
}

/// ONIE booting: make sure it is rescue mode, press Enter to activate the console, see the prompt.
async fn onie_activate<C: ConsoleIo>(e: &mut Expect<C>, opts: &RescueOptions) -> Result<(), Attempt> {
    let mode = e
        .expect_any(
            &[
                Pattern::stream("ONIE: Rescue Mode"),
                Pattern::stream("ONIE: OS Install Mode"),
                Pattern::stream("Kernel panic"),
            ],
            opts.wait_for_bootloader,
        )
        .await?;
    match mode.index {
        0 => {}
        1 => {
            return Err(Attempt::Fatal(ExpectError::Profile {
                console: e.console().to_owned(),
                what: "ONIE booted in install mode, not rescue".into(),
            }));
        }
        _ => return Err(Attempt::Missed("the NOS booted instead of ONIE".into())),
    }
    e.expect(Pattern::stream("Please press Enter to activate this console"), opts.wait_for_bootloader)
        .await?;
    e.clear_stream();
    e.send_key(Key::Enter).await?;
    e.expect(Pattern::screen(r"ONIE:/ #\s*\z"), opts.step_timeout).await?;
    Ok(())
}

async fn uboot<C: ConsoleIo>(e: &mut Expect<C>, opts: &RescueOptions) -> Result<(), Attempt> {
    // Only while the countdown still shows a number above zero on the last line.
    e.expect(Pattern::screen(r"Hit any key to stop autoboot:\s*[1-9]\s*\z"), opts.wait_for_bootloader)
        .await?;
    e.clear_stream();
    e.send_key(Key::Space).await?;
    let r = e
        .expect_any(
            &[
                Pattern::screen(r"(=>|U-Boot>|Marvell>>|LOADER=>)\s*\z"),
                Pattern::stream(r"Starting kernel|## Booting kernel|Kernel panic"),
            ],
            opts.step_timeout,
        )
        .await?;
    if r.index != 0 {
        return Err(Attempt::Missed("autoboot went on before the key landed".into()));
    }
    e.note(format!("at the U-Boot prompt; running `{}`", opts.uboot_rescue_command));
    e.clear_stream();
    e.send(format!("{}\r", opts.uboot_rescue_command).as_bytes()).await?;
    let r = e
        .expect_any(
            &[Pattern::stream("ONIE: Rescue Mode"), Pattern::stream(r"Unknown command|not defined")],
            opts.wait_for_bootloader,
        )
        .await?;
    if r.index != 0 {
        return Err(Attempt::Fatal(ExpectError::Profile {
            console: e.console().to_owned(),
            what: format!("U-Boot refused `{}`: {}", opts.uboot_rescue_command, r.text),
        }));
    }
    e.expect(Pattern::stream("Please press Enter to activate this console"), opts.wait_for_bootloader)
        .await?;
    e.clear_stream();
    e.send_key(Key::Enter).await?;
    e.expect(Pattern::screen(r"ONIE:/ #\s*\z"), opts.step_timeout).await?;
    Ok(())
}

async fn grub<C: ConsoleIo>(e: &mut Expect<C>, opts: &RescueOptions) -> Result<(), Attempt> {
    wait_menu(e, opts.wait_for_bootloader).await?;
    let recovery = Regex::new(r"\(recovery mode\)$").expect("static regex");
    let via = Regex::new(r"^Advanced options").expect("static regex");
    reach_entry(e, &recovery, &via, r"\(recovery mode\)", "the submenu did not appear", opts).await?;
    pick(e, &recovery, opts).await?;
    let r = e
        .expect_any(
            &[
                Pattern::stream("Press Enter for maintenance"),
                Pattern::stream("Give root password for maintenance"),
                Pattern::stream("Kernel panic"),
            ],
            opts.wait_for_bootloader,
        )
        .await?;
    match (r.index, &opts.root_password) {
        (0, _) => {}
        (1, Some(pw)) => {
            let pw = pw.clone();
            e.note("sending the root password (not shown)");
            e.send(pw.as_bytes()).await?;
        }
        (1, None) => {
            return Err(Attempt::Fatal(ExpectError::Profile {
                console: e.console().to_owned(),
                what: "recovery mode asks for the root password and none was given".into(),
            }));
        }
        _ => return Err(Attempt::Missed("the recovery kernel panicked".into())),
    }
    e.clear_stream();
    e.send_key(Key::Enter).await?;
    e.expect(Pattern::screen(r"#\s*\z"), opts.step_timeout).await?;
    Ok(())
}

async fn aboot<C: ConsoleIo>(e: &mut Expect<C>, opts: &RescueOptions) -> Result<(), Attempt> {
    // The prompt must be the last thing on the screen: once "Booting flash:" follows, the window is over.
    e.expect(Pattern::screen(r"Press Control-C now to enter Aboot shell\s*\z"), opts.wait_for_bootloader)
        .await?;
    e.note("Aboot's Ctrl-C window is open; sending one Ctrl-C");
    e.clear_stream();
    e.send_key(Key::CtrlC).await?;
    let r = e
        .expect_any(
            &[
                Pattern::screen(r"Aboot#\s*\z"),
                Pattern::stream(r"Booting flash:|Starting new kernel|Kernel panic"),
            ],
            opts.step_timeout,
        )
        .await?;
    if r.index != 0 {
        // Never resend Ctrl-C into a booting EOS: wait for the next window.
        return Err(Attempt::Missed("Aboot had already started booting".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn menu_is_read_off_the_screen() {
        let rows: Vec<String> = [
            "                             GNU GRUB  version 2.02",
            "",
            " +----------------------------------------------------------------------------+",
            " | SONiC-OS-202305.1-0a1b2c3d                                                 |",
            " |*ONIE                                                                       |",
            " |                                                                            |",
            " +----------------------------------------------------------------------------+",
            "      Use the ^ and v keys to select which entry is highlighted.",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let m = parse_menu(&rows).unwrap();
        assert_eq!(m.entries, ["SONiC-OS-202305.1-0a1b2c3d", "ONIE"]);
        assert_eq!(m.selected, Some(1));
        assert_eq!(parse_menu(&["Aboot#".to_owned()]), None);
        assert_eq!(parse_menu(&rows[..5]), None, "a redraw still arriving (no bottom border) is not a menu");
        let uni = [
            "┌────┐".to_owned(),
            "│*Ubuntu   │".to_owned(),
            "│ Advanced options for Ubuntu │".to_owned(),
            "└────┘".to_owned(),
        ];
        assert_eq!(parse_menu(&uni).unwrap().entries.len(), 2);
    }

    #[test]
    fn detects_bootloaders() {
        assert_eq!(detect("Aboot 9.0.3\nPress Control-C now to enter Aboot shell"), Some(Bootloader::Aboot));
        assert_eq!(detect("U-Boot 2013.01\nHit any key to stop autoboot:  2"), Some(Bootloader::UBoot));
        assert_eq!(detect("GNU GRUB  version 2.02\n|*ONIE: Install OS |"), Some(Bootloader::Onie));
        assert_eq!(detect("GNU GRUB  version 2.06\n|*Ubuntu |"), Some(Bootloader::Grub));
        assert_eq!(detect("login:"), None);
    }
}
