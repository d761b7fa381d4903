//! The scrub rules, written as data per platform, in the spirit of RANCID's per-platform filters and
//! Oxidized's per-model rules: one entry per command that carries a secret, in the command's own
//! grammar (see [`super::grammar`]), taken from the vendors' command references.
//!
//! Why data: an operator (or a reviewer) can read the table and see which commands are covered on
//! which platform, and a missing command is one line to add. Order matters: for each config line the
//! first rule that matches owns it (as in RANCID's `if/elsif` filter chains), so a rule without
//! `SECRET` placed before a broader one protects lines that merely look similar (`snmp-server host …
//! version 3 USER` names a user, not a community).

use super::Kind::{self, *};

/// A rule for one config line.
#[derive(Debug, Clone, Copy)]
pub struct LineRule {
    pub kind: Kind,
    /// Only inside this top-level section (e.g. `tacacs server <any>`), matched on its header line;
    /// the line itself must be indented.
    pub section: Option<&'static str>,
    pub pattern: &'static str,
}

/// A block whose body lines are all secret (PEM keys and certificates, IOS certificate chains): the
/// opening and closing lines are kept, every line between them is masked.
#[derive(Debug, Clone, Copy)]
pub struct BlockRule {
    pub kind: Kind,
    pub section: Option<&'static str>,
    pub start: &'static str,
    pub end: &'static str,
}

/// Everything for one platform's line-oriented configs.
#[derive(Debug, Clone, Copy)]
pub struct RuleSet {
    /// Forms known to carry no secret although they hold a secret-like keyword (`password policy
    /// NAME`): checked first; neither the rules nor the fallback pass touch a line that matches one.
    pub safe: &'static [&'static [LineRule]],
    pub lines: &'static [&'static [LineRule]],
    pub blocks: &'static [BlockRule],
}

const fn r(kind: Kind, pattern: &'static str) -> LineRule {
    LineRule { kind, section: None, pattern }
}

const fn s(kind: Kind, section: &'static str, pattern: &'static str) -> LineRule {
    LineRule { kind, section: Some(section), pattern }
}

/// PEM private keys and certificates, wherever they appear.
const PEM: BlockRule =
    BlockRule { kind: PrivateKey, section: None, start: "-----BEGIN *", end: "-----END *" };

/// IOS `crypto pki certificate chain` bodies (hex DER lines up to `quit`).
const IOS_CERT: BlockRule = BlockRule {
    kind: Certificate,
    section: Some("crypto pki certificate chain <any>"),
    start: "certificate",
    end: "quit $",
};

/// SNMP `host` lines: v3 names a user (protected), v1/v2c give the community.
const SNMP_HOST: &[LineRule] = &[
    r(SnmpCommunity, "snmp-server host <any> * version 3"),
    r(SnmpCommunity, "snmp-server host <any> {use-vrf|filter-vrf|source-interface}"),
    r(
        SnmpCommunity,
        "snmp-server host <any> [vrf <any>] [{informs|traps|inform|trap}] [version {1|2c}] SECRET",
    ),
    r(SnmpCommunity, "snmp-server community SECRET"),
];

/// TACACS+ and RADIUS in the Cisco-style CLIs (IOS, NX-OS, EOS share the grammar).
const AAA_SERVERS: &[LineRule] = &[
    r(Tacacs, "tacacs-server host <any> * key [<type>] SECRET"),
    r(Tacacs, "tacacs-server key [<type>] SECRET"),
    s(Tacacs, "tacacs server <any>", "key [<type>] SECRET"),
    r(Tacacs, "server-private <any> * key [<type>] SECRET"),
    r(Radius, "radius-server host <any> * key [<type>] SECRET"),
    r(Radius, "radius-server key [<type>] SECRET"),
    s(Radius, "radius server <any>", "pac key [<type>] SECRET"),
    s(Radius, "radius server <any>", "key [<type>] SECRET"),
    r(Radius, "client <any> * server-key [<type>] SECRET"),
    r(Radius, "server-key [<type>] SECRET"),
];

