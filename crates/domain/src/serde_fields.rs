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

/// An `i64` that a client may also write with a zero fraction (`1700000000000.0`): JSON Schema's
/// `integer` counts such numbers, and JavaScript clients produce them.
struct WholeNumber(i64);

impl<'de> Deserialize<'de> for WholeNumber {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_i64(WholeNumberVisitor).map(WholeNumber)
    }
}

struct WholeNumberVisitor;

/// 2^63 as an `f64`: floats below it (and at or above its negation) convert to `i64` exactly.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

impl serde::de::Visitor<'_> for WholeNumberVisitor {
    type Value = i64;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("i64")
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<i64, E> {
        Ok(value)
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<i64, E> {
        i64::try_from(value).map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(value), &self))
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<i64, E> {
        if value.fract() == 0.0 && (-TWO_POW_63..TWO_POW_63).contains(&value) {
            #[allow(clippy::cast_possible_truncation)]
            Ok(value as i64)
        } else {
            Err(E::invalid_type(serde::de::Unexpected::Float(value), &self))
        }
    }
}

/// A required integer field; a zero fraction (`1700000000000.0`) is accepted, as JSON Schema's
/// `integer` allows it.
pub fn whole_number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    WholeNumber::deserialize(deserializer).map(|number| number.0)
}

/// An optional integer field (absent or `null` → `None`), taken as [`whole_number`] takes it.
pub fn optional_whole_number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    Option::<WholeNumber>::deserialize(deserializer).map(|number| number.map(|n| n.0))
}

/// A nullable integer field of a patch, as [`nullable`], taken as [`whole_number`] takes it.
pub fn nullable_whole_number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<i64>>, D::Error> {
    Option::<WholeNumber>::deserialize(deserializer).map(|number| Some(number.map(|n| n.0)))
}

#[cfg(test)]
mod whole_number_tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Holder {
        #[serde(deserialize_with = "whole_number")]
        n: i64,
    }

    #[test]
    fn integers_with_a_zero_fraction_are_integers() {
        let parse = |json: &str| serde_json::from_str::<Holder>(json).map(|h| h.n);
        assert_eq!(parse(r#"{"n": 5}"#).ok(), Some(5));
        assert_eq!(parse(r#"{"n": 1224773025.0}"#).ok(), Some(1_224_773_025));
        assert!(parse(r#"{"n": 1.5}"#).is_err());
        assert!(parse(r#"{"n": 1e30}"#).is_err());
        assert!(parse(r#"{"n": 18446744073709551615}"#).is_err());
        assert!(parse(r#"{"n": "5"}"#).is_err());
    }
}
