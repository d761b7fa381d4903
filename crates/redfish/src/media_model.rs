//! Virtual media documents, read leniently, and the image URL an operator hands to a BMC.
//!
//! Why a model of its own: BMCs put the `VirtualMedia` collection under the System (DSP2046 2020.3 and
//! later, sushy-emulator, bmcweb) or under the Manager (iLO, iDRAC before 6.x), list CD and USB slots
//! with different ids (`Cd`, `CD1`, `RemovableDisk`, `1`), and leave out fields (`TransferProtocolType`,
//! `Inserted`) freely; one odd field must degrade that field, never the insert. The URL check is pure so
//! that a malformed URL is refused before anything reaches the BMC, and is property-tested.
//!
//! Pure (no client): the simulator's tests and the fuzz targets share it.

use serde::Serialize;
use serde_json::{Value, json};

use crate::doc::{FieldWarning, Fields};

/// One `VirtualMedia` member as a BMC reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct VirtualMediaDoc {
    pub odata_id: String,
    pub id: String,
    pub name: Option<String>,
    /// `CD`, `DVD`, `USBStick`, `Floppy`, `File`...
    pub media_types: Vec<String>,
    /// The image URL, `None` when the BMC reports none (`""`, `null`, absent).
    pub image: Option<String>,
    pub image_name: Option<String>,
    pub inserted: Option<bool>,
    pub write_protected: Option<bool>,
    pub connected_via: Option<String>,
    pub transfer_protocol_type: Option<String>,
    /// The document has a `TransferProtocolType` property at all (even `null`): its schema knows it.
    pub knows_transfer_protocol: bool,
    /// `#VirtualMedia.InsertMedia` target, when offered.
    pub insert_target: Option<String>,
    /// `TransferProtocolType@Redfish.AllowableValues` of the insert action, when given.
    pub insert_protocols: Option<Vec<String>>,
    /// `#VirtualMedia.EjectMedia` target, when offered.
    pub eject_target: Option<String>,
}

impl VirtualMediaDoc {
    pub fn from_value(v: &Value, at: &str, warnings: &mut Vec<FieldWarning>) -> Self {
        let mut f = Fields::new(v, at, warnings);
        let odata_id = crate::model::odata_id(&mut f, at);
        let id = f
            .str("Id")
            .unwrap_or_else(|| odata_id.trim_end_matches('/').rsplit('/').next().unwrap_or(at).to_owned());
        let (mut insert_target, mut insert_protocols, mut eject_target) = (None, None, None);
        if let Some(mut a) = f.sub("Actions") {
            if let Some(mut i) = a.sub("#VirtualMedia.InsertMedia") {
                insert_target = i.str("target");
                insert_protocols = i.strs("TransferProtocolType@Redfish.AllowableValues");
            }
            if let Some(mut e) = a.sub("#VirtualMedia.EjectMedia") {
                eject_target = e.str("target");
            }
        }
        let knows_transfer_protocol = v.get("TransferProtocolType").is_some();
        let present = |s: Option<String>| s.filter(|s| !s.is_empty() && s != "None");
        VirtualMediaDoc {
            name: f.str("Name"),
            media_types: f.strs("MediaTypes").unwrap_or_default(),
            image: present(f.str("Image")),
            image_name: present(f.str("ImageName")),
            inserted: f.bool("Inserted"),
            write_protected: f.bool("WriteProtected"),
            connected_via: f.str("ConnectedVia"),
            transfer_protocol_type: present(f.str("TransferProtocolType")),
            knows_transfer_protocol,
            insert_target,
            insert_protocols,
            eject_target,
            odata_id,
            id,
        }
    }

    /// Whether this slot takes a CD/DVD image (by its media types, else by its id or name).
    pub fn is_cd(&self) -> bool {
        if !self.media_types.is_empty() {
            return self.media_types.iter().any(|t| matches!(t.to_ascii_uppercase().as_str(), "CD" | "DVD"));
        }
        let words = format!("{} {}", self.id, self.name.as_deref().unwrap_or_default()).to_ascii_lowercase();
        words.contains("cd") || words.contains("dvd")
    }

    /// Whether media is in the slot: `Inserted`, else (a BMC that leaves it out) an image named.
    pub fn has_media(&self) -> bool {
        self.inserted.unwrap_or(self.image.is_some())
    }
}

