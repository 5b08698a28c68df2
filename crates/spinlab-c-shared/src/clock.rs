//! Absolute deadlines as C gives them (a `struct timespec` on `CLOCK_REALTIME` or
//! `CLOCK_MONOTONIC`), turned into the `Instant` deadlines spinlab's primitives take.
//!
//! spinlab's waits time out on `Instant` (`CLOCK_MONOTONIC` on Linux). A deadline on another
//! clock is converted when a wait begins, from the time left on that clock. If the clock is
//! stepped while the thread waits, the wait still ends when the time left has elapsed; the
//! caller then asks [`Abstime::reached`] and, if the clock says the deadline has not come yet
//! (it was stepped back), waits again. A clock stepped forward past the deadline is noticed
//! only when the converted wait ends, which is late but never early.

use libc::{c_long, clockid_t, timespec};
use std::time::{Duration, Instant};

const NANOS_PER_SECOND: c_long = 1_000_000_000;

/// A validated absolute time on a clock that a wait can be converted from.
#[derive(Clone, Copy)]
pub struct Abstime {
    clock: clockid_t,
    at: timespec,
}

impl Abstime {
    /// `None` for a clock other than `CLOCK_REALTIME` and `CLOCK_MONOTONIC` (the two that
    /// `pthread_mutex_clocklock` and `pthread_cond_clockwait` accept), or a `tv_nsec` outside
    /// `0..1_000_000_000`. A negative `tv_sec` is valid: a time in the past.
    pub fn new(clock: clockid_t, at: &timespec) -> Option<Abstime> {
        let known_clock = clock == libc::CLOCK_REALTIME || clock == libc::CLOCK_MONOTONIC;
        let valid_nanos = (0..NANOS_PER_SECOND).contains(&at.tv_nsec);
        (known_clock && valid_nanos).then_some(Abstime { clock, at: *at })
    }

    /// The instant at which the clock is expected to read the deadline, from the time left
    /// on it now; `None` if that is beyond what `Instant` can represent (wait without limit).
    pub fn deadline(&self) -> Option<Instant> {
        let left = self.left(now(self.clock));
        Instant::now().checked_add(left)
    }

    /// Whether the clock has reached the deadline.
    pub fn reached(&self) -> bool {
        self.left(now(self.clock)).is_zero()
    }

    /// Time from `now` until the deadline, zero if it has passed.
    fn left(&self, now: timespec) -> Duration {
        let mut secs = i128::from(self.at.tv_sec) - i128::from(now.tv_sec);
        let mut nanos = i128::from(self.at.tv_nsec) - i128::from(now.tv_nsec);
        if nanos < 0 {
            nanos += i128::from(NANOS_PER_SECOND);
            secs -= 1;
        }
        if secs < 0 {
            return Duration::ZERO;
        }
        // `secs` fits: it is at most the span of two `time_t`s.
        Duration::new(u64::try_from(secs).unwrap_or(u64::MAX), nanos as u32)
    }
}

/// The clock's current time. Only called with the two clocks [`Abstime::new`] accepts, which
/// `clock_gettime` always supports on Linux.
fn now(clock: clockid_t) -> timespec {
    let mut now = timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec; `clock` is REALTIME or MONOTONIC.
    let r = unsafe { libc::clock_gettime(clock, &mut now) };
    debug_assert_eq!(r, 0, "clock_gettime({clock}) failed");
    now
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(tv_sec: i64, tv_nsec: c_long) -> timespec {
        timespec { tv_sec, tv_nsec }
    }

    #[test]
    fn only_realtime_and_monotonic_with_valid_nanoseconds_are_accepted() {
        assert!(Abstime::new(libc::CLOCK_REALTIME, &ts(1, 0)).is_some());
        assert!(Abstime::new(libc::CLOCK_MONOTONIC, &ts(-5, 999_999_999)).is_some());
        assert!(Abstime::new(libc::CLOCK_PROCESS_CPUTIME_ID, &ts(1, 0)).is_none());
        assert!(Abstime::new(libc::CLOCK_REALTIME, &ts(1, -1)).is_none());
        assert!(Abstime::new(libc::CLOCK_REALTIME, &ts(1, 1_000_000_000)).is_none());
    }

    #[test]
    fn time_left_borrows_nanoseconds_and_stops_at_zero() {
        let deadline = Abstime::new(libc::CLOCK_MONOTONIC, &ts(10, 100)).unwrap();
        assert_eq!(deadline.left(ts(8, 200)), Duration::new(1, 999_999_900));
        assert_eq!(deadline.left(ts(10, 100)), Duration::ZERO);
        assert_eq!(deadline.left(ts(10, 101)), Duration::ZERO);
        assert_eq!(deadline.left(ts(11, 0)), Duration::ZERO);
    }

    #[test]
    fn a_past_deadline_is_reached_and_a_far_one_is_far() {
        for clock in [libc::CLOCK_REALTIME, libc::CLOCK_MONOTONIC] {
            let past = Abstime::new(clock, &ts(-1, 0)).unwrap();
            assert!(past.reached());
            assert!(past.deadline().unwrap() <= Instant::now());
            let far = Abstime::new(clock, &ts(i64::MAX, 0)).unwrap();
            assert!(!far.reached());
            let century = Duration::from_secs(100 * 365 * 86_400);
            assert!(far.deadline().map_or(true, |deadline| deadline > Instant::now() + century));
        }
    }

    #[test]
    fn a_monotonic_deadline_converts_to_the_time_left_on_it() {
        // Monotonic, so that no clock step can move the result; a deadline 1000 s away, so
        // that the lower bound catches a unit or sign error without depending on how quickly
        // this thread runs.
        let mut at = now(libc::CLOCK_MONOTONIC);
        at.tv_sec += 1000;
        let deadline = Abstime::new(libc::CLOCK_MONOTONIC, &at).unwrap().deadline().unwrap();
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(left <= Duration::from_secs(1000) && left > Duration::from_secs(500), "{left:?}");
    }
}
