//! Realistic starting configs for simulated switches of an AI cluster's fabrics.
//!
//! Why realistic: backup, scrubbing and restore are only exercised if the configs look like the real
//! thing — RoCE lossless queues 3 and 4 with PFC and ECN, MTU 9000 on the GPU rails, VLAN 999 for
//! the OOB network, BGP to the spines, and secrets (enable secret, SNMP community, TACACS key, BGP
//! password) that must be scrubbed. Each config has one `logging`/syslog server line at
//! `10.255.0.10`: the `config-change` fault moves it, so a test can assert exactly that diff.

use lifeline_types::Platform;
use serde_json::{Value, json};

/// Trailing number of a switch name (`leaf12` → 12), 1 when none.
pub fn index_of(name: &str) -> u32 {
    let digits: String = name.chars().rev().take_while(|c| c.is_ascii_digit()).collect();
    digits.chars().rev().collect::<String>().parse().unwrap_or(1)
}

/// The syslog server address after `n` config changes.
pub fn syslog_addr(n: u32) -> String {
    format!("10.255.{}.{}", (10 + n) / 250, (10 + n) % 250)
}

pub fn initial(platform: Platform, name: &str, tier: &str) -> String {
    let i = index_of(name);
    match platform {
        Platform::Ios | Platform::Nxos => ios(name, tier, i),
        Platform::Eos => eos(name, tier, i),
        Platform::Sonic => sonic(name, tier, i),
        Platform::Cumulus => cumulus(name, tier, i),
    }
}

pub(crate) fn asn(tier: &str, i: u32) -> u32 {
    if tier == "spine" { 65000 } else { 65100 + i }
}

fn ios(name: &str, tier: &str, i: u32) -> String {
    let mut s = format!(
        "!\nversion 15.2\nservice timestamps debug datetime msec\nservice password-encryption\n!\nhostname {name}\n!\n\
         enable secret 5 $1$sIm{i:02}$Qx3lT2kR0d8wVvN7pYcHm.\n!\n\
         username admin privilege 15 secret 9 $9$nhEmQVczB7dqsO$X.ZoBSEFe2vPjrAfMXsWBPZ6Xy1sqQxh3Q3Y1Ckd8T2\n\
         username ops privilege 5 password 7 0822455D0A165445415F59\n!\n\
         vlan 999\n name OOB-MGMT\n!\n\
         class-map type qos match-any ROCE\n match dscp 26\n\
         class-map type qos match-any CNP\n match dscp 48\n!\n\
         policy-map type network-qos LOSSLESS\n class type network-qos c-nq3\n  pause pfc-cos 3\n  mtu 9216\n\
          class type network-qos c-nq4\n  pause pfc-cos 4\n  mtu 9216\n!\n\
         policy-map type queuing ECN-OUT\n class type queuing c-out-q3\n  bandwidth remaining percent 50\n\
           random-detect minimum-threshold 150 kbytes maximum-threshold 1500 kbytes drop-probability 7 weight 0 ecn\n\
          class type queuing c-out-q4\n  bandwidth remaining percent 20\n\
           random-detect minimum-threshold 150 kbytes maximum-threshold 1500 kbytes drop-probability 7 weight 0 ecn\n!\n\
         interface Vlan999\n description OOB management\n ip address 10.99.{}.{} 255.255.0.0\n!\n",
        i / 250,
        i % 250 + 1
    );
    for p in 1..=8 {
        if tier == "spine" {
            s.push_str(&format!(
                "interface Ethernet1/{p}\n description leaf{p} uplink\n mtu 9000\n priority-flow-control mode on\n\
                  service-policy type queuing output ECN-OUT\n ip address 10.1.{p}.{} 255.255.255.254\n no shutdown\n!\n",
                2 * i
            ));
        } else {
            s.push_str(&format!(
                "interface Ethernet1/{p}\n description rail{} gpu-node-{:02}\n mtu 9000\n priority-flow-control mode on\n\
                  service-policy type queuing output ECN-OUT\n no shutdown\n!\n",
                p - 1,
                (i - 1) * 8 + p
            ));
        }
    }
    s.push_str(&format!(
        "router bgp {}\n bgp router-id 10.0.0.{i}\n neighbor 10.1.0.1 remote-as 65000\n\
          neighbor 10.1.0.1 password 7 121A0C0411045D5679\n address-family ipv4 unicast\n  network 10.{i}.0.0/16\n!\n\
         snmp-server community c0mmun1ty-{i} RO\nsnmp-server location rack-{i}\n\
         tacacs-server host 10.255.0.5 key 7 045802150C2E1D1C5A\n\
         logging host {}\nntp server 10.255.0.1\n!\nline vty 0 4\n transport input ssh\n password 7 02050D480809\n!\nend\n",
        asn(tier, i),
        syslog_addr(0)
    ));
    s
}

