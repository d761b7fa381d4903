//! RANCID's password and community filters, re-implemented from the behaviour of Debian's `rancid`
//! 3.13-2 package (`/usr/share/perl5/rancid/{ios,aeos,nxos,frr}.pm`, the `WriteTerm` filters;
//! rancid.types.base maps Arista to `aeos`, Cisco to `ios`, Cisco NX-OS to `nxos`; BSD-style
//! licence), run at its strictest settings: `FILTER_PWDS=ALL`, `NOCOMMSTR=YES`. RANCID reads a
//! config line by line and the first filter that matches a line replaces it (commented out with
//! `!`); only the filters are ported, not its sorting. It has no SONiC or Cumulus module: Cumulus
//! files are run through its FRR module (`frr.pm`), SONiC gets none.

use std::sync::LazyLock;

use lifeline_types::Platform;
use regex::Regex;

/// What a filter does with a matching line.
#[derive(Clone, Copy)]
enum Act {
    /// The line becomes this template (`${n}` groups; `{post}` is Perl's `$'`, the text after the
    /// match).
    To(&'static str),
    /// The line is kept as it is and no later filter sees it (`ProcessHistory(…, "$_") && next`).
    Keep,
    /// `snmp-server host A …`: the tokens after the address are walked and the first one that is
    /// not a keyword (the community) and all after it are removed; `vrf` skips its name where the
    /// module knows `vrf`.
    SnmpHost { vrf: bool },
}

type Filter = (&'static str, Act);

const IOS: &[Filter] = &[
    (r"^(enable )?(password|passwd)( level \d+)? ", Act::To("!${1}${2}${3} <removed>")),
    (r"^(enable secret) ", Act::To("!${1} <removed>")),
    (r"^username (\S+)(\s.*)? secret ", Act::To("!username ${1}${2} secret <removed>")),
    (r"^username (\S+)(\s.*)? password ((\d) \S+|\S+)", Act::To("!username ${1}${2} password <removed>")),
    (r"^(wlccp \S+ username (\S+)(\s.*)? password) (\d \S+|\S+)", Act::To("!${1} <removed>")),
    (r"^( set session-key (in|out)bound ah \d+ )", Act::To("!${1}<removed>")),
    (r"^( set session-key (in|out)bound esp \d+ (authenticator|cypher) )", Act::To("!${1}<removed>")),
    (r"^(\s*)password ", Act::To("!${1}password <removed>")),
    (r"^(\s*)secret ", Act::To("!${1}secret <removed>")),
    (r"^\s*(.*?neighbor.*?) (\S*) password ", Act::To("! ${1} ${2} password <removed>")),
    (r"^(\s*ppp .* hostname) .*", Act::To("!${1} <removed>")),
    (r"^(\s*ppp .* password) \d .*", Act::To("!${1} <removed>")),
    (r"^(ip ftp password) ", Act::To("!${1} <removed>")),
    (r"^( ip ospf authentication-key) ", Act::To("!${1} <removed>")),
    (r"^\s+isis password (\S+)( .*)?", Act::To("!isis password <removed>${2}")),
    (r"^\s+(domain-password|area-password) (\S+)( .*)?", Act::To("!${1} <removed>${3}")),
    (r"^( ip ospf message-digest-key \d+ md5) ", Act::To("!${1} <removed>")),
    (r"^(  message-digest-key \d+ md5 (7|encrypted)) ", Act::To("!${1} <removed>")),
    (r"^((crypto )?isakmp key) (\d )?\S+ ", Act::To("!${1} <removed> {post}")),
    (r"^(\s+standby \d+ authentication) ", Act::To("!${1} <removed>")),
    (r"^(\s+key-string \d?)", Act::To("!${1} <removed>")),
    (r"^( l2tp tunnel \S+ password)", Act::To("!${1} <removed>")),
    (r"^( digest secret 7?)", Act::To("!${1} <removed>")),
    (r"^(vpdn username (\S+) password)", Act::To("!${1} <removed>")),
    (r"^(( ikev2)? (local|remote)-authentication pre-shared-key ).*", Act::To("!${1} <removed> {post}")),
    (r"^(( ikev1)? pre-shared-key | key |failover key ).*", Act::To("!${1} <removed> {post}")),
    (r"(\s+ldap-login-password )\S+(.*)", Act::To("!${1} <removed> {post}")),
    (r"^\s+(wpa-psk ascii|hex \d) ", Act::To("!${1} <removed>")),
    (r"^( cable shared-secret )", Act::To("!${1} <removed>")),
    (r"^snmp-server host (\d+\.\d+\.\d+\.\d+) ", Act::SnmpHost { vrf: true }),
    (r"^(snmp-server .*community) ([08] )?(\S+)", Act::To("!${1} <removed>{post}")),
    (r"^((tacacs|radius)-server\s(\w*[-\s(\s\S+])*\s?key) (\d )?\S+", Act::To("!${1} <removed>{post}")),
    (r"^(ntp authentication-key \d+ md5) ", Act::To("!${1} <removed>")),
];

const AEOS: &[Filter] = &[
    (r"^(enable )?(password|passwd)( level \d+)? ", Act::To("!${1}${2}${3} <removed>")),
    (r"^(enable secret) ", Act::To("!${1} <removed>")),
    (r"^username (\S+)(\s.*)? secret ", Act::To("!username ${1}${2} secret <removed>")),
    (r"^username (\S+)(\s.*)? password ((\d) \S+|\S+)", Act::To("!username ${1}${2} password <removed>")),
    (r"^(\s*)password ", Act::To("!${1}password <removed>")),
    (r"^(\s*)secret ", Act::To("!${1}secret <removed>")),
    (r"^\s*neighbor (\S*) password ", Act::To("! neighbor ${1} password <removed>")),
    (r"^( ip ospf authentication-key) ", Act::To("!${1} <removed>")),
    (r"^\s+isis password (\S+)( .*)?", Act::To("!isis password <removed>${2}")),
    (r"^\s+(domain-password|area-password) (\S+)( .*)?", Act::To("!${1} <removed>${3}")),
    (r"^( ip ospf message-digest-key \d+ md5) ", Act::To("!${1} <removed>")),
    (r"^(  message-digest-key \d+ md5 (7|encrypted)) ", Act::To("!${1} <removed>")),
    (r"^snmp-server host (\d+\.\d+\.\d+\.\d+) ", Act::SnmpHost { vrf: true }),
    (r"^(snmp-server community) (\S+)", Act::To("!${1} <removed>{post}")),
    (r"^((tacacs|radius)-server\s(\w*[-\s(\s\S+])*\s?key) (\d )?\w+", Act::To("!${1} <removed>{post}")),
    (r"^(ntp authentication-key \d+ md5) ", Act::To("!${1} <removed>")),
];

const NXOS: &[Filter] = &[
    (r"^username (\S+) password (\d) (\S+)(\s.*)$", Act::To("!username ${1} password <removed>${4}")),
    (r"^username (\S+) .*$", Act::Keep),
    (r"^\s*(.*?neighbor \S*) password ", Act::To("! ${1} password <removed>")),
    (r"^(snmp-server community) (\S+)", Act::To("!${1} <removed>{post}")),
    (r"^snmp-server host (\d+\.\d+\.\d+\.\d+) ", Act::SnmpHost { vrf: true }),
    (
        r"^snmp-server user (\S+) (\S+) auth md5 (\S+) priv (\S+) localizedkey$",
        Act::To("!snmp-server user ${1} ${2} auth md5 <removed> priv <removed> localizedkey"),
    ),
    (r"^snmp-server user (\S+) .*$", Act::Keep),
    (r"^(\s*)password (\d) (\S+)(\s.*)?$", Act::To("!${1}password <removed>${4}")),
    (r#"^((tacacs|radius)-server.*?\bkey\b.*?) ".*?"(.*)"#, Act::To("!${1} <removed>${3}")),
];

const FRR: &[Filter] = &[
    (r"^((enable )?password( \d)?) ", Act::To("!${1} <removed>")),
    (r"^username (\S+)(\s.*)? password ((\d) \S+|\S+)", Act::To("!username ${1}${2} password <removed>")),
    (r"^\s*neighbor (\S*) password ", Act::To("! neighbor ${1} password <removed>")),
    (r"^snmp-server host (\d+\.\d+\.\d+\.\d+) ", Act::SnmpHost { vrf: false }),
    (r"^(snmp-server community) (\S+)", Act::To("!${1} <removed>{post}")),
    (r"^(tacacs-server|radius-server) key ", Act::To("!${1} key <removed>")),
    (r"^(tacacs-server host \S+( .*)? key) (\d )?\S+", Act::To("!${1} <removed>")),
    (r"^( isis authentication-key) \d \S+", Act::To("!${1} <removed>{post}")),
    (r"^(ip msdp password \S+) ", Act::To("!${1} <removed>")),
];

type Compiled = Vec<(Regex, Act)>;

fn compile(filters: &[Filter]) -> Compiled {
    filters.iter().map(|(re, act)| (Regex::new(re).expect("rancid filter"), *act)).collect()
}

static COMPILED: LazyLock<[Compiled; 4]> =
    LazyLock::new(|| [compile(IOS), compile(AEOS), compile(NXOS), compile(FRR)]);

/// RANCID's walk of an `snmp-server host` line's tokens after the address.
fn snmp_host(ip: &str, rest: &str, vrf: bool) -> String {
    let mut line = format!("snmp-server host {ip}");
    let mut tokens = rest.split_whitespace();
    while let Some(t) = tokens.next() {
        if t == "version" || (vrf && t == "vrf") {
            line = format!("{line} {t} {}", tokens.next().unwrap_or(""));
        } else if matches!(t, "inform" | "informs" | "trap" | "traps" | "auth" | "noauth") {
            line = format!("{line} {t}");
        } else {
            let rest: Vec<&str> = tokens.collect();
            return format!("!{line} <removed> {}", rest.join(" "));
        }
    }
    line
}

fn filter_line(filters: &Compiled, line: &str) -> String {
    for (re, act) in filters {
        let Some(c) = re.captures(line) else { continue };
        let post = &line[c.get(0).map_or(0, |m| m.end())..];
        return match act {
            Act::Keep => line.to_owned(),
            Act::To(template) => {
                let mut out = String::new();
                c.expand(template, &mut out);
                out.replace("{post}", post)
            }
            Act::SnmpHost { vrf } => snmp_host(&c[1], post, *vrf),
        };
    }
    line.to_owned()
}

/// The config as RANCID would store it (line for line), or `None` where it has no module.
pub fn scrub(platform: Platform, text: &str) -> Option<String> {
    let filters = match platform {
        Platform::Ios => &COMPILED[0],
        Platform::Eos => &COMPILED[1],
        Platform::Nxos => &COMPILED[2],
        Platform::Cumulus => &COMPILED[3],
        _ => return None,
    };
    Some(text.lines().map(|l| filter_line(filters, l) + "\n").collect())
}
