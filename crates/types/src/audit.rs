//! The audit log's words: what was done (`AuditAction`) and how it ended (`AuditOutcome`), each a closed
//! set the engine's audit writer writes, the store keeps and the API's audit view answers, spelled once
//! here. The words are those already in operators' audit logs: a variant is added, never respelled.

use crate::{PowerAction, kebab_enum};

kebab_enum! {
    /// How an audited action ended. `started` is the intent row, written before the action; every other
    /// word is an outcome row (or a single row for something decided and done at once).
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum AuditOutcome {
        /// The intent: written before acting (no intent row, no action). Left alone, it says the action
        /// was killed half-way.
        Started => "started",
        Ok => "ok",
        /// Done, and nothing needed changing.
        Unchanged => "unchanged",
        Failed => "failed",
        /// Not done: a rule, a lease or a person said no.
        Refused => "refused",
        Error => "error",
        /// Its process died half-way; written by the next taker of its lease.
        Interrupted => "interrupted",
        /// Done, but the evidence that it took effect could not be read.
        Unverified => "unverified",
    }
}

kebab_enum! {
    /// What an audit row records: the one closed set of actions Lifeline writes into its audit log, in
    /// dotted families (`power.*`, `backup.*`, `runbook.*`, …). An action run under its target's lease
    /// names the lease (and its request) with the same word.
    #[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
    pub enum AuditAction {
        /// A confirmed power on (`power on`, a runbook's power step, the web's power bar).
        PowerOn => "power.on",
        /// A confirmed power off.
        PowerOff => "power.off",
        /// A confirmed power cycle (off, then on).
        PowerCycle => "power.cycle",
        /// A confirmed hard reset.
        PowerReset => "power.reset",
        /// A confirmed ACPI soft shutdown.
        PowerSoft => "power.soft",
        /// The BMC's system event log cleared (`sel clear`).
        SelClear => "sel.clear",
        /// One login tried by the BMC hygiene audit (a default credential, IPMI cipher 0, anonymous).
        HygieneLogin => "hygiene.login",
        /// The hygiene audit's verdict on one BMC (`audit bmc`).
        AuditBmc => "audit.bmc",
        /// The BMC's own controller reset (`bmc reset`, a runbook's bmc-reset step).
        BmcReset => "bmc.reset",
        /// A BMC subscribed to Lifeline's event listener (`bmc subscribe`, the server's first check).
        BmcSubscribe => "bmc.subscribe",
        /// Lifeline's event subscriptions removed from a BMC (`bmc subscribe --remove`).
        BmcUnsubscribe => "bmc.unsubscribe",
        /// The server re-created a BMC's event subscription (dropped by a reset, or its heartbeats stopped).
        BmcResubscribe => "bmc.resubscribe",
        /// A BMC's TLS certificate pinned or re-pinned (`bmc trust`).
        BmcTrust => "bmc.trust",
        /// A BMC account's password rotated to a sealed secret (`bmc rotate`).
        BmcRotate => "bmc.rotate",
        /// A sealed BMC credential shown to a person.
        BmcCredentialsReveal => "bmc.credentials.reveal",
        /// The next boot device set (`boot set`).
        BootSet => "boot.set",
        /// BIOS settings applied (`bios apply`).
        BiosApply => "bios.apply",
        /// One device's firmware updated.
        FirmwareUpdate => "firmware.update",
        /// A firmware rollout plan run over its devices.
        FirmwareRollout => "firmware.rollout",
        /// Virtual media inserted (`media insert`, a runbook's media step).
        MediaInsert => "media.insert",
        /// Virtual media ejected.
        MediaEject => "media.eject",
        /// An installer image served to a BMC by Lifeline's image server.
        MediaServe => "media.serve",
        /// A person attached to a node's serial console.
        ConsoleAttach => "console.attach",
        /// A console viewer detached (closed, idle, or taken over).
        ConsoleDetach => "console.detach",
        /// A person took a serial console's input from its holder.
        ConsoleTakeover => "console.takeover",
        /// A console's input taken from its viewers for a script or a rescue.
        ConsoleSteal => "console.steal",
        /// An expect script run on a serial console.
        ConsoleScript => "console.script",
        /// A bootloader rescue run on a serial console.
        ConsoleRescue => "console.rescue",
        /// A switch's configuration backed up (`backup run`, the backup schedule).
        BackupRun => "backup.run",
        /// A switch's configuration restored from a version.
        BackupRestore => "backup.restore",
        /// The configuration store exported to a directory.
        BackupExport => "backup.export",
        /// A switch's SSH host key pinned (`backup trust`).
        BackupTrust => "backup.trust",
        /// A backup schedule slot whose run stopped half-way (its server died): written as `interrupted`.
        BackupSlot => "backup.slot",
        /// An unscrubbed (raw) configuration version shown to a person.
        BackupShowRaw => "backup.show-raw",
        /// The lease of a manual drain (`drain`): the scheduler decisions are `readmit.*` rows.
        Drain => "drain",
        /// A node drained in Slurm with Lifeline's mark.
        ReadmitDrain => "readmit.drain",
        /// A Slurm node resumed (only a drain Lifeline set).
        ReadmitResume => "readmit.resume",
        /// A Kubernetes node cordoned and tainted with Lifeline's mark.
        ReadmitQuarantine => "readmit.quarantine",
        /// A Kubernetes node untainted (and uncordoned, if Lifeline cordoned it).
        ReadmitRelease => "readmit.release",
        /// A node held out of service as a lemon (too many recurrences).
        ReadmitLemon => "readmit.lemon",
        /// An in-band verification that could not run (its error in the detail).
        Verify => "verify",
        /// A node put on probation after its recovery.
        ProbationStart => "probation.start",
        /// A fault recurred on a node on probation.
        ProbationRecurrence => "probation.recurrence",
        /// A node's probation passed.
        ProbationPassed => "probation.passed",
        /// A lemon released back to service by a person.
        LemonRelease => "lemon.release",
        /// A fault acknowledged by a person.
        FaultAck => "fault.ack",
        /// A fault resolved (its evidence gone, by a runbook's post-condition or a person).
        FaultResolve => "fault.resolve",
        /// The fault policy chose a ladder's rung or called a human.
        PolicyEscalate => "policy.escalate",
        /// The inventory copied into the store (`inventory sync`).
        InventorySync => "inventory.sync",
        /// The database migrated (`db migrate`).
        DbMigrate => "db.migrate",
        /// The database backed up (`db backup`).
        DbBackup => "db.backup",
        /// A web login, or a refused one.
        Login => "login",
        /// A user added.
        UserAdd => "user.add",
        /// A user's password changed.
        UserPasswd => "user.passwd",
        /// A user enabled.
        UserEnable => "user.enable",
        /// A user disabled.
        UserDisable => "user.disable",
        /// An API token created.
        TokenCreate => "token.create",
        /// An API token revoked.
        TokenRevoke => "token.revoke",
        /// The runbook admission lease (the blast-radius guard's check and the run's creation, one at a time).
        RunbookAdmit => "runbook.admit",
        /// A runbook run started (or refused by the blast-radius guard).
        RunbookStart => "runbook.start",
        /// A runbook run's step approved by a person.
        RunbookApprove => "runbook.approve",
        /// A runbook run's hold cleared.
        RunbookClear => "runbook.clear",
        /// A runbook run aborted.
        RunbookAbort => "runbook.abort",
        /// A runbook run ended (its state in the outcome and detail).
        RunbookEnd => "runbook.end",
        /// A queued runbook run withdrawn (its fault cleared before it ran).
        RunbookWithdraw => "runbook.withdraw",
        /// A runbook run escalated to a human.
        RunbookEscalate => "runbook.escalate",
        /// The lease a runbook run holds on its target while it runs, whatever the runbook (an open set:
        /// its name is in the run, and the `interrupted` row of a dead run names it in the detail).
        RunbookRun => "runbook.run",
        /// The `interrupted` row of a lease whose action this version does not know (taken by another
        /// version of Lifeline sharing the database): the lease's own word is in the detail (`action`).
        LeaseInterrupted => "lease.interrupted",
    }
}

