//! `google.protobuf.Duration`, whose JSON form is a string of seconds with an `s`:
//! `"1.5s"`, `"-0.000001s"`, with 0, 3, 6 or 9 fractional digits, within ±10,000 years.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A signed span of time: seconds and nanoseconds of the same sign.
#[derive(Clone, Copy, PartialEq, Eq, Hash, prost::Message)]
pub struct Duration {
    /// Whole seconds, at most 315,576,000,000 either way.
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    /// Nanoseconds, -999,999,999 to 999,999,999, of the sign of `seconds`.
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

/// About 10,000 years, the range the type allows.
const MAX_SECONDS: i64 = 315_576_000_000;

impl From<std::time::Duration> for Duration {
    fn from(duration: std::time::Duration) -> Self {
        Duration {
            seconds: i64::try_from(duration.as_secs()).unwrap_or(i64::MAX),
            nanos: duration.subsec_nanos() as i32,
        }
    }
}

impl Duration {
    /// The JSON form; `None` out of range or with signs that differ.
    fn to_json(self) -> Option<String> {
        let (seconds, nanos) = (self.seconds, self.nanos);
        if seconds.abs() > MAX_SECONDS
            || nanos.abs() >= 1_000_000_000
            || (seconds != 0 && nanos != 0 && (seconds < 0) != (nanos < 0))
        {
            return None;
        }
        let mut out = String::new();
        if seconds < 0 || nanos < 0 {
            out.push('-');
        }
        out.push_str(&seconds.unsigned_abs().to_string());
        super::write_fraction(&mut out, nanos.unsigned_abs());
        out.push('s');
        Some(out)
    }

    /// Reads `[-]SECONDS[.FRACTION]s`.
    fn from_json(text: &str) -> Option<Duration> {
        let body = text.strip_suffix('s')?;
        let (negative, body) = match body.strip_prefix('-') {
            Some(body) => (true, body),
            None => (false, body),
        };
        let (whole, fraction) = match body.split_once('.') {
            Some((whole, fraction)) => (whole, Some(fraction)),
            None => (body, None),
        };
        let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !all_digits(whole) || whole.len() > 12 {
            return None;
        }
        let seconds: i64 = whole.parse().ok()?;
        let nanos = match fraction {
            None => 0,
            Some(fraction) if all_digits(fraction) && fraction.len() <= 9 => {
                fraction.parse::<i32>().ok()? * 10i32.pow(9 - fraction.len() as u32)
            }
            Some(_) => return None,
        };
        if seconds > MAX_SECONDS {
            return None;
        }
        let sign = if negative { -1 } else { 1 };
        Some(Duration {
            seconds: sign * seconds,
            nanos: sign as i32 * nanos,
        })
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = self.to_json().ok_or_else(|| {
            serde::ser::Error::custom(format!(
                "Duration {{ seconds: {}, nanos: {} }} is out of range",
                self.seconds, self.nanos
            ))
        })?;
        serializer.serialize_str(&text)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Seconds;
        impl Visitor<'_> for Seconds {
            type Value = Duration;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration in seconds such as \"1.5s\"")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Duration, E> {
                Duration::from_json(text)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Str(text), &self))
            }
        }
        deserializer.deserialize_str(Seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(seconds: i64, nanos: i32) -> Duration {
        Duration { seconds, nanos }
    }

    #[test]
    fn seconds_with_an_s_both_ways() {
        for (duration, text) in [
            (span(0, 0), "0s"),
            (span(1, 500_000_000), "1.500s"),
            (span(-1, -500_000_000), "-1.500s"),
            (span(0, -1_000), "-0.000001s"),
            (span(3, 1), "3.000000001s"),
            (span(MAX_SECONDS, 999_999_999), "315576000000.999999999s"),
        ] {
            assert_eq!(duration.to_json().as_deref(), Some(text));
            assert_eq!(Duration::from_json(text), Some(duration), "{text}");
        }
        assert_eq!(Duration::from_json("1.5s"), Some(span(1, 500_000_000)));
        for bad in [
            "",
            "1",
            "s",
            "1.s",
            ".5s",
            "1.5",
            "+1s",
            "1.0000000001s",
            "1e3s",
            "315576000001s",
            "--1s",
        ] {
            assert_eq!(Duration::from_json(bad), None, "{bad}");
        }
        assert_eq!(span(1, -1).to_json(), None, "signs differ");
        assert_eq!(span(MAX_SECONDS + 1, 0).to_json(), None);
    }
}
