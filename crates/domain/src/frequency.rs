//! How often something recurs (`monthly`, `quarterly`, `yearly`): a recurring task's period, and
//! the calendar arithmetic of "the next due date".

use crate::Timestamp;

crate::string_enum! {
    /// How often a recurring task (or a control's evidence) is due.
    Frequency { Monthly = "monthly", Quarterly = "quarterly", Yearly = "yearly" }
}

impl Frequency {
    /// The period, in calendar months.
    pub fn months(self) -> u8 {
        match self {
            Frequency::Monthly => 1,
            Frequency::Quarterly => 3,
            Frequency::Yearly => 12,
        }
    }

    /// The next due date once the work due at `due` (if it had a date) was done at `done`:
    /// - with a due date, the first date of its schedule (`due` plus one period, two periods, …)
    ///   strictly after `done`, so that finishing early still moves to the next period and
    ///   finishing late never leaves a date already past;
    /// - without one, one period after `done`.
    ///
    /// A due date on the last day of its month stays on the months' last days (Jan 31 → Feb 28 →
    /// Mar 31); another day is kept, or the month's last when the month is shorter (Jan 30 →
    /// Feb 28 → Mar 30: each step starts from the given date, not from the previous step).
    pub fn next_due(self, due: Option<Timestamp>, done: Timestamp) -> Timestamp {
        let Some(due) = due else { return step(done, u32::from(self.months())) };
        let mut periods = 1_u32;
        loop {
            let next = step(due, periods * u32::from(self.months()));
            // Far enough ahead (or no further representable date): this is it.
            if next > done || periods >= 12 * 10_000 {
                return next;
            }
            periods += 1;
        }
    }
}

/// `months` calendar months after `at`, at the same time of day: on the same day, or on the
/// month's last day when the month is shorter or when `at` is on its month's last day.
fn step(at: Timestamp, months: u32) -> Timestamp {
    let instant = at.to_offset();
    let month_end = instant.day() == instant.month().length(instant.year());
    let index = i64::from(instant.year()) * 12 + i64::from(u8::from(instant.month())) - 1 + i64::from(months);
    let Ok(year) = i32::try_from(index.div_euclid(12)) else { return at };
    let month_number = u8::try_from(index.rem_euclid(12) + 1).unwrap_or(1);
    let Ok(month) = time::Month::try_from(month_number) else { return at };
    if year > 9999 {
        return at;
    }
    let day = if month_end { month.length(year) } else { instant.day().min(month.length(year)) };
    let moved = instant.replace_day(1).and_then(|i| i.replace_year(year)).and_then(|i| i.replace_month(month));
    moved.and_then(|i| i.replace_day(day)).map_or(at, Timestamp::from_offset)
}

/// `months` calendar months after `at`, on the same day or the month's last when the month is
/// shorter (Jan 31 + 1 month = Feb 28; a policy's next review date).
pub fn plus_months(at: Timestamp, months: u8) -> Timestamp {
    let instant = at.to_offset();
    let index = instant.year() * 12 + i32::from(u8::from(instant.month())) - 1 + i32::from(months);
    let (year, month_number) = (index.div_euclid(12), index.rem_euclid(12) + 1);
    let Ok(month) = u8::try_from(month_number).map_err(|_| ()).and_then(|m| time::Month::try_from(m).map_err(|_| ()))
    else {
        return at;
    };
    let day = instant.day().min(month.length(year));
    let moved = instant.replace_day(1).and_then(|i| i.replace_year(year)).and_then(|i| i.replace_month(month));
    moved.and_then(|i| i.replace_day(day)).map_or(at, Timestamp::from_offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    #[test]
    fn without_a_due_date_the_next_is_one_period_after_completion() {
        let done = at("2026-01-31T10:00:00Z");
        assert_eq!(Frequency::Monthly.next_due(None, done), at("2026-02-28T10:00:00Z"));
        assert_eq!(Frequency::Quarterly.next_due(None, done), at("2026-04-30T10:00:00Z"));
        assert_eq!(Frequency::Yearly.next_due(None, done), at("2027-01-31T10:00:00Z"));
    }

    #[test]
    fn month_ends_stay_month_ends() {
        let due = at("2026-01-31T17:00:00Z");
        let done = at("2026-01-20T09:00:00Z");
        assert_eq!(Frequency::Monthly.next_due(Some(due), done), at("2026-02-28T17:00:00Z"));
        let feb = at("2026-02-28T17:00:00Z");
        assert_eq!(Frequency::Monthly.next_due(Some(feb), feb), at("2026-03-31T17:00:00Z"));
        let leap = at("2028-01-31T00:00:00Z");
        assert_eq!(Frequency::Monthly.next_due(Some(leap), leap), at("2028-02-29T00:00:00Z"));
        let quarter = at("2026-03-31T00:00:00Z");
        assert_eq!(Frequency::Quarterly.next_due(Some(quarter), quarter), at("2026-06-30T00:00:00Z"));
        let june = at("2026-06-30T00:00:00Z");
        assert_eq!(Frequency::Quarterly.next_due(Some(june), june), at("2026-09-30T00:00:00Z"));
    }

    #[test]
    fn a_shorter_month_clamps_another_day() {
        let due = at("2026-01-30T00:00:00Z");
        assert_eq!(Frequency::Monthly.next_due(Some(due), due), at("2026-02-28T00:00:00Z"));
        let due = at("2026-01-15T08:30:00Z");
        assert_eq!(Frequency::Monthly.next_due(Some(due), due), at("2026-02-15T08:30:00Z"));
    }

    #[test]
    fn finishing_early_moves_to_the_next_period_and_late_skips_the_past_ones() {
        let due = at("2026-03-31T00:00:00Z");
        let early = at("2026-03-10T00:00:00Z");
        assert_eq!(Frequency::Quarterly.next_due(Some(due), early), at("2026-06-30T00:00:00Z"));
        let late = at("2026-08-01T00:00:00Z");
        assert_eq!(Frequency::Quarterly.next_due(Some(due), late), at("2026-09-30T00:00:00Z"));
        let yearly = at("2024-02-29T00:00:00Z");
        assert_eq!(Frequency::Yearly.next_due(Some(yearly), at("2026-05-01T00:00:00Z")), at("2027-02-28T00:00:00Z"));
    }

    #[test]
    fn plus_months_clamps_to_the_month_end() {
        assert_eq!(plus_months(at("2026-01-31T00:00:00Z"), 1), at("2026-02-28T00:00:00Z"));
        assert_eq!(plus_months(at("2026-11-30T00:00:00Z"), 3), at("2027-02-28T00:00:00Z"));
    }
}