impl AuditAction {
    /// The row of a power action.
    pub fn power(a: PowerAction) -> AuditAction {
        match a {
            PowerAction::On => AuditAction::PowerOn,
            PowerAction::Off => AuditAction::PowerOff,
            PowerAction::Cycle => AuditAction::PowerCycle,
            PowerAction::Reset => AuditAction::PowerReset,
            PowerAction::Soft => AuditAction::PowerSoft,
        }
    }
}

/// An audit row's action as read back from the log: a word this version writes, or a word it does not
/// know, kept exactly as it was written (a row of an older or a newer version sharing the database, read
/// after an upgrade or a downgrade). Reading never fails on the action; the API marks the unknown word
/// (`action_unknown`) instead. Serialized as the word itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LoggedAction {
    Known(AuditAction),
    Unknown(String),
}

impl LoggedAction {
    /// The stored word, read leniently.
    pub fn read(word: &str) -> LoggedAction {
        word.parse().map_or_else(|_| LoggedAction::Unknown(word.to_owned()), LoggedAction::Known)
    }

    /// The word exactly as stored.
    pub fn as_str(&self) -> &str {
        match self {
            LoggedAction::Known(a) => a.as_str(),
            LoggedAction::Unknown(w) => w,
        }
    }

    pub fn known(&self) -> Option<AuditAction> {
        match self {
            LoggedAction::Known(a) => Some(*a),
            LoggedAction::Unknown(_) => None,
        }
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, LoggedAction::Unknown(_))
    }
}

impl From<AuditAction> for LoggedAction {
    fn from(a: AuditAction) -> Self {
        LoggedAction::Known(a)
    }
}

impl PartialEq<AuditAction> for LoggedAction {
    fn eq(&self, other: &AuditAction) -> bool {
        self.known() == Some(*other)
    }
}

impl std::fmt::Display for LoggedAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl serde::Serialize for LoggedAction {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for LoggedAction {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let word = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(LoggedAction::read(&word))
    }
}

