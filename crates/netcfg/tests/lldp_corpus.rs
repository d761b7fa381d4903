//! The LLDP parsers on real switches' outputs: EOS, IOS and NX-OS captures with TextFSM's reading of
//! each (ntc-templates), SONiC `show lldp table` outputs quoted in public repositories. The corpus is
//! kept outside git (its SOURCES file says where each file comes from); the tests find it through
//! `LIFELINE_LLDP_CORPUS` (or `../shared/lldp-corpus`, `/work/lldp-corpus` beside the checkout), skip
//! loudly without it, and fail with `LIFELINE_LLDP_CORPUS_REQUIRED=1`.

use std::path::{Path, PathBuf};

use lifeline_netcfg::lldp::{Format, Neighbor, cisco, eos, parse, sonic};

fn corpus() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = std::env::var_os("LIFELINE_LLDP_CORPUS").map(PathBuf::from).into_iter().chain([
        manifest.join("../../shared/lldp-corpus"),
        manifest.join("../../../shared/lldp-corpus"),
        manifest.join("../../../lldp-corpus"),
    ]);
    for c in candidates {
        if c.join("SOURCES").is_file() {
            return Some(c);
        }
    }
    let why = "LLDP corpus not found (set LIFELINE_LLDP_CORPUS to a folder with SOURCES)";
    if std::env::var("LIFELINE_LLDP_CORPUS_REQUIRED").is_ok_and(|v| v == "1") {
        panic!("{why}");
    }
    eprintln!("SKIP: {why}");
    None
}

/// Every `<name>.<ext>` in `dir` with its `<name>.expect.tsv` rows.
fn cases(dir: &Path, ext: &str) -> Vec<(PathBuf, String, Vec<Vec<String>>)> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for f in files {
        if f.extension().and_then(|e| e.to_str()) != Some(ext) {
            continue;
        }
        let exp = f.with_extension("expect.tsv");
        let rows = std::fs::read_to_string(&exp)
            .unwrap_or_else(|e| panic!("{}: {e}", exp.display()))
            .lines()
            .map(|l| l.split('\t').map(str::to_owned).collect())
            .collect();
        out.push((f.clone(), std::fs::read_to_string(&f).unwrap(), rows));
    }
    out
}

fn s(v: &Option<String>) -> String {
    v.clone().unwrap_or_default()
}

/// Our reading against TextFSM's: local port, system name, port id, chassis id of every neighbour.
fn check_ntc(dir: &str, parse: fn(&str) -> Vec<Neighbor>) -> usize {
    let Some(c) = corpus() else { return 0 };
    let mut n = 0;
    for (file, text, rows) in cases(&c.join("ntc").join(dir), "raw") {
        let got: Vec<Vec<String>> = parse(&text)
            .iter()
            .map(|x| vec![x.local_port.clone(), s(&x.system_name), s(&x.port_id), s(&x.chassis_id)])
            .collect();
        assert_eq!(got, rows, "{}", file.display());
        n += rows.len();
    }
    assert!(n > 0, "no {dir} case in the corpus");
    n
}

#[test]
fn eos_detail_reads_as_textfsm_does() {
    let n = check_ntc("arista_eos", eos::parse_detail);
    eprintln!("EOS: {n} neighbours");
}

#[test]
fn ios_detail_reads_as_textfsm_does() {
    let n = check_ntc("cisco_ios", cisco::parse_detail);
    eprintln!("IOS: {n} neighbours");
}

#[test]
fn nxos_detail_reads_as_textfsm_does() {
    let n = check_ntc("cisco_nxos", cisco::parse_detail);
    eprintln!("NX-OS: {n} neighbours");
}

#[test]
fn sonic_tables_read_as_printed() {
    let Some(c) = corpus() else { return };
    let mut n = 0;
    for (file, text, rows) in cases(&c.join("sonic"), "txt") {
        let got: Vec<Vec<String>> = sonic::parse_table(&text)
            .iter()
            .map(|x| vec![x.local_port.clone(), s(&x.system_name), s(&x.port_id), s(&x.port_descr)])
            .collect();
        assert_eq!(got, rows, "{}", file.display());
        assert_eq!(parse(Format::SonicTable, &text).len(), rows.len());
        n += rows.len();
    }
    assert!(n >= 15, "{n} SONiC rows");
}
