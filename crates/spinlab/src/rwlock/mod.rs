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
//! `ReaderPref` and `WriterPref` are one algorithm, [`Preferring`], told by a [`Preference`]
//! which bits of its word keep readers out.
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
mod preferring;

pub use phase_fair::PhaseFair;
pub use preferring::{Preference, Preferring, ReaderPref, Readers, WriterPref, Writers};
