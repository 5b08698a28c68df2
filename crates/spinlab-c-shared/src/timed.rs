//! Acquiring a registry lock by a C deadline: `spinlab_mutex_clocklock` and the preload
//! library's `pthread_mutex_clocklock`/`timedlock` both end in [`lock_by`], and the preload
//! library's timed rwlock acquisitions in [`acquire_by`], the loop under it.

use crate::clock::Abstime;
use spinlab_registry::RawLockOps;
use std::time::Instant;

/// Acquires the lock at `at` by `deadline`; returns whether it did. The caller has already
/// tried the lock once (a free lock is taken whatever the deadline says, and costs no clock
/// reads). See [`acquire_by`].
///
/// # Safety
/// `at` holds an initialised lock of `ops`' kind, and the calling thread does not hold it.
pub unsafe fn lock_by(ops: &RawLockOps, at: *const u8, deadline: &Abstime) -> bool {
    acquire_by(
        deadline,
        // SAFETY: the caller's contract on `at`.
        |instant| unsafe { (ops.try_lock_until)(at, instant) },
        // SAFETY: as above.
        || unsafe { (ops.lock)(at) },
    )
}

/// Acquires something by `deadline` with `try_until` (acquire, or give up at an `Instant`),
/// or with `wait` (acquire, however long it takes) when the deadline is beyond what `Instant`
/// holds; returns whether it did. A wait converted to the monotonic clock may end before
/// `deadline`'s own clock reads the deadline, when that clock was stepped back meanwhile; the
/// wait then starts again.
pub fn acquire_by(deadline: &Abstime, mut try_until: impl FnMut(Instant) -> bool, wait: impl FnOnce()) -> bool {
    loop {
        match deadline.deadline() {
            Some(instant) => {
                if try_until(instant) {
                    return true;
                }
            }
            None => {
                // A deadline beyond what `Instant` holds is no deadline.
                wait();
                return true;
            }
        }
        if deadline.reached() {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libc::timespec;
    use spinlab_registry::LOCKS;
    use std::alloc::{alloc_zeroed, dealloc, Layout};

    /// A registry lock in zeroed heap memory of its size and alignment.
    struct InPlace {
        ops: &'static RawLockOps,
        at: *mut u8,
        layout: Layout,
    }

    impl InPlace {
        fn new(name: &str) -> InPlace {
            let ops = &LOCKS.info(name).unwrap().facts.ops;
            let layout = Layout::from_size_align(ops.size.max(1), ops.align).unwrap();
            // SAFETY: the layout has a non-zero size.
            let at = unsafe { alloc_zeroed(layout) };
            assert!(!at.is_null());
            // SAFETY: `at` is fresh memory of the lock's size and alignment.
            unsafe { (ops.init)(at) };
            InPlace { ops, at, layout }
        }
    }

    impl Drop for InPlace {
        fn drop(&mut self) {
            // SAFETY: `at` holds an unlocked lock built by `new`, allocated with `layout`.
            unsafe {
                (self.ops.drop)(self.at);
                dealloc(self.at, self.layout);
            }
        }
    }

    fn in_ms(clock: libc::clockid_t, ms: i64) -> Abstime {
        let mut now = timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `now` is a writable timespec.
        assert_eq!(unsafe { libc::clock_gettime(clock, &mut now) }, 0);
        let nanos = now.tv_nsec + (ms % 1000) * 1_000_000;
        let at = timespec { tv_sec: now.tv_sec + ms / 1000 + nanos / 1_000_000_000, tv_nsec: nanos % 1_000_000_000 };
        Abstime::new(clock, &at).unwrap()
    }

    #[test]
    fn a_held_lock_times_out_on_either_clock_and_a_free_one_is_taken() {
        for name in [
            "bounded:pause-yield-park",
            "mcs:spin-yield-park",
            "ttas:spin-park",
            "mcs:futex",
            "ticket:spin",
            "parking_lot",
        ] {
            let lock = InPlace::new(name);
            for clock in [libc::CLOCK_REALTIME, libc::CLOCK_MONOTONIC] {
                // SAFETY: `lock` is initialised; this thread does not hold it.
                assert!(unsafe { lock_by(lock.ops, lock.at, &in_ms(clock, 20)) }, "{name}: a free lock");
                let deadline = in_ms(clock, 20);
                std::thread::scope(|s| {
                    let (ops, at) = (lock.ops, lock.at as usize);
                    // SAFETY: another thread, which does not hold the lock, waits for it.
                    let acquired = s.spawn(move || unsafe { lock_by(ops, at as *const u8, &deadline) }).join().unwrap();
                    assert!(!acquired, "{name}: the lock stayed held");
                });
                assert!(deadline.reached(), "{name}: returned before the deadline");
                // SAFETY: this thread holds the lock.
                unsafe { (lock.ops.unlock)(lock.at) };
            }
        }
    }
}
