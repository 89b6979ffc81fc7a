//! Cron schedules: when a browser automation runs.
//!
//! The grammar is ours, checked here so that a refusal names the field and the problem; `croner` finds
//! the firings. It is handed each field rewritten in the part of its syntax that means exactly what
//! ours does (numbers for names, `a-last/n` for `a/n`), and never sees its extensions (`L`, `W`, `#`,
//! `?`, `+`, a year field), which we refuse.

use std::cmp::Ordering;
use std::fmt;

use croner::errors::CronError;
use croner::parser::{CronParser, Seconds, Year};
use croner::{CivilDate, CivilDateTime, CivilTime, Cron, CronDateTime, CronPattern, Resolution, Weekday};
use time::{Date, Duration, Month, OffsetDateTime, PrimitiveDateTime, Time};

use crate::Timestamp;

/// The longest expression accepted, in characters.
const MAX_LENGTH: usize = 200;

/// How far ahead [`Schedule::next_after`] looks before giving up: five years, two of them leap years.
const HORIZON: Duration = Duration::days(5 * 365 + 2);

const MONTH_NAMES: [&str; 12] = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const WEEKDAY_NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// A cron expression, validated. Times are in UTC.
///
/// Accepted syntax (surrounding whitespace is trimmed; fields are separated by whitespace; at most 200
/// characters):
///
/// - 5 fields: `minute hour day-of-month month day-of-week` (fires at second 0), or
/// - 6 fields: `second minute hour day-of-month month day-of-week`.
///
/// | field        | values                                                         |
/// |--------------|----------------------------------------------------------------|
/// | second       | 0-59                                                           |
/// | minute       | 0-59                                                           |
/// | hour         | 0-23                                                           |
/// | day-of-month | 1-31                                                           |
/// | month        | 1-12 or `JAN`-`DEC`                                            |
/// | day-of-week  | 0-7 (0 and 7 are Sunday) or `SUN`-`SAT`                        |
///
/// Names are case-insensitive. Each field is a comma-separated list of items, each one of:
/// `*` (every value), `a` (one value), `a-b` (an inclusive range, `a` ≤ `b`), `*/n` (every `n`th value
/// from the first), `a-b/n` (every `n`th value from `a` to `b`), `a/n` (every `n`th value from `a` to the
/// field's maximum; for day-of-week the maximum is 6, Saturday). A step is 1 up to the field's maximum.
///
/// Day rule (as in classic cron): when both day-of-month and day-of-week are restricted (anything but a
/// bare `*`), a day matches when *either* matches; otherwise both must match.
///
/// Macros: `@hourly` (`0 * * * *`), `@daily` and `@midnight` (`0 0 * * *`), `@weekly` (`0 0 * * 0`),
/// `@monthly` (`0 0 1 * *`), `@yearly` and `@annually` (`0 0 1 1 *`).
///
/// Nothing else: croner's extensions (`L`, `W`, `#`, `?`, a `+` before day-of-week, a seventh field
/// for the year, `/n` without a start) are refused like any other unknown value. Firings are found up
/// to the year 5000, croner's limit.
///
/// ```
/// use compliance_domain::{Timestamp, schedule::Schedule};
///
/// let schedule = Schedule::parse("0 9 * * MON-FRI").unwrap();
/// let friday_evening = Timestamp::parse("2026-11-20T18:00:00Z").unwrap();
/// let next = schedule.next_after(friday_evening).unwrap();
/// assert_eq!(next.to_string(), "2026-11-23T09:00:00Z");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    expression: String,
    cron: Cron,
    /// False when no date matches (`0 0 30 2 *`): croner would search up to the year 5000 to find
    /// out, milliseconds per call, where the answer is known at parse time.
    can_fire: bool,
}

/// One of the six fields of a cron expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CronField {
    /// Seconds (only in a six-field expression).
    Second,
    /// Minutes.
    Minute,
    /// Hours.
    Hour,
    /// Days of the month.
    DayOfMonth,
    /// Months.
    Month,
    /// Days of the week.
    DayOfWeek,
}

