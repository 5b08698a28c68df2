//! Reader-preferring reader-writer lock: a reader gets in whenever no writer holds the lock,
//! even while writers wait. So a thread that holds a read lock can always take another one
//! (glibc's default `pthread_rwlock_t` promises that, and programs rely on it), and a stream of
//! readers can starve writers.
//!
//! One 64-bit state word, the same as [`WriterPref`](super::WriterPref)'s, read differently:
//!
//! | bits   | name              | meaning                                                    |
//! |--------|-------------------|------------------------------------------------------------|
//! | 0..32  | readers           | readers inside                                             |
//! | 32..62 | writers           | writers waiting or holding; readers ignore it              |
//! | 62     | `LOCKED`          | a writer holds the lock; while set, readers stay out       |
//! | 63     | `READERS_WAITING` | a reader waits for `LOCKED` to clear                       |
//!
//! Waiters wait on one of two [`Sequence`]s: readers on `readers_wake`, which every writer
//! leaving with `READERS_WAITING` set advances; writers on `writers_wake`, which the last
//! reader out or a departing writer advances when writers are counted. As in `WriterPref`, a
//! waiter reads its sequence before it looks at the state, and a releaser advances one only
//! when the state says someone waits: no system call otherwise.
//!
//! Uncontended, a read lock is a load and a compare-and-swap and a read unlock a subtraction;
//! a write lock or unlock is one compare-and-swap.

use crate::event::{Sequence, Wake};
use crate::sync::{AtomicU64, Ordering::*};
use crate::wait::{Episode, Wait};
use lock_api::{GuardSend, RawRwLock};

const ONE_READER: u64 = 1;
const READERS: u64 = 0xffff_ffff;
const ONE_WRITER: u64 = 1 << 32;
const WRITERS: u64 = ((1 << 30) - 1) << 32;
const LOCKED: u64 = 1 << 62;
const READERS_WAITING: u64 = 1 << 63;

/// Reader-preferring reader-writer lock waiting with policy `W`: read locks nest, writers can
/// starve. Twenty-four bytes, all zero when unlocked; the state table is in this file's module
/// docs.
///
/// ```
/// use spinlab::{rwlock::ReaderPref, wait::Futex};
/// use lock_api::RawRwLock;
/// let lock = ReaderPref::<Futex>::new();
/// let first = lock.lock_shared();
/// std::thread::scope(|s| {
///     let writer = s.spawn(|| {
///         let held = lock.lock_exclusive();
///         // SAFETY: acquired just above.
///         unsafe { lock.unlock_exclusive(held) };
///     });
///     // Whether or not the writer waits already, a second read lock is granted at once.
///     let second = lock.try_lock_shared().expect("readers nest");
///     // SAFETY: both acquired above, by this thread.
///     unsafe { lock.unlock_shared(second); lock.unlock_shared(first) };
///     writer.join().unwrap();
/// });
/// ```
pub struct ReaderPref<W: Wait> {
    state: AtomicU64,
    readers_wake: Sequence<W>,
    writers_wake: Sequence<W>,
}

impl<W: Wait> ReaderPref<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            ReaderPref { state: AtomicU64::new(0), readers_wake: Sequence::new(), writers_wake: Sequence::new() }
        }
    }

    #[cold]
    fn lock_shared_slow(&self) {
        let mut episode = Episode::new(None);
        loop {
            // Sequence first, state second: see the module docs.
            let seen = self.readers_wake.load();
            let mut state = self.state.load(Relaxed);
            loop {
                if state & LOCKED == 0 {
                    // Acquire: pairs with the last writer's Release.
                    match self.state.compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed) {
                        Ok(_) => return,
                        Err(now) => state = now,
                    }
                    continue;
                }
                if state & READERS_WAITING != 0 {
                    break;
                }
                // Set in the same step that confirms the writer still holds: its unlock then
                // reads the mark when it clears `LOCKED`, and advances `readers_wake`.
                match self.state.compare_exchange_weak(state, state | READERS_WAITING, Relaxed, Relaxed) {
                    Ok(_) => break,
                    Err(now) => state = now,
                }
            }
            self.readers_wake.wait(seen, &mut episode);
        }
    }

    #[cold]
    fn lock_exclusive_slow(&self) {
        // Counted first, so that the last reader out knows to wake a writer.
        let mut state = self.state.fetch_add(ONE_WRITER, Relaxed) + ONE_WRITER;
        let mut episode = Episode::new(None);
        loop {
            if state & (READERS | LOCKED) == 0 {
                // Acquire: pairs with the Release of the last reader or writer out.
                match self.state.compare_exchange_weak(state, state | LOCKED, Acquire, Relaxed) {
                    Ok(_) => return,
                    Err(now) => state = now,
                }
                continue;
            }
            // Sequence first, state second: see the module docs.
            let seen = self.writers_wake.load();
            state = self.state.load(Relaxed);
            if state & (READERS | LOCKED) != 0 {
                self.writers_wake.wait(seen, &mut episode);
                state = self.state.load(Relaxed);
            }
        }
    }

    /// Counts the holding writer out and lets everyone waiting try: all waiting readers (they
    /// are preferred), and one writer if another is counted (it waits again if readers win).
    #[cold]
    fn unlock_exclusive_slow(&self) {
        let mut before = self.state.load(Relaxed);
        loop {
            // The mark is cleared in the step that reads it, so no reader's mark is lost in
            // between. Release: the write section happens-before the next entry's Acquire.
            let after = (before - (ONE_WRITER | LOCKED)) & !READERS_WAITING;
            match self.state.compare_exchange_weak(before, after, Release, Relaxed) {
                Ok(_) => break,
                Err(now) => before = now,
            }
        }
        if before & READERS_WAITING != 0 {
            self.readers_wake.advance(Wake::All);
        }
        if (before - ONE_WRITER) & WRITERS != 0 {
            self.writers_wake.advance(Wake::One);
        }
    }
}

