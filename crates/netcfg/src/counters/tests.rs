//! The counters parsers on outputs written from each platform's documented format (the real recorded
//! ones are in `tests/counters_corpus.rs`, outside git), the comparison of two reads, and properties:
//! no input panics a parser, every port returned is named, a read compared with itself rises nowhere.

use proptest::prelude::*;

use super::*;

/// EOS `show interfaces counters errors`, as the EOS manual lays it out.
const EOS_ERRORS: &str = "\
Port            FCS    Align   Symbol     Rx    Runts   Giants       Tx
Et1/1             0        0        0      0        0        0        0
Et2/1            17        0        3     20        0        0        1
";

/// EOS `show priority-flow-control counters`.
const EOS_PFC: &str = "\
                                Across all priorities
Port                  RxPfc                TxPfc
Et1/1                     3                    6
Et3/1              48012345                   34
";

/// Cumulus `nv show interface swp1 counters` (NVUE 5: a key and its operational value per row).
const NVUE_COUNTERS: &str = "\
                     operational
-------------------  -----------
carrier-transitions  4
in-bytes             5982014431
in-drops             0
in-errors            12
in-pkts              83124
out-drops            0
out-errors           0
";

#[test]
fn eos_tables_by_column_name() {
    let r = parse(Format::EosErrors, EOS_ERRORS, None);
    assert_eq!(r.len(), 2);
    assert_eq!(r[1].port, "Et2/1");
    assert_eq!(r[1].counters[&Counter::Crc], 17);
    assert_eq!(r[1].counters[&Counter::RxErrors], 20);
    assert_eq!(r[1].counters[&Counter::TxErrors], 1);
    let r = parse(Format::EosPfc, EOS_PFC, None);
    assert_eq!(r[1].counters[&Counter::PfcRxAll], 48_012_345);
    assert_eq!(r[0].counters[&Counter::PfcTxAll], 6);
}

#[test]
fn cumulus_key_values_and_ethtool() {
    let r = parse(Format::CumulusCounters, NVUE_COUNTERS, Some("swp1"));
    assert_eq!(r.len(), 1);
    let c = &r[0].counters;
    assert_eq!((c[&Counter::LinkFlaps], c[&Counter::RxErrors], c[&Counter::TxDrops]), (4, 12, 0));
    assert!(!c.contains_key(&Counter::Crc));
    let ethtool = "NIC statistics:\n     rx_crc_errors_phy: 386\n     link_down_events_phy: 2\n     \
                   rx_prio3_pause: 50847\n     tx_pause_ctrl_phy: 2  # a comment\n";
    let r = parse(Format::CumulusCounters, ethtool, Some("swp9"));
    let c = &r[0].counters;
    assert_eq!(
        (c[&Counter::Crc], c[&Counter::LinkFlaps], c[&Counter::PfcRx(3)], c[&Counter::PauseTx]),
        (386, 2, 50_847, 2)
    );
    assert!(parse(Format::CumulusCounters, NVUE_COUNTERS, None).is_empty(), "the port is the caller's");
}

/// Cumulus Linux 5.5 and later: `Counter  Receive  Transmit` sections (the form of NVIDIA's documented
/// output, with non-zero values put in here); `n/a` cells and other sections' rows are not counters.
#[test]
fn cumulus_receive_transmit_sections() {
    let text = "\
                     operational  applied
-------------------  -----------  -------
carrier-transitions  7

Drop Counters
================
    Counter          Receive  Transmit
    ---------------  -------  --------
    ACL Drops        3        n/a
    Total Drops      41       2

Error Counters
=================
    Counter           Receive  Transmit
    ----------------  -------  --------
    FCS Errors        386      n/a
    Total Errors      390      5

Packet Size Statistics
=========================
    Counter     Receive  Transmit
    ----------  -------  --------
    64          9        9
";
    let r = parse(Format::CumulusCounters, text, Some("swp3"));
    let c = &r[0].counters;
    let got: Vec<(Counter, u64)> = c.iter().map(|(k, v)| (*k, *v)).collect();
    let mut want = vec![
        (Counter::LinkFlaps, 7),
        (Counter::RxDrops, 41),
        (Counter::TxDrops, 2),
        (Counter::Crc, 386),
        (Counter::RxErrors, 390),
        (Counter::TxErrors, 5),
    ];
    want.sort();
    assert_eq!(got, want);
}

fn snap(rows: Vec<PortCounters>) -> Snapshot {
    let mut s = Snapshot::default();
    s.merge(rows);
    s
}