/// OSPFv2 interface and virtual-link authentication (IOS, NX-OS, EOS).
const OSPF: &[LineRule] = &[
    r(Ospf, "ip ospf authentication-key [<type>] SECRET"),
    r(Ospf, "ip ospf message-digest-key <n> <hash> [<type>] SECRET"),
    r(Ospf, "area <any> virtual-link <any> * authentication-key [<type>] SECRET"),
    r(Ospf, "area <any> virtual-link <any> * message-digest-key <n> <hash> [<type>] SECRET"),
    // OSPFv3 IPsec: `… encryption ipsec spi N esp CIPHER [BITS] [TYPE] KEY [{md5|sha1} [TYPE] KEY]`; the
    // `$` makes the backtracking settle on the reading that consumes the whole line.
    r(
        Ospf,
        "* encryption ipsec spi <n> esp {null|<any> [<n>] [<type>] SECRET} [{md5|sha1} [<type>] SECRET] $",
    ),
    r(Ospf, "{ipv6 ospf|ospfv3} * ipsec spi <n> <any> passphrase [<type>] SECRET"),
    r(Ospf, "{ipv6 ospf|ospfv3} * authentication ipsec spi <n> <any> [<type>] SECRET"),
];

/// Cisco IOS / IOS-XE.
const IOS_LINES: &[LineRule] = &[
    r(EnableSecret, "enable algorithm-type <any> secret SECRET"),
    r(EnableSecret, "enable {secret|password} [level <n>] [<type>] SECRET"),
    r(UserSecret, "username <any> * {secret|password} [<type>] SECRET"),
    r(Dot1x, "dot1x username <any> * password [<type>] SECRET"),
    r(UserSecret, "mgmtuser * password [<type>] SECRET [secret [<type>] SECRET]"),
    r(LinePassword, "vtp password [<type>] SECRET"),
    r(LinePassword, "password encryption"),
    s(Dot1x, "dot1x credentials <any>", "password [<type>] SECRET"),
    r(LinePassword, "password [<type>] SECRET"),
    r(LinePassword, "ip {ftp|http client} password [<type>] SECRET"),
    r(KeyChain, "key-string [<type>] SECRET"),
    r(Ntp, "ntp authentication-key <n> <any> SECRET"),
    r(
        SnmpV3,
        "snmp-server user <any> <any> * auth {sha-2 {256|384|512}|<hash>} SECRET [priv {aes {128|192|256}|3des|des} SECRET]",
    ),
    r(Bgp, "neighbor <any> * password [<type>] SECRET"),
    r(Isis, "isis password SECRET"),
    r(Isis, "{area-password|domain-password} SECRET"),
    r(Eigrp, "authentication mode hmac-sha-256 [<type>] SECRET"),
    r(Ppp, "ppp chap password [<type>] SECRET"),
    r(Ppp, "ppp pap sent-username <any> password [<type>] SECRET"),
    r(Isakmp, "crypto isakmp key [<type>] SECRET"),
    r(Isakmp, "pre-shared-key * key [<type>] SECRET"),
    r(Isakmp, "pre-shared-key [{local|remote}] [<type>] SECRET"),
    s(Isakmp, "crypto isakmp client configuration group <any>", "key [<type>] SECRET"),
    r(Isakmp, "ip nhrp authentication SECRET"),
    r(Wireless, "wpa-psk {ascii|hex} [<type>] SECRET..."),
    r(Wireless, "security wpa psk set-key {ascii|hex} [<type>] SECRET..."),
    r(Wireless, "encryption [vlan <n>] key <n> size <any> [<type>] SECRET"),
    r(Fhrp, "{standby|vrrp} [<n>] authentication md5 key-string [<type>] SECRET"),
    r(Fhrp, "{standby|vrrp} [<n>] authentication md5 key-chain"),
    r(Fhrp, "{standby|vrrp} [<n>] authentication [text] SECRET"),
];

