//! The BMC's user database, shared by its IPMI and Redfish faces the way a real BMC shares one: 16 IPMI user
//! slots (name, password, enabled, privilege limit on the LAN channel) that Redfish shows as
//! `AccountService/Accounts/{slot}` (OpenBMC: by user name).
//!
//! Why a model and not a fixed user: credential rotation and default-account hygiene are only tested when a
//! password set over one protocol changes what the next login over either protocol accepts, a disabled
//! account stops logging in, and repeated failures lock an account (so a test can prove a rotation never
//! locked anyone out). Slot 1 is the null user (disabled), slot 2 the configured user (ADMINISTRATOR).

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;

/// IPMI user slots (ids 1..=MAX_USERS).
pub const MAX_USERS: u8 = 16;
/// The configured user's slot.
pub const ADMIN_SLOT: u8 = 2;
/// IPMI privilege limit "no access".
pub const NO_ACCESS: u8 = 0x0F;
/// Consecutive failed logins that lock an account (Redfish `AccountLockoutThreshold`).
pub const LOCKOUT_THRESHOLD: u32 = 5;
/// How long a locked account stays locked (Redfish `AccountLockoutDuration`).
pub const LOCKOUT_DURATION: Duration = Duration::from_secs(60);
/// Longest password accepted (IPMI 2.0 20-byte form).
pub const MAX_PASSWORD: usize = 20;

/// One user slot.
#[derive(Debug, Clone, Serialize)]
pub struct Account {
    pub id: u8,
    pub name: String,
    #[serde(skip)]
    pub password: String,
    pub enabled: bool,
    /// IPMI privilege limit on the LAN channel: 1 callback, 2 user, 3 operator, 4 administrator, 0x0F none.
    pub privilege: u8,
    /// Consecutive failed logins.
    pub failures: u32,
    #[serde(skip)]
    pub locked_until: Option<Instant>,
    /// Bumped on every change: the Redfish ETag.
    pub generation: u64,
    /// How many times the password was set (a test reads this through the control API).
    pub password_changes: u32,
}

impl Account {
    fn empty(id: u8) -> Account {
        Account {
            id,
            name: String::new(),
            password: String::new(),
            enabled: false,
            privilege: NO_ACCESS,
            failures: 0,
            locked_until: None,
            generation: 1,
            password_changes: 0,
        }
    }

    pub fn locked(&self) -> bool {
        self.locked_until.is_some_and(|t| t > Instant::now())
    }

    /// Redfish `RoleId` of the IPMI privilege limit.
    pub fn role(&self) -> &'static str {
        match self.privilege {
            4 | 5 => "Administrator",
            3 => "Operator",
            NO_ACCESS | 0 => "NoAccess",
            _ => "ReadOnly",
        }
    }

    pub fn etag(&self) -> String {
        format!("W/\"{}-{}\"", self.id, self.generation)
    }
}

/// Why a login was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginRefused {
    UnknownUser,
    Disabled,
    Locked,
    BadPassword,
    Privilege,
}

/// Why a change was refused (mapped to an IPMI completion code / a Redfish error by each face).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeRefused {
    NoSuchSlot,
    PasswordLength,
    NameTaken,
    /// The slot is fixed (slot 1, the null user, cannot be renamed).
    Fixed,
    BadPrivilege,
}

/// The user database of one BMC.
///
/// The sixteen slots are made on first use (a login, a listing, a change): they cost 1.4 KiB per BMC, and
/// most BMCs of a 100,000-node simulated fleet are never logged in to (issue 17: under 10 KiB per idle BMC).
/// Nothing ever empties the table once made, so an empty one means "not made yet".
#[derive(Debug)]
pub struct Accounts {
    slots: Mutex<Vec<Account>>,
    /// The configured user, put in [`ADMIN_SLOT`] when the table is made.
    username: String,
    password: String,
}

impl Accounts {
    pub fn new(username: &str, password: &str) -> Accounts {
        Accounts {
            slots: Mutex::new(Vec::new()),
            username: username.to_owned(),
            password: password.to_owned(),
        }
    }

    fn table(username: &str, password: &str) -> Vec<Account> {
        let mut slots: Vec<Account> = (1..=MAX_USERS).map(Account::empty).collect();
        let admin = &mut slots[usize::from(ADMIN_SLOT - 1)];
        admin.name = username.to_owned();
        admin.password = password.to_owned();
        admin.enabled = true;
        admin.privilege = 4;
        slots
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Account>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if slots.is_empty() {
            *slots = Accounts::table(&self.username, &self.password);
        }
        slots
    }

    pub fn list(&self) -> Vec<Account> {
        self.lock().clone()
    }

    pub fn get(&self, id: u8) -> Option<Account> {
        self.lock().iter().find(|a| a.id == id).cloned()
    }

    /// The enabled-or-disabled slot holding `name` (empty names never match).
    pub fn by_name(&self, name: &str) -> Option<Account> {
        if name.is_empty() {
            return None;
        }
        self.lock().iter().find(|a| a.name == name).cloned()
    }

    /// A login attempt: checks the account, the password and (when asked) the privilege; counts failures
    /// toward the lockout and clears them on success. Returns the slot's privilege limit.
    pub fn login(&self, name: &str, password: &str, privilege: Option<u8>) -> Result<u8, LoginRefused> {
        let mut slots = self.lock();
        let Some(a) = slots.iter_mut().find(|a| !name.is_empty() && a.name == name) else {
            return Err(LoginRefused::UnknownUser);
        };
        if a.locked() {
            return Err(LoginRefused::Locked);
        }
        if !a.enabled {
            return Err(LoginRefused::Disabled);
        }
        if a.password != password {
            record_failure(a);
            return Err(LoginRefused::BadPassword);
        }
        if privilege.is_some_and(|p| a.privilege == NO_ACCESS || p > a.privilege) {
            return Err(LoginRefused::Privilege);
        }
        a.failures = 0;
        a.locked_until = None;
        Ok(a.privilege)
    }

