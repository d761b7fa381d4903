//! Fail-closed scrubbing: every leak and over-scrub found by running the scrubber over public
//! real-world configurations (issue 34), pinned; the fallback pass reports what it masks; tags are
//! stable per secret and keyed; empty values stay empty.

use lifeline_netcfg::scrub::{MaskedBy, Scrubbed, TagKey, scrub_report, untagged};
use lifeline_types::Platform;

fn key() -> TagKey {
    TagKey::from_bytes([11; 32])
}

fn run(p: Platform, cfg: &str) -> Scrubbed {
    scrub_report(p, cfg, &key())
}

/// `cfg` scrubbed on `p` masks each secret by a platform rule (not the fallback) and leaves exactly
/// `expected` (written with `<removed>`).
#[track_caller]
fn by_rule(p: Platform, cfg: &str, expected: &str, secrets: &[&str]) {
    let s = run(p, cfg);
    for sec in secrets {
        assert!(!s.text.contains(sec), "{p}: `{sec}` leaked:\n{}", s.text);
    }
    assert_eq!(untagged(&s.text), expected, "{p}");
    let fb: Vec<_> = s.by_fallback().collect();
    assert!(fb.is_empty(), "{p}: a rule should own these, the fallback masked {fb:?}");
    assert_eq!(s.masked.len(), secrets.len(), "{p}: {:?}", s.masked);
}

#[test]
fn eos_forms_that_leaked() {
    let eos = |cfg: &str, exp: &str, secrets: &[&str]| by_rule(Platform::Eos, cfg, exp, secrets);
    eos(
        "interface Ethernet1\n   ip ospf message-digest-key 1 sha512 7 Zq4bTQ9mk2Lk==\n",
        "interface Ethernet1\n   ip ospf message-digest-key 1 sha512 7 <removed>\n",
        &["Zq4bTQ9mk2Lk=="],
    );
    eos(
        "router isis CORE\n   authentication key-id 2 algorithm sha-512 key 0 IsisKey0\n",
        "router isis CORE\n   authentication key-id 2 algorithm sha-512 key 0 <removed>\n",
        &["IsisKey0"],
    );
    eos("boot secret sha512 $6$AbCd$BootHash\n", "boot secret sha512 <removed>\n", &["$6$AbCd$BootHash"]);
    eos(
        "management cvx\n   redis password 7 RedisPw07\n",
        "management cvx\n   redis password 7 <removed>\n",
        &["RedisPw07"],
    );
    eos(
        "daemon TerminAttr\n   exec /usr/bin/TerminAttr -cvaddr=10.0.0.5:9910 -cvauth=key,CvpK3y -cvvrf=MGMT -taillogs\n   no shutdown\n",
        "daemon TerminAttr\n   exec /usr/bin/TerminAttr -cvaddr=10.0.0.5:9910 -cvauth=key,<removed> -cvvrf=MGMT -taillogs\n   no shutdown\n",
        &["CvpK3y"],
    );
    eos(
        "management security\n   session shared-secret profile PROF\n      secret key1 0 MgmtSec1 receive-lifetime infinite transmit-lifetime infinite\n",
        "management security\n   session shared-secret profile PROF\n      secret key1 0 <removed> receive-lifetime infinite transmit-lifetime infinite\n",
        &["MgmtSec1"],
    );
}

#[test]
fn ios_forms_that_leaked() {
    let ios = |cfg: &str, exp: &str, secrets: &[&str]| by_rule(Platform::Ios, cfg, exp, secrets);
    ios(
        "snmp-server host 10.0.0.9 inform version 2c InfComm1\n",
        "snmp-server host 10.0.0.9 inform version 2c <removed>\n",
        &["InfComm1"],
    );
    ios(
        "snmp-server host 10.0.0.9 trap version 2c TrapComm1\n",
        "snmp-server host 10.0.0.9 trap version 2c <removed>\n",
        &["TrapComm1"],
    );
    ios(
        "interface Gi1\n ospfv3 encryption ipsec spi 256 esp aes-cbc 128 0 0123456789ABCDEF0123456789ABCDEF md5 0 FEDCBA9876543210FEDCBA9876543210\n",
        "interface Gi1\n ospfv3 encryption ipsec spi 256 esp aes-cbc 128 0 <removed> md5 0 <removed>\n",
        &["0123456789ABCDEF0123456789ABCDEF", "FEDCBA9876543210FEDCBA9876543210"],
    );
    ios(
        "interface Gi1\n ipv6 ospf encryption ipsec spi 300 esp 3des 0 Key3des123 sha1 0 AuthSha123\n",
        "interface Gi1\n ipv6 ospf encryption ipsec spi 300 esp 3des 0 <removed> sha1 0 <removed>\n",
        &["Key3des123", "AuthSha123"],
    );
    ios(
        "dot1x username supp1 password 0 Dot1xPw1\n",
        "dot1x username supp1 password 0 <removed>\n",
        &["Dot1xPw1"],
    );
    ios(
        "mgmtuser username admin password 0 WlcPass1 secret 0 WlcSec1\n",
        "mgmtuser username admin password 0 <removed> secret 0 <removed>\n",
        &["WlcPass1", "WlcSec1"],
    );
}