impl CronField {
    const fn min(self) -> u32 {
        match self {
            Self::DayOfMonth | Self::Month => 1,
            Self::Second | Self::Minute | Self::Hour | Self::DayOfWeek => 0,
        }
    }

    /// The largest value written in an expression.
    const fn max(self) -> u32 {
        match self {
            Self::Second | Self::Minute => 59,
            Self::Hour => 23,
            Self::DayOfMonth => 31,
            Self::Month => 12,
            Self::DayOfWeek => 7,
        }
    }

    /// Where `*` and `a/n` stop: 7 is only an alias for Sunday, so a weekday walk ends on Saturday.
    const fn last(self) -> u32 {
        match self {
            Self::DayOfWeek => 6,
            _ => self.max(),
        }
    }

    /// Names and the value the first name stands for.
    const fn names(self) -> (&'static [&'static str], u32) {
        match self {
            Self::Month => (&MONTH_NAMES, 1),
            Self::DayOfWeek => (&WEEKDAY_NAMES, 0),
            Self::Second | Self::Minute | Self::Hour | Self::DayOfMonth => (&[], 0),
        }
    }
}

impl fmt::Display for CronField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::DayOfMonth => "day-of-month",
            Self::Month => "month",
            Self::DayOfWeek => "day-of-week",
        })
    }
}

/// What is wrong with one field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldProblem {
    /// An empty item in a list (`1,,2`).
    #[error("a list item is empty")]
    EmptyItem,
    /// A value outside the field's range.
    #[error("{value} is out of range {min}-{max}")]
    OutOfRange {
        /// The value as written.
        value: String,
        /// The field's smallest value.
        min: u32,
        /// The field's largest value.
        max: u32,
    },
    /// Text that is no number or name of the field.
    #[error("`{0}` is not a valid value")]
    NotAValue(String),
    /// A step of zero (`*/0`).
    #[error("a step of 0 is not allowed")]
    ZeroStep,
    /// A step larger than the field's range.
    #[error("the step {value} is out of range 1-{max}")]
    StepOutOfRange {
        /// The step as written.
        value: String,
        /// The largest step.
        max: u32,
    },
    /// A range whose start is after its end (`5-1`).
    #[error("the range {start}-{end} starts after it ends")]
    ReversedRange {
        /// The range's start.
        start: u32,
        /// The range's end.
        end: u32,
    },
}

/// Why an expression is not an accepted cron expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// Nothing but spaces.
    #[error("the cron expression is empty")]
    Empty,
    /// Longer than the limit.
    #[error("the cron expression is longer than {MAX_LENGTH} characters")]
    TooLong,
    #[error(
        "a cron expression has 5 fields (minute hour day-of-month month day-of-week) or 6 (a leading second), \
         not {0}"
    )]
    /// Neither 5 nor 6 fields.
    FieldCount(usize),
    /// An `@` macro that is not supported.
    #[error("`{0}` is not a supported macro (@hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually)")]
    UnknownMacro(String),
    /// One field is wrong.
    #[error("the {field} field: {problem}")]
    Field {
        /// Which field.
        field: CronField,
        /// What is wrong with it.
        problem: FieldProblem,
    },
    /// The evaluator refused what our checks passed: a mismatch between the two grammars.
    #[error("the cron expression could not be evaluated: {0}")]
    Unevaluable(String),
}

