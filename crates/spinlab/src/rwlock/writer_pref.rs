//! Writer-preferring reader-writer lock: while any writer waits or holds the lock, new readers
//! stay out, so readers never starve a writer (and a stream of writers can starve readers).
//! One 64-bit state word, so that a reader can check "no writer" and count itself in with one
//! compare-and-swap:
//!
//! | bits   | name              | meaning                                                    |
//! |--------|-------------------|------------------------------------------------------------|
//! | 0..32  | readers           | readers inside                                             |
//! | 32..61 | writers           | writers waiting or holding; while non-zero, readers stay out |
//! | 61     | `RELEASING`       | a releaser has advanced a sequence and not yet let go      |
//! | 62     | `LOCKED`          | a writer holds the lock                                    |
//! | 63     | `READERS_WAITING` | a reader waits for the writer count to reach zero          |
//!
//! Waiters wait on one of two [`Sequence`]s (a futex can only sleep on 32 bits, and readers and
//! writers wait for different things): readers on `readers_wake`, which the last writer out
//! advances when `READERS_WAITING` is set; writers on `writers_wake`, which the last reader out
//! or a departing writer advances when writers are counted. A waiter reads its sequence before
//! it looks at the state, so a change it misses advances the sequence and ends its wait, and a
//! releaser advances one only when the state says someone waits: no system call otherwise.
//!
//! **Nothing but a futex wake-up names the lock after the atomic that releases it**, since
//! POSIX lets a thread free a rwlock as soon as it is unlocked and unused (glibc's bug 13690),
//! and the C ABI and the preload library serve such programs. A counted writer that is not
//! asleep yet re-reads the state, so it can take the lock, release it and free it between a
//! releaser's atomic and an advance after it. So a releaser that must wake someone advances
//! the sequence *before* it lets go, and afterwards only makes the wake-up system call, which
//! uses the address as a key (on reused memory, at worst a spurious wake-up). In three steps:
//! it sets `RELEASING` (still holding), advances, then releases and clears `RELEASING` in one
//! atomic. A waiter that reads the advanced sequence also sees `RELEASING` or the release (the
//! advance's Release and its sequence load's Acquire order them), and one that sees
//! `RELEASING` does not sleep on a value no later advance may change: it yields its CPU to the
//! releaser, running inside its unlock, and looks again. A waiter that read the sequence
//! before the advance sleeps on a value the advance changed, and [`Sequence`]'s sleepers
//! handshake makes the wake-up find it. Whom to wake is decided from the state that setting
//! `RELEASING` returns: no waiter marks or sleeps until the release, and counted writers only
//! grow.
//!
//! Uncontended, a read lock is a load and a compare-and-swap and so is a read unlock (it must
//! know, in its releasing step, whether it is the last reader out with a writer waiting); a
//! write lock or unlock is one compare-and-swap.

use crate::event::{Sequence, Wake};
use crate::sync::{AtomicU64, Ordering::*};
use crate::wait::{Episode, Wait};
use lock_api::{GuardSend, RawRwLock};

use super::word::*;

/// Writer-preferring reader-writer lock waiting with policy `W`. Twenty-four bytes, which a
/// [`CachePadded`](crate::CachePadded) keeps on one line of their own; the state table is in
/// this file's module docs.
///
/// ```
/// use spinlab::{rwlock::WriterPref, wait::SpinPark};
/// let lock = lock_api::RwLock::<WriterPref<SpinPark>, _>::new(vec![1]);
/// {
///     let (a, b) = (lock.read(), lock.read()); // readers share
///     assert_eq!(a.len() + b.len(), 2);
///     assert!(lock.try_write().is_none());
/// }
/// lock.write().push(2);
/// assert_eq!(*lock.read(), [1, 2]);
/// ```
pub struct WriterPref<W: Wait> {
    state: AtomicU64,
    readers_wake: Sequence<W>,
    writers_wake: Sequence<W>,
}

