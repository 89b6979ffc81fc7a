use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime, PrimitiveDateTime, UtcOffset};

/// An instant in UTC at microsecond precision, the precision both databases keep.
/// On the wire it is RFC 3339 with a `Z`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(OffsetDateTime);

impl Timestamp {
    /// The current instant, at microsecond precision.
    pub fn now() -> Self {
        Self::from_offset(OffsetDateTime::now_utc())
    }

    /// Converts to UTC and drops precision below a microsecond.
    pub fn from_offset(instant: OffsetDateTime) -> Self {
        let utc = instant.to_offset(UtcOffset::UTC);
        let micros = utc.microsecond();
        Self(utc.replace_microsecond(micros).unwrap_or(utc))
    }

    /// Reads a naive date-time as UTC (how both backends store instants).
    pub fn from_utc_naive(naive: PrimitiveDateTime) -> Self {
        Self::from_offset(naive.assume_utc())
    }

    /// The instant in UTC without an offset, as both databases store it.
    pub fn to_utc_naive(self) -> PrimitiveDateTime {
        PrimitiveDateTime::new(self.0.date(), self.0.time())
    }

    /// The instant, in UTC.
    pub fn to_offset(self) -> OffsetDateTime {
        self.0
    }

    /// Whole seconds since the Unix epoch.
    pub fn as_unix_seconds(self) -> i64 {
        self.0.unix_timestamp()
    }

    /// Microseconds since the Unix epoch: exact, as timestamps keep microseconds.
    pub fn as_unix_micros(self) -> i64 {
        // Years 1 to 9999 are about ±2.5e17 µs, far inside i64.
        i64::try_from(self.0.unix_timestamp_nanos() / 1000).unwrap_or(i64::MAX)
    }

    /// The inverse of [`Timestamp::as_unix_micros`], for the same years as [`Timestamp::parse`].
    pub fn from_unix_micros(micros: i64) -> Result<Self, InvalidTimestamp> {
        let instant =
            OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1000).map_err(|_| InvalidTimestamp)?;
        if !(1..=9999).contains(&instant.year()) {
            return Err(InvalidTimestamp);
        }
        Ok(Self(instant))
    }

    /// The instant `duration` later (earlier when negative), saturating at the representable range.
    #[must_use]
    pub fn plus(self, duration: Duration) -> Self {
        Self::from_offset(self.0.saturating_add(duration))
    }

    /// Parses RFC 3339 text (any offset; stored as UTC). Only years 1 to 9999 in UTC are accepted:
    /// both databases and RFC 3339 itself stop there.
    pub fn parse(text: &str) -> Result<Self, InvalidTimestamp> {
        let parsed = OffsetDateTime::parse(text, &Rfc3339).map_err(|_| InvalidTimestamp)?;
        let utc = parsed.checked_to_offset(UtcOffset::UTC).ok_or(InvalidTimestamp)?;
        if !(1..=9999).contains(&utc.year()) {
            return Err(InvalidTimestamp);
        }
        Ok(Self::from_offset(utc))
    }
}

/// Text that is not an RFC 3339 date-time between the years 1 and 9999.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must be an RFC 3339 date-time between the years 1 and 9999")]
pub struct InvalidTimestamp;

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.format(&Rfc3339) {
            Ok(text) => f.write_str(&text),
            Err(_) => Err(fmt::Error),
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_in_utc_with_z_and_microseconds() {
        let ts = Timestamp::parse("2026-11-22T08:30:00.123456789+02:00").unwrap();
        assert_eq!(ts.to_string(), "2026-11-22T06:30:00.123456Z");
    }

    #[test]
    fn dates_beyond_what_rfc_3339_and_the_databases_hold_are_refused() {
        assert!(Timestamp::parse("0000-01-01T00:30:00+01:00").is_err(), "year -1 in UTC");
        assert!(Timestamp::parse("9999-12-31T23:30:00-01:00").is_err(), "year 10000 in UTC");
        assert!(Timestamp::parse("9999-12-31T23:59:59Z").is_ok());
        assert!(Timestamp::parse("yesterday").is_err());
    }

    #[test]
    fn unix_micros_round_trip_within_the_years_1_to_9999() {
        let ts = Timestamp::parse("2026-11-22T06:30:00.123456Z").unwrap();
        assert_eq!(Timestamp::from_unix_micros(ts.as_unix_micros()), Ok(ts));
        assert!(Timestamp::from_unix_micros(i64::MAX).is_err());
        assert!(Timestamp::from_unix_micros(-62_135_596_800_000_001).is_err(), "just before year 1");
    }

    #[test]
    fn naive_round_trip_is_lossless() {
        let ts = Timestamp::now();
        assert_eq!(Timestamp::from_utc_naive(ts.to_utc_naive()), ts);
    }
}
