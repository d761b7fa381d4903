//! The inventory loader on any file an operator (or a broken editor) writes. Properties: every diagnostic
//! points into the file (line and column exist); a model comes back exactly when there is no error; the
//! same text gives the same diagnostics twice (sampled); an accepted inventory has unique device names, and
//! selecting a device by its name picks exactly that device.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use lifeline_inventory::{check_str, select};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let file = Path::new("fuzz/inventory.toml");
    let report = check_str(file, text);
    let lines: Vec<&str> = text.split('\n').collect();
    for d in &report.diagnostics {
        assert!(d.line >= 1 && d.line <= lines.len(), "{d}: no such line ({} lines)", lines.len());
        assert!(d.col >= 1 && d.col <= lines[d.line - 1].len() + 1, "{d}: no such column");
        assert_eq!(d.file, file);
    }
    assert_eq!(report.inventory.is_some(), !report.has_errors(), "model and errors disagree");
    // Loading twice doubles the cost of every input: determinism is checked on one input in four (chosen by
    // the input itself, so a failure reproduces).
    if data.len() % 4 == 0 {
        let again = check_str(file, text);
        let show =
            |r: &lifeline_inventory::Report| r.diagnostics.iter().map(|d| d.to_string()).collect::<Vec<_>>();
        assert_eq!(show(&again), show(&report), "diagnostics are not deterministic");
    }

    if let Some(inv) = &report.inventory {
        for d in &inv.devices {
            let _ = d.fabrics();
            let _ = d.backend_rails().count() + d.storage_rails().count();
        }
        for (i, d) in inv.devices.iter().enumerate() {
            assert!(
                inv.devices[..i].iter().all(|o| o.name != d.name),
                "device {} accepted twice",
                d.name.as_str()
            );
            let picked = select(inv, &[d.name.as_str().to_owned()]).expect("a device's own name selects it");
            assert!(picked.iter().any(|p| p.name == d.name), "{} did not select itself", d.name.as_str());
        }
        let _ = select(inv, &["all".to_owned()]);
        let _ = select(inv, &[String::from_utf8_lossy(&data[..data.len().min(16)]).into_owned()]);
    }
});
