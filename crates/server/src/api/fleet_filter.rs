//! Filtering and paging of the fleet on the server (`GET /api/v1/fleet`): the browser never holds more
//! devices than it shows, and a count always describes the devices the filter left. `q` reads as the
//! CLI's targets (`lifeline_inventory::select`: names, racks, roles, groups, sites, globs), so `r02` and
//! `gpu-node-0[1-4]` mean in the console what they mean on the command line; a word that names none of
//! those matches the devices whose name contains it.

use std::collections::HashSet;

use lifeline_inventory::{Inventory, SelectError, select};

use crate::api::overview::{FLEET_PAGE_MAX, FleetPage, FleetQuery, FleetRow};
use crate::error::{ApiError, ApiResult};
use crate::fleet_state::{DeviceState, StateCounts};

/// The page of `rows` (one per inventory device, in inventory order) the query asks for.
pub fn page(inv: &Inventory, rows: &[FleetRow], q: &FleetQuery) -> ApiResult<FleetPage> {
    let states = match q.state.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(list) => Some(
            list.split(',')
                .map(|s| {
                    DeviceState::parse(s.trim()).ok_or_else(|| {
                        let known: Vec<&str> = DeviceState::ALL.iter().map(|s| s.as_str()).collect();
                        ApiError::bad_request(format!(
                            "state `{}` is not a device state (one of: {})",
                            s.trim(),
                            known.join(", ")
                        ))
                    })
                })
                .collect::<ApiResult<HashSet<DeviceState>>>()?,
        ),
    };
    let list = |v: &Option<String>| -> Option<HashSet<String>> {
        v.as_deref()
            .map(|s| {
                s.split(',').map(|x| x.trim().to_owned()).filter(|x| !x.is_empty()).collect::<HashSet<_>>()
            })
            .filter(|s| !s.is_empty())
    };
    let (roles, racks, sites) = (list(&q.role), list(&q.rack), list(&q.site));
    let named = match q.q.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(text) => Some(matching_names(inv, text)?),
    };
    let limit = q.limit.unwrap_or(500);
    if limit == 0 || limit > FLEET_PAGE_MAX {
        return Err(ApiError::bad_request(format!("limit must be 1 to {FLEET_PAGE_MAX}, not {limit}")));
    }
    let offset = q.offset.unwrap_or(0);
    let but_state: Vec<&FleetRow> = rows
        .iter()
        .filter(|r| roles.as_ref().is_none_or(|s| s.contains(&r.role)))
        .filter(|r| racks.as_ref().is_none_or(|s| s.contains(&r.rack)))
        .filter(|r| sites.as_ref().is_none_or(|s| s.contains(&r.site)))
        .filter(|r| named.as_ref().is_none_or(|n| n.contains(r.name.as_str())))
        .collect();
    let counts = StateCounts::of(but_state.iter().map(|r| &r.state));
    let matched: Vec<&FleetRow> =
        but_state.into_iter().filter(|r| states.as_ref().is_none_or(|s| s.contains(&r.state))).collect();
    Ok(FleetPage {
        total: rows.len(),
        matched: matched.len(),
        counts,
        offset,
        limit,
        devices: matched.into_iter().skip(offset).take(limit).cloned().collect(),
    })
}

/// The names `q` picks: each comma- or space-separated term as a CLI target, or as part of a name.
fn matching_names(inv: &Inventory, q: &str) -> ApiResult<HashSet<String>> {
    let mut out = HashSet::new();
    for term in q.split([',', ' ']).map(str::trim).filter(|t| !t.is_empty()) {
        match select(inv, &[term.to_owned()]) {
            Ok(ds) => out.extend(ds.iter().map(|d| d.name.to_string())),
            Err(SelectError::NoMatch { .. }) => {}
            Err(e @ SelectError::BadGlob { .. }) => {
                return Err(ApiError::bad_request(format!("q: {}", lifeline_types::error_chain(&e))));
            }
        }
        if !term.contains(['*', '?', '[']) {
            let low = term.to_lowercase();
            out.extend(
                inv.devices
                    .iter()
                    .filter(|d| d.name.as_str().to_lowercase().contains(&low))
                    .map(|d| d.name.to_string()),
            );
        }
    }
    Ok(out)
}
