//! FRU data and SEL records come from the BMC byte for byte: every input must parse to a value or an error,
//! never a panic (the FRU area offsets and type/length bytes are attacker-controlled on a hostile OOB
//! network).
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use lifeline_bmc::events::sel_event;
use lifeline_bmc::fru::parse_fru;
use lifeline_ipmi::wire::sel::SelRecord;

fuzz_target!(|data: &[u8]| {
    let _ = parse_fru(data);
    if let Ok(r) = SelRecord::decode(data) {
        let _ = sel_event(&r, &HashMap::new());
    }
});
