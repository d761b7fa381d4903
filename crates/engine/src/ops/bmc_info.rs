//! Reading what identifies each BMC (`bmc info`: firmware versions, model, serial, LAN MAC), its sensor
//! list (`sdr`) and its FRU fields (`fru`); plus the fleet's version drift (`--group-by version`).

use std::collections::BTreeMap;

use lifeline_bmc::{BmcInfo, FruView, SdrList};
use serde::Serialize;

use crate::context::Lifeline;
use crate::error::Result;
use crate::ops::Row;
use crate::targets::BmcSelection;

/// BMCs that report the same BMC and BIOS firmware versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionGroup {
    pub model: Option<String>,
    pub bmc_firmware: Option<String>,
    pub bios_version: Option<String>,
    pub bmcs: Vec<String>,
}

/// Groups the readable rows by (model, BMC firmware, BIOS version), largest group first: every group after
/// the first of a model is drift.
pub fn group_by_version(rows: &[Row<BmcInfo>]) -> Vec<VersionGroup> {
    /// (model, BMC firmware, BIOS version).
    type Key = (Option<String>, Option<String>, Option<String>);
    let mut m: BTreeMap<Key, Vec<String>> = BTreeMap::new();
    for i in rows.iter().filter_map(|r| r.result.as_ref().ok()) {
        let k = (i.model.clone(), i.bmc_firmware.clone(), i.bios_version.clone());
        m.entry(k).or_default().push(i.bmc.clone());
    }
    let mut g: Vec<VersionGroup> = m
        .into_iter()
        .map(|((model, bmc_firmware, bios_version), bmcs)| VersionGroup {
            model,
            bmc_firmware,
            bios_version,
            bmcs,
        })
        .collect();
    g.sort_by(|a, b| a.model.cmp(&b.model).then(b.bmcs.len().cmp(&a.bmcs.len())));
    g
}

impl Lifeline {
    pub async fn bmc_info(&self, sel: &BmcSelection) -> Result<Vec<Row<BmcInfo>>> {
        self.each_bmc(sel, |bmc| async move { bmc.info().await }).await
    }

    pub async fn sdr(&self, sel: &BmcSelection) -> Result<Vec<Row<SdrList>>> {
        self.each_bmc(sel, |bmc| async move { bmc.sdr_list().await }).await
    }

    pub async fn fru(&self, sel: &BmcSelection) -> Result<Vec<Row<FruView>>> {
        self.each_bmc(sel, |bmc| async move { bmc.fru().await }).await
    }
}