fn eos(name: &str, tier: &str, i: u32) -> String {
    let mut s = format!(
        "!\nhostname {name}\n!\n\
         username admin privilege 15 role network-admin secret sha512 $6$sim{i}$Vx9qF0oN2mCk7Hj4bW1eRt8yUi3oP5aSdF6gHjK.\n\
         enable password sha512 $6$en{i}$Kq1wE2rT3yU4iO5pA6sD7fG8hJ9kL0\n!\n\
         vlan 999\n   name OOB-MGMT\n!\n\
         qos map dscp 26 to traffic-class 3\nqos map dscp 48 to traffic-class 4\n!\n\
         priority-flow-control pause watchdog default timeout 0.2\n!\n\
         interface Management1\n   ip address 10.99.{}.{}/16\n!\n",
        i / 250,
        i % 250 + 1
    );
    for p in 1..=8 {
        let desc = if tier == "spine" {
            format!("leaf{p} uplink")
        } else {
            format!("rail{} gpu-node-{:02}", p - 1, (i - 1) * 8 + p)
        };
        s.push_str(&format!(
            "interface Ethernet{p}/1\n   description {desc}\n   mtu 9000\n   priority-flow-control on\n\
                priority-flow-control priority 3 no-drop\n   priority-flow-control priority 4 no-drop\n\
                tx-queue 3\n      random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes\n\
                tx-queue 4\n      random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes\n!\n"
        ));
    }
    s.push_str(&format!(
        "router bgp {}\n   router-id 10.0.0.{i}\n   neighbor SPINES peer group\n   neighbor SPINES remote-as 65000\n\
            neighbor SPINES password 7 Q1w2e3r4T5y6==\n   neighbor 10.1.0.1 peer group SPINES\n!\n\
         snmp-server community lifeline-ro-{i} ro\nsnmp-server location rack-{i}\n\
         tacacs-server host 10.255.0.5 key 7 070C285F4D06\n\
         logging host {}\nntp server 10.255.0.1\n!\nend\n",
        asn(tier, i),
        syslog_addr(0)
    ));
    s
}