/// Picks the slot an ISO goes into: the first CD/DVD slot that offers `InsertMedia`, else the first CD
/// slot at all (the caller then says it cannot insert), else `None`.
pub fn cd_slot(slots: &[VirtualMediaDoc]) -> Option<&VirtualMediaDoc> {
    slots.iter().find(|s| s.is_cd() && s.insert_target.is_some()).or_else(|| slots.iter().find(|s| s.is_cd()))
}

/// A bad image URL, said in words before anything is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MediaUrlError {
    #[error("image URL `{0}` has no scheme (expected http://, https://, nfs:// or smb://)")]
    NoScheme(String),
    #[error("image URL scheme `{0}` is not one a BMC fetches from (http, https, nfs, smb/cifs)")]
    Scheme(String),
    #[error("image URL `{0}` has no host")]
    NoHost(String),
    #[error(
        "image URL carries credentials before the host; give the user with --image-user and the password in \
         LIFELINE_IMAGE_PASSWORD (a BMC shows the URL to anyone who can read it)"
    )]
    Credentials,
    #[error("image URL contains whitespace or a control character at byte {0}")]
    Character(usize),
    #[error("image URL is {0} bytes long (a BMC takes at most {MAX_URL_LEN})")]
    TooLong(usize),
}

/// Longest image URL accepted: iDRAC and iLO store at most a few hundred bytes.
pub const MAX_URL_LEN: usize = 1024;

/// An image URL fit to hand to a BMC, with the Redfish `TransferProtocolType` its scheme means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MediaUrl {
    pub url: String,
    /// `HTTP`, `HTTPS`, `NFS`, `CIFS`.
    pub protocol: &'static str,
}

impl MediaUrl {
    pub fn parse(s: &str) -> Result<MediaUrl, MediaUrlError> {
        if s.len() > MAX_URL_LEN {
            return Err(MediaUrlError::TooLong(s.len()));
        }
        if let Some(i) = s.bytes().position(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
            return Err(MediaUrlError::Character(i));
        }
        let Some((scheme, rest)) = s.split_once("://") else { return Err(MediaUrlError::NoScheme(s.into())) };
        let protocol = match scheme.to_ascii_lowercase().as_str() {
            "http" => "HTTP",
            "https" => "HTTPS",
            "nfs" => "NFS",
            "smb" | "cifs" => "CIFS",
            _ => return Err(MediaUrlError::Scheme(scheme.into())),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.contains('@') {
            return Err(MediaUrlError::Credentials);
        }
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
        };
        if host.is_empty() {
            return Err(MediaUrlError::NoHost(s.into()));
        }
        Ok(MediaUrl { url: s.to_owned(), protocol })
    }
}

