//! Durations for people: `850 ms`, `7.2 s`, `3 min 5 s` — never Rust's `7.199999849s` in a message.

use std::time::Duration;

/// Displays a duration rounded for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Human(pub Duration);

impl std::fmt::Display for Human {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = self.0.as_millis();
        match ms {
            0..=999 => write!(f, "{ms} ms"),
            1_000..=59_999 => {
                let tenths = (ms + 50) / 100;
                if tenths.is_multiple_of(10) {
                    write!(f, "{} s", tenths / 10)
                } else {
                    write!(f, "{}.{} s", tenths / 10, tenths % 10)
                }
            }
            _ => {
                let s = (ms + 500) / 1000;
                let (h, m, s) = (s / 3600, (s % 3600) / 60, s % 60);
                match (h, s) {
                    (0, 0) => write!(f, "{m} min"),
                    (0, _) => write!(f, "{m} min {s} s"),
                    _ => write!(f, "{h} h {m} min"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounded_for_people() {
        let h = |ms: u64| Human(Duration::from_millis(ms)).to_string();
        assert_eq!(h(7), "7 ms");
        assert_eq!(h(7_199), "7.2 s");
        assert_eq!(h(Duration::from_nanos(7_199_999_849).as_millis() as u64), "7.2 s");
        assert_eq!(h(30_000), "30 s");
        assert_eq!(h(185_000), "3 min 5 s");
        assert_eq!(h(300_000), "5 min");
        assert_eq!(h(3_900_000), "1 h 5 min");
    }
}