#[test]
fn rising_counters_are_evidence_by_threshold_and_a_clear_is_not() {
    let before = snap(parse(Format::EosPfc, EOS_PFC, None));
    let later = EOS_PFC.replace("48012345", "53012345").replace("     3       ", "     9       ");
    let now = snap(parse(Format::EosPfc, &later, None));
    let r = rising(&before, &now, &Thresholds::default());
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!((r[0].port.as_str(), r[0].counter, r[0].delta()), ("Et3/1", Counter::PfcRxAll, 5_000_000));
    assert_eq!(r[0].evidence.kind(), "switch-pfc-storm");
    assert!(r[0].describe().starts_with("Et3/1: pfc-rx rose by 5000000"), "{}", r[0].describe());
    // Counters cleared on the switch went down: nothing rose.
    assert!(rising(&now, &before, &Thresholds::default()).is_empty());
    // One flap is evidence at once; the spelling of the port does not matter.
    let a = snap(vec![PortCounters {
        port: "Ethernet2/1".into(),
        counters: [(Counter::LinkFlaps, 1)].into(),
        last_flap: None,
    }]);
    let b = snap(vec![PortCounters {
        port: "Et2/1".into(),
        counters: [(Counter::LinkFlaps, 2)].into(),
        last_flap: Some("Up 3 seconds".into()),
    }]);
    let r = rising(&a, &b, &Thresholds::default());
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].evidence, Evidence::LinkFlap);
    assert!(r[0].describe().ends_with("last flap Up 3 seconds"), "{}", r[0].describe());
}

#[test]
fn every_platform_has_commands_whose_formats_parse() {
    for p in [Platform::Sonic, Platform::Eos, Platform::Ios, Platform::Nxos, Platform::Cumulus] {
        let cs = commands(p);
        assert!(!cs.is_empty());
        assert!(cs.iter().all(|c| c.per_port == c.line.contains("{port}")), "{cs:?}");
    }
}

fn any_counter() -> impl Strategy<Value = Counter> {
    prop_oneof![
        Just(Counter::RxErrors),
        Just(Counter::TxErrors),
        Just(Counter::RxDrops),
        Just(Counter::TxDrops),
        Just(Counter::Crc),
        Just(Counter::LinkFlaps),
        Just(Counter::PfcRxAll),
        Just(Counter::PfcTxAll),
        Just(Counter::PauseRx),
        Just(Counter::PauseTx),
        any::<u8>().prop_map(Counter::PfcRx),
        any::<u8>().prop_map(Counter::PfcTx),
        any::<u8>().prop_map(Counter::PfcWatchdogStorms),
    ]
}

#[test]
fn a_counter_name_that_is_not_one_is_refused() {
    for bad in ["", "pfc", "pfc-rx3", "pfc03-rx", "pfc256-tx", "pfc+1-rx", "pfc1-watchdog", "crc "] {
        assert!(Counter::try_from(bad.to_owned()).is_err(), "{bad:?}");
    }
}

proptest! {
    /// A stored read is read back by whichever replica reads the switch next: every counter's name
    /// parses back to it, and a snapshot survives JSON unchanged.
    #[test]
    fn a_snapshot_survives_json(
        rows in proptest::collection::vec(
            ("[A-Za-z]{1,8}[0-9]{1,3}", proptest::collection::btree_map(any_counter(), any::<u64>(), 0..6),
             proptest::option::of("[ -~]{0,20}")),
            0..6,
        ),
    ) {
        let s = snap(rows.into_iter().map(|(port, counters, last_flap)| PortCounters { port, counters, last_flap }).collect());
        for c in s.ports.values().flat_map(|p| p.counters.keys()) {
            prop_assert_eq!(Counter::try_from(c.to_string()), Ok(*c));
        }
        let back: Snapshot = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        prop_assert_eq!(back, s);
    }

    #[test]
    fn no_input_panics_and_ports_are_named(pick in 0usize..FORMATS.len(), text in "(?s).{0,600}") {
        for r in parse(FORMATS[pick], &text, Some("swp1")) {
            prop_assert!(!r.port.trim().is_empty());
        }
    }

    #[test]
    fn table_like_noise_never_panics(
        pick in 0usize..FORMATS.len(),
        lines in proptest::collection::vec("[ A-Za-z0-9_:/,.-]{0,60}", 0..12),
    ) {
        let text = lines.join("\n");
        let rows = parse(FORMATS[pick], &text, Some("swp1"));
        let s = snap(rows);
        prop_assert!(rising(&s, &s, &Thresholds::default()).is_empty());
    }
}