#[cfg(feature = "schema")]
impl utoipa::PartialSchema for LoggedAction {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AnyOfBuilder, ObjectBuilder, Ref, Type};
        AnyOfBuilder::new()
            .item(Ref::from_schema_name("AuditAction"))
            .item(ObjectBuilder::new().schema_type(Type::String).description(Some(
                "A word another version of Lifeline wrote, kept as it was (the row's `action_unknown` is true).",
            )))
            .description(Some(
                "What was done: one of the actions this version writes (`AuditAction`), or, on a row of \
                 another version, its word as written.",
            ))
            .into()
    }
}

#[cfg(feature = "schema")]
impl utoipa::ToSchema for LoggedAction {
    fn schemas(out: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        out.push((
            <AuditAction as utoipa::ToSchema>::name().into_owned(),
            <AuditAction as utoipa::PartialSchema>::schema(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_words_round_trip() {
        for o in AuditOutcome::ALL {
            assert_eq!(o.as_str().parse::<AuditOutcome>(), Ok(*o));
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
        assert_eq!(AuditOutcome::ALL.len(), 8);
        assert!("done".parse::<AuditOutcome>().is_err());
    }

    /// Every action round-trips through its word, as text and as JSON, and read back from the log; the
    /// words are distinct and keep the log's spelling (lowercase dotted families, kebab-case within).
    #[test]
    fn action_words_round_trip() {
        let mut seen = std::collections::BTreeSet::new();
        for a in AuditAction::ALL {
            let w = a.as_str();
            assert!(seen.insert(w), "`{w}` twice");
            assert_eq!(w.parse::<AuditAction>(), Ok(*a));
            assert_eq!(serde_json::to_value(a).unwrap(), w);
            assert_eq!(serde_json::from_value::<AuditAction>(w.into()).unwrap(), *a);
            let read = LoggedAction::read(w);
            assert_eq!(read, LoggedAction::Known(*a));
            assert_eq!(read, *a);
            assert_eq!(serde_json::to_value(&read).unwrap(), w);
            assert!(
                w.split('.').all(|p| !p.is_empty()
                    && p.split('-').all(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase()))),
                "`{w}`"
            );
        }
        for a in PowerAction::ALL {
            assert_eq!(AuditAction::power(*a).as_str(), format!("power.{a}"));
        }
    }

    /// The words as operators' audit logs hold them: a variant is added (and its word here, on purpose),
    /// never respelled or removed, or the log's older rows stop reading as what they are.
    #[test]
    fn the_words_are_the_logs_words() {
        const WRITTEN: &[&str] = &[
            "power.on",
            "power.off",
            "power.cycle",
            "power.reset",
            "power.soft",
            "sel.clear",
            "hygiene.login",
            "audit.bmc",
            "bmc.reset",
            "bmc.subscribe",
            "bmc.unsubscribe",
            "bmc.resubscribe",
            "bmc.trust",
            "bmc.rotate",
            "bmc.credentials.reveal",
            "boot.set",
            "bios.apply",
            "firmware.update",
            "firmware.rollout",
            "media.insert",
            "media.eject",
            "media.serve",
            "console.attach",
            "console.detach",
            "console.takeover",
            "console.steal",
            "console.script",
            "console.rescue",
            "backup.run",
            "backup.restore",
            "backup.export",
            "backup.trust",
            "backup.slot",
            "backup.show-raw",
            "drain",
            "readmit.drain",
            "readmit.resume",
            "readmit.quarantine",
            "readmit.release",
            "readmit.lemon",
            "verify",
            "probation.start",
            "probation.recurrence",
            "probation.passed",
            "lemon.release",
            "fault.ack",
            "fault.resolve",
            "policy.escalate",
            "inventory.sync",
            "db.migrate",
            "db.backup",
            "login",
            "user.add",
            "user.passwd",
            "user.enable",
            "user.disable",
            "token.create",
            "token.revoke",
            "runbook.admit",
            "runbook.start",
            "runbook.approve",
            "runbook.clear",
            "runbook.abort",
            "runbook.end",
            "runbook.withdraw",
            "runbook.escalate",
            "runbook.run",
            "lease.interrupted",
        ];
        let words: Vec<&str> = AuditAction::ALL.iter().map(|a| a.as_str()).collect();
        assert_eq!(words, WRITTEN);
    }

    /// A word this version does not write (another version's) reads as itself, marked, and is written
    /// back unchanged; it never fails the read.
    #[test]
    fn an_unknown_word_reads_as_itself() {
        for w in ["runbook.reinstall", "power.nmi", "", "Power.On"] {
            let read = LoggedAction::read(w);
            assert!(read.is_unknown(), "{w}");
            assert_eq!(read.as_str(), w);
            assert_eq!(serde_json::to_value(&read).unwrap(), w);
            assert_eq!(serde_json::from_value::<LoggedAction>(w.into()).unwrap(), read);
            assert!(w.parse::<AuditAction>().is_err());
        }
    }
}
