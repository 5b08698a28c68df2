//! What the word carries for a gated lock ([`Gated`](crate::lock::Gated)): the mark of a
//! queue at its gate, the absences of the queue's head, and the looks of a thread about to queue.

use super::release::Lap;
use super::wait::{Mode, Outcome};
use super::{Bounded, QUEUED};
#[cfg(all(test, not(loom)))]
use super::{LAPPED, SPELLS};
use crate::sync::Ordering::*;
use crate::wait::Wait;
use std::time::Instant;

/// How long a thread that finds a gated lock held, with waiters queued at its gate, looks at
/// the word before it queues ([`Bounded::look_before_queueing`]), in nanoseconds: a short
/// critical section and a few line transfers, far less than the sleep and wake-up that
/// queueing costs (docs/design.md, "The gate").
pub(crate) const LOOK_NS: u32 = 1000;

impl<W: Wait> Bounded<W> {
    /// Whether a gated release has counted 16 absences in a row or more since a head last
    /// waited (a snapshot, for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn has_lapped(&self) -> bool {
        self.state.load(Relaxed) & LAPPED != 0
    }

    /// Whether the word is free with nothing else in it: no mark, sleeper, spinner or count
    /// (a snapshot, for tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_free_and_alone(&self) -> bool {
        self.state.load(Relaxed) & !(SPELLS) == 0
    }

    /// The queue's first step ([`Gated`](crate::lock::Gated)): becomes the one spinner and spins
    /// for the policy's budget, as qspinlock's pending waiter does, so that a lone waiter
    /// takes a contended lock without touching the queue. Gives up at once, with
    /// [`Outcome::Queue`], if another waiter is spinning or (unless the policy keeps a crowd
    /// running) a sleeper is counted, and when the budget is spent. Over a policy that never
    /// sleeps it queues at once: such a policy's spin phase never ends (`yield`'s), so its
    /// waiter would stay on the word to the end, beside every other newcomer that found nobody
    /// queued, and the queue would never order anybody. The caller has just found the lock
    /// taken, so this looks before it tries again: a second compare-and-swap at once would
    /// only take the line from the holder.
    #[inline]
    pub(crate) fn spin_then_queue(&self, deadline: Option<Instant>) -> Outcome {
        if !W::MAY_SLEEP {
            return Outcome::Queue;
        }
        self.wait_for(deadline, Mode::SpinThenQueue)
    }

    /// A thread that found the word held while waiters are queued at a gated lock's gate
    /// looks at the word for about [`LOOK_NS`] before it queues behind them, and takes the
    /// lock if it comes free (`Gated`'s docs say why). It stops at the first release it sees
    /// another thread win, the word changed but held again: the lock is then being taken back
    /// as soon as it is released, and each further look would only pull the line from its
    /// holder. Returns whether the lock is ours. Takes no bit of the word, so a release still
    /// counts the queue's head absent while such a thread looks.
    #[inline]
    pub(crate) fn look_before_queueing(&self) -> bool {
        let first = self.state.load(Relaxed);
        self.look_from(first, crate::wait::SpinPark::<LOOK_NS>::budget_iterations())
    }

    /// [`Bounded::look_before_queueing`] from the word as first seen, `first`, for at most
    /// `looks` looks.
    pub(super) fn look_from(&self, first: u32, looks: u32) -> bool {
        for _ in 0..looks {
            match self.take_if_free(self.state.load(Relaxed)) {
                Ok(()) => return true,
                Err(held) if held != first => return false,
                Err(_) => crate::sync::cpu_relax(),
            }
        }
        false
    }

    /// Marks the word as having a gate with waiters (`QUEUED`), so that releases take the
    /// path that asks whether the gate is still held ([`Bounded::release_gated`]). Publishes
    /// nothing (Relaxed).
    #[inline]
    pub(crate) fn mark_queued(&self) {
        self.state.fetch_or(QUEUED, Relaxed);
    }

    /// Frees the word by its own compare-and-swap if it holds `LOCKED` alone; returns whether
    /// it did. A gated lock's release tries this first: a word with nothing else in it has no
    /// gate marked, no sleeper to wake, and no head to count absent.
    #[inline(always)]
    pub(crate) fn release_if_alone(&self) -> bool {
        self.release_alone().is_ok()
    }

    /// Releases the word of a gated lock ([`Gated`](crate::lock::Gated)) that holds more than
    /// `LOCKED`. Where the word is marked `QUEUED`, `queued` says whether the gate is still
    /// held (read before each compare-and-swap, while the lock is still ours): if it is, the
    /// mark stays, and the release counts as an absence of the queue's head unless the head
    /// waits here (spinning, claiming, or asleep for this release to wake); if not, the mark
    /// goes. Returns the lap this release completed, if any: each 16th absence in a row.
    ///
    /// A head that takes the gate while a release finds it free may see its mark cleared by
    /// that release: its absences are then not counted until a release sees it waiting on the
    /// word. The mark a head makes once it holds the word stays until its own release.
    ///
    /// # Safety
    ///
    /// The caller holds the lock.
    #[cold]
    pub(crate) unsafe fn release_gated(&self, queued: impl Fn() -> bool) -> Lap {
        self.release(self.state.load(Relaxed), queued)
    }
}
