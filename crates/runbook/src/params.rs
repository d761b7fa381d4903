//! Typed runbook parameters. Whoever starts a run supplies `--var NAME=VALUE`; an untyped value once
//! drained a healthy node and then failed on `unknown power action explode`, and a free string in an
//! `exec` program or an address let a run's starter choose what runs or where Lifeline connects. So every
//! parameter declares a type, every value (default and `--var`) is checked against it before anything is
//! touched, and [`Slot`] says which types may fill which places of a step.

use lifeline_inventory::Inventory;
use lifeline_types::Role;
use serde::Serialize;

/// What a parameter's values may be.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum ParamType {
    /// One of the listed values (`values = [...]`).
    Enum { values: Vec<String> },
    /// `true` or `false`.
    Bool,
    /// A whole number, optionally within `min`..=`max`.
    Integer {
        #[serde(skip_serializing_if = "Option::is_none")]
        min: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max: Option<i64>,
    },
    /// A duration (`30s`, `5m`).
    Duration,
    /// A device of the inventory (optionally of the given roles); resolved there, never used as an address.
    /// `""` is allowed only when it is the default (the runbook's "none").
    Device {
        #[serde(skip_serializing_if = "Vec::is_empty")]
        roles: Vec<Role>,
    },
    /// A string matching `pattern` (a regular expression the whole value must match).
    String { pattern: String },
    /// The name of an image `lifeline serve` serves: a file directly in `[image-server] images`, checked
    /// there when a run starts; never a path and never an address.
    ServedImage,
}

/// Where a variable is used, which decides the types allowed there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The program of an `exec` step: no variable at all (the program is fixed in the file).
    Program,
    /// A network address (`tcp`, `ssh`, a `notify` URL): only values fixed in the file (`enum`).
    Address,
    /// A device name (`switch`, `node`): `device` or `enum`.
    DeviceName,
    /// A media step's `served-image`: `served-image` or `enum` (a file name, resolved in the images
    /// directory only).
    ServedImage,
    /// Any other argument: any declared type (each bounds what the value can be).
    Argument,
}

impl Slot {
    pub fn allows(self, t: &ParamType) -> bool {
        match self {
            Slot::Program => false,
            Slot::Address => matches!(t, ParamType::Enum { .. }),
            Slot::DeviceName => matches!(t, ParamType::Enum { .. } | ParamType::Device { .. }),
            Slot::ServedImage => matches!(t, ParamType::Enum { .. } | ParamType::ServedImage),
            Slot::Argument => true,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Slot::Program => "the program of an `exec` step is fixed in the file: no variable may choose it",
            Slot::Address => {
                "a network address may only take a variable of type `enum` (every address fixed in the file)"
            }
            Slot::DeviceName => "a device name may only take a variable of type `device` or `enum`",
            Slot::ServedImage => "a served image may only take a variable of type `served-image` or `enum`",
            Slot::Argument => "",
        }
    }
}

/// The spellings of `type`.
pub const TYPES: &[&str] = &["enum", "bool", "integer", "duration", "device", "string", "served-image"];

