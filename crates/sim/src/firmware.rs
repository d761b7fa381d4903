//! A simulated BMC's firmware: the components it reports (BMC, BIOS, a NIC, the GPU baseboard) with their
//! versions, update tasks that run for a while (`Running` with a growing `PercentComplete`, then
//! `Completed`, or `Exception` under the `firmware-fail` fault), and where the new version shows: at once
//! for an `Immediate` apply, after the next host boot (BIOS, NIC, GPU) or BMC reset (BMC) for `OnReset`.
//!
//! Why the version comes from the image: a rollout must judge success by the version read back, so the
//! simulator installs what the image says, never what the client hoped for. A pushed image starts with
//! the line `LIFELINE-SIM-FIRMWARE <version>`; an image URL (SimpleUpdate) names it as the last `-` part of
//! the file name (`bios-2.3.0.bin`). An image with neither fails its task ("image unreadable").
//! Made on first use, like the media tray.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an update task runs.
pub const TASK_TIME: Duration = Duration::from_millis(300);
/// The first line of a simulated firmware image.
pub const IMAGE_MAGIC: &str = "LIFELINE-SIM-FIRMWARE ";

/// When the new version takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Apply {
    Immediate,
    OnReset,
}

/// One component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub id: String,
    pub name: String,
    pub version: String,
}

/// A task as the task monitor shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskView {
    pub id: u32,
    /// Where the update was posted (the task's `Payload.TargetUri`).
    pub via: String,
    /// When it started (`StartTime`).
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// `Running`, `Completed` or `Exception`.
    pub state: &'static str,
    pub percent: u32,
    pub message: String,
}

#[derive(Debug)]
struct Task {
    id: u32,
    via: String,
    started_at: chrono::DateTime<chrono::Utc>,
    item: String,
    version: Option<String>,
    started: Instant,
    fail: bool,
    apply: Apply,
    /// Set once the task ended: the boots / BMC resets at that moment (OnReset waits for more).
    ended_at: Option<(u32, u32)>,
}

#[derive(Debug)]
struct State {
    items: Vec<Item>,
    tasks: Vec<Task>,
    /// (item, version, boots, bmc resets at staging): applied once the host booted or the BMC reset since.
    staged: Vec<(String, String, u32, u32)>,
}

/// The time now and the resets seen, so the state can move on lazily.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub now: Instant,
    pub boots: u32,
    pub bmc_resets: u32,
}

#[derive(Debug, Default)]
pub struct Firmware(Mutex<Option<Box<State>>>);

/// The version an image carries (its first line), if it is a simulated image.
pub fn image_version(head: &[u8]) -> Option<String> {
    let line = head.split(|b| *b == b'\n').next()?;
    let v = std::str::from_utf8(line).ok()?.strip_prefix(IMAGE_MAGIC)?.trim();
    (!v.is_empty() && v.len() <= 64).then(|| v.to_owned())
}

/// The version an image URL names (`.../bios-2.3.0.bin` -> `2.3.0`).
pub fn url_version(url: &str) -> Option<String> {
    let name = url.split(['?', '#']).next()?.rsplit('/').next()?;
    let stem = name.strip_suffix(".bin").or_else(|| name.strip_suffix(".img")).unwrap_or(name);
    let v = stem.rsplit_once('-')?.1;
    (!v.is_empty() && v.len() <= 64 && v.chars().any(|c| c.is_ascii_digit())).then(|| v.to_owned())
}

impl Firmware {
    fn with<T>(&self, init: impl FnOnce() -> Vec<Item>, c: Clock, f: impl FnOnce(&mut State) -> T) -> T {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let s =
            g.get_or_insert_with(|| Box::new(State { items: init(), tasks: Vec::new(), staged: Vec::new() }));
        for t in &mut s.tasks {
            if t.ended_at.is_none() && c.now >= t.started + TASK_TIME {
                t.ended_at = Some((c.boots, c.bmc_resets));
                if !t.fail
                    && let Some(v) = &t.version
                {
                    match t.apply {
                        Apply::Immediate => {
                            if let Some(i) = s.items.iter_mut().find(|i| i.id == t.item) {
                                i.version = v.clone();
                            }
                        }
                        Apply::OnReset => s.staged.push((t.item.clone(), v.clone(), c.boots, c.bmc_resets)),
                    }
                }
            }
        }
        let items = &mut s.items;
        s.staged.retain(|(item, v, boots, resets)| {
            let due = if item == "BMC" { c.bmc_resets > *resets } else { c.boots > *boots };
            if due && let Some(i) = items.iter_mut().find(|i| i.id == *item) {
                i.version = v.clone();
            }
            !due
        });
        f(s)
    }