impl<W: Wait> WriterPref<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            WriterPref { state: AtomicU64::new(0), readers_wake: Sequence::new(), writers_wake: Sequence::new() }
        }
    }

    /// Forgets the threads waiting for the lock and keeps what is held (the readers inside, or the
    /// writer): what a child process needs after `fork()`, where the counted waiters are threads of
    /// the parent that the child does not have. A writer that waited in the parent would stay
    /// counted, and keep every reader out for ever. `&mut`: nobody else may be using the lock
    /// meanwhile; the preload library calls it once per lock in a child, before any other use
    /// there.
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
                if state & WRITERS == 0 {
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
                // Set in the same step that confirms a writer is still counted (and no release
                // under way): the last writer out then reads it when it sets `RELEASING`, and
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
        // Counted first: from here on, no new reader comes in.
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

    /// Counts the holding writer out, and passes the lock on: to the next writer if one is
    /// counted, else to the readers if one waits.
    #[cold]
    fn unlock_exclusive_slow(&self) {
        // Still holding: from here on nobody marks or sleeps until the release below, so
        // `state` names everyone to wake. Relaxed: the advances below are ordered after it.
        let mut state = self.state.fetch_or(RELEASING, Relaxed) | RELEASING;
        // The next writer if another is counted, else the readers if one waits.
        let waiting = if state & WRITERS > ONE_WRITER {
            Some((&self.writers_wake, Wake::One))
        } else if state & READERS_WAITING != 0 {
            Some((&self.readers_wake, Wake::All))
        } else {
            None
        };
        let to_wake = waiting.filter(|(sequence, _)| sequence.advance_quietly());
        loop {
            let mut after = state - (ONE_WRITER | LOCKED | RELEASING);
            if after & WRITERS == 0 {
                // Cleared in the step that releases, so no reader's mark is lost in between.
                // (Writers counted since `RELEASING` keep it: the readers just woken find them
                // and sleep again, and the last of them wakes the readers.)
                after &= !READERS_WAITING;
            }
            // Release: the write section happens-before the next reader's or writer's Acquire.
            match self.state.compare_exchange_weak(state, after, Release, Relaxed) {
                Ok(_) => break,
                Err(now) => state = now,
            }
        }
        // The lock may be gone by now: only the wake-up's system call may name it.
        if let Some((sequence, wake)) = to_wake {
            sequence.wake(wake);
        }
    }
}

impl<W: Wait> Default for WriterPref<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: a reader enters only by a compare-and-swap that finds no writer counted, and a
// writer only by one that finds no reader inside and no writer holding, both on the one state
// word; so readers and a writer, or two writers, are never inside together. Entries are
// Acquire and exits Release on that word.
unsafe impl<W: Wait> RawRwLock for WriterPref<W> {
    crate::sync::raw_init!();
    type SharedGuard = GuardSend;
    type ExclusiveGuard = GuardSend;