impl ParamType {
    pub fn name(&self) -> &'static str {
        match self {
            ParamType::Enum { .. } => "enum",
            ParamType::Bool => "bool",
            ParamType::Integer { .. } => "integer",
            ParamType::Duration => "duration",
            ParamType::Device { .. } => "device",
            ParamType::String { .. } => "string",
            ParamType::ServedImage => "served-image",
        }
    }

    /// Checks a value without the inventory (a `device` value is checked by [`ParamType::check_device`]).
    /// `default`: the parameter's default (`""` is a valid device value only when it is the default).
    pub fn check(&self, value: &str, default: &str) -> Result<(), String> {
        match self {
            ParamType::Enum { values } => {
                if values.iter().any(|v| v == value) {
                    Ok(())
                } else {
                    Err(format!("`{value}` is not allowed (allowed: {})", values.join(", ")))
                }
            }
            ParamType::Bool => match value {
                "true" | "false" => Ok(()),
                _ => Err(format!("`{value}` is not a boolean (allowed: true, false)")),
            },
            ParamType::Integer { min, max } => {
                let n: i64 = value.parse().map_err(|_| format!("`{value}` is not an integer"))?;
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    return Err(format!(
                        "{n} is out of range ({}..={})",
                        min.map_or("-".into(), |m| m.to_string()),
                        max.map_or("-".into(), |m| m.to_string())
                    ));
                }
                Ok(())
            }
            ParamType::Duration => humantime::parse_duration(value)
                .map(|_| ())
                .map_err(|e| format!("`{value}` is not a duration ({e}; e.g. 30s, 5m)")),
            ParamType::Device { .. } => {
                if value.is_empty() && !default.is_empty() {
                    return Err("a device name is required".into());
                }
                if value.chars().any(|c| c.is_whitespace() || matches!(c, '*' | '?' | '[' | ']' | ',' | ':'))
                {
                    return Err(format!("`{value}` is not one device name (no globs, lists or ports)"));
                }
                Ok(())
            }
            ParamType::String { pattern } => match anchored(pattern) {
                Ok(re) if re.is_match(value) => Ok(()),
                Ok(_) => Err(format!("`{value}` does not match the pattern `{pattern}`")),
                Err(e) => Err(format!("the pattern `{pattern}` is not a valid regular expression: {e}")),
            },
            ParamType::ServedImage => {
                if lifeline_engine::image_serve::library::plain_name(value) {
                    Ok(())
                } else {
                    Err(format!(
                        "`{value}` is not a served image's name (a file name alone: letters, digits, '.', '_', '-'; no '/' or '..')"
                    ))
                }
            }
        }
    }

    /// A `served-image` value must name an image of `[image-server] images` (checked when a run starts).
    pub fn check_served(&self, value: &str, l: &lifeline_engine::Lifeline) -> Result<(), String> {
        match self {
            ParamType::ServedImage => l.served_image_path(value).map(|_| ()).map_err(|e| e.to_string()),
            _ => Ok(()),
        }
    }

    /// A `device` value must name a device of the inventory, of one of the roles when they are given.
    pub fn check_device(&self, value: &str, inv: &Inventory) -> Result<(), String> {
        let ParamType::Device { roles } = self else { return Ok(()) };
        if value.is_empty() {
            return Ok(());
        }
        let Some(d) = inv.device(value) else {
            return Err(format!("no device `{value}` in the inventory"));
        };
        if !roles.is_empty() && !roles.contains(&d.role) {
            let want = roles.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
            return Err(format!("`{value}` is a {}; expected a {want}", d.role));
        }
        Ok(())
    }
}

/// `pattern` must match the whole value.
pub fn anchored(pattern: &str) -> Result<regex::Regex, regex::Error> {
    regex::Regex::new(&format!("^(?:{pattern})$"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_accepts_its_values_and_names_the_allowed_ones() {
        let e = ParamType::Enum { values: vec!["cycle".into(), "reset".into()] };
        assert!(e.check("cycle", "cycle").is_ok());
        let err = e.check("explode", "cycle").unwrap_err();
        assert!(err.contains("allowed: cycle, reset"), "{err}");
        assert!(ParamType::Bool.check("maybe", "false").is_err());
        let i = ParamType::Integer { min: Some(1), max: Some(8) };
        assert!(i.check("8", "1").is_ok() && i.check("9", "1").is_err() && i.check("x", "1").is_err());
        assert!(
            ParamType::Duration.check("5m", "1m").is_ok() && ParamType::Duration.check("5", "1m").is_err()
        );
        let d = ParamType::Device { roles: vec![] };
        assert!(d.check("", "").is_ok() && d.check("", "leaf-01").is_err());
        assert!(d.check("leaf-0[1-2]", "").is_err() && d.check("10.0.0.1:22", "").is_err());
        let s = ParamType::String { pattern: "Ethernet[0-9]+".into() };
        assert!(s.check("Ethernet12", "Ethernet0").is_ok());
        assert!(s.check("Ethernet12; rm -rf /", "Ethernet0").is_err(), "the whole value must match");
        let i = ParamType::ServedImage;
        assert!(i.check("ubuntu-24.04.iso", "x.iso").is_ok());
        for bad in ["../etc/passwd", "a/b.iso", "..", ".hidden", ""] {
            assert!(i.check(bad, "x.iso").unwrap_err().contains("served image"), "{bad}");
        }
    }

    #[test]
    fn slots_allow_only_values_fixed_where_they_matter() {
        let e = ParamType::Enum { values: vec!["frontend".into()] };
        let d = ParamType::Device { roles: vec![] };
        let s = ParamType::String { pattern: ".*".into() };
        assert!(!Slot::Program.allows(&e));
        assert!(Slot::Address.allows(&e) && !Slot::Address.allows(&d) && !Slot::Address.allows(&s));
        assert!(Slot::DeviceName.allows(&d) && !Slot::DeviceName.allows(&s));
        assert!(Slot::Argument.allows(&s));
        let i = ParamType::ServedImage;
        assert!(Slot::ServedImage.allows(&i) && Slot::ServedImage.allows(&e));
        assert!(!Slot::ServedImage.allows(&s) && !Slot::ServedImage.allows(&d));
        assert!(!Slot::Address.allows(&i), "a served image's name is never an address");
    }
}
