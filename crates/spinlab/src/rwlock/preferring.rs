//! The reader-preferring and writer-preferring locks: one algorithm on one 64-bit state word,
//! so that a reader can check that no writer is in its way and count itself in with one
//! compare-and-swap. A [`Preference`] names the bits that keep a new reader out:
//!
//! | bits   | name              | meaning                                                                    |
//! |--------|-------------------|----------------------------------------------------------------------------|
//! | 0..32  | readers           | readers inside                                                             |
//! | 32..61 | writers           | writers waiting or holding; [`Writers`]: while non-zero, readers stay out  |
//! | 61     | `RELEASING`       | a releaser has advanced a sequence and not yet let go                      |
//! | 62     | `LOCKED`          | a writer holds the lock; [`Readers`]: only this keeps readers out          |
//! | 63     | `READERS_WAITING` | a reader waits for the bits that keep it out to clear                      |
//!
//! [`ReaderPref`] lets a reader in whenever no writer holds the lock, so read locks nest even
//! while writers wait; [`WriterPref`] keeps new readers out while any writer is counted. A
//! departing writer wakes one writer if another is counted, and the readers if the word it
//! leaves lets them in (with reader preference always: whoever is first gets in).
//!
//! Waiters wait on one of two [`Sequence`]s (a futex sleeps on 32 bits, and readers and writers
//! wait for different things): readers on `readers_wake`, advanced by a departing writer that
//! lets them in; writers on `writers_wake`, advanced by the last reader out or a departing
//! writer when writers are counted. A waiter reads its sequence before the state, so a change
//! it misses ends its wait; a releaser advances one only when the state shows a waiter.
//!
//! **Nothing but a futex wake-up names the lock after the atomic that releases it**, since
//! POSIX lets a thread free a rwlock as soon as it is unlocked and unused (glibc's bug 13690),
//! and the C ABI and the preload library serve such programs. A counted writer that is not
//! asleep yet re-reads the state, so it can take the lock, release it and free it between a
//! releaser's atomic and an advance after it. So a releaser that must wake someone advances
//! *before* it lets go: it sets `RELEASING` (still holding), advances, then releases and clears
//! `RELEASING` in one atomic, and afterwards only makes the wake-up system call, which uses the
//! address as a key (on reused memory, at worst a spurious wake-up). A waiter that reads the
//! advanced sequence also sees `RELEASING` or the release (the advance's Release and its
//! sequence load's Acquire order them), and one that sees `RELEASING` does not sleep on a value
//! no later advance may change: it yields its CPU to the releaser, running inside its unlock,
//! and looks again. A waiter that read the sequence before the advance sleeps on a value the
//! advance changed, and [`Sequence`]'s sleepers handshake makes the wake-up find it. Whom to
//! wake is decided from the state that setting `RELEASING` returns: no waiter marks or sleeps
//! until the release, and counted writers only grow. With [`Readers`], readers still come in
//! while a last reader out is `RELEASING`; the writer it woke then finds them inside, and the
//! last of them wakes it.

use crate::event::{Sequence, Wake};
use crate::sync::{AtomicU64, Ordering::*};
use crate::wait::{Episode, Wait};
use core::marker::PhantomData;
use lock_api::{GuardSend, RawRwLock};

// The state word's bits, as in the module docs' table.
const ONE_READER: u64 = 1;
const READERS: u64 = 0xffff_ffff;
const ONE_WRITER: u64 = 1 << 32;
const WRITERS: u64 = ((1 << 29) - 1) << 32;
const RELEASING: u64 = 1 << 61;
const LOCKED: u64 = 1 << 62;
const READERS_WAITING: u64 = 1 << 63;

/// Whom a [`Preferring`] lock prefers: [`Readers`] or [`Writers`] (sealed).
pub trait Preference: sealed::Sealed {
    /// The bits of the state word that keep a new reader out while any of them is set; a
    /// waiting reader waits for all of them to clear. Set whenever a writer holds the lock.
    const KEEPS_READERS_OUT: u64;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Readers {}
    impl Sealed for super::Writers {}
}

/// Reader preference ([`ReaderPref`]): only a writer holding (`LOCKED`) keeps readers out.
pub enum Readers {}

impl Preference for Readers {
    const KEEPS_READERS_OUT: u64 = LOCKED;
}

/// Writer preference ([`WriterPref`]): any writer counted, waiting or holding, keeps readers
/// out (a holding writer is counted, so this covers `LOCKED`).
pub enum Writers {}

impl Preference for Writers {
    const KEEPS_READERS_OUT: u64 = WRITERS;
}

