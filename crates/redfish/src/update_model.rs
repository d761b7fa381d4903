//! UpdateService, firmware components and update tasks as plain data, read leniently (a missing property is
//! `None`, never an error), plus the version order a rollout refuses downgrades by and the multipart
//! framing of a pushed image. Pure, so that odd documents and odd version strings are property-tested.
//!
//! Why a version order of our own: vendors' versions are dotted numbers with letters and prefixes (`iLO 6
//! v1.59`, `2.14.0-dev`, `U63 v2.20`, `96.00.5E.00.01`); numbers compare as numbers, text as text, and two
//! versions whose shapes differ are "not comparable", which the planner treats as a change it cannot
//! judge (refused as a possible downgrade unless the operator allows it).

use std::cmp::Ordering;

use serde::Serialize;
use serde_json::Value;

/// What an `UpdateService` offers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UpdateServiceDoc {
    pub link: String,
    pub enabled: Option<bool>,
    /// `#UpdateService.SimpleUpdate` target.
    pub simple_update: Option<String>,
    /// `TransferProtocol@Redfish.AllowableValues` of SimpleUpdate (empty: the BMC did not say).
    pub transfer_protocols: Vec<String>,
    /// `MultipartHttpPushUri` (DSP0266 multipart push).
    pub multipart_push: Option<String>,
    /// `@Redfish.OperationApplyTimeSupport.SupportedValues` of the multipart push (or the service), as
    /// listed (`Immediate`, `OnReset`, ...); empty: not said.
    pub apply_times: Vec<String>,
    /// `FirmwareInventory` link.
    pub firmware_inventory: Option<String>,
    /// `MaxImageSizeBytes`.
    pub max_image_bytes: Option<u64>,
}

fn s(v: &Value, p: &str) -> Option<String> {
    v.pointer(p).and_then(Value::as_str).map(str::to_owned)
}

fn strings(v: &Value, p: &str) -> Vec<String> {
    v.pointer(p)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

impl UpdateServiceDoc {
    pub fn from_value(v: &Value, link: &str) -> UpdateServiceDoc {
        let mut apply_times =
            strings(v, "/MultipartHttpPushUri@Redfish.OperationApplyTimeSupport/SupportedValues");
        if apply_times.is_empty() {
            apply_times = strings(v, "/@Redfish.OperationApplyTimeSupport/SupportedValues");
        }
        UpdateServiceDoc {
            link: link.to_owned(),
            enabled: v.get("ServiceEnabled").and_then(Value::as_bool),
            simple_update: s(v, "/Actions/#UpdateService.SimpleUpdate/target"),
            transfer_protocols: strings(
                v,
                "/Actions/#UpdateService.SimpleUpdate/TransferProtocol@Redfish.AllowableValues",
            ),
            multipart_push: s(v, "/MultipartHttpPushUri"),
            apply_times,
            firmware_inventory: s(v, "/FirmwareInventory/@odata.id"),
            max_image_bytes: v.get("MaxImageSizeBytes").and_then(Value::as_u64),
        }
    }

    /// Whether a task was started by a request to one of this service's update URIs.
    pub fn started(&self, t: &TaskDoc) -> bool {
        let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
        t.target_uri.as_deref().is_some_and(|u| {
            [&self.simple_update, &self.multipart_push].into_iter().flatten().any(|x| same(x, u))
        })
    }

    /// The apply time to ask for: `Immediate` when listed, else `OnReset` when listed; `None` when the BMC
    /// lists none (then nothing is sent and the BMC applies as it does by default).
    pub fn apply_time(&self) -> Option<&'static str> {
        ["Immediate", "OnReset"].into_iter().find(|t| self.apply_times.iter().any(|a| a == t))
    }
}

/// The kind of firmware a rollout updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Component {
    Bmc,
    Bios,
    Nic,
    Gpu,
}

impl Component {
    pub const ALL: [Component; 4] = [Component::Bmc, Component::Bios, Component::Nic, Component::Gpu];

    pub fn as_str(self) -> &'static str {
        match self {
            Component::Bmc => "bmc",
            Component::Bios => "bios",
            Component::Nic => "nic",
            Component::Gpu => "gpu",
        }
    }

    /// Words in a `SoftwareInventory` id or name that mark this kind (vendors name them differently).
    fn words(self) -> &'static [&'static str] {
        match self {
            Component::Bmc => &["bmc", "idrac", "ilo", "xcc", "manager"],
            Component::Bios => &["bios", "uefi", "system rom"],
            Component::Nic => &["nic", "connectx", "network", "ethernet", "bluefield", "adapter"],
            Component::Gpu => &["gpu", "hgx", "nvswitch", "fpga", "h100", "h200", "b200"],
        }
    }

    /// Whether a component with this id and name is of this kind.
    pub fn matches(self, id: &str, name: Option<&str>) -> bool {
        let id = id.to_ascii_lowercase();
        let name = name.unwrap_or_default().to_ascii_lowercase();
        self.words().iter().any(|w| id.contains(w) || name.contains(w))
    }
}