#[test]
fn nxos_and_nvue_forms_that_leaked() {
    by_rule(
        Platform::Nxos,
        "snmp-server mib community-map MapComm1 context vrf-ctx\n",
        "snmp-server mib community-map <removed> context vrf-ctx\n",
        &["MapComm1"],
    );
    by_rule(
        Platform::Cumulus,
        "nv set service snmp-server trap-destination 10.1.1.1 vrf mgmt username trapu auth-sha TrapAuth1 encrypt-aes TrapPriv1\n",
        "nv set service snmp-server trap-destination 10.1.1.1 vrf mgmt username trapu auth-sha <removed> encrypt-aes <removed>\n",
        &["TrapAuth1", "TrapPriv1"],
    );
}

#[test]
fn safe_forms_are_kept_whole() {
    let eos = "password policy STRICT\npassword minimum length 17\npassword encryption reversible aes-256-gcm\n\
               router bgp 65001\n   neighbor SPINES password shared-secret profile BGP-PROF algorithm aes-128-cmac-96\n\
               key chain KC\n   key 10\n";
    let s = run(Platform::Eos, eos);
    assert_eq!(s.text, eos);
    assert!(s.masked.is_empty(), "{:?}", s.masked);
    // Empty values stay empty: a user without a password must not look like one with.
    let nv = "nv set system aaa user guest password ''\nnv set system aaa user ops hashed-password \"\"\n";
    assert_eq!(run(Platform::Cumulus, nv).text, nv);
    let sonic = r#"{"USER": {"guest": {"password": ""}}, "TACPLUS": {"global": {"passkey": ""}}}"#;
    let out = run(Platform::Sonic, sonic).text;
    assert!(out.contains(r#""password": """#) && out.contains(r#""passkey": """#), "{out}");
    assert!(!out.contains("<removed"), "{out}");
}

#[test]
fn unknown_forms_fall_back_and_say_so() {
    // Forms no rule lists: masked by the fallback, each with its reason.
    let cfg = "hostname edge1\n\
               frobnicator shared-password 0 Unlisted1\n\
               exec /opt/agent -cvopt=DEFAULT.auth=key,AgentK3y\n\
               some feature $6$rounds=5000$saltsalt$HashHashHash\n\
               banner motd ^C\nPassword policy: see the wiki\n^C\n\
               end\n";
    for p in [Platform::Ios, Platform::Eos, Platform::Nxos] {
        let s = run(p, cfg);
        for sec in ["Unlisted1", "AgentK3y", "HashHashHash"] {
            assert!(!s.text.contains(sec), "{p}: `{sec}` leaked:\n{}", s.text);
        }
        assert!(s.text.contains("Password policy: see the wiki"), "{p}: banner prose kept:\n{}", s.text);
        let reasons: Vec<String> = s
            .by_fallback()
            .map(|m| match &m.by {
                MaskedBy::Fallback(r) => format!("{}: {r}", m.at),
                MaskedBy::Rule(_) => unreachable!(),
            })
            .collect();
        assert_eq!(
            reasons,
            [
                "line 2: follows the secret-like keyword `shared-password`",
                "line 3: follows the secret-like keyword `default.auth`",
                "line 4: looks like a crypt(3) hash (`$n$…`)",
            ],
            "{p}"
        );
    }
}

#[test]
fn frr_on_cumulus_without_nvue() {
    let frr = "frr version 8.4\nhostname leaf1\npassword zebra1\nenable password zebra2\n!\n\
               interface swp1\n ip ospf authentication message-digest\n ip ospf message-digest-key 1 md5 OspfMd51\n\
               ip ospf authentication-key OspfTxt1\n!\nrouter bgp 65001\n neighbor swp51 interface remote-as external\n\
               neighbor 10.0.0.1 password BgpFrr1\n!\nrouter isis 1\n area-password md5 IsisArea1\n\
               domain-password clear IsisDom1\n!\nkey chain KC\n key 1\n  key-string ChainFrr1\n!\nline vty\n!\n";
    let secrets =
        ["zebra1", "zebra2", "OspfMd51", "OspfTxt1", "BgpFrr1", "IsisArea1", "IsisDom1", "ChainFrr1"];
    let s = run(Platform::Cumulus, frr);
    for sec in secrets {
        assert!(!s.text.contains(sec), "`{sec}` leaked:\n{}", s.text);
    }
    assert_eq!(s.masked.len(), secrets.len(), "{:?}", s.masked);
    assert_eq!(s.by_fallback().count(), 0, "{:?}", s.masked);
    assert!(s.text.contains("neighbor swp51 interface remote-as external"));
    let ifupdown = "auto swp1\niface swp1\n    mtu 9216\n    bridge-vids 10 20\n\nauto eth0\niface eth0 inet dhcp\n    vrf mgmt\n";
    let s = run(Platform::Cumulus, ifupdown);
    assert_eq!((s.text.as_str(), s.masked.len()), (ifupdown, 0));
}

#[test]
fn tags_show_that_a_secret_changed_without_showing_it() {
    let a = run(Platform::Ios, "enable secret 0 FirstPw1\nusername u secret 0 FirstPw1\n").text;
    let b = run(Platform::Ios, "enable secret 0 SecondPw2\nusername u secret 0 FirstPw1\n").text;
    let tags = |t: &str| t.lines().map(|l| l.rsplit(' ').next().unwrap().to_owned()).collect::<Vec<_>>();
    let (ta, tb) = (tags(&a), tags(&b));
    assert!(ta[0].starts_with("<removed:") && ta[0].len() == "<removed:xxxx>".len(), "{a}");
    assert_eq!(ta[0], ta[1], "the same secret, the same tag");
    assert_ne!(ta[0], tb[0], "a changed secret, a changed tag");
    assert_eq!(ta[1], tb[1]);
    // Another installation (another key) tags the same secret differently.
    let other = scrub_report(Platform::Ios, "enable secret 0 FirstPw1\n", &TagKey::from_bytes([12; 32])).text;
    assert_ne!(other.trim_end().rsplit(' ').next().unwrap(), ta[0]);
}

#[test]
fn sonic_tables_below_a_namespace_are_scrubbed() {
    // A multi-ASIC switch prints one config_db per namespace; a community or a key one level down
    // is as secret as at the top (a row key under `localhost` once kept its community).
    let doc = r#"{"localhost": {"SNMP_COMMUNITY": {"NsComm1": {"TYPE": "RO"}},
                  "TACPLUS": {"global": {"passkey": "NsTac1"}}},
                 "asic0": {"SNMP_USER": {"OPS": {"SNMP_USER_AUTH_PASSWORD": "NsAuth1"}},
                           "NTP_KEY": {"7": {"type": "md5", "value": "NsNtp1"}}}}"#;
    let s = run(Platform::Sonic, doc);
    for sec in ["NsComm1", "NsTac1", "NsAuth1", "NsNtp1"] {
        assert!(!s.text.contains(sec), "`{sec}` leaked:\n{}", s.text);
    }
    // Each by its table's rule, not the fallback (the table is found below the namespace, and an
    // upper-case row key of a known table does not hide the table).
    let fb: Vec<_> = s.by_fallback().collect();
    assert!(fb.is_empty(), "{fb:?}");
    assert_eq!(s.masked.len(), 4, "{:?}", s.masked);
    assert!(
        s.masked.iter().any(|m| m.at.to_string() == "/localhost/SNMP_COMMUNITY (a row key)"),
        "{:?}",
        s.masked
    );
}

