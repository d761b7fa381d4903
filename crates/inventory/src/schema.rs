//! The key schema of a serde type, read from the type itself: which keys each table accepts, which values
//! are arrays of tables, which words an enum takes.
//!
//! A checker that suggests "did you mean `credential`?" needs the keys a table accepts; writing them down a
//! second time would drift from the structs. serde already hands every `Deserializer` the field names of a
//! struct (`deserialize_struct`) and the variants of an enum, so [`shape_of`] runs the type's own
//! `Deserialize` against a deserializer that records them and answers every value with a placeholder.
//! `Option`, `toml::Spanned` and `Vec` are seen through; maps and untagged enums become [`Shape::Leaf`] or
//! [`Shape::Open`] (any key).

use std::cell::RefCell;
use std::rc::Rc;

use serde::Deserialize;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

/// What a value of a type looks like in a TOML file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A plain value (string, number, boolean, or something deserialized from any of them).
    Leaf(LeafKind),
    /// An enum written as one of these words.
    Word(Vec<&'static str>),
    /// A table with these keys, in declaration order; `name` is the Rust type's name.
    Table { name: &'static str, fields: Vec<(&'static str, Shape)> },
    /// An array of values of this shape.
    Array(Box<Shape>),
    /// A table that accepts any key (a map).
    Open,
}

/// The TOML type a leaf takes, for reference pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafKind {
    String,
    Integer,
    Float,
    Boolean,
    /// Accepted in more than one form (an untagged enum, a custom `Deserialize`).
    Any,
}

impl Shape {
    /// The keys of a table shape (none for other shapes).
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        let fields: &[(&'static str, Shape)] = match self {
            Shape::Table { fields, .. } => fields,
            _ => &[],
        };
        fields.iter().map(|(k, _)| *k)
    }

    /// The shape of one key of a table.
    pub fn field(&self, key: &str) -> Option<&Shape> {
        match self {
            Shape::Table { fields, .. } => fields.iter().find(|(k, _)| *k == key).map(|(_, s)| s),
            _ => None,
        }
    }

    /// The shape of a value below a dotted path of keys (arrays are looked through).
    pub fn at(&self, path: &[&str]) -> Option<&Shape> {
        let mut cur = self;
        for key in path {
            while let Shape::Array(inner) = cur {
                cur = inner;
            }
            cur = cur.field(key)?;
        }
        Some(cur)
    }

    /// `string`, `integer`, `array of tables`, `one of: a, b`… for reference pages and messages.
    pub fn describe(&self) -> String {
        match self {
            Shape::Leaf(LeafKind::String) => "string".into(),
            Shape::Leaf(LeafKind::Integer) => "integer".into(),
            Shape::Leaf(LeafKind::Float) => "number".into(),
            Shape::Leaf(LeafKind::Boolean) => "boolean".into(),
            Shape::Leaf(LeafKind::Any) => "string or number".into(),
            Shape::Word(words) => format!("one of: {}", words.join(", ")),
            Shape::Table { .. } => "table".into(),
            Shape::Array(inner) => match inner.as_ref() {
                Shape::Table { .. } => "array of tables".into(),
                other => format!("array of {}", other.describe()),
            },
            Shape::Open => "table (any keys)".into(),
        }
    }
}

/// The shape of `T` as its `Deserialize` implementation reads it.
pub fn shape_of<T: for<'de> Deserialize<'de>>() -> Shape {
    let slot = Slot::default();
    // The placeholder values may be refused by a type's own validation; what was recorded before the
    // refusal is still the shape.
    let _ = T::deserialize(Walker { slot: slot.clone() });
    slot.take()
}

/// Where a walker leaves the shape it saw.
#[derive(Default, Clone)]
struct Slot(Rc<RefCell<Option<Shape>>>);

impl Slot {
    fn set(&self, s: Shape) {
        *self.0.borrow_mut() = Some(s);
    }
    fn take(&self) -> Shape {
        self.0.borrow_mut().take().unwrap_or(Shape::Leaf(LeafKind::Any))
    }
}

#[derive(Debug)]
struct Stop(String);

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<M: std::fmt::Display>(msg: M) -> Self {
        Stop(msg.to_string())
    }
}

struct Walker {
    slot: Slot,
}

const SPANNED: &str = "$__serde_spanned_private_Spanned";
const SPANNED_VALUE: &str = "$__serde_spanned_private_value";

impl Walker {
    fn leaf<'de, V: Visitor<'de>>(self, kind: LeafKind, visitor: V) -> Result<V::Value, Stop> {
        self.slot.set(Shape::Leaf(kind));
        match kind {
            LeafKind::Integer => visitor.visit_u64(0),
            LeafKind::Float => visitor.visit_f64(0.0),
            LeafKind::Boolean => visitor.visit_bool(false),
            LeafKind::String | LeafKind::Any => visitor.visit_str(""),
        }
    }
}