    /// Every component as of `c`.
    pub fn items(&self, init: impl FnOnce() -> Vec<Item>, c: Clock) -> Vec<Item> {
        self.with(init, c, |s| s.items.clone())
    }

    /// Starts an update of `item` to the image's `version` (`None`: unreadable, the task fails); `fail`
    /// makes the task end in `Exception`. Returns the task id, or `None` for an unknown item.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &self,
        init: impl FnOnce() -> Vec<Item>,
        c: Clock,
        via: &str,
        item: &str,
        version: Option<String>,
        apply: Apply,
        fail: bool,
    ) -> Option<u32> {
        self.with(init, c, |s| {
            s.items.iter().any(|i| i.id == item).then(|| {
                let id = s.tasks.len() as u32 + 1;
                let fail = fail || version.is_none();
                s.tasks.push(Task {
                    id,
                    via: via.to_owned(),
                    started_at: chrono::Utc::now(),
                    item: item.to_owned(),
                    version,
                    started: c.now,
                    fail,
                    apply,
                    ended_at: None,
                });
                id
            })
        })
    }

    /// A task as of `c`.
    pub fn task(&self, init: impl FnOnce() -> Vec<Item>, c: Clock, id: u32) -> Option<TaskView> {
        self.with(init, c, |s| {
            let t = s.tasks.iter().find(|t| t.id == id)?;
            let elapsed = c.now.saturating_duration_since(t.started).as_millis();
            let percent = (elapsed * 100 / TASK_TIME.as_millis().max(1)).min(100) as u32;
            let (state, message) = match (t.ended_at, t.fail, &t.version) {
                (None, ..) => ("Running", format!("Updating {}", t.item)),
                (Some(_), true, None) => {
                    ("Exception", "The image is unreadable (no firmware version in it).".into())
                }
                (Some(_), true, Some(_)) => {
                    ("Exception", format!("Flashing {} failed: image verification error.", t.item))
                }
                (Some(_), false, Some(v)) => (
                    "Completed",
                    match t.apply {
                        Apply::Immediate => format!("{} updated to {v}.", t.item),
                        Apply::OnReset => format!("{} {v} staged; it applies at the next reset.", t.item),
                    },
                ),
                (Some(_), false, None) => ("Exception", "no version".into()),
            };
            Some(TaskView { id: t.id, via: t.via.clone(), started_at: t.started_at, state, percent, message })
        })
    }

    /// Task ids, in order.
    pub fn task_ids(&self) -> Vec<u32> {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.as_ref().map(|s| s.tasks.iter().map(|t| t.id).collect()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init() -> Vec<Item> {
        ["BMC", "BIOS"]
            .iter()
            .map(|i| Item { id: (*i).into(), name: (*i).into(), version: "1.0.0".into() })
            .collect()
    }

    #[test]
    fn a_task_runs_then_on_reset_applies_after_the_next_boot() {
        let f = Firmware::default();
        let t0 = Instant::now();
        let c = |dt: u64, boots, bmc_resets| Clock { now: t0 + Duration::from_millis(dt), boots, bmc_resets };
        let id =
            f.start(init, c(0, 1, 0), "/u", "BIOS", Some("2.0.0".into()), Apply::OnReset, false).unwrap();
        assert_eq!(f.task(init, c(100, 1, 0), id).unwrap().state, "Running");
        assert_eq!(f.task(init, c(400, 1, 0), id).unwrap().state, "Completed");
        assert_eq!(f.items(init, c(500, 1, 0))[1].version, "1.0.0", "staged, not yet applied");
        assert_eq!(f.items(init, c(600, 2, 0))[1].version, "2.0.0", "applied after the boot");
        let id =
            f.start(init, c(700, 2, 0), "/u", "BMC", Some("3.0".into()), Apply::Immediate, true).unwrap();
        assert_eq!(f.task(init, c(1100, 2, 0), id).unwrap().state, "Exception");
        assert_eq!(f.items(init, c(1200, 3, 1))[0].version, "1.0.0", "a failed task changes nothing");
        assert_eq!(f.start(init, c(0, 0, 0), "/u", "NIC", None, Apply::Immediate, false), None);
    }

    #[test]
    fn versions_come_from_the_image() {
        assert_eq!(image_version(b"LIFELINE-SIM-FIRMWARE 2.3.0\n\0\0"), Some("2.3.0".into()));
        assert_eq!(image_version(b"MZ\x90\0"), None);
        assert_eq!(url_version("https://10.0.0.1/fw/bios-2.3.0.bin?x=1"), Some("2.3.0".into()));
        assert_eq!(url_version("https://10.0.0.1/fw/bios.bin"), None);
    }
}
