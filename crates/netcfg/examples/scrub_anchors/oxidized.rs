//! Oxidized's `secret` rules, re-implemented from the behaviour of its model files (ytti/oxidized
//! `lib/oxidized/model/{ios,nxos,eos,cumulus}.rb`, `cmd :secret`, as of commit
//! 687ed4262d9d21e54662e872e2383386d8498f7b, Apache-2.0): each rule is a whole-text substitution,
//! applied in the model's order, with Ruby's line-anchored `^`/`$`. Its SONiC model
//! (`enterprise_sonic.rb`) has no `secret` rules.

use std::sync::LazyLock;

use lifeline_types::Platform;
use regex::Regex;

/// A substitution: Ruby's `cfg.gsub!(re, replacement)`, with `\\1` written `${1}`.
type Rule = (&'static str, &'static str);

const IOS: &[Rule] = &[
    (r"^(snmp-server community).*", "${1} <configuration removed>"),
    (
        r"^(snmp-server host \S+( vrf \S+)?( informs?)?( version (1|2c))?) +\S+( .*)?$",
        "${1} <secret hidden>${6}",
    ),
    (r"^(username .+ (password|secret) \d) .+", "${1} <secret hidden>"),
    (r"^(enable (password|secret)( level \d+)? \d) .+", "${1} <secret hidden>"),
    (r"^( +(?:password|secret)) (?:\d )?\S+", "${1} <secret hidden>"),
    (r"^(.*wpa-psk ascii \d) (\S+)", "${1} <secret hidden>"),
    (r"^(.*key 7) (\d.+)", "${1} <secret hidden>"),
    (r"^(tacacs-server (.+ )?key) .+", "${1} <secret hidden>"),
    (r"^(crypto isakmp key) (\S+) (.*)", "${1} <secret hidden> ${3}"),
    (r"^( +ip ospf message-digest-key \d+ md5) .+", "${1} <secret hidden>"),
    (r"^( +ip ospf authentication-key) .+", "${1} <secret hidden>"),
    (r"^( +neighbor \S+ password) .+", "${1} <secret hidden>"),
    (r"^( +vrrp \d+ authentication text) .+", "${1} <secret hidden>"),
    (r"^( +standby \d+ authentication) .{1,8}$", "${1} <secret hidden>"),
    (r"^( +standby \d+ authentication md5 key-string) .+?( timeout \d+)?$", "${1} <secret hidden> ${2}"),
    (r"^( +key-string) .+", "${1} <secret hidden>"),
    (r"^((tacacs|radius) server [^\n]+\n( +[^\n]+\n)* +key) [^\n]+$", "${1} <secret hidden>"),
    (r"^( +ppp (chap|pap) password \d) .+", "${1} <secret hidden>"),
    (r"^( +security wpa psk set-key (?:ascii|hex) \d) (.*)$", "${1} <secret hidden>"),
    (r"^( +dot1x username \S+ password \d) (.*)$", "${1} <secret hidden>"),
    (
        r"^( +mgmtuser username \S+ password \d) (.*) (secret \d) (.*)$",
        "${1} <secret hidden> ${3} <secret hidden>",
    ),
    (r"^( +client \S+ server-key \d) (.*)$", "${1} <secret hidden>"),
    (r"^( +domain-password) \S+ ?(.*)", "${1} <secret hidden> ${2}"),
    (r"^( +pre-shared-key).*", "${1} <configuration removed>"),
    (r"^(.*server-key(?: \d)?) \S+", "${1} <secret hidden>"),
];

const NXOS: &[Rule] = &[
    (r"^(snmp-server community).*", "${1} <secret hidden>"),
    (
        r"^(snmp-server user \S+ \S+ auth \S+) \S+ (priv \S+) \S+ ",
        "${1} <secret hidden> ${2} <secret hidden> ",
    ),
    (r"^(snmp-server host.*? )\S+( udp-port \d+)?$", "${1}<secret hidden>${2}"),
    (r"^(snmp-server mib community-map) \S+ ?(.*)", "${1} <secret hidden> ${2}"),
    (r"(password \d+) (\S+)", "${1} <secret hidden>"),
    (r"^(radius-server .*key(?: \d+)?) \S+", "${1} <secret hidden>"),
    (r"^(tacacs-server .*key(?: \d+)?) \S+", "${1} <secret hidden>"),
];

const EOS: &[Rule] = &[
    (r"^(snmp-server community).*", "${1} <configuration removed>"),
    (
        r"^(snmp-server host \S+( vrf \S+)?( informs?| traps?)?( version (1|2c|3 (?:noauth|auth|priv)))?) \S+(.*)",
        "${1} <secret hidden>${6}",
    ),
    (r"(secret \w+) (\S+).*", "${1} <secret hidden>"),
    (r"(password \d+) (\S+).*", "${1} <secret hidden>"),
    (r"^(enable (?:secret|password)).*", "${1} <configuration removed>"),
    (r"^(service unsupported-transceiver).*", "${1} <license key removed>"),
    (r"^(tacacs-server key \d+).*", "${1} <configuration removed>"),
    (r"^(radius-server .+ key \d) \S+", "${1} <radius secret hidden>"),
    (r"( {6}key) ([0-9a-fA-F]+ 7) ([0-9a-fA-F]+).*", "${1} <secret hidden>"),
    (r"(localized|auth (md5|sha\d{0,3})|priv (des|aes\d{0,3})) \S+", "${1} <secret hidden>"),
];

const CUMULUS: &[Rule] = &[(r"password (\S+)", "password <hidden>")];

fn compile(rules: &[Rule]) -> Vec<(Regex, &'static str)> {
    // Ruby's `^` and `$` always match at line boundaries.
    rules.iter().map(|(re, to)| (Regex::new(&format!("(?m){re}")).expect("oxidized rule"), *to)).collect()
}

static COMPILED: LazyLock<[Vec<(Regex, &'static str)>; 4]> =
    LazyLock::new(|| [compile(IOS), compile(NXOS), compile(EOS), compile(CUMULUS)]);

/// The config as Oxidized would store it, or `None` where its model has no `secret` rules.
pub fn scrub(platform: Platform, text: &str) -> Option<String> {
    let rules = match platform {
        Platform::Ios => &COMPILED[0],
        Platform::Nxos => &COMPILED[1],
        Platform::Eos => &COMPILED[2],
        Platform::Cumulus => &COMPILED[3],
        _ => return None,
    };
    let mut out = text.to_owned();
    for (re, to) in rules {
        out = re.replace_all(&out, *to).into_owned();
    }
    Some(out)
}