    #[inline]
    fn lock_shared(&self) -> GuardSend {
        let state = self.state.load(Relaxed);
        if state & WRITERS != 0
            || self.state.compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed).is_err()
        {
            self.lock_shared_slow();
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<GuardSend> {
        let mut state = self.state.load(Relaxed);
        while state & WRITERS == 0 {
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

    #[test]
    fn a_waiting_writer_keeps_new_readers_out() {
        let lock = WriterPref::<Futex>::new();
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
            assert!(lock.try_lock_shared().is_none(), "a reader got past a waiting writer");
            // SAFETY: acquired above.
            unsafe { lock.unlock_shared(reading) };
            writer.join().unwrap();
        });
        assert_eq!(lock.state.load(Relaxed), 0);
    }

    #[test]
    fn readers_waiting_behind_a_writer_all_get_in_after_it() {
        let lock = WriterPref::<Futex>::new();
        let held = lock.lock_exclusive();
        std::thread::scope(|s| {
            let readers: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| {
                        let reading = lock.lock_shared();
                        // SAFETY: acquired just above.
                        unsafe { lock.unlock_shared(reading) };
                    })
                })
                .collect();
            while lock.state.load(Relaxed) & READERS_WAITING == 0 {
                std::thread::yield_now();
            }
            // SAFETY: acquired above.
            unsafe { lock.unlock_exclusive(held) };
            for reader in readers {
                reader.join().unwrap();
            }
        });
        assert_eq!(lock.state.load(Relaxed), 0, "the last writer out clears READERS_WAITING");
    }

    /// What a child forked while a writer holds the lock and another waits gets: the bytes,
    /// with the waiter counted and absent. Forgetting it keeps the hold, and then lets readers in.
    #[test]
    fn forgetting_waiters_keeps_the_writer_holding_and_drops_the_writer_waiting() {
        let lock = WriterPref::<Futex>::new();
        let held = lock.lock_exclusive();
        let counted = |lock: &WriterPref<Futex>| lock.state.load(Relaxed) & WRITERS == 2 * ONE_WRITER;
        // SAFETY: acquired above.
        let mut child = copied_while_a_writer_waits(&lock, counted, || unsafe { lock.unlock_exclusive(held) });
        child.forget_waiters();
        assert!(child.is_locked_exclusive(), "the holder's lock is kept");
        assert!(child.try_lock_shared().is_none());
        // SAFETY: the child's thread holds it, as the copy says.
        unsafe { child.unlock_exclusive(GuardSend::new()) };
        let reading = child.try_lock_shared().expect("no waiting writer keeps readers out");
        // SAFETY: acquired just above.
        unsafe { child.unlock_shared(reading) };
        assert_eq!(child.state.load(Relaxed), 0);
    }

    /// Readers inside stay inside; a reader's waiting mark goes with the writers.
    #[test]
    fn forgetting_waiters_keeps_the_readers_inside() {
        let mut lock = WriterPref::<Pause>::new();
        // Two readers inside, three writers waiting, the last reader out releasing.
        lock.state.store((2 * ONE_READER) | (3 * ONE_WRITER) | READERS_WAITING | RELEASING, Relaxed);
        lock.forget_waiters();
        assert_eq!(lock.state.load(Relaxed), 2 * ONE_READER);
        // Six writers counted, one of them holding; readers waiting.
        lock.state.store((6 * ONE_WRITER) | LOCKED | READERS_WAITING, Relaxed);
        lock.forget_waiters();
        assert_eq!(lock.state.load(Relaxed), ONE_WRITER | LOCKED);
    }

    #[test]
    fn try_lock_exclusive_fails_while_read_locked_and_succeeds_after() {
        let lock = WriterPref::<Pause>::new();
        let reading = lock.lock_shared();
        assert!(lock.try_lock_exclusive().is_none());
        assert!(lock.is_locked() && !lock.is_locked_exclusive());
        // SAFETY: acquired above.
        unsafe { lock.unlock_shared(reading) };
        let held = lock.try_lock_exclusive().expect("free now");
        assert!(lock.is_locked_exclusive());
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

        fn unlocked(lock: &WriterPref<Parked>) -> bool {
            lock.state.load(Relaxed) & LOCKED == 0
        }

        fn no_reader_inside(lock: &WriterPref<Parked>) -> bool {
            lock.state.load(Relaxed) & READERS == 0
        }

        /// A writer leaves while another sleeps: the one it advances `writers_wake` for.
        #[test]
        fn a_writer_release_that_wakes_a_writer_touches_nothing_after_it() {
            let lock = release_to_sleepers(WriterPref::new(), Side::Exclusive, &[Side::Exclusive], unlocked, |_| {});
            assert_eq!(lock.state.load(Relaxed), 0);
        }

        /// A writer leaves while a reader sleeps: it advances `readers_wake`.
        #[test]
        fn a_writer_release_that_wakes_readers_touches_nothing_after_it() {
            let lock = release_to_sleepers(WriterPref::new(), Side::Exclusive, &[Side::Shared], unlocked, |_| {});
            assert_eq!(lock.state.load(Relaxed), 0);
        }

        /// The last reader leaves while a writer sleeps, waiting for exactly that.
        #[test]
        fn the_last_reader_release_that_wakes_a_writer_touches_nothing_after_it() {
            let lock =
                release_to_sleepers(WriterPref::new(), Side::Shared, &[Side::Exclusive], no_reader_inside, |_| {});
            assert_eq!(lock.state.load(Relaxed), 0);
        }
    }
}
