//! NetBox devices (`/api/dcim/devices/`, one page of its JSON) → imported servers.
//!
//! What is read, per device: `name`; the role's slug (`role`, or `device_role` before NetBox 4) mapped to a
//! Lifeline role; `site.name`, `rack.name`, `device_type.model`; the BMC address from `oob_ip` (NetBox
//! 3.6+: the out-of-band IP, the one Lifeline needs) — never from `primary_ip`, which is in-band and becomes
//! the frontend address; GPUs from the custom fields `gpu_count` and `gpu_model`. Devices whose role maps
//! to nothing (switches, PDUs, patch panels) are skipped and counted: a switch needs a management
//! address, platform and fabric that NetBox's device record does not say.

use lifeline_types::{DeviceName, Role};
use serde_json::Value;

use super::Imported;

/// Which Lifeline role a NetBox role slug is: the operator's map first, then the slug's words.
#[derive(Debug, Clone, Default)]
pub struct RoleMap(pub Vec<(String, Role)>);

impl RoleMap {
    pub fn role(&self, slug: &str) -> Option<Role> {
        if let Some((_, r)) = self.0.iter().find(|(s, _)| s == slug) {
            return Some(*r);
        }
        let has = |w: &str| slug.split(['-', '_']).any(|p| p == w);
        if has("gpu") || has("dgx") || has("hgx") {
            Some(Role::GpuNode)
        } else if has("head") || has("login") || has("control") {
            Some(Role::HeadNode)
        } else if has("storage") {
            Some(Role::StorageServer)
        } else {
            None
        }
    }
}

/// One page: the servers, the devices skipped (name, role slug), and the next page's URL.
#[derive(Debug, Default)]
pub struct Page {
    pub devices: Vec<Imported>,
    pub skipped: Vec<(String, String)>,
    pub next: Option<String>,
    /// `count`: every device the query matches, over all pages.
    pub count: Option<u64>,
}

/// Reads one page of `/api/dcim/devices/`.
pub fn page(doc: &Value, roles: &RoleMap) -> Result<Page, String> {
    let results =
        doc.get("results").and_then(Value::as_array).ok_or("not a NetBox list: no `results` array")?;
    let mut out = Page {
        next: doc.get("next").and_then(Value::as_str).map(str::to_owned),
        count: doc.get("count").and_then(Value::as_u64),
        ..Page::default()
    };
    for (i, d) in results.iter().enumerate() {
        let s = |v: Option<&Value>| {
            v.and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
        };
        let Some(name) = s(d.get("name")) else {
            out.skipped.push((
                format!("(unnamed #{})", d.get("id").and_then(Value::as_u64).unwrap_or(i as u64)),
                String::new(),
            ));
            continue;
        };
        let slug = s(d.get("role").and_then(|r| r.get("slug")))
            .or_else(|| s(d.get("device_role").and_then(|r| r.get("slug"))))
            .unwrap_or_default();
        let Some(role) = roles.role(&slug) else {
            out.skipped.push((name, slug));
            continue;
        };
        if DeviceName::new(name.clone()).is_err() {
            out.skipped.push((name, slug));
            continue;
        }
        let ip = |key: &str| {
            s(d.get(key).and_then(|v| v.get("address"))).map(|a| a.split('/').next().unwrap_or("").to_owned())
        };
        let custom = d.get("custom_fields");
        let gpus = custom
            .and_then(|c| c.get("gpu_count"))
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        out.devices.push(Imported {
            name,
            role: Some(role),
            rack: s(d.get("rack").and_then(|r| r.get("name"))),
            site: s(d.get("site").and_then(|r| r.get("name"))),
            bmc: ip("oob_ip").map(|host| super::BmcAddr { host, port: None }),
            model: s(d.get("device_type").and_then(|t| t.get("model"))),
            gpus: gpus.filter(|n| *n > 0),
            gpu_model: s(custom.and_then(|c| c.get("gpu_model"))),
            frontend: ip("primary_ip4").or_else(|| ip("primary_ip6")),
            line: i + 1,
            ..Imported::default()
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written for this test in the shape of NetBox 4's `/api/dcim/devices/` answer (nested objects
    /// trimmed to the fields read).
    const PAGE: &str = r#"{
      "count": 3, "next": "https://netbox.example/api/dcim/devices/?limit=3&offset=3", "previous": null,
      "results": [
        { "id": 7, "name": "dgx-a01", "role": { "slug": "gpu-server" },
          "device_type": { "model": "DGX H100", "manufacturer": { "name": "NVIDIA" } },
          "site": { "name": "hall-1" }, "rack": { "name": "a01" },
          "primary_ip4": { "address": "10.1.0.7/24" }, "oob_ip": { "address": "10.250.1.7/24" },
          "custom_fields": { "gpu_count": 8, "gpu_model": "NVIDIA H100 80GB HBM3" } },
        { "id": 8, "name": "login-1", "device_role": { "slug": "login" }, "site": { "name": "hall-1" },
          "rack": { "name": "a01" }, "oob_ip": null, "custom_fields": {} },
        { "id": 9, "name": "leaf-1", "role": { "slug": "leaf-switch" }, "rack": { "name": "a01" } }
      ]
    }"#;

    #[test]
    fn servers_are_read_and_the_rest_skipped() {
        let p = page(&serde_json::from_str(PAGE).unwrap(), &RoleMap::default()).unwrap();
        assert_eq!(p.count, Some(3));
        assert!(p.next.as_deref().is_some_and(|n| n.ends_with("offset=3")));
        assert_eq!(p.skipped, [("leaf-1".to_owned(), "leaf-switch".to_owned())]);
        let d = &p.devices[0];
        assert_eq!(d.role, Some(Role::GpuNode));
        assert_eq!(
            d.bmc.as_ref().map(|b| b.host.as_str()),
            Some("10.250.1.7"),
            "the OOB IP, not the primary"
        );
        assert_eq!(d.frontend.as_deref(), Some("10.1.0.7"));
        assert_eq!((d.gpus, d.gpu_model.as_deref()), (Some(8), Some("NVIDIA H100 80GB HBM3")));
        assert_eq!(p.devices[1].role, Some(Role::HeadNode), "the pre-4.0 `device_role` key");
        assert_eq!(p.devices[1].bmc, None);
        let mapped = RoleMap(vec![("leaf-switch".into(), Role::StorageServer)]);
        assert!(page(&serde_json::from_str(PAGE).unwrap(), &mapped).unwrap().skipped.is_empty());
        assert!(page(&serde_json::json!({ "detail": "Invalid token." }), &RoleMap::default()).is_err());
    }
}
