//! The scrubbing corpus: per platform, a file of secret-bearing lines written from the vendors'
//! command references, each secret marked `⟦…⟧`. Every secret must be gone from the scrubbed copy,
//! from a diff between two versions and from the git export; every other byte must come through
//! unchanged. Generated variants (spacing, optional type tokens, algorithms, key lengths) keep
//! probing the same rules, and the six cases of issue 18 are pinned as regression tests.

use std::path::Path;

use lifeline_netcfg::blobs::BlobStore;
use lifeline_netcfg::index::{MemoryIndex, VersionIndex};
use lifeline_netcfg::platform::normalise;
use lifeline_netcfg::scrub::{MASK, TagKey, untagged};
use lifeline_netcfg::{diff, driver_for, git_export};
use lifeline_types::{DeviceName, Platform};
use proptest::prelude::*;

fn key() -> TagKey {
    TagKey::from_bytes([5; 32])
}

/// Scrubbed, tags dropped: the expectations are written with `<removed>` (tags are checked where a
/// diff must show that a secret changed).
fn scrub(p: Platform, config: &str) -> String {
    untagged(&lifeline_netcfg::scrub::scrub(p, config, &key()))
}

const OPEN: char = '⟦';
const CLOSE: char = '⟧';

/// A corpus file as config text, expected scrubbed text, and the secrets.
struct Corpus {
    config: String,
    expected: String,
    secrets: Vec<String>,
}

fn load(name: &str) -> Corpus {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut c = Corpus { config: String::new(), expected: String::new(), secrets: Vec::new() };
    for line in text.split_inclusive('\n') {
        if line.starts_with("##") {
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find(OPEN) {
            let end = rest.find(CLOSE).expect("unclosed secret marker");
            let secret = &rest[start + OPEN.len_utf8()..end];
            c.config.push_str(&rest[..start]);
            c.expected.push_str(&rest[..start]);
            c.config.push_str(secret);
            c.expected.push_str(MASK);
            c.secrets.push(secret.to_owned());
            rest = &rest[end + CLOSE.len_utf8()..];
        }
        c.config.push_str(rest);
        c.expected.push_str(rest);
    }
    for s in &c.secrets {
        assert!(s.len() >= 6, "{name}: corpus secret `{s}` too short to search for");
        assert!(!c.expected.contains(s.as_str()), "{name}: secret `{s}` also appears as non-secret text");
    }
    c
}

const LINE_CORPORA: &[(Platform, &str)] = &[
    (Platform::Ios, "ios.cfg"),
    (Platform::Nxos, "nxos.cfg"),
    (Platform::Eos, "eos.cfg"),
    (Platform::Cumulus, "cumulus.nv"),
];

#[test]
fn line_corpora_scrub_exactly_the_secrets() {
    for (p, name) in LINE_CORPORA {
        let c = load(name);
        let got = scrub(*p, &c.config);
        let mismatches: Vec<String> = got
            .lines()
            .zip(c.expected.lines())
            .filter(|(g, e)| g != e)
            .map(|(g, e)| format!("  got:      {g}\n  expected: {e}"))
            .collect();
        assert!(mismatches.is_empty(), "{p} ({name}):\n{}", mismatches.join("\n"));
        assert_eq!(got, c.expected, "{p}: whole text (line endings, trailing whitespace)");
        for s in &c.secrets {
            assert!(!got.contains(s.as_str()), "{p}: `{s}` leaked");
        }
        let tagged = lifeline_netcfg::scrub::scrub(*p, &c.config, &key());
        assert_eq!(
            lifeline_netcfg::scrub::scrub(*p, &tagged, &key()),
            tagged,
            "{p}: scrubbing is idempotent"
        );
    }
}

/// Every JSON string (object keys and values) of a document.
fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                out.push(k.clone());
                strings(v, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        _ => {}
    }
}