/// Cisco-style forms that hold a secret-like keyword and no secret.
const CISCO_SAFE: &[LineRule] = &[
    r(Other, "route-map *"),
    r(Other, "ip {community-list|extcommunity-list|large-community-list} *"),
    r(Other, "ntp {server|peer} *"),
    r(Other, "mpls ldp password {required|option|fallback|rollover} *"),
    r(Other, "[no] {match|set} community *"),
    r(Other, "[no] bgp aggregate-route community *"),
    r(Other, "key chain *"),
    r(Other, "key <n> $"),
    r(Other, "dot1x credentials <any> $"),
    r(Other, "tunnel key <n> $"),
    r(Other, "snmp-server group *"),
    r(Other, "snmp-server view *"),
    r(Other, "crypto key *"),
    r(Other, "no password strength-check $"),
];

pub const IOS: RuleSet = RuleSet {
    safe: &[CISCO_SAFE],
    lines: &[IOS_LINES, AAA_SERVERS, SNMP_HOST, OSPF],
    blocks: &[IOS_CERT, PEM],
};

/// Cisco NX-OS.
const NXOS_LINES: &[LineRule] = &[
    r(EnableSecret, "enable secret [<type>] SECRET"),
    r(UserSecret, "username <any> * {secret|password} [<type>] SECRET"),
    r(LinePassword, "password {strength-check|secure-mode|encryption}"),
    s(Bgp, "router bgp <any>", "password [<type>] SECRET"),
    r(Bgp, "neighbor <any> * password [<type>] SECRET"),
    r(LinePassword, "password [<type>] SECRET"),
    r(KeyChain, "key-string [<type>] SECRET"),
    r(Ntp, "ntp authentication-key <n> <any> SECRET"),
    r(SnmpV3, "snmp-server user <any> * auth <hash> SECRET [priv [aes-128] SECRET]"),
    r(SnmpCommunity, "snmp-server mib community-map SECRET"),
    r(Fhrp, "authentication md5 key-string [<type>] SECRET"),
    r(Fhrp, "authentication md5 key-chain"),
    r(Fhrp, "authentication text SECRET"),
];

const NXOS_SAFE: &[LineRule] = &[
    r(Other, "username <any> passphrase {lifetime|warntime|gracetime} *"),
    r(Other, "feature password encryption aes *"),
    r(Other, "ssh key *"),
];

pub const NXOS: RuleSet = RuleSet {
    safe: &[CISCO_SAFE, NXOS_SAFE],
    lines: &[NXOS_LINES, AAA_SERVERS, SNMP_HOST, OSPF],
    blocks: &[PEM],
};

/// Arista EOS.
const EOS_LINES: &[LineRule] = &[
    r(EnableSecret, "enable {secret|password} [<type>] SECRET"),
    r(EnableSecret, "aaa root secret [<type>] SECRET"),
    r(EnableSecret, "boot secret [<type>] SECRET"),
    r(LinePassword, "redis password [<type>] SECRET"),
    s(Other, "daemon TerminAttr", "exec * auth=key,SECRET"),
    r(UserSecret, "username <any> * {secret|password} [<type>] SECRET"),
    r(LinePassword, "password [<type>] SECRET"),
    r(KeyChain, "key-string [<type>] SECRET"),
    // The key id is a name as often as a number (`secret key1 0 S receive-lifetime …`).
    s(KeyChain, "management security", "secret <any> [<type>] SECRET"),
    r(Ntp, "ntp authentication-key <n> <any> [<type>] SECRET"),
    r(SnmpV3, "snmp-server user <any> <any> * auth <hash> SECRET [priv {aes192|aes256|aes|3des|des} SECRET]"),
    r(Bgp, "neighbor <any> * password [<type>] SECRET"),
    r(Isis, "[isis] authentication key [<type>] SECRET"),
    r(Isis, "[isis] authentication key-id <n> algorithm <hash> [rfc-5310] key [<type>] SECRET"),
    s(Macsec, "mac security", "key <any> [<type>] SECRET"),
    r(Dot1x, "passphrase [<type>] SECRET"),
    r(Isakmp, "shared-key [<type>] SECRET"),
    r(Fhrp, "vrrp <n> [peer] authentication ietf-md5 key-string [<type>] SECRET"),
    r(Fhrp, "vrrp <n> [peer] authentication [text] SECRET"),
];

