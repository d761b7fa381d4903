//! A `[[backup-schedule]]` entry runs by itself at its slot (injected clock, switch served by `lifeline
//! sim`); a restart after downtime runs the missed slots once, not once each.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, TimeZone, Utc};
use lifeline_engine::{Identity, Lifeline, Settings};
use lifeline_server::Clock;
use lifeline_server::scheduler::backups::BackupScheduler;
use lifeline_test_utils::{SimProcess, unique_loopback};

#[derive(Debug)]
struct ManualClock(Mutex<DateTime<Utc>>);

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_backup_runs_at_its_slot_and_missed_slots_once() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let offset: u16 = 25000;
    let sw = unique_loopback();
    let pwdir = tempfile::tempdir().unwrap();
    let pw = pwdir.path().join("sw-pass");
    std::fs::write(&pw, "sw-pass\n").unwrap();
    std::fs::set_permissions(&pw, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let pw = pw.display();
    let inv = format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"file:{pw}\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"leaf\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"backend\"\nplatform = \"sonic\"\n\
         management = {{ address = \"{sw}\", port = {} }}\n",
        22 + offset
    );
    assert!(inv.contains("file:"), "{inv}");
    let sim = SimProcess::start(&inv, offset, &[("LIFELINE_SWITCH_PASSWORD", "sw-pass")]);
    let cfg = sim.dir.path().join("lifeline.toml");
    std::fs::write(&cfg, "[[backup-schedule]]\ntargets = [\"switch\"]\ncron = \"* * * * *\"\nretries = 1\n")
        .unwrap();
    let settings = Settings {
        config: Some(cfg),
        inventory: Some(sim.inventory.clone()),
        data_dir: Some(sim.data.clone()),
        ..Settings::default()
    };
    let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 30).unwrap();
    let clock = Arc::new(ManualClock(Mutex::new(t0)));
    let base = Lifeline::new(&settings, Identity::new("server")).unwrap();
    let st = lifeline_server::serve::state(base, clock.clone(), false).await.unwrap();
    let mut sched = BackupScheduler::default();

    assert_eq!(sched.tick(&st).await.unwrap(), 0, "first sight: nothing from before the start runs");
    *clock.0.lock().unwrap() = t0 + chrono::Duration::seconds(20);
    assert_eq!(sched.tick(&st).await.unwrap(), 0, "before the slot");
    *clock.0.lock().unwrap() = t0 + chrono::Duration::seconds(40); // 00:01:10
    assert_eq!(sched.tick(&st).await.unwrap(), 1, "at the slot");
    assert_eq!(st.base.backup_history("leaf").await.unwrap().len(), 1);
    assert_eq!(sched.tick(&st).await.unwrap(), 0, "the slot ran once");

    // "Downtime": four slots pass; a new scheduler (a restart) runs them as one.
    *clock.0.lock().unwrap() = t0 + chrono::Duration::seconds(280); // 00:05:10
    let mut restarted = BackupScheduler::default();
    assert_eq!(restarted.tick(&st).await.unwrap(), 1);
    assert_eq!(restarted.tick(&st).await.unwrap(), 0);
    let rows = st.base.audit_log(Some("leaf"), 50).await.unwrap();
    let runs = rows.iter().filter(|r| r.entry.actor == "scheduler" && r.entry.outcome == "started").count();
    assert_eq!(runs, 2, "two runs, audited as the scheduler: {rows:?}");

    // Killed in the middle of the 00:06 slot (claimed by a process now dead, started marked, done not):
    // the next start runs it once more.
    let job = "backup:leaf:* * * * *";
    let slot = Utc.with_ymd_and_hms(2026, 1, 1, 0, 6, 0).unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_owned();
    let dead = format!("server (pid {pid} on {host}) #dead00");
    let key = lifeline_server::scheduler::backups::slot_key(job, slot.timestamp_millis());
    st.base.work_claim(&key, &dead, 600_000).await.unwrap();
    st.base.schedule_advance(job, slot.timestamp_millis()).await.unwrap();
    *clock.0.lock().unwrap() = slot + chrono::Duration::seconds(10);
    let mut after_crash = BackupScheduler::default();
    assert_eq!(after_crash.tick(&st).await.unwrap(), 1, "the interrupted slot runs again");
    assert_eq!(after_crash.tick(&st).await.unwrap(), 0, "once");
    assert_eq!(BackupScheduler::default().tick(&st).await.unwrap(), 0, "and not after another restart");
    assert_eq!(st.base.backup_history("leaf").await.unwrap().len(), 1, "the same config: no second version");
}
