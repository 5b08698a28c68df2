//! Numbers and durations as people write them, shared by every text the lab shows: charts,
//! the recommendation, the report's summary and `spinlab compare`.

/// A number for a label: three significant digits, with k/M/G for large values.
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "-".to_string();
    }
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let a = scaled.abs();
    let text = if a == 0.0 {
        "0".to_string()
    } else if a >= 100.0 {
        format!("{scaled:.0}")
    } else if a >= 10.0 {
        format!("{scaled:.1}")
    } else if a >= 1.0 {
        format!("{scaled:.2}")
    } else if a >= 0.01 {
        format!("{scaled:.3}")
    } else {
        format!("{scaled:.1e}")
    };
    let text = if text.contains('.') && !text.contains('e') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text}{suffix}")
}

/// `100 ns`, `10 µs`.
pub fn duration_words(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{} ms", number(ns / 1e6))
    } else if ns >= 1e3 {
        format!("{} µs", number(ns / 1e3))
    } else {
        format!("{} ns", number(ns))
    }
}

/// A critical section of `ns` in words: `critical section 100 ns`, or `empty critical section`
/// where nothing but the shared lines is done inside the lock.
pub fn section_words(ns: f64) -> String {
    if ns == 0.0 {
        "empty critical section".to_string()
    } else {
        format!("critical section {}", duration_words(ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(number(1234567.0), "1.23M");
        assert_eq!(number(12.5), "12.5");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(20000.0), "20k");
        assert_eq!(number(3.0), "3");
    }

    #[test]
    fn durations_take_the_largest_unit_below_them() {
        assert_eq!(duration_words(100.0), "100 ns");
        assert_eq!(duration_words(10_000.0), "10 µs");
        assert_eq!(duration_words(2.5e6), "2.5 ms");
    }
}