const EOS_SAFE: &[LineRule] = &[
    r(Other, "password policy <any> $"),
    r(Other, "password minimum length <n> $"),
    r(Other, "password encryption reversible *"),
    r(Other, "password encryption-key {common|custom} $"),
    r(Other, "* shared-secret profile <any> *"),
    r(Other, "key {size|field} *"),
    r(Other, "key controller $"),
    r(Other, "secret hash *"),
    r(Other, "private-vlan *"),
    r(Other, "route-map *"),
    r(Other, "ip {community-list|extcommunity-list|large-community-list} *"),
    r(Other, "ntp server *"),
    r(Other, "[no] {match|set} community *"),
    r(Other, "[no] bgp aggregate-route community *"),
    s(Other, "management security", "session shared-secret profile <any> $"),
    r(Other, "key chain *"),
    r(Other, "key <n> $"),
    r(Other, "snmp-server group *"),
    r(Other, "snmp-server view *"),
];

pub const EOS: RuleSet =
    RuleSet { safe: &[EOS_SAFE], lines: &[EOS_LINES, AAA_SERVERS, SNMP_HOST, OSPF], blocks: &[PEM] };

/// Cumulus Linux NVUE (`nv config show -o commands`): every setting is `nv set PATH… KEYWORD VALUE`.
const NVUE_LINES: &[LineRule] = &[
    r(UserSecret, "nv set system aaa user <any> * {password|hashed-password} SECRET"),
    r(Tacacs, "nv set system aaa tacacs * {secret|key} SECRET"),
    r(Radius, "nv set system aaa radius * {secret|key} SECRET"),
    r(SnmpCommunity, "nv set service snmp-server {readonly-community|readonly-community-v6} SECRET"),
    r(SnmpCommunity, "nv set service snmp-server trap-destination * community-password SECRET"),
    // `username U …` and `trap-destination A … username U …` alike.
    r(SnmpV3, "nv set service snmp-server * {auth-md5|auth-sha} SECRET [{encrypt-des|encrypt-aes} SECRET]"),
    r(SnmpV3, "nv set service snmp-server * {encrypt-des|encrypt-aes} SECRET"),
    r(Bgp, "nv set vrf <any> router bgp * password SECRET"),
    r(Ospf, "nv set interface <any> router ospf authentication * md5-key SECRET"),
    r(Ntp, "nv set service ntp * key <n> value SECRET"),
    r(Dot1x, "nv set system dot1x * shared-secret SECRET"),
    r(
        Other,
        "nv set * {password|hashed-password|secret|shared-secret|passphrase|bind-password|community-password} SECRET",
    ),
];

/// FRR (`/etc/frr/frr.conf` on Cumulus Linux without NVUE), from the FRR user guide.
const FRR_LINES: &[LineRule] = &[
    r(EnableSecret, "enable password SECRET"),
    r(LinePassword, "password SECRET"),
    r(Bgp, "neighbor <any> * password SECRET"),
    r(Isis, "isis password {clear|md5} SECRET"),
    r(Isis, "{area-password|domain-password} {clear|md5} SECRET"),
    r(KeyChain, "key-string SECRET"),
    r(Ospf, "ipv6 ospf6 authentication key-id <n> hash-algo <any> key SECRET"),
    r(Other, "ip rip authentication string SECRET"),
    r(Other, "authentication-key SECRET"),
];