/// A reader-writer lock preferring `P` and waiting with policy `W`, named [`ReaderPref`] and
/// [`WriterPref`]. Twenty-four bytes, all zero when unlocked, which a
/// [`CachePadded`](crate::CachePadded) keeps on one line of their own; the state table is in
/// this file's module docs.
pub struct Preferring<P: Preference, W: Wait> {
    state: AtomicU64,
    readers_wake: Sequence<W>,
    writers_wake: Sequence<W>,
    preference: PhantomData<fn() -> P>,
}

/// Reader-preferring reader-writer lock waiting with policy `W`: read locks nest, writers can
/// starve.
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
pub type ReaderPref<W> = Preferring<Readers, W>;

/// Writer-preferring reader-writer lock waiting with policy `W`: readers never starve a
/// writer, a stream of writers can starve readers.
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
pub type WriterPref<W> = Preferring<Writers, W>;

impl<P: Preference, W: Wait> Preferring<P, W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            Preferring {
                state: AtomicU64::new(0),
                readers_wake: Sequence::new(),
                writers_wake: Sequence::new(),
                preference: PhantomData,
            }
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
    /// counted: with writer preference it would keep every reader out for ever, with reader
    /// preference every last reader out would make a futex wake-up for it, in vain. `&mut`:
    /// nobody else may be using the lock meanwhile; the preload library calls it once per lock in
    /// a child, before any other use there.
    ///
    /// A hold of a thread that does not exist in the child stays, as it does in glibc's
    /// rwlocks: only the thread that forked can release what it held.
    pub fn forget_waiters(&mut self) {
        let state = holds_only(self.state.load(Relaxed));
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
                if state & P::KEEPS_READERS_OUT == 0 {
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
                // Set in the same step that confirms a writer still keeps readers out (and no
                // release is under way): the writer whose unlock lets readers in then reads it
                // when it sets `RELEASING`, and advances `readers_wake`.
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
        // Counted first, so that the last reader out knows to wake a writer (and, with writer
        // preference, so that from here on no new reader comes in).
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

    /// Counts the holding writer out and wakes one writer if another is counted, and the
    /// waiting readers if the word it leaves lets them in: with reader preference always (they
    /// are preferred; the writer waits again if they win), with writer preference only when no
    /// other writer is counted.
    #[cold]
    fn unlock_exclusive_slow(&self) {
        // Still holding: from here on nobody marks or sleeps until the release below, so
        // `state` names everyone to wake. Relaxed: the advances below are ordered after it.
        let mut state = self.state.fetch_or(RELEASING, Relaxed) | RELEASING;
        let lets_readers_in = (state - (ONE_WRITER | LOCKED | RELEASING)) & P::KEEPS_READERS_OUT == 0;
        let wake_readers = state & READERS_WAITING != 0 && lets_readers_in && self.readers_wake.advance_quietly();
        let wake_writer = state & WRITERS > ONE_WRITER && self.writers_wake.advance_quietly();
        loop {
            let mut after = state - (ONE_WRITER | LOCKED | RELEASING);
            if after & P::KEEPS_READERS_OUT == 0 {
                // Cleared in the step that lets readers in, so no reader's mark is lost in
                // between (no reader marks after `RELEASING`). With writer preference, writers
                // counted since `RELEASING` keep it: the readers just woken find them and
                // sleep again, and the last of them wakes the readers.
                after &= !READERS_WAITING;
            }
            // Release: the write section happens-before the next reader's or writer's Acquire.
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

    /// The last reader out while a writer is counted: sets `RELEASING` while still inside,
    /// advances `writers_wake`, then leaves (clearing the bit in the same step) and only then
    /// makes the wake-up call. Other readers may enter and leave meanwhile (reader preference)
    /// without touching `RELEASING`: while this reader is inside, none of them is the last out.
    #[cold]
    fn last_reader_out_waking_writer(&self) {
        self.state.fetch_or(RELEASING, Relaxed);
        let wake = self.writers_wake.advance_quietly();
        // Release: the read section happens-before the next writer's Acquire.
        self.state.fetch_sub(ONE_READER | RELEASING, Release);
        // The lock may be gone by now: only the wake-up's system call may name it.
        if wake {
            self.writers_wake.wake(Wake::One);
        }
    }
}

/// The state word with its holds kept and its waiters forgotten: the readers inside, and a
/// holding writer, counted as the one writer. Marks of waiters (`READERS_WAITING`) and of a
/// releaser between its advance and its release (`RELEASING`) go with them.
fn holds_only(state: u64) -> u64 {
    let held = state & (READERS | LOCKED);
    if held & LOCKED != 0 {
        held | ONE_WRITER
    } else {
        held
    }
}

impl<P: Preference, W: Wait> Default for Preferring<P, W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: a reader enters only by a compare-and-swap that finds no bit of
// `P::KEEPS_READERS_OUT` set (`LOCKED`, or any writer counted, which includes a holding one),
// and a writer only by one that finds no reader inside and `LOCKED` clear, setting it, both on
// the one state word; so readers and a writer, or two writers, are never inside together.
// Entries are Acquire and exits Release on that word.
unsafe impl<P: Preference, W: Wait> RawRwLock for Preferring<P, W> {
    crate::sync::raw_init!();
    type SharedGuard = GuardSend;
    type ExclusiveGuard = GuardSend;

    #[inline]
    fn lock_shared(&self) -> GuardSend {
        let state = self.state.load(Relaxed);
        if state & P::KEEPS_READERS_OUT != 0
            || self.state.compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed).is_err()
        {
            self.lock_shared_slow();
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<GuardSend> {
        let mut state = self.state.load(Relaxed);
        while state & P::KEEPS_READERS_OUT == 0 {
            match self.state.compare_exchange_weak(state, state + ONE_READER, Acquire, Relaxed) {
                Ok(_) => return Some(GuardSend::new()),
                Err(now) => state = now,
            }
        }
        None
    }

    /// Its releasing step must know whether it is the last reader out while a writer is
    /// counted, since that reader advances `writers_wake` before it leaves (the module docs
    /// say why): so a compare-and-swap rather than a subtraction.
    #[inline]
    unsafe fn unlock_shared(&self, _: GuardSend) {
        let mut seen = self.state.load(Relaxed);
        while seen & READERS != ONE_READER || seen & WRITERS == 0 {
            // Release: the read section happens-before the next writer's Acquire.
            match self.state.compare_exchange_weak(seen, seen - ONE_READER, Release, Relaxed) {
                Ok(_) => return,
                Err(now) => seen = now,
            }
        }
        self.last_reader_out_waking_writer();
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

    /// What a child forked while a writer waits for `lock` gets: a copy of its bytes with the
    /// writer counted, taken once `counted` sees it; `release` then lets go of what the caller
    /// holds of the original, so the writer finishes there. The copy keeps the caller's hold.
    fn copied_while_a_writer_waits<P: Preference, W: Wait>(
        lock: &Preferring<P, W>,
        counted: u64,
        release: impl FnOnce(),
    ) -> Preferring<P, W> {
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let held = lock.lock_exclusive();
                // SAFETY: acquired just above.
                unsafe { lock.unlock_exclusive(held) };
            });
            while lock.writers_counted() != counted {
                std::thread::yield_now();
            }
            // SAFETY: a copy of the bytes, as fork() makes; the lock has no destructor.
            let child = unsafe { core::ptr::read(lock) };
            release();
            waiter.join().unwrap();
            child
        })
    }

    /// A child forked while a reader holds the lock and a writer waits: the reader stays inside,
    /// the writer is not counted there.
    #[test]
    fn forgetting_waiters_keeps_the_reader_inside_and_drops_the_writer_waiting() {
        let lock = ReaderPref::<Futex>::new();
        let reading = lock.lock_shared();
        // SAFETY: acquired above.
        let mut child = copied_while_a_writer_waits(&lock, 1, || unsafe { lock.unlock_shared(reading) });
        child.forget_waiters();
        assert_eq!(child.writers_counted(), 0, "the waiting writer is forgotten");
        assert!(child.try_lock_exclusive().is_none(), "the reader is still inside");
        // SAFETY: the child's thread holds a read lock, as the copy says.
        unsafe { child.unlock_shared(GuardSend::new()) };
        assert_eq!(child.state.load(Relaxed), 0);
    }

    /// What a child forked while a writer holds the lock and another waits gets: the bytes,
    /// with the waiter counted and absent. Forgetting it keeps the hold, and then lets readers in.
    #[test]
    fn forgetting_waiters_keeps_the_writer_holding_and_drops_the_writer_waiting() {
        let lock = WriterPref::<Futex>::new();
        let held = lock.lock_exclusive();
        // SAFETY: acquired above.
        let mut child = copied_while_a_writer_waits(&lock, 2, || unsafe { lock.unlock_exclusive(held) });
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
    fn a_reader_gets_in_past_a_waiting_writer() {
        let lock = ReaderPref::<Futex>::new();
        let reading = lock.lock_shared();
        std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let held = lock.lock_exclusive();
                // SAFETY: acquired just above.
                unsafe { lock.unlock_exclusive(held) };
            });
            while lock.writers_counted() == 0 {
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
    fn a_waiting_writer_keeps_new_readers_out() {
        let lock = WriterPref::<Futex>::new();
        let reading = lock.lock_shared();
        std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let held = lock.lock_exclusive();
                // SAFETY: acquired just above.
                unsafe { lock.unlock_exclusive(held) };
            });
            while lock.writers_counted() == 0 {
                std::thread::yield_now();
            }
            assert!(lock.try_lock_shared().is_none(), "a reader got past a waiting writer");
            // SAFETY: acquired above.
            unsafe { lock.unlock_shared(reading) };
            writer.join().unwrap();
        });
        assert_eq!(lock.state.load(Relaxed), 0);
    }

    /// A writer holds; three readers and, if `another_writer`, a second writer wait behind
    /// it. Once it leaves, all get in and every mark is cleared.
    fn all_get_in_after_a_writer<P: Preference>(another_writer: bool) {
        let lock = Preferring::<P, Futex>::new();
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
            if another_writer {
                waiters.push(s.spawn(|| {
                    let writing = lock.lock_exclusive();
                    // SAFETY: acquired just above.
                    unsafe { lock.unlock_exclusive(writing) };
                }));
            }
            let writers = 1 + u64::from(another_writer);
            while lock.state.load(Relaxed) & READERS_WAITING == 0 || lock.writers_counted() != writers {
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
    fn readers_and_a_writer_waiting_behind_a_writer_all_get_in_after_it() {
        all_get_in_after_a_writer::<Readers>(true);
        all_get_in_after_a_writer::<Writers>(true);
    }

    #[test]
    fn readers_waiting_behind_a_writer_all_get_in_after_it() {
        all_get_in_after_a_writer::<Readers>(false);
        all_get_in_after_a_writer::<Writers>(false);
    }

    fn try_locks_fail_while_the_other_side_holds<P: Preference>() {
        let lock = Preferring::<P, Pause>::new();
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

    #[test]
    fn try_lock_exclusive_fails_while_read_locked_and_try_lock_shared_while_write_locked() {
        try_locks_fail_while_the_other_side_holds::<Readers>();
        try_locks_fail_while_the_other_side_holds::<Writers>();
    }

    /// The tests below free the lock at the instant its unlock releases it (see
    /// `release_watch`): a read or write of the lock after that kills the test binary.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    mod freed_at_release {
        use super::*;
        use crate::release_watch::{release_to_sleepers, Parked, Side};

        fn unlocked<P: Preference>(lock: &Preferring<P, Parked>) -> bool {
            lock.state.load(Relaxed) & LOCKED == 0
        }

        fn no_reader_inside<P: Preference>(lock: &Preferring<P, Parked>) -> bool {
            lock.state.load(Relaxed) & READERS == 0
        }

        /// Reader preference: a writer leaves while a reader and a writer sleep, and advances
        /// both sequences.
        #[test]
        fn a_writer_release_that_wakes_readers_and_a_writer_touches_nothing_after_it() {
            let sleepers = [Side::Shared, Side::Exclusive];
            let lock = release_to_sleepers(ReaderPref::new(), Side::Exclusive, &sleepers, unlocked, |_| {});
            assert_eq!(lock.state.load(Relaxed), 0);
        }

        /// Writer preference: a writer leaves while another sleeps, and advances `writers_wake`.
        #[test]
        fn a_writer_release_that_wakes_a_writer_touches_nothing_after_it() {
            let lock = release_to_sleepers(WriterPref::new(), Side::Exclusive, &[Side::Exclusive], unlocked, |_| {});
            assert_eq!(lock.state.load(Relaxed), 0);
        }

        /// Writer preference: a writer leaves while a reader sleeps, and advances `readers_wake`.
        #[test]
        fn a_writer_release_that_wakes_readers_touches_nothing_after_it() {
            let lock = release_to_sleepers(WriterPref::new(), Side::Exclusive, &[Side::Shared], unlocked, |_| {});
            assert_eq!(lock.state.load(Relaxed), 0);
        }

        /// The last reader leaves while a writer sleeps, waiting for exactly that.
        #[test]
        fn the_last_reader_release_that_wakes_a_writer_touches_nothing_after_it() {
            let lock =
                release_to_sleepers(ReaderPref::new(), Side::Shared, &[Side::Exclusive], no_reader_inside, |_| {});
            assert_eq!(lock.state.load(Relaxed), 0);
            let lock =
                release_to_sleepers(WriterPref::new(), Side::Shared, &[Side::Exclusive], no_reader_inside, |_| {});
            assert_eq!(lock.state.load(Relaxed), 0);
        }
    }
}