macro_rules! leaves {
    ($($method:ident => $kind:ident),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
            self.leaf(LeafKind::$kind, visitor)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Walker {
    type Error = Stop;

    leaves! {
        deserialize_any => Any,
        deserialize_bool => Boolean,
        deserialize_i8 => Integer, deserialize_i16 => Integer, deserialize_i32 => Integer,
        deserialize_i64 => Integer, deserialize_i128 => Integer,
        deserialize_u8 => Integer, deserialize_u16 => Integer, deserialize_u32 => Integer,
        deserialize_u64 => Integer, deserialize_u128 => Integer,
        deserialize_f32 => Float, deserialize_f64 => Float,
        deserialize_char => String, deserialize_str => String, deserialize_string => String,
        deserialize_bytes => String, deserialize_byte_buf => String,
        deserialize_identifier => String, deserialize_ignored_any => Any,
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.slot.set(Shape::Leaf(LeafKind::Any));
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, Stop> {
        self.deserialize_unit(v)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, Stop> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        let inner = Slot::default();
        let out = visitor.visit_seq(OneItem { slot: Some(inner.clone()) });
        self.slot.set(Shape::Array(Box::new(inner.take())));
        out
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Stop> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Stop> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        self.slot.set(Shape::Open);
        visitor.visit_map(Fields { fields: &[], at: 0, slots: Vec::new(), spanned: false })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        if name == SPANNED {
            // `toml::Spanned<T>`: the span is ours to make up; the shape is the value's.
            let fields_with_value: &'static [&'static str] = fields;
            let slots = fields.iter().map(|_| Slot::default()).collect::<Vec<_>>();
            let value_slot = fields.iter().position(|f| *f == SPANNED_VALUE).map(|i| slots[i].clone());
            let out = visitor.visit_map(Fields { fields: fields_with_value, at: 0, slots, spanned: true });
            if let Some(s) = value_slot {
                self.slot.set(s.take());
            }
            return out;
        }
        let slots: Vec<Slot> = fields.iter().map(|_| Slot::default()).collect();
        // Record the keys before walking the values, so a refused placeholder loses only nested detail.
        self.slot.set(Shape::Table {
            name,
            fields: fields.iter().map(|f| (*f, Shape::Leaf(LeafKind::Any))).collect(),
        });
        let out = visitor.visit_map(Fields { fields, at: 0, slots: slots.clone(), spanned: false });
        self.slot.set(Shape::Table {
            name,
            fields: fields.iter().zip(slots).map(|(f, s)| (*f, s.take())).collect(),
        });
        out
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        self.slot.set(Shape::Word(variants.to_vec()));
        let first = variants.first().copied().unwrap_or("");
        visitor.visit_enum(first.into_deserializer())
    }
}

/// A one-element sequence whose element is walked.
struct OneItem {
    slot: Option<Slot>,
}

impl<'de> SeqAccess<'de> for OneItem {
    type Error = Stop;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Stop> {
        match self.slot.take() {
            Some(slot) => seed.deserialize(Walker { slot }).map(Some),
            None => Ok(None),
        }
    }
}

/// A map that has every field of a struct once, each value walked.
struct Fields {
    fields: &'static [&'static str],
    at: usize,
    slots: Vec<Slot>,
    /// `toml::Spanned`: its start and end are numbers, not walked.
    spanned: bool,
}

impl<'de> MapAccess<'de> for Fields {
    type Error = Stop;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Stop> {
        match self.fields.get(self.at) {
            Some(f) => seed.deserialize(BorrowedStrDeserializer::<Stop>::new(f)).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Stop> {
        let i = self.at;
        self.at += 1;
        let slot = self.slots.get(i).cloned().unwrap_or_default();
        if self.spanned && self.fields.get(i) != Some(&SPANNED_VALUE) {
            return seed.deserialize(0u64.into_deserializer());
        }
        seed.deserialize(Walker { slot })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::{RawDevice, RawFile};

    #[test]
    fn reads_keys_through_spanned_option_and_vec() {
        let d = shape_of::<RawDevice>();
        assert!(d.keys().any(|k| k == "rail"));
        assert!(matches!(d.field("rail"), Some(Shape::Array(_))));
        let bmc: Vec<_> = d.at(&["bmc"]).unwrap().keys().collect();
        assert!(bmc.contains(&"credential") && bmc.contains(&"tls-fingerprint"), "{bmc:?}");
        let timeouts: Vec<_> = d.at(&["management", "timeouts"]).unwrap().keys().collect();
        assert_eq!(timeouts, ["connect", "auth", "prompt", "command", "total"]);
        assert_eq!(d.at(&["rail", "mtu"]), Some(&Shape::Leaf(LeafKind::Integer)));
        assert_eq!(d.at(&["bmc", "tls"]), Some(&Shape::Leaf(LeafKind::Boolean)));
        // An untagged enum (a duration as seconds or text) is any value.
        assert_eq!(d.at(&["management", "timeouts", "total"]), Some(&Shape::Leaf(LeafKind::Any)));
        let f = shape_of::<RawFile>();
        let defaults: Vec<_> = f.at(&["defaults", "bmc"]).unwrap().keys().collect();
        assert_eq!(defaults, ["protocol", "username", "credential", "flavor"]);
    }
}
