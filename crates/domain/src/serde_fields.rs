//! Deserialisers that tell an absent field from an explicit `null`.
//!
//! Use with `#[serde(default, deserialize_with = "…")]`: an absent field stays `None`.

use serde::{Deserialize, Deserializer};

/// A nullable field of a patch: absent → `None`, `null` → `Some(None)`, value → `Some(Some(v))`.
pub fn nullable<'de, T, D>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// A field that may be absent but never `null`.
pub fn required_non_null<'de, T, D>(deserializer: D) -> Result<Option<T>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    match Option::<T>::deserialize(deserializer)? {
        Some(value) => Ok(Some(value)),
        None => Err(serde::de::Error::custom("must not be null")),
    }
}
