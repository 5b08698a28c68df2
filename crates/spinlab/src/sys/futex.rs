//! Linux futexes, private to the process: sleep while a 32-bit word holds a value, wake
//! sleepers on a word.
//!
//! Under `cfg(loom)` the kernel is replaced by a model with the same contract: `wait` checks
//! the word and enqueues the caller atomically with respect to `wake_*` (the kernel's
//! hash-bucket lock is a loom `Mutex`), and a waiter returns only when woken. A lock that
//! forgets a wake-up therefore deadlocks in the model, and loom reports it. A timed waiter
//! sleeps too, and may be the one a wake-up picks, before it times out; a model can also make
//! timed waits find their deadline already passed, and untimed ones return spuriously
//! (`testing::timed_waits_expire_at_entry` and `testing::spurious_wake_ups`).

use crate::sync::AtomicU32;
use std::time::Instant;

/// Why [`wait`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FutexWait {
    /// Woken by a `wake_*` call, or spuriously (signal, `EINTR`): the caller re-checks.
    Woken,
    /// The word did not hold `expected` when the kernel looked: the caller re-checks.
    ValueChanged,
    /// The deadline passed.
    TimedOut,
}

#[cfg(not(loom))]
mod imp {
    use super::FutexWait;
    use crate::sync::AtomicU32;
    use std::time::Instant;

    pub fn wait(word: &AtomicU32, expected: u32, deadline: Option<Instant>) -> FutexWait {
        let timeout = match deadline {
            None => None,
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return FutexWait::TimedOut;
                }
                Some(libc::timespec {
                    tv_sec: left.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
                    tv_nsec: left.subsec_nanos() as _,
                })
            }
        };
        let timeout_ptr = timeout.as_ref().map_or(core::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `word` is a live, aligned 32-bit atomic for the whole call; FUTEX_WAIT reads
        // it and never writes it; `timeout_ptr` is null or points to a timespec on our stack.
        let r = unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                timeout_ptr,
            )
        };
        if r == 0 {
            return FutexWait::Woken;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EAGAIN) => FutexWait::ValueChanged,
            Some(libc::ETIMEDOUT) => FutexWait::TimedOut,
            // EINTR: a signal; the caller re-checks, as after any spurious wake-up.
            _ => FutexWait::Woken,
        }
    }

    fn wake(word: &AtomicU32, count: i32) -> usize {
        // SAFETY: FUTEX_WAKE only uses the address as a key; it does not dereference it.
        let r = unsafe {
            libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, count)
        };
        r.max(0) as usize
    }

    pub fn wake_one(word: &AtomicU32) -> usize {
        wake(word, 1)
    }

    pub fn wake_all(word: &AtomicU32) -> usize {
        wake(word, i32::MAX)
    }
}

#[cfg(loom)]
mod imp {
    use super::FutexWait;
    use crate::sync::{AtomicU32, Ordering};
    use loom::sync::{Condvar, Mutex};
    use std::time::Instant;

    /// One sleeping thread: the word it sleeps on, and whether a waker picked it.
    struct Sleeper {
        word: usize,
        ticket: u64,
        woken: bool,
    }

    struct Queue {
        sleepers: Vec<Sleeper>,
        next_ticket: u64,
        /// Untimed waits that may still return early, spuriously, in this execution.
        spurious_left: usize,
    }

    struct Kernel {
        queue: Mutex<Queue>,
        changed: Condvar,
    }

    loom::lazy_static! {
        static ref KERNEL: Kernel = Kernel {
            queue: Mutex::new(Queue {
                sleepers: Vec::new(),
                next_ticket: 0,
                spurious_left: crate::testing::spurious_wake_ups_per_execution(),
            }),
            changed: Condvar::new(),
        };
    }

    fn key(word: &AtomicU32) -> usize {
        word as *const AtomicU32 as usize
    }

