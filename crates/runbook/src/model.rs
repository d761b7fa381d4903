//! The runbook model: what a checked runbook file means. String arguments may hold `{{name}}` references
//! to parameters (and `{{target}}`, `{{run}}`), resolved when a run starts; everything else is typed here.

use std::time::Duration;

use lifeline_types::Role;
use serde::Serialize;

use crate::cond::Cond;

/// One runbook.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Runbook {
    pub name: String,
    pub description: String,
    /// Roles it applies to.
    pub targets: Vec<Role>,
    /// Which fault it answers, what it touches and what it will not, its worst case (the header).
    pub fault: String,
    pub touches: String,
    pub never_touches: String,
    pub worst_case: String,
    pub params: Vec<Param>,
    pub steps: Vec<Step>,
    /// The post-conditions (`[[verify]]`): read-only checks run after the last step on fresh observations.
    /// A run ends `succeeded` only when every one passes; one that fails ends it `failed` or `escalated`
    /// with its evidence.
    pub post: Vec<Step>,
    /// `sha256:` of the file's text: a run records which definition it followed.
    pub digest: String,
}

impl Runbook {
    /// Whether a step or post-condition waits on the console's output (`wait-for console`, a boot wait):
    /// its run keeps the console open from the start, so output printed before the wait attached counts.
    pub fn watches_console(&self) -> bool {
        self.steps
            .iter()
            .chain(&self.post)
            .any(|s| matches!(&s.op, Op::WaitFor { what: WaitWhat::Console | WaitWhat::Boot, .. }))
    }

    /// An admin runbook: one with `exec` steps (a program on the jump host) may be started, approved or
    /// aborted from the server only by an administrator; the others by an operator.
    pub fn admin_only(&self) -> bool {
        self.steps.iter().any(|s| s.kind == Kind::Exec)
    }

    /// Step `i` of the run's index space: the steps, then the post-conditions.
    pub fn step_at(&self, i: usize) -> Option<&Step> {
        self.steps.get(i).or_else(|| self.post.get(i.checked_sub(self.steps.len())?))
    }

    /// Whether index `i` is a post-condition.
    pub fn is_post(&self, i: usize) -> bool {
        i >= self.steps.len() && i < self.steps.len() + self.post.len()
    }

    /// Steps and post-conditions together.
    pub fn all_steps(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().chain(&self.post)
    }

    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// A parameter with its default (`--var NAME=VALUE` overrides it).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Param {
    pub name: String,
    pub default: String,
    pub description: String,
    #[serde(flatten)]
    pub ty: crate::params::ParamType,
}

/// One step.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "schema", schema(as = RunbookStep))]
pub struct Step {
    pub name: String,
    pub kind: Kind,
    pub op: Op,
    /// The condition as written (`outputs.NAME == "value" && …`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schema(value_type = Option<String>))]
    pub when: Option<Cond>,
    pub on_failure: OnFailure,
    /// As written by `humantime` (`5m`, `1h 30m`).
    #[serde(serialize_with = "ser_duration")]
    #[cfg_attr(feature = "schema", schema(value_type = String))]
    pub timeout: Duration,
    /// `approve = "required"`: the run waits in `waiting-approval` until `lifeline runbook approve`.
    pub approve: bool,
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&humantime::format_duration(*d).to_string())
}

/// Step kinds, as spelled in files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Power,
    BmcReset,
    WaitFor,
    Console,
    Sel,
    Backup,
    Restore,
    Drain,
    Verify,
    Readmit,
    Notify,
    Exec,
    /// Virtual media: insert an image (and boot once from it) or eject (`lifeline media`).
    Media,
    /// Post-condition only: the fault that started the run (or the named kind) is evaluated again on a
    /// fresh observation of the target and must be gone.
    FaultCleared,
    /// The device's own OS answers SSH with the banner its platform (or the runbook) expects
    /// ([`crate::ssh_banner`]).
    SshBanner,
}

