//! The classifier on config snippets in each platform's own syntax (SONiC `config_db.json` as `show
//! runningconfiguration all` prints it, EOS and NX-OS `show running-config` interface blocks, Cumulus NVUE
//! `nv config show -o commands`, ifupdown2 stanzas): a change to MTU, PFC, QoS or LAG is found on the
//! right ports, anything else is not.

use super::*;

fn sonic_db(mtu12: &str, pfc0: &str, member: bool) -> String {
    let mut v = serde_json::json!({
        "DEVICE_METADATA": {"localhost": {"hostname": "leaf-03", "hwsku": "Mellanox-SN4700-O8C48"}},
        "PORT": {
            "Ethernet0": {"admin_status": "up", "alias": "etp1", "lanes": "0,1,2,3", "mtu": "9100", "speed": "400000"},
            "Ethernet12": {"admin_status": "up", "alias": "etp4", "lanes": "12,13,14,15", "mtu": mtu12, "speed": "400000"},
            "Ethernet13": {"admin_status": "up", "alias": "etp5", "lanes": "16,17", "mtu": mtu12, "speed": "400000",
                            "description": "rail3"}
        },
        "PORT_QOS_MAP": {
            "Ethernet0": {"dscp_to_tc_map": "AZURE", "pfc_enable": pfc0, "pfc_to_queue_map": "AZURE", "tc_to_pg_map": "AZURE"},
            "Ethernet12,Ethernet13": {"dscp_to_tc_map": "AZURE", "pfc_enable": "3,4"}
        },
        "BUFFER_PG": {"Ethernet0|3-4": {"profile": "pg_lossless_400000_5m_profile"}},
        "SYSLOG_SERVER": {"10.255.0.10": {}},
        "PORTCHANNEL": {"PortChannel0001": {"admin_status": "up", "min_links": "1", "mtu": "9100"}},
        "PORTCHANNEL_MEMBER": {}
    });
    if member {
        v["PORTCHANNEL_MEMBER"]["PortChannel0001|Ethernet12"] = serde_json::json!({});
    }
    serde_json::to_string_pretty(&v).unwrap()
}

#[test]
fn sonic_port_mtu_pfc_and_lag_changes_are_found_per_port() {
    let old = sonic_db("9100", "3,4", false);
    let new = sonic_db("1500", "3", true);
    let c = classify(Platform::Sonic, &old, &new);
    let seen: Vec<(&str, Aspect, String)> = c.iter().map(|c| (c.port.as_str(), c.aspect, c.what())).collect();
    assert_eq!(
        seen,
        [
            ("Ethernet0", Aspect::Pfc, "PORT_QOS_MAP pfc_enable 3,4 → 3".to_owned()),
            ("Ethernet12", Aspect::Mtu, "mtu 9100 → 1500".to_owned()),
            ("Ethernet12", Aspect::Lag, "lag: added `member of PortChannel0001`".to_owned()),
            ("Ethernet13", Aspect::Mtu, "mtu 9100 → 1500".to_owned()),
        ],
        "{c:#?}"
    );
    let words = summarise(&c);
    assert!(words.contains(&("mtu 9100 → 1500".to_owned(), vec!["Ethernet12".into(), "Ethernet13".into()])));
}

#[test]
fn sonic_changes_elsewhere_are_no_port_evidence() {
    let old = sonic_db("9100", "3,4", false);
    let new = old.replace("10.255.0.10", "10.255.0.11").replace("\"rail3\"", "\"rail-3 spare\"");
    assert!(classify(Platform::Sonic, &old, &new).is_empty());
    // A config that is not config_db JSON is not understood: no evidence, not a guess.
    assert!(classify(Platform::Sonic, "hostname leaf-03", &new).is_empty());
}

/// An EOS `show running-config` (the leading spaces are EOS's three per level).
fn eos() -> String {
    [
        "! Command: show running-config",
        "! device: leaf-03 (DCS-7060X5-64S, EOS-4.31.2F)",
        "!",
        "hostname leaf-03",
        "!",
        "interface Ethernet12/1",
        "   description rail3 gpu-node-12",
        "   mtu 9214",
        "   priority-flow-control on",
        "   priority-flow-control priority 3 no-drop",
        "   priority-flow-control priority 4 no-drop",
        "   tx-queue 3",
        "      random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes",
        "!",
        "interface Ethernet13/1",
        "   description rail3 gpu-node-13",
        "   mtu 9214",
        "   channel-group 10 mode active",
        "!",
        "interface Management1",
        "   ip address 10.99.0.3/16",
        "!",
        "logging host 10.255.0.10",
        "!",
        "end",
        "",
    ]
    .join("\n")
}

