//! An interactive PTY shell driven by prompt detection.
//!
//! Why prompt-driven: a CLI gives no "end of output" marker; the only reliable one is the prompt
//! coming back. After the first prompt we learn the device's own prompt prefix (`leaf1#` →
//! `leaf1`), so a config line that merely ends in `#` or `>` does not end a command early. A
//! `--More--` pager is answered with a space, in case disabling paging did not work on this device:
//! only a last line that is nothing but a pager prompt and after which the device stays silent
//! counts, and the shell remembers where that line was so exactly it (and the pager's erase
//! sequence) is removed from the output — never a `-- More --` that is part of the config.

use std::sync::LazyLock;
use std::time::Duration;

use lifeline_types::DeviceName;
use regex::Regex;
use russh::client::Msg;
use russh::{Channel, ChannelMsg};
use tokio::time::{Instant, timeout_at};

use super::SshError;
use crate::text::{clean_transcript, normalise_newlines, output_between, remove_pages, strip_terminal};

/// A whole line that is a pager prompt (IOS/NX-OS/EOS `--More--`, other CLIs, `less`).
static PAGER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\A\s*(?:--More--|-- More --|<--- More --->|--More-- \(\d+%\)|\(END\)|lines \d+-\d+(?:/\d+)?(?: \(END\))?)\s*\z")
        .expect("pager")
});
/// How long the device must stay silent after a pager-looking last line before it is answered (a
/// pager waits for a key; a config line that happens to look like one is followed by more output).
const PAGER_SETTLE: Duration = Duration::from_millis(60);
static PASSWORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)password: ?\z").expect("password"));

/// How much of the end of the output is examined for a prompt.
const TAIL: usize = 2048;

pub struct Shell {
    ch: Channel<Msg>,
    device: DeviceName,
    prompt: Regex,
    command_timeout: Duration,
    buf: Vec<u8>,
    /// Byte ranges of `buf` where the pager wrote its prompt and was answered.
    pages: Vec<(usize, usize)>,
    /// Bytes received over the whole session (for "closed early" reports).
    received: usize,
    /// The last prompt seen (to know whether the session is already privileged).
    last_prompt: String,
}

impl std::fmt::Debug for Shell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shell").field("device", &self.device).finish()
    }
}

enum Seen {
    Prompt,
    Answer(usize),
}

impl Shell {
    pub(crate) fn new(
        ch: Channel<Msg>,
        device: DeviceName,
        prompt: Regex,
        command_timeout: Duration,
    ) -> Shell {
        Shell {
            ch,
            device,
            prompt,
            command_timeout,
            buf: Vec::new(),
            pages: Vec::new(),
            received: 0,
            last_prompt: String::new(),
        }
    }

    fn tail(&self) -> String {
        let start = self.buf.len().saturating_sub(TAIL);
        clean_transcript(&String::from_utf8_lossy(&self.buf[start..]))
    }

    async fn send(&self, bytes: &[u8]) -> Result<(), SshError> {
        self.ch.data(bytes).await.map_err(|source| SshError::Channel { device: self.device.clone(), source })
    }

    /// Read until the prompt (or one of `answers`) is at the end of the output.
    async fn read_until(&mut self, what: &str, answers: &[&Regex]) -> Result<Seen, SshError> {
        self.read_until_within(what, answers, self.command_timeout, None).await
    }

    /// [`Shell::read_until`] with an explicit limit; with `foreign: Some(platform)`, a device that
    /// stops talking with a non-empty last line that is not our prompt fails after
    /// [`super::PROMPT_SETTLE`] with [`SshError::PromptMismatch`] instead of waiting out `limit`.
    async fn read_until_within(
        &mut self,
        what: &str,
        answers: &[&Regex],
        limit: Duration,
        foreign: Option<lifeline_types::Platform>,
    ) -> Result<Seen, SshError> {
        let deadline = Instant::now() + limit;
        loop {
            let tail = self.tail();
            if self.prompt.is_match(&tail) {
                self.last_prompt = tail.rsplit('\n').next().unwrap_or("").trim().to_owned();
                return Ok(Seen::Prompt);
            }
            if let Some(i) = answers.iter().position(|r| r.is_match(&tail)) {
                return Ok(Seen::Answer(i));
            }
            if let Some(line_start) = self.pager_line() {
                match timeout_at(Instant::now() + PAGER_SETTLE, self.ch.wait()).await {
                    // Silence: the pager is waiting. Remember its line, ask for the next page.
                    Err(_) => {
                        self.pages.push((line_start, self.buf.len()));
                        self.send(b" ").await?;
                    }
                    // More output: it was content that looks like a pager prompt.
                    Ok(msg) => {
                        self.take(what, msg)?;
                        continue;
                    }
                }
            }
            let last = tail.rsplit('\n').next().unwrap_or("").trim().to_owned();
            let wait_until = match foreign {
                Some(_) if !last.is_empty() => deadline.min(Instant::now() + super::PROMPT_SETTLE),
                _ => deadline,
            };
            match timeout_at(wait_until, self.ch.wait()).await {
                Ok(msg) => self.take(what, msg)?,
                Err(_) if wait_until < deadline => {
                    return Err(SshError::PromptMismatch {
                        device: self.device.clone(),
                        expected: foreign.expect("settle only when checking the prompt"),
                        saw: last,
                    });
                }
                Err(_) => {
                    return Err(SshError::CommandTimeout {
                        device: self.device.clone(),
                        command: what.to_owned(),
                        after: limit,
                    });
                }
            }
        }
    }

