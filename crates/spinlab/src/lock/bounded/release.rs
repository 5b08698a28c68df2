//! The word's release: frees it, wakes one sleeper where one is owed a wake-up, and counts a
//! gated lock's absences (the module docs of [`Bounded`] give the rules).

use super::{
    Bounded, ABSENCES, HANDOFF, LAPPED, LOCKED, ONE_ABSENCE, ONE_SLEEPER, ONE_SPELL, QUEUED, SPELLS, SPINNING, WAKING,
};
use crate::sync::Ordering::*;
use crate::wait::Wait;

impl<W: Wait> Bounded<W> {
    /// Frees a word that holds `LOCKED` and nothing else, by one compare-and-swap from
    /// `LOCKED` to 0; returns the word as seen, untouched, when it holds more.
    #[inline(always)]
    pub(super) fn release_alone(&self) -> Result<(), u32> {
        // Release: our critical section happens-before the next holder's Acquire.
        self.state.compare_exchange(LOCKED, 0, Release, Relaxed).map(drop)
    }

    /// Clears `LOCKED`, and sets `WAKING` if we are to wake a sleeper: with a claim pending
    /// the claimant is running and takes the lock itself (its own release wakes a sleeper),
    /// and while a sleeper is on its way back, it takes over (see `count_out`). Where the word
    /// is marked `QUEUED` and `queued()` says the gate is still held, keeps the mark and counts
    /// the release as an absence if no head waits; otherwise clears the mark and the count.
    /// `seen` is the word as the caller last saw it, the CAS's first guess.
    #[cold]
    pub(super) fn release(&self, mut seen: u32, queued: impl Fn() -> bool) -> Lap {
        let (wake, lap) = loop {
            let queued = seen & QUEUED != 0 && queued();
            let wake = owes_wake_up(seen);
            let head_waits = seen & (SPINNING | HANDOFF) != 0 || wake;
            let spell = seen & SPELLS;
            let (absences, lap) = match seen & ABSENCES {
                _ if !queued || head_waits => (spell, Lap::None),
                ABSENCES if seen & LAPPED == 0 => {
                    let spell = (spell + ONE_SPELL) & SPELLS;
                    (LAPPED | spell, Lap::First(spell / ONE_SPELL))
                }
                ABSENCES => (LAPPED | spell, Lap::Again(spell / ONE_SPELL)),
                counted => ((seen & (LAPPED | SPELLS)) | (counted + ONE_ABSENCE), Lap::None),
            };
            let kept = seen & !(LOCKED | ABSENCES | LAPPED | SPELLS | QUEUED);
            let next = kept | absences | if queued { QUEUED } else { 0 } | if wake { WAKING } else { 0 };
            // Release: our critical section happens-before the next holder's Acquire.
            match self.state.compare_exchange_weak(seen, next, Release, Relaxed) {
                Ok(_) => break (wake, lap),
                Err(now) => seen = now,
            }
        };
        // The lock may be gone by now (taken, released and destroyed by another thread):
        // only the futex wake-up may name its address.
        if wake {
            W::wake_one(&self.state);
        }
        lap
    }
}

/// Whether a release from `state` wakes a sleeper: one is counted, and neither a claimant
/// (whose own release wakes one) nor a sleeper already woken (which takes the duty over) is
/// on its way.
#[inline]
fn owes_wake_up(state: u32) -> bool {
    state & (HANDOFF | WAKING) == 0 && sleepers(state) != 0
}

/// Sleepers counted in `state`.
#[inline]
pub(super) fn sleepers(state: u32) -> u32 {
    state / ONE_SLEEPER
}

/// Which lap of 16 absences in a row a gated release completed
/// ([`Bounded::release_gated`]). A spell is one run of absences, from the head's
/// last wait to its next; spells are numbered modulo 8, so that a thread can tell a spell it
/// timed from a later one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lap {
    /// No lap completed.
    None,
    /// The spell's first lap: the spell numbered so begins.
    First(u32),
    /// A later lap of the numbered spell.
    Again(u32),
}