impl Schedule {
    /// Parses and validates a cron expression (see the type's documentation for the syntax).
    pub fn parse(expression: &str) -> Result<Self, ScheduleError> {
        let expression = expression.trim();
        if expression.is_empty() {
            return Err(ScheduleError::Empty);
        }
        if expression.chars().count() > MAX_LENGTH {
            return Err(ScheduleError::TooLong);
        }
        let expanded = if expression.starts_with('@') {
            match expression.to_ascii_lowercase().as_str() {
                "@hourly" => "0 * * * *",
                "@daily" | "@midnight" => "0 0 * * *",
                "@weekly" => "0 0 * * 0",
                "@monthly" => "0 0 1 * *",
                "@yearly" | "@annually" => "0 0 1 1 *",
                _ => return Err(ScheduleError::UnknownMacro(expression.to_owned())),
            }
        } else {
            expression
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let (second, rest) = match fields.as_slice() {
            [minute, hour, dom, month, dow] => ("0", [*minute, *hour, *dom, *month, *dow]),
            [second, minute, hour, dom, month, dow] => (*second, [*minute, *hour, *dom, *month, *dow]),
            other => return Err(ScheduleError::FieldCount(other.len())),
        };
        let [minute, hour, day_of_month, month, day_of_week] = rest;
        // Day-of-week is checked first, as it always was: an expression with several faults keeps
        // getting the same refusal.
        let day_of_week = normalize_field(day_of_week, CronField::DayOfWeek)?;
        let normalized = [
            normalize_field(second, CronField::Second)?,
            normalize_field(minute, CronField::Minute)?,
            normalize_field(hour, CronField::Hour)?,
            normalize_field(day_of_month, CronField::DayOfMonth)?,
            normalize_field(month, CronField::Month)?,
            day_of_week,
        ]
        .join(" ");
        let cron = CronParser::builder()
            .seconds(Seconds::Required)
            .year(Year::Disallowed)
            .build()
            .parse(&normalized)
            .map_err(|e| ScheduleError::Unevaluable(e.to_string()))?;
        let can_fire = some_date_matches(&cron.pattern);
        Ok(Self { expression: expression.to_owned(), cron, can_fire })
    }

    /// The expression as given, trimmed.
    pub fn as_str(&self) -> &str {
        &self.expression
    }

    /// The shortest interval between the next `samples` firings after `after`, or `None` when it
    /// fires fewer than twice. Used to refuse schedules that fire too often.
    pub fn shortest_gap(&self, after: Timestamp, samples: usize) -> Option<std::time::Duration> {
        let mut previous = self.next_after(after)?;
        let mut shortest: Option<std::time::Duration> = None;
        for _ in 1..samples {
            let Some(next) = self.next_after(previous) else { break };
            let gap = std::time::Duration::try_from(next.to_offset() - previous.to_offset()).ok()?;
            shortest = Some(shortest.map_or(gap, |s| s.min(gap)));
            previous = next;
        }
        shortest
    }

    /// The first whole second strictly after `after` (in UTC) that matches, or `None` when nothing
    /// matches within five years (for example `0 0 30 2 *`).
    pub fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        if !self.can_fire {
            return None;
        }
        let after = after.to_offset();
        let limit = after.checked_add(HORIZON)?;
        // Exclusive: croner starts from the next whole second after `after`'s.
        let next = self.cron.find_next_occurrence(&UtcSecond(after), false).ok()?.0;
        (next <= limit).then(|| Timestamp::from_offset(next))
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expression)
    }
}

/// Whether any date matches. Only day-of-month alone can rule out every date: with a restricted
/// day-of-week, some weekday it names comes every week.
fn some_date_matches(pattern: &CronPattern) -> bool {
    if pattern.is_dom_wildcard() || !pattern.is_dow_wildcard() {
        return true;
    }
    let longest_month = |month: u16| match month {
        2 => 29,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    let first_day = pattern.days.values().first().copied().unwrap_or(u16::MAX);
    pattern.months.values().into_iter().any(|month| first_day <= longest_month(month))
}

fn normalize_field(text: &str, field: CronField) -> Result<String, ScheduleError> {
    // A bare `*` stays one: it is what leaves a day field unrestricted in the day rule.
    if text == "*" {
        return Ok(text.to_owned());
    }
    let items: Result<Vec<String>, FieldProblem> = text.split(',').map(|item| normalize_item(item, field)).collect();
    Ok(items.map_err(|problem| ScheduleError::Field { field, problem })?.join(","))
}

/// One list item, checked, in croner's strict syntax: numbers only, `*` and `a/n` spelled as ranges.
fn normalize_item(item: &str, field: CronField) -> Result<String, FieldProblem> {
    if item.is_empty() {
        return Err(FieldProblem::EmptyItem);
    }
    let (range, step) = match item.split_once('/') {
        Some((range, step)) => (range, Some(parse_step(step, field)?)),
        None => (item, None),
    };
    let (start, end) = if range == "*" {
        (field.min(), field.last())
    } else if let Some((start, end)) = range.split_once('-') {
        let (start, end) = (parse_value(start, field)?, parse_value(end, field)?);
        if start > end {
            return Err(FieldProblem::ReversedRange { start, end });
        }
        (start, end)
    } else {
        let start = parse_value(range, field)?;
        (start, if step.is_some() { field.last().max(start) } else { start })
    };
    Ok(match step {
        Some(step) => format!("{start}-{end}/{step}"),
        None if start == end => start.to_string(),
        None => format!("{start}-{end}"),
    })
}

fn parse_step(text: &str, field: CronField) -> Result<u32, FieldProblem> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(FieldProblem::NotAValue(text.to_owned()));
    }
    match text.parse::<u32>() {
        Ok(0) => Err(FieldProblem::ZeroStep),
        Ok(step) if step <= field.max() => Ok(step),
        _ => Err(FieldProblem::StepOutOfRange { value: text.to_owned(), max: field.max() }),
    }
}

