//! The own-restore check on real records: backup versions in the engine's version index and blob store,
//! a restore audited as `backup restore` audits it. A change that is Lifeline's own restore of an earlier
//! version is no evidence (offering to undo it would offer the change it removed); the same change made
//! by anyone else is.

use lifeline_types::{AuditAction, DeviceName, Platform};

use crate::audit::Outcome;

/// A SONiC `config_db.json` with the MTU of two rail ports.
fn sonic(mtu: &str) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "DEVICE_METADATA": {"localhost": {"hostname": "leaf-03"}},
        "PORT": {
            "Ethernet12": {"admin_status": "up", "lanes": "12,13,14,15", "mtu": mtu, "speed": "400000"},
            "Ethernet16": {"admin_status": "up", "lanes": "16,17,18,19", "mtu": mtu, "speed": "400000"}
        }
    }))
    .unwrap()
}

/// Records a backup version of leaf-03 taken `minutes` from now; its number.
async fn version(l: &crate::Lifeline, text: &str, minutes: i64) -> u32 {
    let ctx = l.backup_context(false).await.unwrap();
    let dev = DeviceName::new("leaf-03").unwrap();
    let blob = ctx.blobs.put(text.as_bytes().to_vec()).await.unwrap();
    let at = chrono::Utc::now() + chrono::Duration::minutes(minutes);
    ctx.index.record(&dev, Platform::Sonic, &blob, text.len() as u64, at, false).await.unwrap().version
}

/// A restore of `v` onto leaf-03, audited now as `backup restore` audits one (intent, then outcome).
async fn restored(l: &crate::Lifeline, v: u32, outcome: Outcome) {
    let audit = l.audit().await.unwrap();
    let detail = serde_json::json!({ "from": "leaf-03", "version": v });
    let intent =
        audit.intent(AuditAction::BackupRestore, "leaf-03", Some("r1"), detail.clone()).await.unwrap();
    audit.outcome(intent, outcome, detail).await.unwrap();
}

/// leaf-03's MTU lowered by an operator (v1 → v2), then `restore` audited (a restore of v1 with that
/// outcome, or none), then the next backup finds `after`: the evidence that backup makes.
async fn after_restore(restore: Option<Outcome>, after: &str) -> Option<super::PortEvidence> {
    let dir = tempfile::tempdir().unwrap();
    let l = crate::Lifeline::in_dir(dir.path());
    assert_eq!(version(&l, &sonic("9100"), -180).await, 1);
    assert_eq!(version(&l, &sonic("1500"), -120).await, 2);
    // The operator's change: evidence, with v1 offered for restore.
    let e = l.config_change_evidence("leaf-03", 2).await.unwrap().expect("the MTU change is evidence");
    assert!(e.message.contains("mtu 9100 → 1500 on Ethernet12, Ethernet16"), "{}", e.message);
    assert_eq!(e.restore.as_ref().map(|r| r.version), Some(1));
    if let Some(o) = restore {
        restored(&l, 1, o).await;
    }
    assert_eq!(version(&l, after, 1).await, 3);
    l.config_change_evidence("leaf-03", 3).await.unwrap()
}

#[tokio::test]
async fn a_change_that_is_our_own_restore_is_no_evidence() {
    // Lifeline restored v1 (verified, or applied but not verified) and the next backup finds v1's config.
    assert_eq!(
        after_restore(Some(Outcome::Ok), &sonic("9100")).await,
        None,
        "Lifeline's own restore of v1 is blamed, or offered to be undone"
    );
    assert_eq!(after_restore(Some(Outcome::Unverified), &sonic("9100")).await, None);
}

#[tokio::test]
async fn the_same_change_by_anyone_else_is_evidence() {
    // No restore of ours: the MTU raised by hand is a change like any other, offering v2 back.
    let e = after_restore(None, &sonic("9100")).await.expect("a change by hand is evidence");
    assert!(e.message.contains("mtu 1500 → 9100"), "{}", e.message);
    assert_eq!(e.restore.as_ref().map(|r| r.version), Some(2));
    // A restore of ours that failed changed nothing: the change seen is someone else's.
    assert!(
        after_restore(Some(Outcome::Failed), &sonic("9100")).await.is_some(),
        "a failed restore is not ours"
    );
    // Our restore of v1 happened, but the backup after it finds another config (changed again since).
    let e = after_restore(Some(Outcome::Ok), &sonic("9000")).await.expect("not v1's config: not our restore");
    assert!(e.message.contains("mtu 1500 → 9000"), "{}", e.message);
}
