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
//! | 32..61 | writers           | writers waiting or holding; readers ignore it              |
//! | 61     | `RELEASING`       | a releaser has advanced a sequence and not yet let go      |
//! | 62     | `LOCKED`          | a writer holds the lock; while set, readers stay out       |
//! | 63     | `READERS_WAITING` | a reader waits for `LOCKED` to clear                       |
//!
//! Waiters wait on one of two [`Sequence`]s: readers on `readers_wake`, which every writer
//! leaving with `READERS_WAITING` set advances; writers on `writers_wake`, which the last
//! reader out or a departing writer advances when writers are counted. As in `WriterPref`, a
//! waiter reads its sequence before it looks at the state, and a releaser advances one only
//! when the state says someone waits: no system call otherwise.
//!
//! Nothing but a futex wake-up names the lock after the atomic that releases it: a releaser
//! that must wake someone sets `RELEASING`, advances, then releases, exactly as in
//! `WriterPref`, whose module docs give the argument. One difference: readers still come in
//! while a last reader out is `RELEASING` (nothing but `LOCKED` keeps them out); then the
//! writer it woke finds them inside and waits again, and the last of them wakes it.
//!
//! Uncontended, a read lock is a load and a compare-and-swap and so is a read unlock (it must
//! know, in its releasing step, whether it is the last reader out with a writer waiting); a
//! write lock or unlock is one compare-and-swap.

use crate::event::{Sequence, Wake};
use crate::sync::{AtomicU64, Ordering::*};
use crate::wait::{Episode, Wait};
use lock_api::{GuardSend, RawRwLock};