#[test]
fn sonic_corpus_masks_secrets_and_keeps_every_other_string() {
    let c = load("sonic.json");
    let got = scrub(Platform::Sonic, &c.config);
    for s in &c.secrets {
        assert!(!got.contains(s.as_str()), "`{s}` leaked:\n{got}");
    }
    let mut all = Vec::new();
    strings(&serde_json::from_str(&c.config).unwrap(), &mut all);
    for s in all.iter().filter(|s| !c.secrets.contains(s)) {
        assert!(got.contains(&format!("\"{s}\"")), "non-secret `{s}` lost:\n{got}");
    }
    let tagged = lifeline_netcfg::scrub::scrub(Platform::Sonic, &c.config, &key());
    assert_eq!(lifeline_netcfg::scrub::scrub(Platform::Sonic, &tagged, &key()), tagged);
}

/// The same config with every secret changed (a rotated key) and one real change.
fn rotated(c: &Corpus) -> String {
    let mut s = c.config.clone();
    for secret in &c.secrets {
        s = s.replace(secret.as_str(), &format!("{secret}R0t"));
    }
    s.replace("to spine1", "to spine2")
}

#[tokio::test]
async fn secrets_never_reach_the_diff_or_the_git_export() {
    let dir = tempfile::tempdir().unwrap();
    let blobs = BlobStore::new(dir.path().join("blobs"));
    let index = MemoryIndex::default();
    let mut all_secrets = Vec::new();
    let corpora = LINE_CORPORA.iter().copied().chain([(Platform::Sonic, "sonic.json")]);
    for (p, name) in corpora {
        let c = load(name);
        let d = driver_for(p);
        let device = DeviceName::new(format!("sw-{p}")).unwrap();
        let v1 = normalise(d.as_ref(), &c.config, &key());
        let v2_raw = rotated(&c);
        let v2 = normalise(d.as_ref(), &v2_raw, &key());
        let secrets: Vec<String> = c.secrets.iter().flat_map(|s| [s.clone(), format!("{s}R0t")]).collect();
        let u = diff::unified(&v1, &v2, "v1", "v2");
        assert!(!u.is_empty(), "{p}: the real change shows");
        // Every rotated secret changes its tag, so the diff shows that the secrets changed.
        let changed = diff::hunks(&v1, &v2)
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|(k, _)| *k != diff::LineKind::Context)
            .count();
        assert!(changed > 2, "{p}: rotated secrets do not show in the diff:\n{u}");
        for s in &secrets {
            assert!(!v1.contains(s.as_str()) && !v2.contains(s.as_str()), "{p}: `{s}` stored");
            assert!(!u.contains(s.as_str()), "{p}: `{s}` in the diff:\n{u}");
        }
        for (text, minute) in [(&v1, 1), (&v2, 2)] {
            let id = blobs.put(text.clone().into_bytes()).await.unwrap();
            let at = chrono::DateTime::from_timestamp(1_767_225_600 + minute * 60, 0).unwrap();
            index.record(&device, p, &id, text.len() as u64, at, false).await.unwrap();
        }
        all_secrets.extend(secrets);
    }
    let repo_dir = dir.path().join("git");
    assert_eq!(git_export::export_git(&repo_dir, &index, &blobs).await.unwrap(), 10);
    // Every object in the repository (blobs, trees, commits), decompressed.
    let repo = git2::Repository::open(&repo_dir).unwrap();
    let odb = repo.odb().unwrap();
    let mut objects = Vec::new();
    odb.foreach(|oid| {
        objects.push(*oid);
        true
    })
    .unwrap();
    assert!(objects.len() >= 20, "{} objects", objects.len());
    for oid in objects {
        let obj = odb.read(oid).unwrap();
        let data = String::from_utf8_lossy(obj.data());
        for s in &all_secrets {
            assert!(!data.contains(s.as_str()), "`{s}` in git object {oid}");
        }
    }
}