    /// IPMI RAKP: the password is checked by HMAC after the name was accepted; the face calls this with the
    /// outcome of that check.
    pub fn record_login(&self, id: u8, ok: bool) {
        let mut slots = self.lock();
        if let Some(a) = slots.iter_mut().find(|a| a.id == id) {
            if ok {
                a.failures = 0;
                a.locked_until = None;
            } else {
                record_failure(a);
            }
        }
    }

    fn change(
        &self,
        id: u8,
        f: impl FnOnce(&mut Account) -> Result<(), ChangeRefused>,
    ) -> Result<(), ChangeRefused> {
        let mut slots = self.lock();
        let a = slots.iter_mut().find(|a| a.id == id).ok_or(ChangeRefused::NoSuchSlot)?;
        f(a)?;
        a.generation += 1;
        Ok(())
    }

    pub fn set_password(&self, id: u8, password: &str) -> Result<(), ChangeRefused> {
        if password.len() > MAX_PASSWORD {
            return Err(ChangeRefused::PasswordLength);
        }
        self.change(id, |a| {
            a.password = password.to_owned();
            a.password_changes += 1;
            a.failures = 0;
            Ok(())
        })
    }

    /// IPMI Set User Password "test password".
    pub fn test_password(&self, id: u8, password: &str) -> Result<bool, ChangeRefused> {
        let a = self.get(id).ok_or(ChangeRefused::NoSuchSlot)?;
        Ok(a.password == password)
    }

    pub fn set_enabled(&self, id: u8, enabled: bool) -> Result<(), ChangeRefused> {
        self.change(id, |a| {
            a.enabled = enabled;
            Ok(())
        })
    }

    pub fn set_name(&self, id: u8, name: &str) -> Result<(), ChangeRefused> {
        if id == 1 && !name.is_empty() {
            return Err(ChangeRefused::Fixed);
        }
        let mut slots = self.lock();
        if !name.is_empty() && slots.iter().any(|a| a.id != id && a.name == name) {
            return Err(ChangeRefused::NameTaken);
        }
        let a = slots.iter_mut().find(|a| a.id == id).ok_or(ChangeRefused::NoSuchSlot)?;
        a.name = name.to_owned();
        a.generation += 1;
        Ok(())
    }

    pub fn set_privilege(&self, id: u8, privilege: u8) -> Result<(), ChangeRefused> {
        if !matches!(privilege, 1..=5 | NO_ACCESS) {
            return Err(ChangeRefused::BadPrivilege);
        }
        self.change(id, |a| {
            a.privilege = privilege;
            Ok(())
        })
    }

    pub fn unlock(&self, id: u8) -> Result<(), ChangeRefused> {
        self.change(id, |a| {
            a.failures = 0;
            a.locked_until = None;
            Ok(())
        })
    }
}

fn record_failure(a: &mut Account) {
    a.failures += 1;
    if a.failures >= LOCKOUT_THRESHOLD {
        a.locked_until = Some(Instant::now() + LOCKOUT_DURATION);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_made_on_first_use_with_the_configured_user_in_slot_2() {
        let a = Accounts::new("root", "calvin");
        assert!(a.slots.lock().unwrap().is_empty(), "an untouched BMC keeps no slots");
        let list = a.list();
        assert_eq!(list.len(), usize::from(MAX_USERS));
        let admin = &list[usize::from(ADMIN_SLOT - 1)];
        assert_eq!((admin.name.as_str(), admin.enabled, admin.privilege), ("root", true, 4));
        assert!(list.iter().filter(|s| s.id != ADMIN_SLOT).all(|s| !s.enabled));
        // Made once: a change survives the next use.
        a.set_password(ADMIN_SLOT, "rotated-1").unwrap();
        assert_eq!(a.login("root", "rotated-1", None), Ok(4));
        assert_eq!(a.login("root", "calvin", None), Err(LoginRefused::BadPassword));
    }

    #[test]
    fn password_change_takes_effect_and_failures_lock() {
        let a = Accounts::new("admin", "old-pass");
        assert_eq!(a.login("admin", "old-pass", Some(4)), Ok(4));
        a.set_password(ADMIN_SLOT, "new-pass").unwrap();
        assert_eq!(a.login("admin", "old-pass", None), Err(LoginRefused::BadPassword));
        assert_eq!(a.login("admin", "new-pass", None), Ok(4));
        for _ in 0..LOCKOUT_THRESHOLD {
            let _ = a.login("admin", "wrong", None);
        }
        assert_eq!(a.login("admin", "new-pass", None), Err(LoginRefused::Locked));
        a.unlock(ADMIN_SLOT).unwrap();
        assert_eq!(a.login("admin", "new-pass", None), Ok(4));
    }

    #[test]
    fn disabled_and_privilege_limits() {
        let a = Accounts::new("admin", "pw");
        a.set_name(3, "viewer").unwrap();
        a.set_password(3, "viewer-pw").unwrap();
        a.set_privilege(3, 2).unwrap();
        assert_eq!(a.login("viewer", "viewer-pw", Some(4)), Err(LoginRefused::Disabled));
        a.set_enabled(3, true).unwrap();
        assert_eq!(a.login("viewer", "viewer-pw", Some(4)), Err(LoginRefused::Privilege));
        assert_eq!(a.login("viewer", "viewer-pw", Some(2)), Ok(2));
        assert_eq!(a.set_name(4, "viewer"), Err(ChangeRefused::NameTaken));
        assert_eq!(a.set_password(3, &"x".repeat(21)), Err(ChangeRefused::PasswordLength));
    }
}