impl std::str::FromStr for Component {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Component::ALL
            .into_iter()
            .find(|c| c.as_str() == s.to_ascii_lowercase())
            .ok_or_else(|| format!("unknown firmware component `{s}` (expected bmc, bios, nic or gpu)"))
    }
}

/// One `SoftwareInventory` member, with its link (the `Targets` of an update).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FirmwareSlot {
    pub link: String,
    pub id: String,
    pub name: Option<String>,
    pub version: Option<String>,
    pub updateable: Option<bool>,
}

impl FirmwareSlot {
    pub fn from_value(v: &Value, link: &str) -> FirmwareSlot {
        FirmwareSlot {
            link: s(v, "/@odata.id").unwrap_or_else(|| link.to_owned()),
            id: s(v, "/Id")
                .unwrap_or_else(|| link.trim_end_matches('/').rsplit('/').next().unwrap_or(link).into()),
            name: s(v, "/Name"),
            version: s(v, "/Version"),
            updateable: v.get("Updateable").and_then(Value::as_bool),
        }
    }

    pub fn is(&self, c: Component) -> bool {
        c.matches(&self.id, self.name.as_deref())
    }
}

/// A task's state as the task monitor reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskDoc {
    /// `TaskState` (`New`, `Running`, `Completed`, `Exception`, `Killed`, `Cancelled`, ...).
    pub state: Option<String>,
    pub status: Option<String>,
    pub percent: Option<u64>,
    /// The messages' text (why a task failed).
    pub messages: Vec<String>,
    /// `Payload.TargetUri`: where the request that started it went (an update's push URI).
    pub target_uri: Option<String>,
    /// `StartTime` (RFC 3339).
    pub start_time: Option<String>,
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskEnd {
    Running,
    Completed,
    Failed,
}

impl TaskDoc {
    pub fn from_value(v: &Value) -> TaskDoc {
        let messages = v
            .get("Messages")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|m| m.get("Message")?.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        TaskDoc {
            state: s(v, "/TaskState"),
            status: s(v, "/TaskStatus"),
            percent: v.get("PercentComplete").and_then(Value::as_u64),
            messages,
            target_uri: s(v, "/Payload/TargetUri"),
            start_time: s(v, "/StartTime"),
        }
    }

    /// `Completed` with a `TaskStatus` that is not Warning/Critical is done; `Exception`, `Killed`,
    /// `Cancelled`, `Interrupted` (or Completed with a Critical status) failed; anything else runs.
    pub fn end(&self) -> TaskEnd {
        let bad_status = matches!(self.status.as_deref(), Some("Critical"));
        match self.state.as_deref() {
            Some("Completed") if bad_status => TaskEnd::Failed,
            Some("Completed") => TaskEnd::Completed,
            Some("Exception" | "Killed" | "Cancelled" | "Interrupted" | "Suspended") => TaskEnd::Failed,
            _ => TaskEnd::Running,
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Tok<'a> {
    Num(u64),
    Text(&'a str),
}

fn tokens(v: &str) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let b = v.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i].is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            // 20 digits or more would overflow: compared as text then (still consistent).
            out.push(v[start..i].parse().map_or(Tok::Text(&v[start..i]), Tok::Num));
        } else if b[i].is_ascii_alphabetic() {
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            out.push(Tok::Text(&v[start..i]));
        } else {
            i += 1;
        }
    }
    out
}

/// Orders two firmware versions: numbers as numbers, words case-insensitively, separators ignored; `None`
/// when a number meets a word at the same place (shapes differ: cannot judge). A version that extends
/// another (`1.2` vs `1.2.1`) is newer.
pub fn version_cmp(a: &str, b: &str) -> Option<Ordering> {
    let (ta, tb) = (tokens(a), tokens(b));
    for (x, y) in ta.iter().zip(&tb) {
        let o = match (x, y) {
            (Tok::Num(p), Tok::Num(q)) => p.cmp(q),
            (Tok::Text(p), Tok::Text(q)) => p.to_ascii_lowercase().cmp(&q.to_ascii_lowercase()),
            _ => return None,
        };
        if o != Ordering::Equal {
            return Some(o);
        }
    }
    Some(ta.len().cmp(&tb.len()))
}

/// The framing of a DSP0266 multipart push: the `UpdateParameters` JSON part and the head of the
/// `UpdateFile` part (before the image bytes), and the tail (after them). The image itself is streamed by
/// the caller between the two, so its length is `head.len() + image + tail.len()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultipartFrame {
    pub content_type: String,
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
}