/// The six cases of issue 18, pinned.
#[test]
fn issue_18_regressions() {
    let ios = |l: &str| scrub(Platform::Ios, l);
    assert_eq!(
        ios("ntp authentication-key 1 md5 NtpSecret123 7\n"),
        "ntp authentication-key 1 md5 <removed> 7\n"
    );
    assert_eq!(
        scrub(Platform::Eos, "ntp authentication-key 1 md5 7 NtpSecret123\n"),
        "ntp authentication-key 1 md5 7 <removed>\n"
    );
    assert_eq!(
        ios("interface Serial0\n ppp chap password 7 X\n"),
        "interface Serial0\n ppp chap password 7 <removed>\n"
    );
    assert_eq!(
        ios("interface Serial0\n ppp pap sent-username U password 7 X\n"),
        "interface Serial0\n ppp pap sent-username U password 7 <removed>\n"
    );
    assert_eq!(
        ios("snmp-server user u g v3 auth sha A priv aes 128 P\n"),
        "snmp-server user u g v3 auth sha <removed> priv aes 128 <removed>\n"
    );
    for p in Platform::ALL.iter().filter(|p| **p != Platform::Sonic) {
        let l = "interface Ethernet1\n description uplink -- More -- to spine1\n";
        assert_eq!(scrub(*p, l), l, "{p}");
        let trailing = "hostname x  \n description kept \t\n";
        assert_eq!(scrub(*p, trailing), trailing, "{p}: trailing whitespace");
    }
}

fn secret() -> impl Strategy<Value = String> {
    "[A-Za-z0-9$/.]{8,20}".prop_map(|s| format!("Zq{s}"))
}

fn word() -> impl Strategy<Value = String> {
    "[a-z]{3,8}".prop_filter("not a keyword", |w| {
        !["secret", "password", "auth", "priv", "key", "version", "remote", "encrypted"].contains(&w.as_str())
    })
}

/// Render `template` twice: as a config line (secrets in) and as the expected scrubbed line.
/// `{S}` is a secret, `{T}` an optional type token, `{H}` an algorithm, `{P}` a privacy cipher with
/// its key length, `{U}` a name, `{N}` a number; every space becomes 1–3 spaces.
#[derive(Debug, Clone)]
struct Fill {
    secrets: Vec<String>,
    types: Vec<&'static str>,
    hashes: Vec<&'static str>,
    privs: Vec<&'static str>,
    words: Vec<String>,
    numbers: Vec<u16>,
    spaces: Vec<usize>,
    trailing: usize,
}

fn fill() -> impl Strategy<Value = Fill> {
    (
        prop::collection::vec(secret(), 4),
        prop::collection::vec(
            prop::sample::select(vec!["", " 0", " 5", " 7", " 8", " 9", " sha512", " 8a"]),
            4,
        ),
        prop::collection::vec(prop::sample::select(vec!["md5", "sha", "sha256", "sha512", "sha-256"]), 2),
        prop::collection::vec(prop::sample::select(vec!["des", "3des", "aes 128", "aes 192", "aes 256"]), 2),
        prop::collection::vec(word(), 4),
        prop::collection::vec(1u16..4000, 4),
        prop::collection::vec(1usize..4, 24),
        0usize..3,
    )
        .prop_map(|(secrets, types, hashes, privs, words, numbers, spaces, trailing)| Fill {
            secrets,
            types,
            hashes,
            privs,
            words,
            numbers,
            spaces,
            trailing,
        })
}

