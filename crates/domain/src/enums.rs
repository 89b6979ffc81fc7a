//! The closed vocabularies of the specification, serialised in `snake_case`.

use std::fmt;

/// Text that is none of an enumeration's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown value `{value}`, expected one of {expected}")]
pub struct UnknownValue {
    /// The text given.
    pub value: String,
    /// The accepted values, comma-separated.
    pub expected: String,
}

/// Declares a string enumeration with its wire names, `FromStr`, `Display` and serde.
#[macro_export]
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $(#[doc = concat!("`", $text, "`")] $variant),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value's wire name.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::UnknownValue;
            fn from_str(text: &str) -> Result<Self, Self::Err> {
                match text {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::UnknownValue {
                        value: text.to_owned(),
                        expected: [$($text),+].join(", "),
                    }),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        #[cfg(feature = "openapi")]
        impl ::utoipa::PartialSchema for $name {
            fn schema() -> ::utoipa::openapi::RefOr<::utoipa::openapi::Schema> {
                $crate::openapi::string_enum_schema(&[$($text),+])
            }
        }

        #[cfg(feature = "openapi")]
        impl ::utoipa::ToSchema for $name {
            fn name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(stringify!($name))
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <::std::borrow::Cow<'de, str>>::deserialize(d)?;
                text.parse().map_err(::serde::de::Error::custom)
            }
        }
    };
}

string_enum! {
    /// Likelihood / probability scale.
    Likelihood {
        VeryUnlikely = "very_unlikely",
        Unlikely = "unlikely",
        Possible = "possible",
        Likely = "likely",
        VeryLikely = "very_likely",
    }
}

string_enum! {
    /// Impact scale.
    Impact {
        Insignificant = "insignificant",
        Minor = "minor",
        Moderate = "moderate",
        Major = "major",
        Severe = "severe",
    }
}

string_enum! {
    /// The part of the organization a record or member belongs to; `none` for none.
    Department {
        None = "none",
        Admin = "admin",
        Gov = "gov",
        Hr = "hr",
        It = "it",
        Itsm = "itsm",
        Qms = "qms",
    }
}

impl fmt::Display for crate::validation::FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_round_trip_through_json_and_name_the_choices_when_unknown() {
        for value in Likelihood::ALL {
            let json = serde_json::to_string(value).unwrap();
            assert_eq!(&serde_json::from_str::<Likelihood>(&json).unwrap(), value);
        }
        let error = serde_json::from_str::<Impact>("\"huge\"").unwrap_err().to_string();
        assert!(error.contains("insignificant, minor, moderate, major, severe"), "{error}");
    }
}