impl Kind {
    pub const ALL: &'static [(&'static str, Kind)] = &[
        ("power", Kind::Power),
        ("bmc-reset", Kind::BmcReset),
        ("wait-for", Kind::WaitFor),
        ("console", Kind::Console),
        ("sel", Kind::Sel),
        ("backup", Kind::Backup),
        ("restore", Kind::Restore),
        ("drain", Kind::Drain),
        ("verify", Kind::Verify),
        ("readmit", Kind::Readmit),
        ("notify", Kind::Notify),
        ("exec", Kind::Exec),
        ("media", Kind::Media),
        ("fault-cleared", Kind::FaultCleared),
        ("ssh-banner", Kind::SshBanner),
    ];

    /// The kinds a post-condition (`[[verify]]`) may have: they only read.
    pub const POST: &'static [Kind] =
        &[Kind::WaitFor, Kind::Verify, Kind::Restore, Kind::Sel, Kind::FaultCleared, Kind::SshBanner];

    pub fn as_str(self) -> &'static str {
        Kind::ALL.iter().find(|(_, k)| *k == self).map(|(s, _)| *s).unwrap_or("?")
    }

    /// The keys a step of this kind takes besides the common ones.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            Kind::Power => &["action"],
            Kind::BmcReset => &["protocol"],
            Kind::WaitFor => {
                &["power", "bmc", "tcp", "ssh", "scheduler", "console", "boot", "node", "interval", "pattern"]
            }
            Kind::Console => &["rescue", "bootloader-wait", "script"],
            Kind::Sel => &["match", "clear", "newest"],
            Kind::Backup => &["switch"],
            Kind::Restore => &["switch", "version", "to", "compare-only", "require-equal", "allow-scrubbed"],
            Kind::Drain => &["reason"],
            Kind::Verify | Kind::Readmit => &[],
            Kind::Notify => &["url", "message"],
            Kind::Exec => &["command"],
            Kind::Media => &["action", "image", "served-image", "boot-once"],
            Kind::FaultCleared => &["fault"],
            Kind::SshBanner => &["ssh", "expect", "interval"],
        }
    }

    /// Whether running it twice does no more than running it once. A step that is not idempotent and
    /// whose outcome is unknown after a crash is never simply repeated: its effect is looked for first.
    pub fn idempotent(self, op: &Op) -> bool {
        match (self, op) {
            (Kind::Power, Op::Power { action }) => matches!(action.as_str(), "on" | "off"),
            (Kind::Restore, Op::Restore { compare_only, .. }) => *compare_only,
            (Kind::Sel, Op::Sel { clear, .. }) => !*clear,
            (Kind::BmcReset | Kind::Console | Kind::Exec | Kind::Notify | Kind::Restore, _) => false,
            _ => true,
        }
    }

    /// Default time limit.
    pub fn default_timeout(self) -> Duration {
        Duration::from_secs(match self {
            Kind::Power | Kind::BmcReset => 300,
            Kind::WaitFor => 600,
            Kind::Console => 900,
            Kind::Backup | Kind::Restore => 300,
            Kind::Verify | Kind::Readmit => 180,
            Kind::Sel | Kind::Drain | Kind::Notify | Kind::Media => 60,
            Kind::Exec => 120,
            Kind::FaultCleared | Kind::SshBanner => 120,
        })
    }
}

/// Kind-specific arguments (templates: `{{name}}` resolved at run time).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case", tag = "op")]
pub enum Op {
    Power {
        action: String,
    },
    BmcReset {
        protocol: Option<String>,
    },
    WaitFor {
        what: WaitWhat,
        value: String,
        node: Option<String>,
        interval: Option<String>,
        /// With `boot`: the console's login prompt (default [`crate::model::LOGIN_PROMPT`]).
        #[serde(skip_serializing_if = "Option::is_none")]
        pattern: Option<String>,
    },
    /// Exactly one of `rescue` (a bootloader profile) or `script` (an expect script).
    Console {
        rescue: Option<String>,
        bootloader_wait: Option<String>,
        script: Vec<lifeline_console::Step>,
    },
    Sel {
        pattern: Option<String>,
        clear: bool,
        newest: usize,
    },
    Backup {
        switch: Option<String>,
    },
    Restore {
        switch: Option<String>,
        version: Option<String>,
        to: Option<String>,
        compare_only: bool,
        /// With `compare-only`: fail when the running config differs from the version.
        require_equal: bool,
        allow_scrubbed: bool,
    },
    Drain {
        reason: String,
    },
    Verify,
    Readmit,
    Notify {
        url: String,
        message: String,
    },
    Exec {
        command: Vec<String>,
    },
    /// `insert` (with its `image`, a URL fixed in the file or an `enum` of URLs, or its `served-image`, a
    /// file of `[image-server] images` that `lifeline serve` serves) or `eject`.
    Media {
        action: String,
        image: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        served_image: Option<String>,
        boot_once: bool,
    },
    /// `fault = "KIND"`, or `None`: the fault that started the run (a run started by hand: every sweep
    /// rule — the BMC answers, its health is not critical, no new critical event).
    FaultCleared {
        fault: Option<String>,
    },
    /// `ssh = "management" | "frontend"` (the inventory's address), `expect = "platform"` or a pattern.
    SshBanner {
        ssh: String,
        expect: String,
        interval: Option<String>,
    },
}

/// What a `wait-for` step waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum WaitWhat {
    /// `power = "on"`.
    Power,
    /// `bmc = "reachable" | "redfish" | "ipmi" | "both"`.
    Bmc,
    /// `tcp = "HOST:PORT"` (`frontend:22`, `management:22` name the target's addresses; `management`
    /// alone uses the inventory's management port).
    Tcp,
    /// `ssh = "frontend"` or `"HOST:PORT"`: the port answers with an SSH banner.
    Ssh,
    /// `scheduler = "responding" | "drained" | "drained-by-lifeline" | "in-service"`.
    Scheduler,
    /// `console = "REGEX"`: the pattern appears in the target's console output (watched read-only).
    Console,
    /// `boot = "os-running"`: the OS has booted, proven in band: the agent answers (its report says the
    /// host is up) or the console shows a login prompt (`pattern` overrides it). The BMC's `BootProgress`
    /// is recorded beside them, never trusted alone (it says `OSRunning` over a hung OS).
    Boot,
}

/// The fault kinds a `fault-cleared` post-condition can evaluate (the engine's rules).
pub const FAULT_KINDS: &[&str] = &["bmc-unreachable", "health-critical", "sel-critical", "agent-report"];

/// A login prompt on a serial console: the OS has come up far enough to let someone in.
pub const LOGIN_PROMPT: &str = r"[A-Za-z0-9._-]+ login: ?";

/// What to do when a step fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case", tag = "then", content = "step")]
pub enum OnFailure {
    /// The run ends `failed`.
    Stop,
    /// Go on with the next step.
    Continue,
    /// Jump to a named step.
    Goto(String),
    /// Keep the node drained, mark it needs-human with the evidence; the run ends `escalated`.
    Escalate,
}