fn render(template: &str, f: &Fill) -> (String, String, Vec<String>) {
    let (mut cfg, mut exp, mut used) = (String::new(), String::new(), Vec::new());
    let mut counters = [0usize; 6];
    let mut next = |i: usize| {
        counters[i] += 1;
        counters[i] - 1
    };
    let mut rest = template;
    let mut sp = 0;
    while let Some(c) = rest.chars().next() {
        let slot = ["{S}", "{T}", "{H}", "{P}", "{U}", "{N}"].iter().position(|s| rest.starts_with(s));
        if let Some(i) = slot {
            let n = next(i);
            let (a, b) = match i {
                0 => {
                    let s = f.secrets[n % 4].clone();
                    used.push(s.clone());
                    (s, MASK.to_owned())
                }
                1 => (f.types[n % 4].to_owned(), f.types[n % 4].to_owned()),
                2 => (f.hashes[n % 2].to_owned(), f.hashes[n % 2].to_owned()),
                3 => (f.privs[n % 2].to_owned(), f.privs[n % 2].to_owned()),
                4 => (f.words[n % 4].clone(), f.words[n % 4].clone()),
                _ => (f.numbers[n % 4].to_string(), f.numbers[n % 4].to_string()),
            };
            cfg.push_str(&a);
            exp.push_str(&b);
            rest = &rest[3..];
            continue;
        }
        if c == ' ' && !cfg.ends_with('\n') && !cfg.is_empty() && !rest[1..].starts_with(' ') {
            let n = " ".repeat(f.spaces[sp % f.spaces.len()]);
            sp += 1;
            cfg.push_str(&n);
            exp.push_str(&n);
        } else if c == '\n' {
            let t = " ".repeat(f.trailing);
            cfg.push_str(&t);
            exp.push_str(&t);
            cfg.push('\n');
            exp.push('\n');
        } else {
            cfg.push(c);
            exp.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    cfg.push('\n');
    exp.push('\n');
    (cfg, exp, used)
}

const TEMPLATES: &[(Platform, &str)] = &[
    (Platform::Ios, "enable secret{T} {S}"),
    (Platform::Ios, "enable password{T} {S}"),
    (Platform::Ios, "username {U} privilege 15 secret{T} {S}"),
    (Platform::Ios, "username {U} password{T} {S}"),
    (Platform::Ios, "ntp authentication-key {N} md5 {S} 7"),
    (Platform::Ios, "ntp authentication-key {N} md5 {S}"),
    (Platform::Ios, "snmp-server user {U} {U} v3 auth {H} {S} priv {P} {S}"),
    (Platform::Ios, "snmp-server user {U} {U} v3 auth {H} {S}"),
    (Platform::Ios, "snmp-server community {S} RO"),
    (Platform::Ios, "snmp-server host 10.0.0.{N} version 2c {S}"),
    (Platform::Ios, "tacacs-server host 10.0.0.{N} key{T} {S}"),
    (Platform::Ios, "radius-server host 10.0.0.{N} auth-port 1812 key{T} {S}"),
    (Platform::Ios, "tacacs server T{N}\n key{T} {S}"),
    (Platform::Ios, "key chain K{N}\n key {N}\n  key-string{T} {S}"),
    (Platform::Ios, "interface Serial0\n ppp chap password{T} {S}"),
    (Platform::Ios, "interface Serial0\n ppp pap sent-username {U} password{T} {S}"),
    (Platform::Ios, "interface Gi0/{N}\n ip ospf message-digest-key {N} md5{T} {S}"),
    (Platform::Ios, "router bgp {N}\n neighbor 10.0.0.{N} password{T} {S}"),
    (Platform::Ios, "crypto isakmp key{T} {S} address 192.0.2.{N}"),
    (Platform::Ios, "line vty 0 4\n password{T} {S}"),
    (Platform::Nxos, "username {U} password{T} {S} role network-admin"),
    (Platform::Nxos, "tacacs-server host 10.0.0.{N} key{T} \"{S}\""),
    (Platform::Nxos, "radius-server key{T} \"{S}\""),
    (Platform::Nxos, "snmp-server user {U} network-admin auth {H} {S} priv aes-128 {S}"),
    (Platform::Nxos, "ntp authentication-key {N} md5 {S} 7"),
    (Platform::Nxos, "router bgp {N}\n  neighbor 10.0.0.{N}\n    password{T} {S}"),
    (Platform::Nxos, "interface Vlan{N}\n  hsrp {N}\n    authentication md5 key-string {S}"),
    (Platform::Nxos, "snmp-server community {S} group network-operator"),
    (Platform::Eos, "username {U} privilege 15 role network-admin secret{T} {S}"),
    (Platform::Eos, "enable password{T} {S}"),
    (Platform::Eos, "ntp authentication-key {N} md5{T} {S}"),
    (Platform::Eos, "snmp-server user {U} {U} v3 auth {H} {S} priv aes256 {S}"),
    (Platform::Eos, "router bgp {N}\n   neighbor 10.0.0.{N} password{T} {S}"),
    (Platform::Eos, "router isis X\n   authentication key{T} {S} level-2"),
    (Platform::Cumulus, "nv set system aaa user {U} hashed-password '{S}'"),
    (Platform::Cumulus, "nv set system aaa tacacs server {N} secret {S}"),
    (Platform::Cumulus, "nv set service snmp-server readonly-community {S} access any"),
    (Platform::Cumulus, "nv set vrf default router bgp neighbor swp{N} password {S}"),
    (Platform::Cumulus, "nv set service snmp-server username {U} auth-sha {S} encrypt-aes {S}"),
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn generated_variants_mask_exactly_the_secret(f in fill()) {
        for (p, t) in TEMPLATES {
            // `{T}` values that a platform does not use for a command are still valid grammar tests:
            // the rule must mask the token after the optional type, whatever the type.
            let (cfg, exp, used) = render(t, &f);
            let got = scrub(*p, &cfg);
            prop_assert_eq!(&got, &exp, "{}: {}", p, t);
            for s in used {
                prop_assert!(!got.contains(s.as_str()));
            }
        }
    }
}

/// The kinds of secret each platform's rules cover, as a table (printed with `--nocapture`), and the
/// ones issue 18 requires.
#[test]
fn coverage_per_platform() {
    use lifeline_netcfg::scrub::{Kind, coverage};
    let mut table =
        String::from("| secret kind | IOS | NX-OS | EOS | SONiC | Cumulus |\n|---|---|---|---|---|---|\n");
    let order = [Platform::Ios, Platform::Nxos, Platform::Eos, Platform::Sonic, Platform::Cumulus];
    for k in Kind::ALL {
        table.push_str(&format!("| {} |", k.label()));
        for p in order {
            table.push_str(if coverage(p).contains(k) { " yes |" } else { " – |" });
        }
        table.push('\n');
    }
    println!("{table}");
    let required = |p: Platform| -> Vec<Kind> {
        use Kind::*;
        match p {
            Platform::Ios => vec![
                EnableSecret,
                UserSecret,
                KeyChain,
                Tacacs,
                Radius,
                SnmpCommunity,
                SnmpV3,
                Bgp,
                Ospf,
                Isis,
                Eigrp,
                Ntp,
                Ppp,
                Isakmp,
                Wireless,
                Dot1x,
                PrivateKey,
                Certificate,
            ],
            Platform::Nxos => {
                vec![
                    EnableSecret,
                    UserSecret,
                    KeyChain,
                    Tacacs,
                    Radius,
                    SnmpCommunity,
                    SnmpV3,
                    Bgp,
                    Ospf,
                    Ntp,
                    PrivateKey,
                ]
            }
            Platform::Eos => vec![
                EnableSecret,
                UserSecret,
                Tacacs,
                Radius,
                SnmpCommunity,
                SnmpV3,
                Bgp,
                Ospf,
                Isis,
                Ntp,
                Dot1x,
                Macsec,
                Isakmp,
                PrivateKey,
            ],
            Platform::Sonic => vec![Tacacs, Radius, SnmpCommunity, SnmpV3, Bgp, Ntp, Macsec, PrivateKey],
            Platform::Cumulus => {
                vec![UserSecret, Tacacs, Radius, SnmpCommunity, SnmpV3, Bgp, Ospf, Ntp, Dot1x]
            }
        }
    };
    for p in order {
        let have = coverage(p);
        for k in required(p) {
            assert!(have.contains(&k), "{p}: {} not covered", k.label());
        }
    }
}
