//! `google.protobuf.Timestamp`, whose JSON form is an RFC 3339 date in UTC with a `Z`:
//! `"1972-01-01T10:00:20.021Z"`, with 0, 3, 6 or 9 fractional digits, from year 1 to 9999.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time: seconds and nanoseconds since the Unix epoch, in UTC.
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct Timestamp {
    /// Seconds since 1970-01-01T00:00:00Z; from 0001-01-01 to 9999-12-31 in the JSON form.
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    /// Nanoseconds within the second, 0 to 999,999,999.
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

/// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, in seconds since the epoch.
const MIN_SECONDS: i64 = -62_135_596_800;
const MAX_SECONDS: i64 = 253_402_300_799;

impl From<std::time::SystemTime> for Timestamp {
    fn from(time: std::time::SystemTime) -> Self {
        let (seconds, nanos) = match time.duration_since(std::time::UNIX_EPOCH) {
            Ok(after) => (after.as_secs() as i64, after.subsec_nanos() as i32),
            Err(before) => {
                let before = before.duration();
                let (s, n) = (before.as_secs() as i64, before.subsec_nanos() as i32);
                if n == 0 {
                    (-s, 0)
                } else {
                    (-s - 1, 1_000_000_000 - n)
                }
            }
        };
        Timestamp { seconds, nanos }
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the `days_from_civil` algorithm of
/// Howard Hinnant's "chrono-Compatible Low-Level Date Algorithms").
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day since 1970-01-01 (the same paper's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The number the ASCII digits of `bytes[range]` spell; `None` if any is not a digit.
fn digits(bytes: &[u8], range: std::ops::Range<usize>) -> Option<i64> {
    let digits = bytes.get(range)?;
    digits
        .iter()
        .all(u8::is_ascii_digit)
        .then(|| digits.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
}

impl Timestamp {
    /// The JSON form; `None` outside years 1 to 9999 or with nanos out of range.
    fn to_rfc3339(self) -> Option<String> {
        if !(MIN_SECONDS..=MAX_SECONDS).contains(&self.seconds)
            || !(0..1_000_000_000).contains(&self.nanos)
        {
            return None;
        }
        let days = self.seconds.div_euclid(86_400);
        let second_of_day = self.seconds.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        let mut out = format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
            second_of_day / 3600,
            second_of_day / 60 % 60,
            second_of_day % 60
        );
        super::write_fraction(&mut out, self.nanos as u32);
        out.push('Z');
        Some(out)
    }

    /// Reads `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)`, `T` and `Z` in upper case.
    fn from_rfc3339(text: &str) -> Option<Timestamp> {
        let bytes = text.as_bytes();
        let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
        if separators.iter().any(|&(at, c)| bytes.get(at) != Some(&c))
            || bytes.get(10) != Some(&b'T')
        {
            return None;
        }
        let (year, month, day) = (
            digits(bytes, 0..4)?,
            digits(bytes, 5..7)?,
            digits(bytes, 8..10)?,
        );
        let (hour, minute, second) = (
            digits(bytes, 11..13)?,
            digits(bytes, 14..16)?,
            digits(bytes, 17..19)?,
        );
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let days_in_month = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        if year == 0 || day == 0 || day > days_in_month || hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        let mut rest = &bytes[19..];
        let mut nanos = 0;
        if let [b'.', fraction @ ..] = rest {
            let count = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
            if count == 0 || count > 9 {
                return None;
            }
            nanos = digits(fraction, 0..count)? * 10i64.pow(9 - count as u32);
            rest = &fraction[count..];
        }
        let offset = match rest {
            // Upper case only, as the mapping has it (RFC 3339 would take `t` and `z` too).
            [b'Z'] => 0,
            [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
                let (hours, minutes) = (digits(rest, 1..3)?, digits(rest, 4..6)?);
                if hours > 23 || minutes > 59 {
                    return None;
                }
                let offset = hours * 3600 + minutes * 60;
                if *sign == b'+' { offset } else { -offset }
            }
            _ => return None,
        };
        let seconds =
            days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
                - offset;
        (MIN_SECONDS..=MAX_SECONDS)
            .contains(&seconds)
            .then_some(Timestamp {
                seconds,
                nanos: nanos as i32,
            })
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = self.to_rfc3339().ok_or_else(|| {
            serde::ser::Error::custom(format!(
                "Timestamp {{ seconds: {}, nanos: {} }} is outside years 1 to 9999",
                self.seconds, self.nanos
            ))
        })?;
        serializer.serialize_str(&text)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Rfc3339;
        impl Visitor<'_> for Rfc3339 {
            type Value = Timestamp;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 date such as \"1972-01-01T10:00:20.021Z\"")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Timestamp, E> {
                Timestamp::from_rfc3339(text)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Str(text), &self))
            }
        }
        deserializer.deserialize_str(Rfc3339)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64, nanos: i32) -> Timestamp {
        Timestamp { seconds, nanos }
    }

    #[test]
    fn written_in_utc_with_z_and_3_6_or_9_digits() {
        let cases = [
            (at(0, 0), "1970-01-01T00:00:00Z"),
            (at(63_108_020, 21_000_000), "1972-01-01T10:00:20.021Z"),
            (at(1, 1_000), "1970-01-01T00:00:01.000001Z"),
            (at(-1, 999_999_999), "1969-12-31T23:59:59.999999999Z"),
            (at(MIN_SECONDS, 0), "0001-01-01T00:00:00Z"),
            (
                at(MAX_SECONDS, 999_999_999),
                "9999-12-31T23:59:59.999999999Z",
            ),
            (at(951_782_400, 0), "2000-02-29T00:00:00Z"),
        ];
        for (timestamp, text) in cases {
            assert_eq!(timestamp.to_rfc3339().as_deref(), Some(text));
            assert_eq!(Timestamp::from_rfc3339(text), Some(timestamp), "{text}");
        }
        assert_eq!(at(MIN_SECONDS - 1, 0).to_rfc3339(), None);
        assert_eq!(at(MAX_SECONDS + 1, 0).to_rfc3339(), None);
        assert_eq!(at(0, -1).to_rfc3339(), None);
    }

    #[test]
    fn read_with_offsets_and_any_fraction() {
        let utc = Timestamp::from_rfc3339("1972-01-01T10:00:20.021Z").unwrap();
        for text in [
            "1972-01-01T11:00:20.021+01:00",
            "1972-01-01T09:30:20.021-00:30",
            "1972-01-01T10:00:20.021000Z",
        ] {
            assert_eq!(Timestamp::from_rfc3339(text), Some(utc), "{text}");
        }
        assert_eq!(
            Timestamp::from_rfc3339("1970-01-01T00:00:00.5Z"),
            Some(at(0, 500_000_000))
        );
        for bad in [
            "",
            "1972-01-01",
            "1972-01-01T10:00:20",
            "1972-13-01T10:00:20Z",
            "1971-02-29T10:00:20Z",
            "1972-01-01T24:00:00Z",
            "1972-01-01T10:00:20.Z",
            "1972-01-01T10:00:20.0123456789Z",
            "1972-01-01T10:00:20+1:00",
            "0000-01-01T00:00:00Z",
            "1972-01-01 10:00:20Z",
            "+1972-01-01T10:00:20Z",
            "1972-01-01T10:00:20ZZ",
            "1972-01-01t10:00:20Z",
            "1972-01-01T10:00:20z",
        ] {
            assert_eq!(Timestamp::from_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn from_system_time_before_and_after_the_epoch() {
        use std::time::{Duration, UNIX_EPOCH};
        assert_eq!(Timestamp::from(UNIX_EPOCH + Duration::new(5, 7)), at(5, 7));
        assert_eq!(
            Timestamp::from(UNIX_EPOCH - Duration::new(5, 7)),
            at(-6, 999_999_993)
        );
    }
}