impl<W: Wait> Default for ReaderPref<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: a reader enters only by a compare-and-swap that finds `LOCKED` clear, and a writer
// only by one that finds no reader inside and `LOCKED` clear, setting it, both on the one state
// word; so readers and a writer, or two writers, are never inside together. Entries are
// Acquire and exits Release on that word.
unsafe impl<W: Wait> RawRwLock for ReaderPref<W> {
    crate::sync::raw_init!();
    type SharedGuard = GuardSend;
    type ExclusiveGuard = GuardSend;

    #[inline]
    fn lock_shared(&self) -> GuardSend {
        let state = self.state.load(Relaxed);
        if state & LOCKED != 0 || self.state.compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed).is_err()
        {
            self.lock_shared_slow();
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<GuardSend> {
        let mut state = self.state.load(Relaxed);
        while state & LOCKED == 0 {
            match self.state.compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed) {
                Ok(_) => return Some(GuardSend::new()),
                Err(now) => state = now,
            }
        }
        None
    }

    #[inline]
    unsafe fn unlock_shared(&self, _: GuardSend) {
        // Release: the read section happens-before the next writer's Acquire.
        let before = self.state.fetch_sub(ONE_READER, Release);
        if before & READERS == ONE_READER && before & WRITERS != 0 {
            // The last reader out, and a writer waits for exactly that.
            self.writers_wake.advance(Wake::One);
        }
    }

    #[inline]
    fn lock_exclusive(&self) -> GuardSend {
        if self.state.compare_exchange(0, ONE_WRITER | LOCKED, Acquire, Relaxed).is_err() {
            self.lock_exclusive_slow();
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock_exclusive(&self) -> Option<GuardSend> {
        let mut state = self.state.load(Relaxed);
        while state & (READERS | LOCKED) == 0 {
            match self.state.compare_exchange_weak(state, state + (ONE_WRITER | LOCKED), Acquire, Relaxed) {
                Ok(_) => return Some(GuardSend::new()),
                Err(now) => state = now,
            }
        }
        None
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, _: GuardSend) {
        // Alone and unwatched: one compare-and-swap. Release: as in the slow path.
        if self.state.compare_exchange(ONE_WRITER | LOCKED, 0, Release, Relaxed).is_err() {
            self.unlock_exclusive_slow();
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.state.load(Relaxed) & (READERS | LOCKED) != 0
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.state.load(Relaxed) & LOCKED != 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::wait::{Futex, Pause};

    #[test]
    fn a_reader_gets_in_past_a_waiting_writer() {
        let lock = ReaderPref::<Futex>::new();
        let reading = lock.lock_shared();
        std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let held = lock.lock_exclusive();
                // SAFETY: acquired just above.
                unsafe { lock.unlock_exclusive(held) };
            });
            while lock.state.load(Relaxed) & WRITERS == 0 {
                std::thread::yield_now();
            }
            // A recursive read lock: with writer preference this is where a program deadlocks.
            let again = lock.lock_shared();
            // SAFETY: both acquired above.
            unsafe {
                lock.unlock_shared(again);
                lock.unlock_shared(reading);
            }
            writer.join().unwrap();
        });
        assert_eq!(lock.state.load(Relaxed), 0);
    }

    #[test]
    fn readers_and_a_writer_waiting_behind_a_writer_all_get_in_after_it() {
        let lock = ReaderPref::<Futex>::new();
        let held = lock.lock_exclusive();
        std::thread::scope(|s| {
            let mut waiters: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| {
                        let reading = lock.lock_shared();
                        // SAFETY: acquired just above.
                        unsafe { lock.unlock_shared(reading) };
                    })
                })
                .collect();
            waiters.push(s.spawn(|| {
                let writing = lock.lock_exclusive();
                // SAFETY: acquired just above.
                unsafe { lock.unlock_exclusive(writing) };
            }));
            while lock.state.load(Relaxed) & READERS_WAITING == 0
                || lock.state.load(Relaxed) & WRITERS != 2 * ONE_WRITER
            {
                std::thread::yield_now();
            }
            // SAFETY: acquired above.
            unsafe { lock.unlock_exclusive(held) };
            for waiter in waiters {
                waiter.join().unwrap();
            }
        });
        assert_eq!(lock.state.load(Relaxed), 0, "every writer counted out, every mark cleared");
    }

    #[test]
    fn try_lock_exclusive_fails_while_read_locked_and_try_lock_shared_while_write_locked() {
        let lock = ReaderPref::<Pause>::new();
        let reading = lock.lock_shared();
        assert!(lock.try_lock_exclusive().is_none());
        assert!(lock.is_locked() && !lock.is_locked_exclusive());
        // SAFETY: acquired above.
        unsafe { lock.unlock_shared(reading) };
        let held = lock.try_lock_exclusive().expect("free now");
        assert!(lock.is_locked_exclusive() && lock.try_lock_shared().is_none());
        // SAFETY: acquired just above.
        unsafe { lock.unlock_exclusive(held) };
        assert_eq!(lock.state.load(Relaxed), 0);
    }
}