/// Cumulus Linux: NVUE commands, or ifupdown2 `interfaces` plus FRR (the two never share a line shape:
/// every NVUE line starts with `nv set`).
const FRR_SAFE: &[LineRule] = &[
    r(Other, "key chain *"),
    r(Other, "key <n> $"),
    r(Other, "route-map *"),
    r(Other, "[no] {match|set} community *"),
    r(Other, "{bgp|ip} {community-list|extcommunity-list|large-community-list} *"),
];

pub const NVUE: RuleSet =
    RuleSet { safe: &[FRR_SAFE], lines: &[NVUE_LINES, FRR_LINES, OSPF], blocks: &[PEM] };

/// SONiC config_db: a secret is a string field of a table (`None`: any table).
#[derive(Debug, Clone, Copy)]
pub struct JsonField {
    pub kind: Kind,
    pub table: Option<&'static str>,
    pub field: &'static str,
}

const fn j(kind: Kind, table: Option<&'static str>, field: &'static str) -> JsonField {
    JsonField { kind, table, field }
}

/// SONiC config_db fields (compared case-insensitively), from the SONiC YANG models.
pub const SONIC_FIELDS: &[JsonField] = &[
    j(Tacacs, Some("TACPLUS"), "passkey"),
    j(Tacacs, Some("TACPLUS_SERVER"), "passkey"),
    j(Radius, Some("RADIUS"), "passkey"),
    j(Radius, Some("RADIUS_SERVER"), "passkey"),
    j(SnmpV3, Some("SNMP_USER"), "SNMP_USER_AUTH_PASSWORD"),
    j(SnmpV3, Some("SNMP_USER"), "SNMP_USER_ENCRYPTION_PASSWORD"),
    j(Bgp, Some("BGP_NEIGHBOR"), "password"),
    j(Bgp, Some("BGP_NEIGHBOR"), "auth_password"),
    j(Bgp, Some("BGP_PEER_GROUP"), "password"),
    j(Ntp, Some("NTP_KEY"), "value"),
    j(Macsec, Some("MACSEC_PROFILE"), "primary_cak"),
    j(Macsec, Some("MACSEC_PROFILE"), "fallback_cak"),
    j(UserSecret, None, "hashed_password"),
    j(Other, None, "passkey"),
    j(Other, None, "password"),
    j(Other, None, "passwd"),
    j(Other, None, "secret"),
    j(Other, None, "shared_secret"),
    j(Other, None, "bind_password"),
    j(Other, None, "auth_password"),
    j(Other, None, "priv_password"),
    j(Other, None, "auth_key"),
    j(Other, None, "key"),
    j(Other, None, "community"),
    j(Other, None, "community_string"),
];

/// SONiC fields known to hold no secret although their names or values look like one, from the
/// SONiC YANG models: a MACsec key *name* (`*_ckn`), switches and enums (`sonic-restapi` and
/// `sonic-gnmi` `client_auth`, `sonic-ssh-server` `password_authentication`, `sonic-radius`
/// `auth_type` and `skip_msg_auth`, `sonic-grpcclient` `auth_level`), numbers and match values
/// (`sonic-portchannel` `lacp_key`, `sonic-pbh` `gre_key`). File names in key fields
/// (`sonic-grpcclient` `client_key`) stay masked: such a field may as well hold the key itself.
pub const SONIC_SAFE_FIELDS: &[&str] = &[
    "primary_ckn",
    "fallback_ckn",
    "client_auth",
    "password_authentication",
    "auth_type",
    "skip_msg_auth",
    "auth_level",
    "lacp_key",
    "gre_key",
];

/// SONiC tables whose row keys are themselves secrets (`SNMP_COMMUNITY: {"public": {...}}`).
pub const SONIC_SECRET_ROW_TABLES: &[(Kind, &str)] = &[(SnmpCommunity, "SNMP_COMMUNITY")];
