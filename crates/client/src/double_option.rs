//! `Option<Option<T>>` for a member that may be absent (outer `None`), `null` (`Some(None)`) or a
//! value: a PATCH body clears a field with `null` and leaves it alone when absent. Used with
//! `#[serde(default, skip_serializing_if = "Option::is_none", with = "crate::double_option")]`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Writes `Some(None)` as `null` and `Some(Some(v))` as `v` (`None` is skipped by the field).
pub fn serialize<T: Serialize, S: Serializer>(value: &Option<Option<T>>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(inner) => inner.serialize(serializer),
        None => serializer.serialize_none(),
    }
}

/// A present member: `null` becomes `Some(None)` (an absent one is `None` through `default`).
pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}
