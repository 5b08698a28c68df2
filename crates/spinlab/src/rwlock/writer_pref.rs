//! Writer-preferring reader-writer lock: while any writer waits or holds the lock, new readers
//! stay out, so writers are never starved by readers (and readers can be, by writers).
//!
//! Three words, one line: a reader's acquisition touches `readers` and reads `writers`, and
//! finds both in the line its increment already brought in.
//!
//! `readers`:
//!
//! | bits  | name            | meaning                                                        |
//! |-------|-----------------|----------------------------------------------------------------|
//! | 0..31 | count           | readers inside, plus readers that counted themselves in and are about to back out |
//! | 31    | `WRITER_ASLEEP` | the writer waiting for readers to leave may be asleep on this word |
//!
//! `writers`:
//!
//! | bits  | name             | meaning                                                      |
//! |-------|------------------|--------------------------------------------------------------|
//! | 0..31 | count            | writers waiting or holding; while non-zero, readers stay out |
//! | 31    | `READERS_ASLEEP` | readers may be asleep on this word, waiting for the count to reach zero |
//!
//! `writer_lock`: a [`Ttas`] over the same policy, which writers take one at a time.
//!
//! A reader counts itself in, then checks for writers; a writer counts itself in, then (after
//! taking `writer_lock`) checks for readers. With both steps sequentially consistent this is
//! Dekker's handshake: at least one of the two sees the other. A reader that sees a writer
//! counts itself out again and waits for the writer count to reach zero; a writer that sees
//! readers waits for the reader count to reach zero, and since no new reader stays in while
//! it is counted, it does.

use crate::event::sleep_marked;
use crate::lock::Ttas;
use crate::sync::{AtomicU32, Ordering::*};
use crate::wait::{Episode, Spun, Wait};
use lock_api::{GuardSend, RawMutex, RawRwLock};

const COUNT: u32 = (1 << 31) - 1;
const WRITER_ASLEEP: u32 = 1 << 31;
const READERS_ASLEEP: u32 = 1 << 31;

/// Writer-preferring reader-writer lock waiting with policy `W`. Twelve bytes; the state
/// tables are in this file's module docs.
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
    readers: AtomicU32,
    writers: AtomicU32,
    writer_lock: Ttas<W>,
}

impl<W: Wait> WriterPref<W> {
    crate::sync::loom_const_fn! {
        /// A new, unlocked lock.
        pub fn new() -> Self {
            WriterPref { readers: AtomicU32::new(0), writers: AtomicU32::new(0), writer_lock: Ttas::new() }
        }
    }

    /// One attempt to enter as a reader.
    #[inline]
    fn try_enter_reader(&self) -> bool {
        // A plain look first: while a writer is counted, counting ourselves in would only bounce
        // the line the writer is watching.
        if self.writers.load(Relaxed) & COUNT != 0 {
            return false;
        }
        // SeqCst, with the load below and the writer's increment and load: Dekker's handshake
        // (module docs). The load is also the Acquire that pairs with the last writer's Release
        // decrement, so its write section happens-before our read section.
        self.readers.fetch_add(1, SeqCst);
        if self.writers.load(SeqCst) & COUNT == 0 {
            return true;
        }
        self.leave_reader();
        false
    }

    /// Counts one reader out, waking the draining writer if this was the last reader.
    #[inline]
    fn leave_reader(&self) {
        // Release: the read section happens-before the write section of the writer that sees
        // the count reach zero.
        let before = self.readers.fetch_sub(1, Release);
        if before == WRITER_ASLEEP | 1 {
            self.wake_writer();
        }
    }

    #[cold]
    fn wake_writer(&self) {
        // Only the writer holding `writer_lock` sleeps here, so waking one wakes it. The flag
        // is left for the writer to clear once it sees no readers: a reader that enters and
        // backs out meanwhile only makes one more, harmless, wake-up call.
        W::wake_one(&self.readers);
    }

    #[cold]
    fn lock_shared_slow(&self) {
        let mut episode = Episode::new(None);
        loop {
            if self.try_enter_reader() {
                return;
            }
            let seen = self.writers.load(Relaxed);
            if seen & COUNT == 0 {
                continue;
            }
            match W::spin(&self.writers, seen, &mut episode) {
                Spun::Changed => {}
                Spun::TimedOut => unreachable!("no deadline"),
                Spun::Exhausted => {
                    sleep_marked::<W>(&self.writers, seen, READERS_ASLEEP, None);
                    episode.restart_spinning();
                }
            }
        }
    }

    /// Waits, holding `writer_lock`, until no reader is inside.
    fn drain_readers(&self) {
        let mut episode = Episode::new(None);
        loop {
            // SeqCst: the writer's half of Dekker's handshake (the first time round). It is also
            // the Acquire that pairs with the departing readers' Release.
            let seen = self.readers.load(SeqCst);
            if seen & COUNT == 0 {
                if seen & WRITER_ASLEEP != 0 {
                    self.readers.fetch_and(!WRITER_ASLEEP, Relaxed);
                }
                return;
            }
            match W::spin(&self.readers, seen, &mut episode) {
                Spun::Changed => {}
                Spun::TimedOut => unreachable!("no deadline"),
                Spun::Exhausted => {
                    sleep_marked::<W>(&self.readers, seen, WRITER_ASLEEP, None);
                    episode.restart_spinning();
                }
            }
        }
    }

