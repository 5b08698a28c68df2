//! A count of the threads inside a barrier's wait, kept in memory C owns, so that `destroy`
//! frees nothing while one of them may still touch the barrier. POSIX lets any thread whose
//! wait has returned (typically the serial thread) destroy the barrier and free its memory
//! while the others of that phase are still returning; glibc's `pthread_barrier_destroy`
//! waits for them too.

use core::sync::atomic::{AtomicU32, Ordering::*};

/// How many times [`all_left`] yields to threads still leaving a wait before it gives up.
/// Threads of a completed phase leave within a few of their time slices; a thread still
/// inside after this many is waiting for a phase that cannot complete.
pub const LEAVING_YIELDS: u32 = 1_000_000;

/// Runs `wait` with the calling thread counted in `inside`. Nothing after it touches the
/// object that holds `inside`: a destroyer may free it as soon as the count drops.
pub fn counted<R>(inside: &AtomicU32, wait: impl FnOnce() -> R) -> R {
    // Relaxed: the thread's arrival at the barrier, which releases, comes after it, and a
    // destroyer has seen the phase complete (its own wait returned), so reads this count or
    // a later one.
    inside.fetch_add(1, Relaxed);
    let result = wait();
    // Release: this thread's last touch of the barrier happens-before the destroyer's
    // Acquire in `all_left`.
    inside.fetch_sub(1, Release);
    result
}

/// Whether every counted thread has left, yielding (up to [`LEAVING_YIELDS`] times) while
/// some are still leaving: yielding, not spinning, since when threads outnumber CPUs those
/// still leaving may need this thread's CPU. `false` means a thread is still inside, which
/// destroy reports as busy.
pub fn all_left(inside: &AtomicU32) -> bool {
    // Acquire: pairs with each leaving thread's Release, so its last touch of the barrier
    // happens-before whatever the destroyer does next.
    if inside.load(Acquire) == 0 {
        return true;
    }
    for _ in 0..LEAVING_YIELDS {
        std::thread::yield_now();
        if inside.load(Acquire) == 0 {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_counted_only_while_it_runs() {
        let inside = AtomicU32::new(0);
        let seen = counted(&inside, || inside.load(Relaxed));
        assert_eq!(seen, 1);
        assert_eq!(inside.load(Relaxed), 0);
        assert!(all_left(&inside));
    }
}