fn parse_value(text: &str, field: CronField) -> Result<u32, FieldProblem> {
    if !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()) {
        return match text.parse::<u32>() {
            Ok(value) if (field.min()..=field.max()).contains(&value) => Ok(value),
            _ => Err(FieldProblem::OutOfRange { value: text.to_owned(), min: field.min(), max: field.max() }),
        };
    }
    let (names, first) = field.names();
    names
        .iter()
        .zip(first..)
        .find(|(name, _)| name.eq_ignore_ascii_case(text))
        .map(|(_, value)| value)
        .ok_or_else(|| FieldProblem::NotAValue(text.to_owned()))
}

/// A UTC instant as croner walks it: UTC has no daylight saving, so every wall-clock time is one instant.
#[derive(Clone)]
struct UtcSecond(OffsetDateTime);

impl CronDateTime for UtcSecond {
    fn to_civil(&self) -> CivilDateTime {
        let (date, time) = (self.0.date(), self.0.time());
        CivilDateTime::new(
            CivilDate::from_parts_unchecked(date.year(), u32::from(u8::from(date.month())), u32::from(date.day())),
            CivilTime::from_parts_unchecked(u32::from(time.hour()), u32::from(time.minute()), u32::from(time.second())),
        )
    }

    fn civil_weekday(&self) -> Weekday {
        Weekday::from_days_from_sunday(u32::from(self.0.weekday().number_days_from_sunday()))
    }

    /// Fails past the year 9999, where `time` (and [`Timestamp`]) end.
    fn resolve_civil(&self, civil: CivilDateTime) -> Result<Resolution<Self>, CronError> {
        let part = |value: u32| u8::try_from(value).map_err(|_| CronError::InvalidDate);
        let month = Month::try_from(part(civil.month())?).map_err(|_| CronError::InvalidDate)?;
        let date =
            Date::from_calendar_date(civil.year(), month, part(civil.day())?).map_err(|_| CronError::InvalidDate)?;
        let time = Time::from_hms(part(civil.hour())?, part(civil.minute())?, part(civil.second())?)
            .map_err(|_| CronError::InvalidTime)?;
        Ok(Resolution::Single(Self(PrimitiveDateTime::new(date, time).assume_utc())))
    }

    fn checked_add_seconds(&self, seconds: i64) -> Option<Self> {
        self.0.checked_add(Duration::seconds(seconds)).map(Self)
    }

