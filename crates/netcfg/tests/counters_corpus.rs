//! The counters parsers on real recorded outputs: sonic-utilities' own expected outputs of `show interfaces
//! counters`, `show pfc counters`, `show pfcwd stats` and `show interfaces flap`, and ntc-templates' raw EOS,
//! IOS and NX-OS `show interfaces`. Fetched data is not committed: the corpus lives outside git (its
//! SOURCES names each repository, commit and licence), found through `LIFELINE_SWITCH_COUNTERS_CORPUS`;
//! without it these tests skip loudly, and fail with `LIFELINE_SWITCH_COUNTERS_REQUIRED=1`.

use std::path::{Path, PathBuf};

use lifeline_netcfg::counters::{Counter, Format, PortCounters, Snapshot, Thresholds, parse, rising};

fn corpus() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates =
        std::env::var_os("LIFELINE_SWITCH_COUNTERS_CORPUS").map(PathBuf::from).into_iter().chain([
            manifest.join("../../shared/switch-output-corpus"),
            manifest.join("../../../shared/switch-output-corpus"),
            manifest.join("../../../switch-output-corpus"),
        ]);
    for c in candidates {
        if c.join("SOURCES").is_file() {
            return Some(c);
        }
    }
    let why =
        "switch counters corpus not found (set LIFELINE_SWITCH_COUNTERS_CORPUS to a folder with SOURCES)";
    if std::env::var("LIFELINE_SWITCH_COUNTERS_REQUIRED").is_ok_and(|v| v == "1") {
        panic!("{why}");
    }
    eprintln!("SKIP: {why}");
    None
}

/// Every file of `dir/sub` whose name starts with `prefix`, with its text.
fn files(dir: &Path, sub: &str, prefix: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir.join(sub))
        .unwrap_or_else(|e| panic!("{}/{sub}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix)))
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no {sub}/{prefix}* files in {}", dir.display());
    out
}

fn port<'a>(rows: &'a [PortCounters], name: &str) -> &'a PortCounters {
    rows.iter().find(|r| r.port == name).unwrap_or_else(|| panic!("no {name} in {rows:#?}"))
}

