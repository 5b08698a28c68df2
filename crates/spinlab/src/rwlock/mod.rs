//! Reader-writer locks over any wait policy: seed 004's redesign, in which a contended spin lock
//! became a reader-writer semaphore, with how the waiters wait left to the policy.
//!
//! All implement [`lock_api::RawRwLock`], so `lock_api::RwLock<WriterPref<W>, T>` and
//! `lock_api::RwLock<PhaseFair<W>, T>` are ready-made reader-writer locks.
//!
//! | lock           | a reader waits for                 | a writer waits for                             | can starve |
//! |----------------|------------------------------------|------------------------------------------------|------------|
//! | [`ReaderPref`] | no writer holding                  | readers inside, a writer holding               | writers    |
//! | [`WriterPref`] | no writer waiting or holding       | writers before it (any order), readers inside  | readers    |
//! | [`PhaseFair`]  | the end of the writer phase it met | writers before it (FIFO), readers before it    | nobody     |
//!
//! Reader preference is what glibc's default `pthread_rwlock_t` gives: a thread holding a read
//! lock can take it again while a writer waits (with the other two it would deadlock), which
//! is why the preload library puts it in those.
//!
//! Writer preference starves readers only while writers keep coming before the count of
//! waiting writers reaches zero.
//!
//! Phase-fair (Brandenburg and Anderson, "Spin-based reader-writer synchronization for
//! multiprocessor real-time systems", 2010): reader phases and writer phases alternate. A
//! reader that arrives during a writer phase waits for that phase only; a writer waits for the
//! writers queued before it and for the readers that arrived before it, never for readers that
//! arrive later. So a stream of readers cannot starve a writer, nor a stream of writers a
//! reader, and each waits at most one phase of the other kind per competitor.
//!
//! Uncontended, a read acquisition is one atomic increment (`PhaseFair`) or a load and a
//! compare-and-swap (`WriterPref`, `ReaderPref`), and a read release one atomic increment of
//! the departures (`PhaseFair`) or a load and a compare-and-swap (the other two); no system
//! call is made unless a thread may be asleep.
//!
//! All three may be freed as soon as they are unlocked and unused, as POSIX allows, even while
//! the thread that unlocked is still inside its unlock: after the atomic that releases the
//! lock, an unlock names it only in a futex wake-up system call. Each module says how.

mod phase_fair;
mod reader_pref;
mod writer_pref;

pub use phase_fair::PhaseFair;
pub use reader_pref::ReaderPref;
pub use writer_pref::WriterPref;

use crate::event::{Sequence, Wake};
use crate::sync::{AtomicU64, Ordering::*};
use crate::wait::Wait;

/// The state word that the writer- and reader-preference locks share (each module's docs
/// give its table and what each lock does with it).
mod word {
    pub(super) const ONE_READER: u64 = 1;
    pub(super) const READERS: u64 = 0xffff_ffff;
    pub(super) const ONE_WRITER: u64 = 1 << 32;
    pub(super) const WRITERS: u64 = ((1 << 29) - 1) << 32;
    pub(super) const RELEASING: u64 = 1 << 61;
    pub(super) const LOCKED: u64 = 1 << 62;
    pub(super) const READERS_WAITING: u64 = 1 << 63;
}

/// The state word of a writer- or reader-preference lock with its holds kept and its waiters
/// forgotten: the readers inside, and a holding writer, counted as the one writer. Marks of
/// waiters (`READERS_WAITING`) and of a releaser between its advance and its release
/// (`RELEASING`) go with them.
fn holds_only(state: u64) -> u64 {
    use word::*;
    let held = state & (READERS | LOCKED);
    if held & LOCKED != 0 {
        held | ONE_WRITER
    } else {
        held
    }
}

/// A read unlock of a writer- or reader-preference lock. Its releasing step must know
/// whether it is the last reader out while a writer is counted, since that reader advances
/// `writers_wake` before it leaves (the modules' docs say why): so a compare-and-swap rather
/// than a subtraction.
#[inline]
fn unlock_shared<W: Wait>(state: &AtomicU64, writers_wake: &Sequence<W>) {
    use word::*;
    let mut seen = state.load(Relaxed);
    while seen & READERS != ONE_READER || seen & WRITERS == 0 {
        // Release: the read section happens-before the next writer's Acquire.
        match state.compare_exchange_weak(seen, seen - ONE_READER, Release, Relaxed) {
            Ok(_) => return,
            Err(now) => seen = now,
        }
    }
    last_reader_out_waking_writer(state, writers_wake);
}

/// The last reader out while a writer is counted: sets `RELEASING` while still inside,
/// advances `writers_wake`, then leaves (clearing the bit in the same step) and only then
/// makes the wake-up call. Other readers may enter and leave meanwhile (reader preference)
/// without touching `RELEASING`: while this reader is inside, none of them is the last out.
#[cold]
fn last_reader_out_waking_writer<W: Wait>(state: &AtomicU64, writers_wake: &Sequence<W>) {
    use word::*;
    state.fetch_or(RELEASING, Relaxed);
    let wake = writers_wake.advance_quietly();
    // Release: the read section happens-before the next writer's Acquire.
    state.fetch_sub(ONE_READER | RELEASING, Release);
    // The lock may be gone by now: only the wake-up's system call may name it.
    if wake {
        writers_wake.wake(Wake::One);
    }
}

/// What a child forked while a writer waits for `lock` gets: a copy of its bytes with the
/// writer counted, taken once `counted` sees it; `release` then lets go of what the caller
/// holds of the original, so the writer finishes there. The copy keeps the caller's hold.
#[cfg(all(test, not(loom)))]
fn copied_while_a_writer_waits<R: lock_api::RawRwLock + Sync>(
    lock: &R,
    counted: impl Fn(&R) -> bool,
    release: impl FnOnce(),
) -> R {
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let held = lock.lock_exclusive();
            // SAFETY: acquired just above.
            unsafe { lock.unlock_exclusive(held) };
        });
        while !counted(lock) {
            std::thread::yield_now();
        }
        // SAFETY: a copy of the bytes, as fork() makes; the locks it is used for have no
        // destructor.
        let child = unsafe { core::ptr::read(lock) };
        release();
        waiter.join().unwrap();
        child
    })
}