    fn cmp_instant(&self, other: &Self) -> Ordering {
        self.0.cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    fn bits(values: &[u8]) -> u64 {
        values.iter().fold(0, |mask, value| mask | (1 << value))
    }

    fn range(start: u8, end: u8) -> u64 {
        (start..=end).fold(0, |mask, value| mask | (1 << value))
    }

    /// The values each field matches, as bit masks, read from the parsed pattern.
    #[derive(Debug)]
    struct Masks {
        seconds: u64,
        minutes: u64,
        hours: u64,
        days_of_month: u64,
        months: u64,
        days_of_week: u64,
        day_of_month_restricted: bool,
        day_of_week_restricted: bool,
    }

    fn masks(expression: &str) -> Masks {
        let pattern = Schedule::parse(expression).unwrap().cron.pattern;
        let mask = |component: &croner::CronComponent| component.values().iter().fold(0, |mask, v| mask | (1 << v));
        Masks {
            seconds: mask(&pattern.seconds),
            minutes: mask(&pattern.minutes),
            hours: mask(&pattern.hours),
            days_of_month: mask(&pattern.days),
            months: mask(&pattern.months),
            days_of_week: mask(&pattern.days_of_week),
            day_of_month_restricted: !pattern.is_dom_wildcard(),
            day_of_week_restricted: !pattern.is_dow_wildcard(),
        }
    }

    fn next(expression: &str, after: &str) -> Option<String> {
        let schedule = Schedule::parse(expression).unwrap();
        schedule.next_after(Timestamp::parse(after).unwrap()).map(|at| at.to_string())
    }

    fn refusal(expression: &str) -> String {
        Schedule::parse(expression).unwrap_err().to_string()
    }

    #[test]
    fn five_fields_fire_at_second_zero() {
        let schedule = masks("* * * * *");
        assert_eq!(schedule.seconds, bits(&[0]));
        assert_eq!(schedule.minutes, range(0, 59));
        assert_eq!(schedule.hours, range(0, 23));
        assert_eq!(schedule.days_of_month, range(1, 31));
        assert_eq!(schedule.months, range(1, 12));
        assert_eq!(schedule.days_of_week, range(0, 6));
        assert!(!schedule.day_of_month_restricted && !schedule.day_of_week_restricted);
    }

    #[test]
    fn six_fields_have_a_leading_second() {
        let schedule = masks("15,45 0 12 * * *");
        assert_eq!(schedule.seconds, bits(&[15, 45]));
        assert_eq!(schedule.minutes, bits(&[0]));
        assert_eq!(schedule.hours, bits(&[12]));
    }

    #[test]
    fn each_item_syntax() {
        let minutes = |field: &str| masks(&format!("{field} * * * *")).minutes;
        assert_eq!(minutes("7"), bits(&[7]));
        assert_eq!(minutes("10-12"), bits(&[10, 11, 12]));
        assert_eq!(minutes("*/15"), bits(&[0, 15, 30, 45]));
        assert_eq!(minutes("10-30/10"), bits(&[10, 20, 30]));
        assert_eq!(minutes("50/3"), bits(&[50, 53, 56, 59]));
        assert_eq!(minutes("1,5-6,*/30"), bits(&[0, 1, 5, 6, 30]));
        assert_eq!(masks("0 0 */10 * *").days_of_month, bits(&[1, 11, 21, 31]));
    }

    #[test]
    fn month_and_weekday_names_are_case_insensitive() {
        let schedule = masks("0 0 * jan,Mar-MAY mon-Fri");
        assert_eq!(schedule.months, bits(&[1, 3, 4, 5]));
        assert_eq!(schedule.days_of_week, range(1, 5));
        assert_eq!(masks("0 0 * * SUN").days_of_week, bits(&[0]));
    }

    #[test]
    fn seven_is_sunday_and_weekday_walks_end_on_saturday() {
        assert_eq!(masks("0 0 * * 7").days_of_week, bits(&[0]));
        assert_eq!(masks("0 0 * * 5-7").days_of_week, bits(&[0, 5, 6]));
        assert_eq!(masks("0 0 * * 1/2").days_of_week, bits(&[1, 3, 5]));
        assert_eq!(masks("0 0 * * */2").days_of_week, bits(&[0, 2, 4, 6]));
        assert_eq!(masks("0 0 * * 7/2").days_of_week, bits(&[0]));
    }

    #[test]
    fn macros() {
        let same = |macro_: &str, expanded: &str| {
            let (a, b) = (masks(macro_), masks(expanded));
            assert_eq!((a.seconds, a.minutes, a.hours), (b.seconds, b.minutes, b.hours), "{macro_}");
            assert_eq!((a.days_of_month, a.months, a.days_of_week), (b.days_of_month, b.months, b.days_of_week));
            assert_eq!(
                (a.day_of_month_restricted, a.day_of_week_restricted),
                (b.day_of_month_restricted, b.day_of_week_restricted)
            );
        };
        same("@hourly", "0 * * * *");
        same("@daily", "0 0 * * *");
        same("@midnight", "0 0 * * *");
        same("@weekly", "0 0 * * 0");
        same("@monthly", "0 0 1 * *");
        same("@yearly", "0 0 1 1 *");
        same("@ANNUALLY", "0 0 1 1 *");
        assert!(refusal("@reboot").contains("`@reboot` is not a supported macro"));
    }

    #[test]
    fn keeps_the_trimmed_expression() {
        let schedule = Schedule::parse("  */5  *\t* * *\n").unwrap();
        assert_eq!(schedule.as_str(), "*/5  *\t* * *");
        assert_eq!(schedule.to_string(), schedule.as_str());
        assert_eq!(Schedule::parse(" @daily ").unwrap().as_str(), "@daily");
    }

    #[test]
    fn refusals_name_the_field() {
        assert_eq!(refusal("0 25 * * *"), "the hour field: 25 is out of range 0-23");
        assert_eq!(refusal("60 * * * *"), "the minute field: 60 is out of range 0-59");
        assert_eq!(refusal("61 * * * * *"), "the second field: 61 is out of range 0-59");
        assert_eq!(refusal("0 0 0 * *"), "the day-of-month field: 0 is out of range 1-31");
        assert_eq!(refusal("0 0 * 13 *"), "the month field: 13 is out of range 1-12");
        assert_eq!(refusal("0 0 * * 8"), "the day-of-week field: 8 is out of range 0-7");
        assert_eq!(refusal("99999999999 * * * *"), "the minute field: 99999999999 is out of range 0-59");
        assert_eq!(refusal("*/0 * * * *"), "the minute field: a step of 0 is not allowed");
        assert_eq!(refusal("0 */24 * * *"), "the hour field: the step 24 is out of range 1-23");
        assert_eq!(refusal("0 0 * * 5-1"), "the day-of-week field: the range 5-1 starts after it ends");
        assert_eq!(refusal("0 0 * DEC-JAN *"), "the month field: the range 12-1 starts after it ends");
        assert_eq!(refusal("1,,2 * * * *"), "the minute field: a list item is empty");
        assert_eq!(refusal("0 0 1, * *"), "the day-of-month field: a list item is empty");
        assert_eq!(refusal("0 0 * FOO *"), "the month field: `FOO` is not a valid value");
        assert_eq!(refusal("0 MON * * *"), "the hour field: `MON` is not a valid value");
        assert_eq!(refusal("0 0 * * -1"), "the day-of-week field: `` is not a valid value");
        assert_eq!(refusal("*/x * * * *"), "the minute field: `x` is not a valid value");
        assert_eq!(refusal("*/ * * * *"), "the minute field: `` is not a valid value");
    }

    #[test]
    fn the_evaluators_extensions_are_refused() {
        assert_eq!(refusal("0 0 L * *"), "the day-of-month field: `L` is not a valid value");
        assert_eq!(refusal("0 0 15W * *"), "the day-of-month field: `15W` is not a valid value");
        assert_eq!(refusal("0 0 ? * *"), "the day-of-month field: `?` is not a valid value");
        assert_eq!(refusal("0 0 * * 5#2"), "the day-of-week field: `5#2` is not a valid value");
        assert_eq!(refusal("0 0 * * 5L"), "the day-of-week field: `5L` is not a valid value");
        assert_eq!(refusal("0 0 1 * +MON"), "the day-of-week field: `+MON` is not a valid value");
        assert_eq!(refusal("/5 * * * *"), "the minute field: `` is not a valid value");
        assert_eq!(refusal("0 0 * * JAN"), "the day-of-week field: `JAN` is not a valid value");
        assert!(refusal("0 0 0 1 1 * 2030").contains("not 7"), "no year field");
    }

    #[test]
    fn a_bare_star_inside_a_list_is_every_value() {
        assert_eq!(masks("1,* * * * *").minutes, range(0, 59));
        let restricted = masks("0 0 1,* * *");
        assert_eq!(restricted.days_of_month, range(1, 31));
        assert!(restricted.day_of_month_restricted, "only a bare `*` leaves the day rule");
    }

    #[test]
    fn refuses_wrong_shapes() {
        assert_eq!(Schedule::parse("   "), Err(ScheduleError::Empty));
        assert_eq!(Schedule::parse("* * * *"), Err(ScheduleError::FieldCount(4)));
        assert_eq!(Schedule::parse("* * * * * * *"), Err(ScheduleError::FieldCount(7)));
        assert!(refusal("* * * *").contains("5 fields"));
        let long = format!("0 0 * * {}", vec!["1"; 100].join(","));
        assert_eq!(Schedule::parse(&long), Err(ScheduleError::TooLong));
        let just_fits = format!("{}0 * * * *", " ".repeat(300));
        assert!(Schedule::parse(&just_fits).is_ok(), "surrounding whitespace does not count");
    }

    #[test]
    fn every_minute_fires_on_the_next_minute_boundary() {
        assert_eq!(next("* * * * *", "2026-11-22T10:00:30.5Z").as_deref(), Some("2026-11-22T10:01:00Z"));
        assert_eq!(next("* * * * *", "2026-11-22T10:00:00Z").as_deref(), Some("2026-11-22T10:01:00Z"));
        assert_eq!(next("* * * * *", "2026-12-31T23:59:59Z").as_deref(), Some("2027-01-01T00:00:00Z"));
    }

    #[test]
    fn every_quarter_hour() {
        assert_eq!(next("*/15 * * * *", "2026-11-22T10:07:00Z").as_deref(), Some("2026-11-22T10:15:00Z"));
        assert_eq!(next("*/15 * * * *", "2026-11-22T10:45:00Z").as_deref(), Some("2026-11-22T11:00:00Z"));
        assert_eq!(next("*/15 * * * *", "2026-11-22T23:50:00Z").as_deref(), Some("2026-11-23T00:00:00Z"));
    }

    #[test]
    fn weekdays_skip_the_weekend() {
        // 2026-11-20 is a Friday.
        assert_eq!(next("0 9 * * 1-5", "2026-11-20T08:59:59Z").as_deref(), Some("2026-11-20T09:00:00Z"));
        assert_eq!(next("0 9 * * 1-5", "2026-11-20T09:00:00Z").as_deref(), Some("2026-11-23T09:00:00Z"));
        assert_eq!(next("0 9 * * MON-FRI", "2026-11-21T12:00:00Z").as_deref(), Some("2026-11-23T09:00:00Z"));
    }

    #[test]
    fn first_of_the_month_across_month_and_year_ends() {
        assert_eq!(next("0 0 1 * *", "2026-01-31T12:00:00Z").as_deref(), Some("2026-02-01T00:00:00Z"));
        assert_eq!(next("0 0 1 * *", "2026-02-28T00:00:00Z").as_deref(), Some("2026-03-01T00:00:00Z"));
        assert_eq!(next("0 0 1 * *", "2026-04-30T23:59:59Z").as_deref(), Some("2026-05-01T00:00:00Z"));
        assert_eq!(next("0 0 1 * *", "2026-12-31T23:59:59.999Z").as_deref(), Some("2027-01-01T00:00:00Z"));
    }

    #[test]
    fn strictly_after_a_matching_instant() {
        assert_eq!(next("0 0 1 * *", "2026-03-01T00:00:00Z").as_deref(), Some("2026-04-01T00:00:00Z"));
        assert_eq!(next("@monthly", "2026-03-01T00:00:00.000001Z").as_deref(), Some("2026-04-01T00:00:00Z"));
        assert_eq!(next("0 0 1 * *", "2026-02-28T23:59:59.999999Z").as_deref(), Some("2026-03-01T00:00:00Z"));
    }

    #[test]
    fn leap_day() {
        assert_eq!(next("30 2 29 2 *", "2026-11-22T00:00:00Z").as_deref(), Some("2028-02-29T02:30:00Z"));
        assert_eq!(next("30 2 29 2 *", "2028-02-29T02:30:00Z").as_deref(), Some("2032-02-29T02:30:00Z"));
    }

    #[test]
    fn day_of_month_or_day_of_week_when_both_are_restricted() {
        // 2026-01-01 is a Thursday: the Friday comes first.
        assert_eq!(next("0 0 13 * 5", "2026-01-01T00:00:00Z").as_deref(), Some("2026-01-02T00:00:00Z"));
        // 2026-04-11 is a Saturday: Monday the 13th comes before Friday the 17th.
        assert_eq!(next("0 0 13 * 5", "2026-04-11T00:00:00Z").as_deref(), Some("2026-04-13T00:00:00Z"));
        assert_eq!(next("0 0 13 * 5", "2026-04-13T00:00:00Z").as_deref(), Some("2026-04-17T00:00:00Z"));
        // Only one restricted: both must match (Friday the 13th, in February 2026).
        assert_eq!(next("0 0 13 * *", "2026-04-11T00:00:00Z").as_deref(), Some("2026-04-13T00:00:00Z"));
        assert_eq!(next("0 0 * * 5", "2026-04-11T00:00:00Z").as_deref(), Some("2026-04-17T00:00:00Z"));
    }

    #[test]
    fn every_second() {
        assert_eq!(next("*/1 * * * * *", "2026-11-22T10:00:00Z").as_deref(), Some("2026-11-22T10:00:01Z"));
        assert_eq!(next("*/1 * * * * *", "2026-11-22T10:00:00.5Z").as_deref(), Some("2026-11-22T10:00:01Z"));
        assert_eq!(next("*/1 * * * * *", "2026-11-22T23:59:59Z").as_deref(), Some("2026-11-23T00:00:00Z"));
        assert_eq!(next("30 * * * * *", "2026-11-22T10:00:30Z").as_deref(), Some("2026-11-22T10:01:30Z"));
    }

    #[test]
    fn hourly() {
        assert_eq!(next("@hourly", "2026-11-22T10:00:00Z").as_deref(), Some("2026-11-22T11:00:00Z"));
        assert_eq!(next("@hourly", "2026-11-22T23:30:00Z").as_deref(), Some("2026-11-23T00:00:00Z"));
    }

    #[test]
    fn never_matching_gives_up() {
        assert_eq!(next("0 0 31 2 *", "2026-11-22T00:00:00Z"), None);
        assert_eq!(next("0 0 30 2 *", "2026-11-22T00:00:00Z"), None);
        assert_eq!(next("0 0 31 4,6,9,11 *", "2026-11-22T00:00:00Z"), None);
    }

    #[test]
    fn one_listed_month_with_the_day_is_enough() {
        assert_eq!(next("0 0 30,31 2,3 *", "2026-11-22T00:00:00Z").as_deref(), Some("2027-03-30T00:00:00Z"));
        // No 31 February, but Mondays in February: 2027-02-01 is one.
        assert_eq!(next("0 0 31 2 1", "2026-11-22T00:00:00Z").as_deref(), Some("2027-02-01T00:00:00Z"));
    }

    #[test]
    fn gives_up_beyond_five_years() {
        assert_eq!(next("0 0 29 2 *", "2000-03-01T00:00:00Z").as_deref(), Some("2004-02-29T00:00:00Z"));
        // 2100 is not a leap year: the next 29 February after 2096 is eight years away.
        assert_eq!(next("0 0 29 2 *", "2096-03-01T00:00:00Z"), None);
        assert_eq!(next("0 0 1 1 *", "9999-06-01T00:00:00Z"), None, "the calendar ends first");
    }

    #[test]
    fn the_shortest_gap_is_found_among_the_next_firings() {
        let now = Timestamp::now();
        let every_second = Schedule::parse("*/1 * * * * *").unwrap();
        assert_eq!(every_second.shortest_gap(now, 16), Some(std::time::Duration::from_secs(1)));
        let irregular = Schedule::parse("0,1 * * * *").unwrap();
        assert_eq!(irregular.shortest_gap(now, 16), Some(std::time::Duration::from_secs(60)));
        let never = Schedule::parse("0 0 31 2 *").unwrap();
        assert_eq!(never.shortest_gap(now, 16), None);
    }
}
