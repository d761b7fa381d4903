//! The virtual media tray of a simulated BMC: a CD slot and a USB slot, each empty or holding an image URL.
//!
//! Why on the host and not on the Redfish face: the host's boot sequence reads it (a one-time boot from
//! the CD with an image in it runs the fake installer), and any protocol front end may show it. Made on
//! first use, like the user table, so 100,000 idle BMCs pay one pointer each.

use std::sync::Mutex;

/// Which slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotKind {
    Cd,
    Usb,
}

/// One slot's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Slot {
    /// The image URL, while one is inserted.
    pub image: Option<String>,
    pub write_protected: bool,
    /// The `TransferProtocolType` the insert named, if any.
    pub protocol: Option<String>,
    /// The image server's user the insert named, if any (the password is never kept).
    pub user: Option<String>,
    /// Inserts so far (tests count them: an insert of the image already in must not be sent again).
    pub inserts: u32,
    /// The mount of the image (`crate::media_mount`): `None` while it runs, or for an image the
    /// simulator does not read (NFS, SMB).
    pub mount: Option<Result<crate::media_mount::Mount, String>>,
}

/// Why the tray refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrayError {
    #[error("the slot already holds {0}")]
    Occupied(String),
    #[error("the slot is empty")]
    Empty,
}

#[derive(Debug, Default)]
pub struct MediaTray(Mutex<Option<Box<[Slot; 2]>>>);

fn index(k: SlotKind) -> usize {
    match k {
        SlotKind::Cd => 0,
        SlotKind::Usb => 1,
    }
}

impl MediaTray {
    fn with<T>(&self, f: impl FnOnce(&mut [Slot; 2]) -> T) -> T {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(g.get_or_insert_with(Box::default))
    }

    pub fn slot(&self, k: SlotKind) -> Slot {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.as_ref().map(|s| s[index(k)].clone()).unwrap_or_default()
    }

    /// Inserts `image`; a slot that holds one already refuses (as iDRAC and bmcweb do).
    pub fn insert(
        &self,
        k: SlotKind,
        image: &str,
        write_protected: bool,
        protocol: Option<String>,
        user: Option<String>,
    ) -> Result<(), TrayError> {
        self.with(|s| {
            let s = &mut s[index(k)];
            if let Some(i) = &s.image {
                return Err(TrayError::Occupied(i.clone()));
            }
            *s = Slot {
                image: Some(image.to_owned()),
                write_protected,
                protocol,
                user,
                inserts: s.inserts + 1,
                mount: None,
            };
            Ok(())
        })
    }

    /// Ejects; an empty slot refuses (iDRAC answers 400 "no media").
    pub fn eject(&self, k: SlotKind) -> Result<(), TrayError> {
        self.with(|s| {
            let s = &mut s[index(k)];
            if s.image.is_none() {
                return Err(TrayError::Empty);
            }
            *s = Slot { inserts: s.inserts, ..Slot::default() };
            Ok(())
        })
    }

    /// Records the mount of the `insert`th insert (nothing when the slot was ejected or refilled since).
    pub fn mounted(&self, k: SlotKind, insert: u32, m: Result<crate::media_mount::Mount, String>) {
        self.with(|s| {
            let s = &mut s[index(k)];
            if s.image.is_some() && s.inserts == insert {
                s.mount = Some(m);
            }
        })
    }

    /// The CD's image, if one is in.
    pub fn cd_image(&self) -> Option<String> {
        self.slot(SlotKind::Cd).image
    }
}

/// The line the fake installer ends with (a reinstall runbook waits for it on the console).
pub const INSTALL_DONE: &str = "lifeline-installer: installation complete";

/// What the fake installer prints, from the CD's image (and what its mount read) to its completion marker.
pub(crate) fn installer_lines(
    host: &str,
    image: &str,
    mount: Option<&Result<crate::media_mount::Mount, String>>,
) -> Vec<String> {
    let name = image.rsplit('/').next().unwrap_or(image);
    let read = match mount {
        Some(Ok(m)) => format!(
            " (volume {}, {} bytes; mounted by {} range requests)",
            m.volume_id.as_deref().unwrap_or("-"),
            m.size,
            m.ranges
        ),
        Some(Err(why)) => format!(" (not mounted: {why})"),
        None => String::new(),
    };
    vec![
        format!("Booting from virtual CD: {name}{read}"),
        "lifeline-installer: partitioning /dev/nvme0n1".to_owned(),
        "lifeline-installer: installing base system".to_owned(),
        "lifeline-installer: installing NVIDIA driver and OFED".to_owned(),
        format!("lifeline-installer: configuring {host}"),
        format!("{INSTALL_DONE} ({name}); rebooting"),
    ]
}

/// How long the installer runs: four kernel boots of the host's (scaled) timings, at least 3 s so that a
/// watcher that attaches after the reset's read-back still sees the marker.
pub(crate) fn installer_time(kernel: std::time::Duration) -> std::time::Duration {
    (kernel * 4).max(std::time::Duration::from_secs(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupied_and_empty_refuse() {
        let t = MediaTray::default();
        assert_eq!(t.cd_image(), None);
        assert_eq!(t.eject(SlotKind::Cd), Err(TrayError::Empty));
        t.insert(SlotKind::Cd, "http://h/a.iso", true, None, None).unwrap();
        assert!(matches!(
            t.insert(SlotKind::Cd, "http://h/b.iso", true, None, None),
            Err(TrayError::Occupied(_))
        ));
        assert_eq!(t.slot(SlotKind::Usb), Slot::default());
        t.eject(SlotKind::Cd).unwrap();
        assert_eq!((t.cd_image(), t.slot(SlotKind::Cd).inserts), (None, 1));
    }
}