/// The `InsertMedia` body: image, `Inserted`, `WriteProtected`, the transfer protocol when the action's
/// list names it (or, with no list, when the slot's schema has the property: iLO 5 and sushy-emulator
/// have neither, and an unknown action parameter is refused by some BMCs), and the image server's
/// credentials when there are any.
pub fn insert_body(
    slot: &VirtualMediaDoc,
    url: &MediaUrl,
    write_protected: bool,
    credentials: Option<(&str, &str)>,
) -> Value {
    let mut b = json!({ "Image": url.url, "Inserted": true, "WriteProtected": write_protected });
    let allowed = match &slot.insert_protocols {
        Some(a) => a.iter().any(|p| p == url.protocol),
        None => slot.knows_transfer_protocol,
    };
    if allowed {
        b["TransferProtocolType"] = json!(url.protocol);
    }
    if let Some((u, p)) = credentials {
        b["UserName"] = json!(u);
        b["Password"] = json!(p);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_sushy_and_ilo_shapes() {
        // sushy-emulator 2.2.0 (recorded from the peer): no TransferProtocolType, Image "".
        let v = json!({
            "@odata.id": "/redfish/v1/Systems/u/VirtualMedia/Cd", "Id": "Cd", "Name": "Virtual CD",
            "MediaTypes": ["CD", "DVD"], "Image": "", "ImageName": "", "ConnectedVia": "URI",
            "Inserted": false, "WriteProtected": false,
            "Actions": {
                "#VirtualMedia.EjectMedia": {"target": "/redfish/v1/Systems/u/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia"},
                "#VirtualMedia.InsertMedia": {"target": "/redfish/v1/Systems/u/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia"},
                "Oem": {}
            }
        });
        let mut w = Vec::new();
        let d = VirtualMediaDoc::from_value(&v, "/x", &mut w);
        assert!(w.is_empty(), "{w:?}");
        assert!(d.is_cd() && !d.has_media());
        assert_eq!((d.image.as_deref(), d.inserted), (None, Some(false)));
        assert!(d.insert_target.as_deref().unwrap().ends_with("InsertMedia"));
        // iLO 5 style: id `2`, no MediaTypes of its own kind, Inserted left out but an image named.
        let ilo = json!({"Id": "2", "Name": "Virtual Removable Media", "MediaTypes": ["CD", "DVD"],
            "Image": "http://10.0.0.1/i.iso", "Inserted": null});
        let d = VirtualMediaDoc::from_value(&ilo, "/redfish/v1/Managers/1/VirtualMedia/2", &mut w);
        assert_eq!(d.odata_id, "/redfish/v1/Managers/1/VirtualMedia/2");
        assert!(d.has_media() && d.is_cd());
        let floppy = VirtualMediaDoc { id: "Floppy".into(), media_types: vec!["Floppy".into()], ..d.clone() };
        let slots = [floppy, d.clone()];
        assert_eq!(cd_slot(&slots).map(|s| s.id.as_str()), Some("2"));
    }

    #[test]
    fn urls_said_in_words() {
        let u = MediaUrl::parse("https://10.1.0.5:8443/images/ubuntu.iso").unwrap();
        assert_eq!(u.protocol, "HTTPS");
        assert_eq!(MediaUrl::parse("nfs://[fd00::1]/x.iso").unwrap().protocol, "NFS");
        assert_eq!(MediaUrl::parse("ftp://h/x"), Err(MediaUrlError::Scheme("ftp".into())));
        assert_eq!(MediaUrl::parse("h/x.iso"), Err(MediaUrlError::NoScheme("h/x.iso".into())));
        assert_eq!(MediaUrl::parse("http://u:p@h/x.iso"), Err(MediaUrlError::Credentials));
        assert_eq!(MediaUrl::parse("http://:80/x"), Err(MediaUrlError::NoHost("http://:80/x".into())));
        assert_eq!(MediaUrl::parse("http://h/a b"), Err(MediaUrlError::Character(10)));
        // A protocol the slot does not list is left out, not sent.
        let slot = VirtualMediaDoc { insert_protocols: Some(vec!["HTTPS".into()]), ..Default::default() };
        let b = insert_body(&slot, &MediaUrl::parse("http://h/x").unwrap(), true, None);
        assert!(b.get("TransferProtocolType").is_none(), "{b}");
        let b = insert_body(&slot, &u, true, Some(("img", "pw")));
        let bare = VirtualMediaDoc::default();
        assert!(insert_body(&bare, &u, true, None).get("TransferProtocolType").is_none());
        let knows = VirtualMediaDoc { knows_transfer_protocol: true, ..bare };
        assert_eq!(insert_body(&knows, &u, true, None)["TransferProtocolType"], "HTTPS");
        assert_eq!(b["TransferProtocolType"], "HTTPS");
        assert_eq!((b["UserName"].as_str(), b["Inserted"].as_bool()), (Some("img"), Some(true)));
    }

    proptest! {
        #[test]
        fn never_panics(v in crate::doc::arb_json(&["Id", "MediaTypes", "Image", "Inserted", "Actions",
            "#VirtualMedia.InsertMedia", "target", "TransferProtocolType@Redfish.AllowableValues"])) {
            let mut w = Vec::new();
            let d = VirtualMediaDoc::from_value(&v, "/m", &mut w);
            let _ = (d.is_cd(), d.has_media());
        }

        #[test]
        fn accepted_urls_are_clean(s in "\\PC{0,80}") {
            if let Ok(u) = MediaUrl::parse(&s) {
                prop_assert!(!u.url.chars().any(|c| c.is_ascii_whitespace() || c.is_ascii_control()));
                prop_assert!(u.url.contains("://"));
                let authority = u.url.split_once("://").unwrap().1.split(['/', '?', '#']).next().unwrap();
                prop_assert!(!authority.contains('@'));
            }
        }

        #[test]
        fn well_formed_urls_are_accepted(host in "[a-z][a-z0-9.-]{0,20}", path in "[A-Za-z0-9/._-]{0,40}",
            scheme in proptest::sample::select(&["http", "https", "nfs", "smb", "cifs", "HTTP"])) {
            let s = format!("{scheme}://{host}/{path}");
            prop_assert_eq!(MediaUrl::parse(&s).map(|u| u.url), Ok(s));
        }
    }
}