fn file(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn sonic_interface_counters() {
    let Some(dir) = corpus() else { return };
    let r = parse(
        Format::SonicCounters,
        &file(&dir, "sonic/show_interfaces_counters__intf_counters_before_clear.txt"),
        None,
    );
    assert_eq!(r.len(), 4, "{r:#?}");
    let e0 = port(&r, "Ethernet0");
    assert_eq!((e0.counters[&Counter::RxErrors], e0.counters[&Counter::RxDrops]), (10, 100));
    assert!(!e0.counters.contains_key(&Counter::TxErrors), "N/A is no value");
    assert_eq!(port(&r, "Ethernet4").counters[&Counter::RxDrops], 1_000, "1,000");
    assert_eq!(port(&r, "Ethernet8").counters[&Counter::RxErrors], 100);
    // With RX_PPS and TRIM columns (a newer release) the same values.
    let all = parse(
        Format::SonicCounters,
        &file(&dir, "sonic/show_interfaces_counters_all__intf_counters_all.txt"),
        None,
    );
    assert_eq!(port(&all, "Ethernet0").counters, e0.counters);
    let masic = parse(
        Format::SonicCounters,
        &file(&dir, "sonic/show_interfaces_counters_masic__multi_asic_all_intf_counters.txt"),
        None,
    );
    assert_eq!(masic.len(), 6, "{masic:#?}");
    assert_eq!(port(&masic, "Ethernet-BP260").counters[&Counter::RxDrops], 1_000);
    for (name, text) in files(&dir, "sonic", "show_interfaces_counters") {
        let rows = parse(Format::SonicCounters, &text, None);
        assert!(!rows.is_empty() && rows.iter().all(|r| !r.counters.is_empty()), "{name}: {rows:#?}");
    }
}

#[test]
fn sonic_pfc_watchdog_and_flaps() {
    let Some(dir) = corpus() else { return };
    let r = parse(Format::SonicPfc, &file(&dir, "sonic/show_pfc_counters__pfcstat_test_20.txt"), None);
    assert_eq!(r.len(), 3);
    let e0 = port(&r, "Ethernet0");
    assert_eq!((e0.counters[&Counter::PfcRx(0)], e0.counters[&Counter::PfcRx(7)]), (1_200, 207));
    assert_eq!((e0.counters[&Counter::PfcTx(0)], e0.counters[&Counter::PfcTx(3)]), (1_210, 213));
    for (name, text) in files(&dir, "sonic", "show_pfc_counters") {
        let rows = parse(Format::SonicPfc, &text, None);
        // Eight priorities per table (Rx, Tx or both); ports without counters (`N/A`) carry none.
        let full = |n: usize| n == 8 || n == 16;
        assert!(rows.iter().any(|r| full(r.counters.len())), "{name}: {rows:#?}");
        assert!(rows.iter().all(|r| full(r.counters.len()) || r.counters.is_empty()), "{name}: {rows:#?}");
    }

    let r = parse(
        Format::SonicPfcWatchdog,
        &file(&dir, "sonic/show_pfcwd_stats__pfcwd_show_stats_output.txt"),
        None,
    );
    assert_eq!(port(&r, "Ethernet0").counters[&Counter::PfcWatchdogStorms(3)], 1);
    assert_eq!(port(&r, "Ethernet8").counters[&Counter::PfcWatchdogStorms(4)], 3);
    let empty = parse(
        Format::SonicPfcWatchdog,
        &file(&dir, "sonic/show_pfcwd_stats__pfcwd_show_stats_invalid_queue_output.txt"),
        None,
    );
    assert!(empty.is_empty(), "a header without rows: {empty:#?}");

    let r = parse(
        Format::SonicFlap,
        &file(&dir, "sonic/show_interfaces_flap_all__intf_flap_masic_expected_output_display_all.txt"),
        None,
    );
    assert_eq!(r.len(), 9, "{r:#?}");
    let e0 = port(&r, "Ethernet0");
    assert_eq!(e0.counters[&Counter::LinkFlaps], 5);
    assert_eq!(e0.last_flap.as_deref(), Some("Sat Jan 17 00:04:42 2025"));
    let e4 = port(&r, "Ethernet4");
    assert_eq!((e4.counters[&Counter::LinkFlaps], e4.last_flap.as_deref()), (0, None), "Never");
    // The single-port table right-aligns the count.
    let one = parse(
        Format::SonicFlap,
        &file(&dir, "sonic/show_interfaces_flap_ethernet0__intf_flap_masic_expected_output_ethernet0.txt"),
        None,
    );
    assert_eq!(port(&one, "Ethernet0").counters[&Counter::LinkFlaps], 5);
}

#[test]
fn eos_ios_nxos_show_interfaces() {
    let Some(dir) = corpus() else { return };
    let r = parse(Format::ShowInterfaces, &file(&dir, "eos/arista_eos_show_interfaces.txt"), None);
    let e1 = port(&r, "Ethernet1");
    assert_eq!(e1.counters[&Counter::LinkFlaps], 1, "1 link status changes since last clear");
    assert_eq!((e1.counters[&Counter::RxErrors], e1.counters[&Counter::Crc]), (0, 0));
    assert_eq!((e1.counters[&Counter::PauseRx], e1.counters[&Counter::TxDrops]), (0, 0));
    assert_eq!(e1.last_flap.as_deref(), Some("Up 14 minutes, 2 seconds"));
    let ios = parse(Format::ShowInterfaces, &file(&dir, "ios/cisco_ios_show_interfaces.txt"), None);
    let g0 = port(&ios, "GigabitEthernet0/0");
    assert_eq!((g0.counters[&Counter::RxErrors], g0.counters[&Counter::PauseTx]), (0, 0));
    let (mut files_read, mut ports, mut with_errors) = (0, 0, 0);
    for sub in ["eos", "ios"] {
        for (name, text) in files(&dir, sub, "") {
            let rows = parse(Format::ShowInterfaces, &text, None);
            assert!(!rows.is_empty(), "{name}: no interface");
            files_read += 1;
            ports += rows.len();
            with_errors += rows.iter().filter(|r| r.counters.contains_key(&Counter::RxErrors)).count();
        }
    }
    eprintln!(
        "show interfaces: {files_read} files, {ports} interfaces, {with_errors} with an input-error count"
    );
    // Virtual interfaces (VLANs, VXLAN, loopbacks) print no counters; most physical ones do.
    assert!(files_read >= 20 && with_errors * 2 >= ports, "{with_errors} of {ports}");
}

#[test]
fn a_real_read_compared_with_a_later_one_names_the_port_that_moved() {
    let Some(dir) = corpus() else { return };
    let text = file(&dir, "sonic/show_pfc_counters__pfcstat_test_20.txt");
    let mut before = Snapshot::default();
    before.merge(parse(Format::SonicPfc, &text, None));
    let later = text.replacen(
        "Ethernet4   1,400     401     402     403",
        "Ethernet4   1,400     401     402 900,403",
        1,
    );
    let mut now = Snapshot::default();
    now.merge(parse(Format::SonicPfc, &later, None));
    let r = rising(&before, &now, &Thresholds::default());
    assert_eq!(r.len(), 1, "{r:#?}");
    assert_eq!((r[0].port.as_str(), r[0].counter, r[0].delta()), ("Ethernet4", Counter::PfcRx(3), 900_000));
}

/// NVIDIA's published NVUE outputs: since Cumulus Linux 5.5 `nv show interface PORT counters` prints
/// sectioned Receive/Transmit tables (the errors and drops are in `Total Errors` / `Total Drops`, CRC in
/// `FCS Errors`), before that a key/value list (`in-errors`), kept as `link stats`; and the PFC table.
#[test]
fn cumulus_nvue_counters_in_both_forms_and_pfc() {
    let Some(dir) = corpus() else { return };
    let all = |rel: &str| {
        let rows = parse(Format::CumulusCounters, &file(&dir, rel), Some("swp1"));
        assert_eq!(rows.len(), 1, "{rel}: {rows:#?}");
        rows.into_iter().next().unwrap().counters
    };
    let c = all("cumulus/nv_show_interface_swp1_counters_5.6.txt");
    let want = [
        (Counter::LinkFlaps, 4),
        (Counter::RxErrors, 0),
        (Counter::TxErrors, 0),
        (Counter::RxDrops, 0),
        (Counter::TxDrops, 0),
        (Counter::Crc, 0),
    ];
    for (k, v) in want {
        assert_eq!(c.get(&k), Some(&v), "5.5+ form: {k:?} in {c:#?}");
    }
    assert_eq!(c.len(), want.len(), "nothing else is read as a counter: {c:#?}");

    let c = all("cumulus/nv_show_interface_swp1_counters_errors_5.6.txt");
    assert_eq!(
        (c.get(&Counter::RxErrors), c.get(&Counter::TxErrors), c.get(&Counter::Crc)),
        (Some(&0), Some(&0), Some(&0))
    );

    let c = all("cumulus/nv_show_interface_swp1_link_stats.txt");
    assert_eq!(
        (
            c[&Counter::LinkFlaps],
            c[&Counter::RxErrors],
            c[&Counter::TxErrors],
            c[&Counter::RxDrops],
            c[&Counter::TxDrops]
        ),
        (6, 0, 0, 0, 0)
    );

    let rows = parse(
        Format::CumulusPfc,
        &file(&dir, "cumulus/nv_show_interface_swp1_counters_qos_pfc_stats.txt"),
        Some("swp1"),
    );
    let c = &port(&rows, "swp1").counters;
    for p in 0..8u8 {
        assert_eq!(
            (c.get(&Counter::PfcRx(p)), c.get(&Counter::PfcTx(p))),
            (Some(&0), Some(&0)),
            "priority {p}"
        );
    }
}
