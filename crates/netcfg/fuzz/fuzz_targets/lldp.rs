//! The LLDP parsers and the cabling comparison on arbitrary switch output. Properties: no parser panics;
//! every neighbour returned has a local port; a port matches itself under every spelling rule; comparing
//! the neighbours with cables made from them checks every cable and never counts more as matching.
//!
//! Input: byte 0 picks the output format, the rest is the text.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use lifeline_netcfg::lldp::{Expected, Format, compare, parse, same_port};

const FORMATS: [Format; 5] =
    [Format::SonicTable, Format::LldpdJson, Format::LldpdText, Format::EosDetail, Format::CiscoDetail];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(&rest[..rest.len().min(8192)]);
    let ns = parse(FORMATS[usize::from(pick) % FORMATS.len()], &text);
    let mut expected = Vec::new();
    let mut ports = std::collections::HashSet::new();
    for n in &ns {
        assert!(!n.local_port.is_empty());
        assert!(same_port(&n.local_port, &n.local_port));
        // One cable per port, named the way the neighbour names itself.
        if let (Some(host), Some(nic)) = (&n.system_name, &n.port_id)
            && ports.insert(lifeline_netcfg::lldp::ports::port_key(&n.local_port))
        {
            expected.push(Expected {
                switch: "sw".into(),
                port: n.local_port.clone(),
                device: host.clone(),
                nic: nic.clone(),
                hca: nic.clone(),
            });
        }
    }
    let seen = BTreeMap::from([("sw".to_owned(), ns.clone())]);
    let r = compare(&expected, &seen);
    assert_eq!(r.checked, expected.len());
    assert!(r.ok <= r.checked);
});
