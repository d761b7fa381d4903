//! `lifeline demo --replicas 3 --database-url postgres://…`: the demo on PostgreSQL with three server
//! replicas in one process; each claims a share of the consoles' always-on loggers, and the demo's
//! sweeps run as usual. `--replicas 3` without a PostgreSQL URL is a usage error.

use std::process::{Command, Stdio};

use lifeline_test_utils::{create_database_blocking, lifeline_bin, output_text, pg_text_rows, postgres_url};

fn demo(args: &[&str]) -> Command {
    let mut c = Command::new(lifeline_bin());
    c.arg("demo")
        .args(args)
        .current_dir(lifeline_test_utils::workspace_root())
        .env_remove("LIFELINE_INVENTORY")
        .env_remove("LIFELINE_DATABASE_URL")
        .env_remove("LIFELINE_CONFIG")
        .stdin(Stdio::null());
    c
}

#[test]
fn demo_with_three_replicas_on_postgres_spreads_the_consoles() {
    let Some(admin) = postgres_url() else { return };
    let db = create_database_blocking(&admin);
    let o = demo(&[
        "--replicas",
        "3",
        "--database-url",
        &db.url,
        "--sweeps",
        "5",
        "--interval",
        "2",
        "--port-offset",
        "36000",
        "--listen",
        "127.0.0.1:0",
    ])
    .output()
    .unwrap();
    let text = output_text(&o);
    assert!(o.status.success(), "{text}");
    assert!(text.contains("replicas: 3 live on PostgreSQL"), "{text}");
    // The last refresh: every console of the example cluster (14 BMCs) has one logger, among three
    // replicas (`#TAG: N consoles`, one entry per live replica).
    let line = text.lines().rev().find(|l| l.starts_with("replicas: ")).unwrap();
    let counts: Vec<usize> =
        line.split(" consoles").filter_map(|part| part.rsplit(": ").next()?.parse().ok()).collect();
    assert_eq!(counts.len(), 3, "{line}");
    assert_eq!(counts.iter().sum::<usize>(), 14, "{line}");
    // The sweeps' observations went to PostgreSQL.
    let rows =
        pg_text_rows(&db.url, "SELECT count(DISTINCT device)::text FROM observations WHERE kind = 'sweep'");
    assert_eq!(rows[0][0].as_deref(), Some("14"), "{rows:?}");
}

#[test]
fn replicas_need_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let o = demo(&["--replicas", "3", "--sweeps", "1", "--data-dir", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(output_text(&o).contains("--database-url postgres://"), "{}", output_text(&o));
}