#[test]
fn sonic_switches_and_match_values_are_not_secrets() {
    // Fields whose names hold `auth` or `key` but whose values are switches, enums, numbers or match
    // values (SONiC YANG: restapi, ssh-server, radius, grpcclient, portchannel, pbh).
    let doc = r#"{"RESTAPI": {"config": {"client_auth": "true"}},
                 "SSH_SERVER": {"POLICIES": {"password_authentication": "true"}},
                 "RADIUS_SERVER": {"192.0.2.1": {"auth_type": "pap", "skip_msg_auth": "true", "passkey": "RadK1"}},
                 "GRPCCLIENT": {"config": {"auth_level": "server"}},
                 "PORTCHANNEL": {"PortChannel1": {"lacp_key": "auto"}},
                 "PBH_RULE": {"t|r": {"gre_key": "0x2500/0xffffff00"}}}"#;
    let s = run(Platform::Sonic, doc);
    assert!(!s.text.contains("RadK1"), "{}", s.text);
    assert_eq!(s.masked.len(), 1, "{:?}", s.masked);
    for kept in ["\"true\"", "\"pap\"", "\"server\"", "\"auto\"", "0x2500/0xffffff00"] {
        assert!(s.text.contains(kept), "`{kept}` lost:\n{}", s.text);
    }
}

#[test]
fn sonic_redis_dump_rows_are_scrubbed() {
    // A Redis dump of CONFIG_DB names each row `TABLE|row`; an SNMP community is then part of a key
    // (it once stayed there, with only the fallback catching the fields of such rows).
    let doc = r#"{"SNMP_COMMUNITY|DumpComm1": {"TYPE": "RO"},
                 "TACPLUS|global": {"passkey": "DumpTac1", "timeout": "5"},
                 "SNMP_USER|ops": {"SNMP_USER_AUTH_PASSWORD": "DumpAuth1"},
                 "PORT|Ethernet0": {"mtu": "9100"}}"#;
    let s = run(Platform::Sonic, doc);
    for sec in ["DumpComm1", "DumpTac1", "DumpAuth1"] {
        assert!(!s.text.contains(sec), "`{sec}` leaked:\n{}", s.text);
    }
    let fb: Vec<_> = s.by_fallback().collect();
    assert!(fb.is_empty(), "{fb:?}");
    assert_eq!(s.masked.len(), 3, "{:?}", s.masked);
    assert!(s.text.contains("\"SNMP_COMMUNITY|<removed:") && s.text.contains("Ethernet0"), "{}", s.text);
    // Scrubbing again changes nothing (the masked row key is not masked twice).
    assert_eq!(run(Platform::Sonic, &s.text).text, s.text);
}