fn sonic_value(name: &str, tier: &str, i: u32) -> Value {
    let mut port = serde_json::Map::new();
    let mut qos = serde_json::Map::new();
    let mut pg = serde_json::Map::new();
    for p in 0..8u32 {
        let eth = format!("Ethernet{}", p * 8);
        let desc = if tier == "spine" {
            format!("leaf{} uplink", p + 1)
        } else {
            format!("rail{p} gpu-node-{:02}", (i - 1) * 8 + p + 1)
        };
        port.insert(
            eth.clone(),
            json!({"admin_status": "up", "alias": format!("etp{}", p + 1), "description": desc,
                   "lanes": format!("{},{},{},{}", p * 8, p * 8 + 1, p * 8 + 2, p * 8 + 3),
                   "mtu": "9000", "speed": "400000", "fec": "rs"}),
        );
        qos.insert(eth.clone(), json!({"pfc_enable": "3,4", "pfcwd_sw_enable": "3,4", "dscp_to_tc_map": "AZURE", "tc_to_queue_map": "AZURE"}));
        pg.insert(format!("{eth}|3-4"), json!({"profile": "pg_lossless_400000_5m_profile"}));
    }
    json!({
        "DEVICE_METADATA": {"localhost": {"hostname": name, "hwsku": "Mellanox-SN4700-O8C48", "platform": "x86_64-mlnx_msn4700-r0",
                                           "type": if tier == "spine" { "SpineRouter" } else { "LeafRouter" },
                                           "bgp_asn": asn(tier, i).to_string(), "default_pfcwd_status": "enable"}},
        "PORT": port,
        "PORT_QOS_MAP": qos,
        "BUFFER_PG": pg,
        "WRED_PROFILE": {"AZURE_LOSSLESS": {"ecn": "ecn_all", "green_min_threshold": "153600", "green_max_threshold": "1536000",
                                            "green_drop_probability": "5", "wred_green_enable": "true"}},
        "QUEUE": {"Ethernet0|3": {"scheduler": "scheduler.0", "wred_profile": "AZURE_LOSSLESS"},
                  "Ethernet0|4": {"scheduler": "scheduler.0", "wred_profile": "AZURE_LOSSLESS"}},
        "VLAN": {"Vlan999": {"vlanid": "999", "description": "OOB-MGMT"}},
        "MGMT_INTERFACE": {format!("eth0|10.99.{}.{}/16", i / 250, i % 250 + 1): {"gwaddr": "10.99.0.1"}},
        "BGP_NEIGHBOR": {"10.1.0.1": {"asn": "65000", "name": "spine1", "local_addr": format!("10.1.0.{}", 2 * i), "password": format!("bgp-secret-{i}")}},
        "SNMP_COMMUNITY": {format!("sonic-ro-{i}"): {"TYPE": "RO"}},
        "TACPLUS_SERVER": {"10.255.0.5": {"priority": "1", "tcp_port": "49", "passkey": format!("tac-key-{i}")}},
        "SYSLOG_SERVER": {syslog_addr(0): {}},
        "NTP_SERVER": {"10.255.0.1": {}},
    })
}

fn sonic(name: &str, tier: &str, i: u32) -> String {
    pretty(&sonic_value(name, tier, i))
}

/// SONiC prints config_db with 4-space indentation and sorted keys.
pub fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

fn cumulus(name: &str, tier: &str, i: u32) -> String {
    let mut s = format!(
        "nv set system hostname {name}\n\
         nv set system aaa user cumulus hashed-password '$6$sim{i}$Mt5rE3wQ1aZ2xS4cD6vF8gB0nH'\n\
         nv set system aaa tacacs server 1 host 10.255.0.5\n\
         nv set system aaa tacacs server 1 secret tacacs-key-{i}\n\
         nv set bridge domain br_default vlan 999\n\
         nv set interface eth0 ip address 10.99.{}.{}/16\n\
         nv set qos roce enable on\n\
         nv set qos roce mode lossless\n\
         nv set qos pfc default-global switch-priority 3,4\n\
         nv set qos congestion-control default-global traffic-class 3,4 ecn enable\n",
        i / 250,
        i % 250 + 1
    );
    for p in 1..=8 {
        let desc = if tier == "spine" {
            format!("leaf{p}-uplink")
        } else {
            format!("rail{}-gpu-node-{:02}", p - 1, (i - 1) * 8 + p)
        };
        s.push_str(&format!(
            "nv set interface swp{p} link mtu 9000\nnv set interface swp{p} description {desc}\n"
        ));
    }
    s.push_str(
        &format!(
            "nv set router bgp autonomous-system {}\nnv set router bgp router-id 10.0.0.{i}\n\
         nv set vrf default router bgp neighbor swp51 remote-as external\n\
         nv set vrf default router bgp neighbor swp51 password 'bgp-pass-{i}'\n\
         nv set service snmp-server readonly-community cumulus-ro-{i} access any\n\
         nv set service syslog default server {} \n\
         nv set service ntp default server 10.255.0.1\n",
            asn(tier, i),
            syslog_addr(0)
        )
        .replace(" \n", "\n"),
    );
    s
}