/// Frames `params` and a file named `file_name` with `boundary` (which must not occur in the image; a
/// random 32-hex-digit boundary makes that vanishingly unlikely, as in every HTTP client).
pub fn multipart_frame(boundary: &str, params: &Value, file_name: &str) -> MultipartFrame {
    let safe: String = file_name.chars().filter(|c| !matches!(c, '"' | '\\' | '\r' | '\n')).collect();
    let head = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\nContent-Type: \
         application/json\r\n\r\n{params}\r\n--{boundary}\r\nContent-Disposition: form-data; \
         name=\"UpdateFile\"; filename=\"{safe}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    );
    MultipartFrame {
        content_type: format!("multipart/form-data; boundary={boundary}"),
        head: head.into_bytes(),
        tail: format!("\r\n--{boundary}--\r\n").into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn versions_of_real_vendors_order_as_their_releases() {
        use Ordering::*;
        let c = version_cmp;
        assert_eq!(c("7.00.60.00", "7.10.30.00"), Some(Less));
        assert_eq!(c("iLO 6 v1.59", "iLO 6 v1.62"), Some(Less));
        assert_eq!(c("2.14.0-dev", "2.14.0-dev"), Some(Equal));
        assert_eq!(c("U63 v2.20", "U63 v2.10"), Some(Greater));
        assert_eq!(c("96.00.5E.00.01", "96.00.61.00.01"), Some(Less));
        assert_eq!(c("1.2a", "1.2.3"), None, "a word meets a number");
        assert_eq!(c("1.2", "1.2.1"), Some(Less));
        assert_eq!(c("01.03.15", "1.3.15"), Some(Equal));
        assert_eq!(c("1.10.0", "1.9.0"), Some(Greater));
    }

    #[test]
    fn update_service_and_task_documents_read_leniently() {
        let v = json!({
            "ServiceEnabled": true,
            "Actions": {"#UpdateService.SimpleUpdate": {
                "target": "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
                "TransferProtocol@Redfish.AllowableValues": ["HTTP", "HTTPS"]}},
            "MultipartHttpPushUri": "/redfish/v1/UpdateService/update-multipart",
            "MultipartHttpPushUri@Redfish.OperationApplyTimeSupport": {"SupportedValues": ["OnReset"]},
            "FirmwareInventory": {"@odata.id": "/redfish/v1/UpdateService/FirmwareInventory"},
            "MaxImageSizeBytes": "many",
        });
        let u = UpdateServiceDoc::from_value(&v, "/redfish/v1/UpdateService");
        assert_eq!(u.transfer_protocols, ["HTTP", "HTTPS"]);
        assert_eq!(u.apply_time(), Some("OnReset"));
        assert_eq!(u.max_image_bytes, None);
        assert_eq!(
            UpdateServiceDoc::from_value(&json!([]), "/x"),
            UpdateServiceDoc { link: "/x".into(), ..Default::default() }
        );
        let t =
            TaskDoc::from_value(&json!({"TaskState": "Exception", "Messages": [{"Message": "bad image"}]}));
        assert_eq!((t.end(), t.messages.as_slice()), (TaskEnd::Failed, &["bad image".to_owned()][..]));
        assert_eq!(TaskDoc::from_value(&json!({"TaskState": "Running"})).end(), TaskEnd::Running);
        assert_eq!(TaskDoc::from_value(&json!({"TaskState": "Completed"})).end(), TaskEnd::Completed);
        assert_eq!(TaskDoc::from_value(&json!(null)).end(), TaskEnd::Running);
    }

    #[test]
    fn components_are_recognised_by_vendor_names() {
        assert!(Component::Bmc.matches("iDRAC.Embedded.1", None));
        assert!(Component::Bios.matches("Installed-159-2.2.7", Some("BIOS")));
        assert!(Component::Nic.matches("NIC.Slot.1-1", Some("Mellanox ConnectX-7")));
        assert!(Component::Gpu.matches("HGX_FW_GPU_SXM_1", None));
        assert!(!Component::Gpu.matches("BMC", Some("BMC firmware")));
        assert_eq!("BIOS".parse::<Component>(), Ok(Component::Bios));
        assert!("disk".parse::<Component>().unwrap_err().contains("expected bmc, bios, nic or gpu"));
    }

    #[test]
    fn the_multipart_frame_wraps_the_parameters_and_names_the_file() {
        let f = multipart_frame("b0b", &json!({"Targets": []}), "bios\"2.bin");
        let head = String::from_utf8(f.head).unwrap();
        assert!(head.starts_with("--b0b\r\nContent-Disposition: form-data; name=\"UpdateParameters\""));
        assert!(head.contains("{\"Targets\":[]}\r\n--b0b\r\n"));
        assert!(head.ends_with("filename=\"bios2.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"));
        assert_eq!(f.tail, b"\r\n--b0b--\r\n");
    }

    proptest! {
        #[test]
        fn version_order_is_antisymmetric_and_reflexive(a in "[0-9a-zA-Z. v-]{0,16}", b in "[0-9a-zA-Z. v-]{0,16}") {
            prop_assert_eq!(version_cmp(&a, &a), Some(Ordering::Equal));
            prop_assert_eq!(version_cmp(&a, &b).map(Ordering::reverse), version_cmp(&b, &a));
        }

        #[test]
        fn documents_never_panic(s in "\\PC{0,64}", n in any::<u64>()) {
            let v = json!({"TaskState": s, "PercentComplete": n, "Messages": [s], "MultipartHttpPushUri": n});
            let _ = TaskDoc::from_value(&v).end();
            let _ = UpdateServiceDoc::from_value(&v, &s).apply_time();
            let _ = FirmwareSlot::from_value(&v, &s);
        }
    }
}