    pub fn wait(word: &AtomicU32, expected: u32, deadline: Option<Instant>) -> FutexWait {
        if deadline.is_some() && crate::testing::timed_waits_expired_at_entry() {
            // The real wait's first step once its deadline has passed: no look at the word.
            return FutexWait::TimedOut;
        }
        let mut queue = KERNEL.queue.lock().unwrap();
        if word.load(Ordering::SeqCst) != expected {
            return FutexWait::ValueChanged;
        }
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.sleepers.push(Sleeper { word: key(word), ticket, woken: false });
        let spurious = deadline.is_none() && queue.spurious_left > 0;
        if spurious {
            // A signal, or a wake-up meant for whoever slept at this address before (a lock
            // freed and its memory reused): the waiter returns as if woken, and must look again.
            queue.spurious_left -= 1;
        }
        if deadline.is_some() || spurious {
            // Loom has no clock. A timed wait sleeps while the kernel's lock is let go and
            // taken again (loom may run any other thread for as long as it likes in between,
            // or none) and then expires, unless a wake-up picked it meanwhile: as in the
            // kernel, a waiter that was woken returns `Woken` even if its time ran out too,
            // and one that timed out took no wake-up. So every model with a timed waiter
            // explores its time-out, and the wake-ups that go to a timed sleeper.
            drop(queue);
            let mut queue = KERNEL.queue.lock().unwrap();
            let at = queue.sleepers.iter().position(|s| s.ticket == ticket).unwrap();
            let woken = queue.sleepers.remove(at).woken;
            return if woken || spurious { FutexWait::Woken } else { FutexWait::TimedOut };
        }
        loop {
            queue = KERNEL.changed.wait(queue).unwrap();
            let at = queue.sleepers.iter().position(|s| s.ticket == ticket).unwrap();
            if queue.sleepers[at].woken {
                queue.sleepers.remove(at);
                return FutexWait::Woken;
            }
        }
    }

    fn wake(word: &AtomicU32, count: usize) -> usize {
        let mut queue = KERNEL.queue.lock().unwrap();
        let mut woken = 0;
        for sleeper in queue.sleepers.iter_mut() {
            if woken < count && sleeper.word == key(word) && !sleeper.woken {
                sleeper.woken = true;
                woken += 1;
            }
        }
        if woken > 0 {
            KERNEL.changed.notify_all();
        }
        woken
    }

    pub fn wake_one(word: &AtomicU32) -> usize {
        wake(word, 1)
    }

    pub fn wake_all(word: &AtomicU32) -> usize {
        wake(word, usize::MAX)
    }
}

/// Sleeps while `word` holds `expected`, until woken or until `deadline`.
///
/// Returns at once with [`FutexWait::ValueChanged`] if the word already differs: the check
/// and the sleep are one atomic step with respect to [`wake_one`]/[`wake_all`], which is what
/// makes a lost wake-up impossible for a caller that changes the word before waking.
/// Spurious returns are possible; callers re-check.
#[inline]
pub fn wait(word: &AtomicU32, expected: u32, deadline: Option<Instant>) -> FutexWait {
    super::phases::asleep(|| imp::wait(word, expected, deadline))
}

/// Wakes at most one thread sleeping on `word`; returns how many were woken.
#[inline]
pub fn wake_one(word: &AtomicU32) -> usize {
    let woken = imp::wake_one(word);
    super::phases::woke(woken);
    woken
}

/// Wakes every thread sleeping on `word`; returns how many were woken.
#[inline]
pub fn wake_all(word: &AtomicU32) -> usize {
    let woken = imp::wake_all(word);
    super::phases::woke(woken);
    woken
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn wait_on_a_changed_value_returns_at_once() {
        let word = AtomicU32::new(5);
        assert_eq!(wait(&word, 4, None), FutexWait::ValueChanged);
    }

    #[test]
    fn wait_with_a_past_deadline_times_out() {
        let word = AtomicU32::new(5);
        let past = Instant::now();
        assert_eq!(wait(&word, 5, Some(past)), FutexWait::TimedOut);
        let soon = Instant::now() + Duration::from_millis(2);
        assert_eq!(wait(&word, 5, Some(soon)), FutexWait::TimedOut);
        assert!(Instant::now() >= soon, "a timed-out wait must not return before its deadline");
    }

    #[test]
    fn wake_without_sleepers_wakes_nobody() {
        let word = AtomicU32::new(0);
        assert_eq!(wake_one(&word), 0);
        assert_eq!(wake_all(&word), 0);
    }

    #[test]
    fn a_sleeper_is_woken_after_the_word_changes() {
        use crate::sync::Ordering;
        let word = Arc::new(AtomicU32::new(0));
        let sleeper = {
            let word = word.clone();
            std::thread::spawn(move || {
                let mut woken = 0;
                while word.load(Ordering::Acquire) == 0 {
                    woken += usize::from(wait(&word, 0, None) == FutexWait::Woken);
                }
                woken
            })
        };
        // A wake-up that finds the sleeper in the kernel says so, and the sleeper, its word
        // unchanged, sleeps again; then the word changes and one more wake-up lets it go.
        let give_up = Instant::now() + Duration::from_secs(10);
        while wake_one(&word) == 0 {
            assert!(Instant::now() < give_up, "the sleeper never reached the kernel");
            std::thread::yield_now();
        }
        word.store(1, Ordering::Release);
        while !sleeper.is_finished() {
            wake_all(&word);
            std::thread::yield_now();
        }
        assert!(sleeper.join().unwrap() >= 1, "a wake-up that found the sleeper must return Woken");
    }
}