#[test]
fn eos_interface_blocks_mtu_pfc_qos_and_lag() {
    let old = eos();
    let new = old
        .replacen("   mtu 9214\n", "   mtu 1500\n", 1)
        .replace("   priority-flow-control priority 4 no-drop\n", "")
        .replace("minimum-threshold 150 kbytes", "minimum-threshold 300 kbytes")
        .replace("   channel-group 10 mode active\n", "   channel-group 11 mode active\n")
        .replace("10.255.0.10", "10.255.0.11")
        .replace("gpu-node-13", "gpu-node-13b");
    let c = classify(Platform::Eos, &old, &new);
    let seen: Vec<(&str, Aspect)> = c.iter().map(|c| (c.port.as_str(), c.aspect)).collect();
    assert_eq!(
        seen,
        [
            ("Ethernet12/1", Aspect::Mtu),
            ("Ethernet12/1", Aspect::Pfc),
            ("Ethernet12/1", Aspect::Qos),
            ("Ethernet13/1", Aspect::Lag),
        ],
        "{c:#?}"
    );
    assert_eq!(c[0].what(), "mtu 9214 → 1500");
    assert_eq!(c[1].what(), "pfc: removed `priority-flow-control priority 4 no-drop`");
    assert!(
        c[2].before.iter().any(|l| l.starts_with("tx-queue 3 / random-detect ecn minimum-threshold 150")),
        "{c:#?}"
    );
    assert_eq!(
        c[3].what(),
        "lag: removed `channel-group 10 mode active`; added `channel-group 11 mode active`"
    );
}

#[test]
fn nxos_interface_mtu_removed_is_a_change_to_the_default() {
    let old = [
        "interface Ethernet1/12",
        "  description rail3",
        "  mtu 9216",
        "  priority-flow-control mode on",
        "  service-policy type qos input ROCE-IN",
        "  no shutdown",
        "",
        "interface Ethernet1/13",
        "  mtu 9216",
        "",
    ]
    .join("\n");
    let old = old.as_str();
    let new = old.replacen("  mtu 9216\n", "", 1).replace("ROCE-IN", "DEFAULT-IN");
    let c = classify(Platform::Nxos, old, &new);
    let seen: Vec<(&str, Aspect, String)> = c.iter().map(|c| (c.port.as_str(), c.aspect, c.what())).collect();
    assert_eq!(
        seen,
        [
            ("Ethernet1/12", Aspect::Mtu, "mtu: removed `mtu 9216`".to_owned()),
            ("Ethernet1/12", Aspect::Qos, "service-policy type qos input ROCE-IN → DEFAULT-IN".to_owned()),
        ],
        "{c:#?}"
    );
}

#[test]
fn cumulus_nvue_ranges_and_bond_members() {
    let old = "nv set system hostname leaf-03\nnv set qos roce mode lossless\n\
               nv set interface swp1-8 link mtu 9216\nnv set interface swp1-8 description rails\n\
               nv set interface bond1 bond member swp9-10\n";
    let new = "nv set system hostname leaf-03\nnv set qos roce mode lossy\n\
               nv set interface swp1-4 link mtu 9216\nnv set interface swp5-8 link mtu 1500\n\
               nv set interface swp1-8 description rails\nnv set interface bond1 bond member swp9\n";
    let c = classify(Platform::Cumulus, old, new);
    let words = summarise(&c);
    let ports = |w: &str| words.iter().find(|(x, _)| x == w).map(|(_, p)| p.clone()).unwrap_or_default();
    assert_eq!(ports("mtu 9216 → 1500"), ["swp5", "swp6", "swp7", "swp8"], "{words:#?}");
    assert_eq!(ports("lag: removed `member of bond1`"), ["swp10"], "{words:#?}");
    assert_eq!(c.len(), 5, "the global roce mode names no port: {c:#?}");
}

#[test]
fn ifupdown2_iface_stanzas() {
    let old =
        "auto swp3\niface swp3\n    mtu 9216\n    link-speed 400000\n\nauto swp4\niface swp4\n    mtu 9216\n";
    let new = old.replacen("    mtu 9216\n    link-speed", "    mtu 1500\n    link-speed", 1);
    let c = classify(Platform::Cumulus, old, &new);
    assert_eq!(c.len(), 1, "{c:#?}");
    assert_eq!((c[0].port.as_str(), c[0].what()), ("swp3", "mtu 9216 → 1500".to_owned()));
}

proptest::proptest! {
    /// Any text, either side: no panic, and a config compared with itself changes nothing.
    #[test]
    fn arbitrary_text_is_read_without_panic(a in ".{0,400}", b in ".{0,400}") {
        for p in [Platform::Sonic, Platform::Eos, Platform::Ios, Platform::Cumulus] {
            let _ = classify(p, &a, &b);
            proptest::prop_assert!(classify(p, &a, &a).is_empty());
        }
    }
}