    /// Append one channel message's data; a closed channel is an error.
    fn take(&mut self, what: &str, msg: Option<ChannelMsg>) -> Result<(), SshError> {
        match msg {
            Some(ChannelMsg::Data { data }) | Some(ChannelMsg::ExtendedData { data, .. }) => {
                self.received += data.len();
                self.buf.extend_from_slice(&data);
                Ok(())
            }
            Some(ChannelMsg::Eof) | Some(ChannelMsg::Close) | None => Err(SshError::ClosedEarly {
                device: self.device.clone(),
                command: what.to_owned(),
                received: self.received,
            }),
            Some(_) => Ok(()),
        }
    }

    /// Where the last line starts, if that line (not yet answered) is nothing but a pager prompt.
    fn pager_line(&self) -> Option<usize> {
        let answered = self.pages.last().map_or(0, |p| p.1);
        let start = self.buf.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1).max(answered);
        let line = &self.buf[start..];
        if line.is_empty() || line.len() > 80 {
            return None;
        }
        let text = strip_terminal(&normalise_newlines(&String::from_utf8_lossy(line)));
        PAGER.is_match(&text).then_some(start)
    }

    /// The session's output so far as text: answered pager prompts removed, escapes cleaned.
    fn transcript(&self) -> String {
        clean_transcript(&String::from_utf8_lossy(&remove_pages(&self.buf, &self.pages)))
    }

    fn clear(&mut self) {
        self.buf.clear();
        self.pages.clear();
    }

    pub(crate) async fn wait_first_prompt(
        &mut self,
        platform: lifeline_types::Platform,
        limit: Duration,
    ) -> Result<(), SshError> {
        self.read_until_within("<login>", &[], limit, Some(platform)).await?;
        // Learn this device's prompt: its text up to the first mode/privilege character.
        let tail = self.tail();
        let last = tail.rsplit('\n').next().unwrap_or("").trim();
        let base: String = last.chars().take_while(|c| !"(:>#$% ".contains(*c)).collect();
        if !base.is_empty() {
            let learned = format!(r"(?:^|\n){}[^\n]{{0,60}}[>#$%] ?\z", regex::escape(&base));
            if let Ok(re) = Regex::new(&learned) {
                self.prompt = re;
            }
        }
        // Some CLIs print the banner and prompt twice; drain what arrives right away.
        let quiet = Instant::now() + Duration::from_millis(30);
        while let Ok(Some(msg)) = timeout_at(quiet, self.ch.wait()).await {
            if let ChannelMsg::Data { data } = msg {
                self.received += data.len();
            }
        }
        self.clear();
        Ok(())
    }

    /// Send one command and return its output (echo and prompt removed).
    pub async fn run(&mut self, command: &str) -> Result<String, SshError> {
        self.run_answering(command, &[]).await
    }

    /// Like [`Shell::run`], answering confirmation questions on the way.
    pub async fn run_answering(
        &mut self,
        command: &str,
        answers: &[(Regex, String)],
    ) -> Result<String, SshError> {
        self.clear();
        self.send(format!("{command}\n").as_bytes()).await?;
        let res: Vec<&Regex> = answers.iter().map(|(r, _)| r).collect();
        let mut rounds = 0;
        loop {
            match self.read_until(command, &res).await? {
                Seen::Prompt => break,
                Seen::Answer(i) => {
                    rounds += 1;
                    if rounds > 8 {
                        return Err(SshError::CliError {
                            device: self.device.clone(),
                            command: command.to_owned(),
                            message: "keeps asking for confirmation".into(),
                        });
                    }
                    // Forget the question so it is not answered twice.
                    self.buf.push(b'\n');
                    self.send(format!("{}\n", answers[i].1).as_bytes()).await?;
                }
            }
        }
        Ok(output_between(&self.transcript(), command))
    }

    /// Whether the last prompt was a privileged one (`#`).
    pub fn privileged(&self) -> bool {
        self.last_prompt.ends_with('#')
    }

    /// `enable`, answering a password prompt if one comes.
    pub async fn enable(&mut self, password: &str) -> Result<(), SshError> {
        self.clear();
        self.send(b"enable\n").await?;
        if let Seen::Answer(_) = self.read_until("enable", &[&PASSWORD]).await? {
            self.clear();
            self.send(format!("{password}\n").as_bytes()).await?;
            self.read_until("enable", &[]).await?;
        }
        if !self.privileged() {
            return Err(SshError::CliError {
                device: self.device.clone(),
                command: "enable".into(),
                message: format!("still not privileged at prompt `{}`", self.last_prompt),
            });
        }
        Ok(())
    }

    /// Send `intro`, the lines of `body`, then `end`, and wait for the prompt; returns the transcript.
    pub async fn block(&mut self, intro: &str, body: &str, end: &str) -> Result<String, SshError> {
        self.clear();
        let mut payload = String::with_capacity(body.len() + intro.len() + 16);
        payload.push_str(intro);
        payload.push('\n');
        payload.push_str(body);
        if !body.ends_with('\n') && !body.is_empty() {
            payload.push('\n');
        }
        payload.push_str(end);
        if !end.starts_with('\x04') {
            payload.push('\n');
        }
        self.send(payload.as_bytes()).await?;
        self.read_until(intro, &[]).await?;
        Ok(self.transcript())
    }

    /// Ask the CLI to end the session (best effort).
    pub async fn exit(self) {
        let _ = self.ch.data(&b"exit\n"[..]).await;
        let _ = self.ch.eof().await;
    }
}