    /// Counts one writer out: the last one out lets readers in, and wakes those asleep.
    #[inline]
    fn leave_writer(&self) {
        let mut seen = self.writers.load(Relaxed);
        loop {
            let mut next = seen - 1;
            if next & COUNT == 0 {
                // The flag is cleared in the step that reads it; see `sleep_marked`.
                next = 0;
            }
            // Release: the write section happens-before the readers whose SeqCst load sees
            // the count reach zero.
            match self.writers.compare_exchange_weak(seen, next, Release, Relaxed) {
                Ok(_) => break,
                Err(now) => seen = now,
            }
        }
        if W::MAY_SLEEP && seen == READERS_ASLEEP | 1 {
            W::wake_all(&self.writers);
        }
    }
}

impl<W: Wait> Default for WriterPref<W> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: readers and writers exclude each other by the handshake in the module docs (a reader
// is inside only while it is counted in `readers` and saw no writer after counting; a writer is
// inside only after it was counted in `writers` and then saw no reader), writers exclude each
// other through `writer_lock`, and every entry has Acquire and every exit Release ordering.
unsafe impl<W: Wait> RawRwLock for WriterPref<W> {
    crate::sync::raw_init!();
    type SharedGuard = GuardSend;
    type ExclusiveGuard = GuardSend;

    #[inline]
    fn lock_shared(&self) -> GuardSend {
        if !self.try_enter_reader() {
            self.lock_shared_slow();
        }
        GuardSend::new()
    }

    #[inline]
    fn try_lock_shared(&self) -> Option<GuardSend> {
        self.try_enter_reader().then(GuardSend::new)
    }

    #[inline]
    unsafe fn unlock_shared(&self, _: GuardSend) {
        self.leave_reader();
    }

    #[inline]
    fn lock_exclusive(&self) -> GuardSend {
        // Counted first, so that readers stay out while we wait for other writers too.
        self.writers.fetch_add(1, SeqCst);
        let held = self.writer_lock.lock();
        self.drain_readers();
        // The exclusive guard is the writer lock's: its state is a plain marker.
        held
    }

    fn try_lock_exclusive(&self) -> Option<GuardSend> {
        if self.writers.load(Relaxed) & COUNT != 0 || self.readers.load(Relaxed) & COUNT != 0 {
            return None;
        }
        self.writers.fetch_add(1, SeqCst);
        let Some(held) = self.writer_lock.try_lock() else {
            self.leave_writer();
            return None;
        };
        // SeqCst: Dekker's handshake, as in `drain_readers`.
        if self.readers.load(SeqCst) & COUNT != 0 {
            self.leave_writer();
            // SAFETY: acquired just above.
            unsafe { self.writer_lock.unlock(held) };
            return None;
        }
        Some(held)
    }

    #[inline]
    unsafe fn unlock_exclusive(&self, held: GuardSend) {
        self.leave_writer();
        // SAFETY: the caller holds the lock exclusively, which means holding `writer_lock`.
        unsafe { self.writer_lock.unlock(held) };
    }

    /// Whether readers are inside (or counting themselves in) or a writer holds or is taking
    /// the lock.
    #[inline]
    fn is_locked(&self) -> bool {
        self.readers.load(Relaxed) & COUNT != 0 || self.writer_lock.is_locked()
    }

    /// Whether a writer holds the lock, or is waiting for the readers inside to leave.
    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.writer_lock.is_locked()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
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
            while lock.writers.load(Relaxed) & COUNT == 0 {
                std::thread::yield_now();
            }
            assert!(lock.try_lock_shared().is_none(), "a reader got past a waiting writer");
            // SAFETY: acquired above.
            unsafe { lock.unlock_shared(reading) };
            writer.join().unwrap();
        });
        assert!(!lock.is_locked());
        assert_eq!(lock.writers.load(Relaxed), 0);
        assert_eq!(lock.readers.load(Relaxed), 0);
    }

    #[test]
    fn try_lock_exclusive_fails_cleanly_while_read_locked() {
        let lock = WriterPref::<Pause>::new();
        let reading = lock.lock_shared();
        assert!(lock.try_lock_exclusive().is_none());
        assert_eq!(lock.writers.load(Relaxed), 0, "the failed attempt must count itself out");
        // SAFETY: acquired above.
        unsafe { lock.unlock_shared(reading) };
        let held = lock.try_lock_exclusive().expect("free now");
        assert!(lock.is_locked_exclusive());
        // SAFETY: acquired just above.
        unsafe { lock.unlock_exclusive(held) };
    }
}
