//! A row field that is absent, written as `null`, or holds a value.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A figure a writer sets even when it has none, so that its key says "no value here"
/// (`null`) where another row leaves the key out: a 95% interval from one repetition, a ratio
/// whose figures could not be divided.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Nullable<T> {
    /// The key is not in the row.
    #[default]
    Absent,
    /// The key is there with `null`.
    Null,
    /// The key holds a value.
    Value(T),
}

impl<T: Copy> Nullable<T> {
    /// The value, if there is one.
    pub fn get(&self) -> Option<T> {
        match self {
            Nullable::Value(v) => Some(*v),
            _ => None,
        }
    }
}

impl<T> Nullable<T> {
    /// The value by reference, if there is one.
    pub fn value(&self) -> Option<&T> {
        match self {
            Nullable::Value(v) => Some(v),
            _ => None,
        }
    }
}

impl<T> From<Option<T>> for Nullable<T> {
    /// What a writer with a figure that may be missing sets: `null` when it is.
    fn from(value: Option<T>) -> Self {
        value.map_or(Nullable::Null, Nullable::Value)
    }
}

impl<T: Serialize> Serialize for Nullable<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Nullable::Value(v) => v.serialize(s),
            _ => s.serialize_none(),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Nullable<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Option::<T>::deserialize(d)?.into())
    }
}

/// Whether a field is left out of the row (serde's `skip_serializing_if`).
pub trait Absent {
    /// The field is not in the row.
    fn is_absent(&self) -> bool;
}

impl<T> Absent for Option<T> {
    fn is_absent(&self) -> bool {
        self.is_none()
    }
}

impl<T> Absent for Nullable<T> {
    fn is_absent(&self) -> bool {
        matches!(self, Nullable::Absent)
    }
}