use super::word::*;

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

    /// How many writers the state word counts (waiting or holding), at this instant. For
    /// tests: a writer counts itself before it first looks at the readers, so a test that sees
    /// it counted while it holds a read lock knows the writer is waiting, not merely started.
    /// Not part of the lock's interface.
    #[doc(hidden)]
    pub fn writers_counted(&self) -> u64 {
        (self.state.load(Relaxed) & WRITERS) / ONE_WRITER
    }

    /// Forgets the threads waiting for the lock and keeps what is held (the readers inside, or the
    /// writer): what a child process needs after `fork()`, where the counted waiters are threads of
    /// the parent that the child does not have. A writer that waited in the parent would stay
    /// counted, and every last reader out would make a futex wake-up for it, in vain. `&mut`:
    /// nobody else may be using the lock meanwhile; the preload library calls it once per lock in a
    /// child, before any other use there.
    ///
    /// A hold of a thread that does not exist in the child stays, as it does in glibc's
    /// rwlocks: only the thread that forked can release what it held.
    pub fn forget_waiters(&mut self) {
        let state = super::holds_only(self.state.load(Relaxed));
        *self = Self::new();
        self.state.store(state, Relaxed);
    }

    #[cold]
    fn lock_shared_slow(&self) {
        let mut episode = Episode::new(None);
        loop {
            // Sequence first, state second: see the module docs.
            let seen = self.readers_wake.load();
            let mut state = self.state.load(Relaxed);
            let may_sleep = loop {
                if state & LOCKED == 0 {
                    // Acquire: pairs with the last writer's Release.
                    match self.state.compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed) {
                        Ok(_) => return,
                        Err(now) => state = now,
                    }
                    continue;
                }
                if state & RELEASING != 0 {
                    break false;
                }
                if state & READERS_WAITING != 0 {
                    break true;
                }
                // Set in the same step that confirms the writer still holds (and is not
                // releasing yet): its unlock then reads the mark when it sets `RELEASING`, and
                // advances `readers_wake`.
                match self.state.compare_exchange_weak(state, state | READERS_WAITING, Relaxed, Relaxed) {
                    Ok(_) => break true,
                    Err(now) => state = now,
                }
            };
            if may_sleep {
                self.readers_wake.wait(seen, &mut episode);
            } else {
                // A releaser between its advance and its release: see the module docs.
                crate::sync::yield_now();
            }
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
                if state & RELEASING == 0 {
                    self.writers_wake.wait(seen, &mut episode);
                } else {
                    // A releaser between its advance and its release: see the module docs.
                    crate::sync::yield_now();
                }
                state = self.state.load(Relaxed);
            }
        }
    }

    /// Counts the holding writer out and lets everyone waiting try: all waiting readers (they
    /// are preferred), and one writer if another is counted (it waits again if readers win).
    #[cold]
    fn unlock_exclusive_slow(&self) {
        // Still holding: from here on nobody marks or sleeps until the release below, so
        // `state` names everyone to wake. Relaxed: the advances below are ordered after it.
        let mut state = self.state.fetch_or(RELEASING, Relaxed) | RELEASING;
        let wake_readers = state & READERS_WAITING != 0 && self.readers_wake.advance_quietly();
        let wake_writer = state & WRITERS > ONE_WRITER && self.writers_wake.advance_quietly();
        loop {
            // The mark is cleared in the step that releases; no reader marks after `RELEASING`.
            // Release: the write section happens-before the next entry's Acquire.
            let after = (state - (ONE_WRITER | LOCKED | RELEASING)) & !READERS_WAITING;
            match self.state.compare_exchange_weak(state, after, Release, Relaxed) {
                Ok(_) => break,
                Err(now) => state = now,
            }
        }
        // The lock may be gone by now: only the wake-ups' system calls may name it.
        if wake_readers {
            self.readers_wake.wake(Wake::All);
        }
        if wake_writer {
            self.writers_wake.wake(Wake::One);
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
        super::unlock_shared(&self.state, &self.writers_wake);
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
    use super::super::copied_while_a_writer_waits;
    use super::*;
    use crate::wait::{Futex, Pause};

    /// A child forked while a reader holds the lock and a writer waits: the reader stays inside,
    /// the writer is not counted there.
    #[test]
    fn forgetting_waiters_keeps_the_reader_inside_and_drops_the_writer_waiting() {
        let lock = ReaderPref::<Futex>::new();
        let reading = lock.lock_shared();
        let counted = |lock: &ReaderPref<Futex>| lock.writers_counted() == 1;
        // SAFETY: acquired above.
        let mut child = copied_while_a_writer_waits(&lock, counted, || unsafe { lock.unlock_shared(reading) });
        child.forget_waiters();
        assert_eq!(child.writers_counted(), 0, "the waiting writer is forgotten");
        assert!(child.try_lock_exclusive().is_none(), "the reader is still inside");
        // SAFETY: the child's thread holds a read lock, as the copy says.
        unsafe { child.unlock_shared(GuardSend::new()) };
        assert_eq!(child.state.load(Relaxed), 0);
    }

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

    /// The tests below free the lock at the instant its unlock releases it (see
    /// `release_watch`): a read or write of the lock after that kills the test binary.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    mod freed_at_release {
        use super::*;
        use crate::release_watch::{release_to_sleepers, Parked, Side};

        /// A writer leaves while a reader and a writer sleep: it advances both sequences.
        #[test]
        fn a_writer_release_that_wakes_readers_and_a_writer_touches_nothing_after_it() {
            let unlocked = |lock: &ReaderPref<Parked>| lock.state.load(Relaxed) & LOCKED == 0;
            let sleepers = [Side::Shared, Side::Exclusive];
            let lock = release_to_sleepers(ReaderPref::new(), Side::Exclusive, &sleepers, unlocked, |_| {});
            assert_eq!(lock.state.load(Relaxed), 0);
        }

        /// The last reader leaves while a writer sleeps, waiting for exactly that.
        #[test]
        fn the_last_reader_release_that_wakes_a_writer_touches_nothing_after_it() {
            let no_reader_inside = |lock: &ReaderPref<Parked>| lock.state.load(Relaxed) & READERS == 0;
            let lock =
                release_to_sleepers(ReaderPref::new(), Side::Shared, &[Side::Exclusive], no_reader_inside, |_| {});
            assert_eq!(lock.state.load(Relaxed), 0);
        }
    }
}
