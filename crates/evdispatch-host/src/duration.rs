//! The one duration grammar of every evdispatch command line.

use std::fmt;
use std::time::Duration;

/// A duration that [`parse_duration`] could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    text: String,
    why: String,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not a duration ({}); write e.g. 10s, 1.5s, 250ms, 500us, 2m, 1min, 1h 30m, \
             or a bare number of seconds",
            self.text, self.why
        )
    }
}

impl std::error::Error for DurationError {}

/// Read a duration the way every evdispatch flag does.
///
/// Accepts everything [`humantime::parse_duration`] accepts (`2s`, `500us`,
/// `250ms`, `1min`, `2m`, `1h 30m`, `3days`...), and, as the flags always
/// have, a bare number of seconds (`10`, `1.5`) and a decimal number before
/// one unit (`1.5s`, `0.25ms`, `2.5min`), and wrk's one-letter units in
/// upper case (`10S`, `1M` a minute, `2H`). Negative, infinite and
/// not-a-number values are refused.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    let err = |why: &str| DurationError {
        text: text.to_string(),
        why: why.to_string(),
    };
    if t.is_empty() {
        return Err(err("it is empty"));
    }
    if t.starts_with('-') {
        return Err(err("it is negative"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    if unit.is_empty() {
        // A bare number: seconds.
        let secs: f64 = num.parse().map_err(|_| err("not a number"))?;
        return Duration::try_from_secs_f64(secs).map_err(|_| err("out of range"));
    }
    // wrk reads its one-letter units in either case; humantime's `M` would
    // be months (and `S`, `H` nothing). `1M` is a minute here, as in wrk.
    let wrk_unit;
    let (t, unit) = match unit {
        "S" | "M" | "H" => {
            wrk_unit = format!("{num}{}", unit.to_ascii_lowercase());
            (wrk_unit.as_str(), &wrk_unit[num.len()..])
        }
        _ => (t, unit),
    };
    match humantime::parse_duration(t) {
        Ok(d) => Ok(d),
        Err(e) if num.contains('.') => {
            // `1.5s`: humantime takes whole numbers only; scale its unit.
            let per_unit = humantime::parse_duration(&format!("1{unit}"))
                .map_err(|_| err(&format!("unknown unit '{unit}'")))?;
            let v: f64 = num.parse().map_err(|_| err(&e.to_string()))?;
            Duration::try_from_secs_f64(v * per_unit.as_secs_f64()).map_err(|_| err("out of range"))
        }
        Err(e) => Err(err(&e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Duration {
        parse_duration(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn humantime_forms() {
        assert_eq!(ok("2s"), Duration::from_secs(2));
        assert_eq!(ok("500us"), Duration::from_micros(500));
        assert_eq!(ok("250ms"), Duration::from_millis(250));
        assert_eq!(ok("1min"), Duration::from_secs(60));
        // wrk's units in upper case: a minute, not humantime's month.
        assert_eq!(ok("1M"), Duration::from_secs(60));
        assert_eq!(ok("10S"), Duration::from_secs(10));
        assert_eq!(ok("2H"), Duration::from_secs(7200));
        assert_eq!(ok("1.5M"), Duration::from_secs(90));
        assert_eq!(ok("2m"), Duration::from_secs(120));
        assert_eq!(ok("1h 30m"), Duration::from_secs(5400));
        assert_eq!(ok("3h"), Duration::from_secs(3 * 3600));
        assert_eq!(ok(" 10s "), Duration::from_secs(10));
    }

    #[test]
    fn the_forms_the_flags_took_before() {
        // `serve`: bare seconds, decimals, ms/s/m/min/h.
        assert_eq!(ok("1.5"), Duration::from_millis(1500));
        assert_eq!(ok("10"), Duration::from_secs(10));
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("0.5ms"), Duration::from_micros(500));
        assert_eq!(ok("1.5min"), Duration::from_secs(90));
        assert_eq!(ok("2.5m"), Duration::from_secs(150));
        assert_eq!(ok("1.25h"), Duration::from_secs(4500));
        // `load`: us as well, and bare seconds.
        assert_eq!(ok("0.5us"), Duration::from_nanos(500));
        assert_eq!(ok(".5s"), Duration::from_millis(500));
    }

    #[test]
    fn refusals_say_what_was_wrong() {
        for bad in ["", "x", "5q", "-1", "-1s", "1.2.3", "1.5parsecs", "s"] {
            let e = parse_duration(bad).expect_err(bad).to_string();
            assert!(e.contains("is not a duration"), "{bad}: {e}");
        }
        assert!(parse_duration("1.5q")
            .unwrap_err()
            .to_string()
            .contains("unknown unit 'q'"));
    }
}
