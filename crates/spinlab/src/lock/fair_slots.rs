//! The fair lock's thread slots: [`FAIR_SLOTS`] process-wide slots, one per thread that has
//! had to wait on a [`Fair`](super::Fair) lock, each with its own padded signal word. A thread
//! claims a slot the first time it waits and keeps it until it exits; bit `s + 1` of every
//! fair lock's word belongs to the thread holding slot `s`.
//!
//! **More waiters than slots.** A thread that finds every slot taken counts itself in
//! [`wanting`] for as long as it waits without one. A thread that holds a slot and ends a wait
//! (granted, or timed out) while anyone is counted there gives its slot back
//! ([`give_back_if_wanted`]); the first thread without one to look takes it. So when more
//! threads wait than there are slots, the slots pass round the waiters instead of staying
//! with the first threads that ever waited, and every waiter spends part of each wait in
//! the round-robin. A slot is only given back between waits: its bit is set in no lock's word,
//! and its signal word is written by nobody but its next holder (the grant that ended the wait
//! was read before the slot was given back; the granter's wake-up call after it can reach the
//! next holder, which takes it as the spurious wake-up every futex waiter allows for).
//!
//! **The turn word.** Threads without a slot sleep on one process-wide futex word, [`turn`],
//! which counts the events they wait for: a slot given back (or freed by an exiting thread),
//! and a fair lock freed while threads without a slot wait for it. Whoever causes one adds 1
//! to the word, with `Release` after the change it announces, and wakes a sleeper: one for a
//! slot, all of them for a freed lock (their lock's word has stopped saying they wait). A waiter
//! reads the word (`Acquire`) before it looks for a slot and at the lock, and sleeps only while
//! the word still holds what it read, so an event it did not see either changed the word
//! first (its futex wait returns at once) or wakes it. A slot given back while its giver holds
//! the lock (the wait it ended was granted) is announced at once, but the giver makes the
//! wake-up call only when it releases the lock ([`settle`]): the system call stays out of
//! the critical section, and a waiter still spinning sees the count move meanwhile. A giver
//! whose wait timed out holds no lock, and makes the call at once.

use crate::padded::CachePadded;
use crate::sync::{AtomicU32, AtomicU64, Ordering::*};
use crate::sys::futex as sys_futex;
use core::cell::Cell;

/// How many threads can wait on fair locks with a slot of their own: each slot is one bit of
/// every fair lock's word, which has 64 less `LOCKED` and `SLOTLESS` (the lock checks that
/// they match).
pub const FAIR_SLOTS: usize = 62;

struct Slots {
    /// Bit `s` is set while slot `s` is unclaimed.
    free: AtomicU64,
    /// Threads waiting on a fair lock without a slot right now.
    wanted: AtomicU32,
    /// Counts the events threads without a slot wait for; they sleep on it (module docs).
    turn: CachePadded<AtomicU32>,
    signals: [CachePadded<AtomicU32>; FAIR_SLOTS],
}

const ALL_FREE: u64 = (1u64 << FAIR_SLOTS) - 1;

#[cfg(not(loom))]
fn table() -> &'static Slots {
    static SLOTS: Slots = Slots {
        free: AtomicU64::new(ALL_FREE),
        wanted: AtomicU32::new(0),
        turn: CachePadded::new(AtomicU32::new(0)),
        signals: [const { CachePadded::new(AtomicU32::new(0)) }; FAIR_SLOTS],
    };
    &SLOTS
}

// Under loom the table is a per-execution static, and loom drops its statics *before* the
// main thread's thread-locals: a `MySlot` dropped then must not reach the table through
// the static, so each one holds the table by `Arc`.
#[cfg(loom)]
loom::lazy_static! {
    static ref SLOTS: loom::sync::Arc<Slots> = loom::sync::Arc::new(Slots {
        free: AtomicU64::new(ALL_FREE),
        wanted: AtomicU32::new(0),
        turn: CachePadded::new(AtomicU32::new(0)),
        signals: core::array::from_fn(|_| CachePadded::new(AtomicU32::new(0))),
    });
}

#[cfg(loom)]
fn table() -> &'static Slots {
    &SLOTS
}

const UNCLAIMED: u8 = u8::MAX;

/// This thread's slot; returns it to the table when the thread exits.
struct MySlot {
    slot: Cell<u8>,
    /// The slot this thread last held, after it gave it back: where its hand-overs start
    /// their round-robin scan while it holds none.
    last: Cell<u8>,
    /// This thread announced a slot on [`turn`] and owes the sleepers the wake-up ([`settle`]).
    owed: Cell<bool>,
    /// Waits at a fair gate since this thread last moved to a new slot ([`move_now_and_then`]).
    waits: Cell<u32>,
    /// The state of the generator that draws the new slot (splitmix64; 0 until first used).
    draw: Cell<u64>,
    #[cfg(loom)]
    table: loom::sync::Arc<Slots>,
}

impl Drop for MySlot {
    fn drop(&mut self) {
        #[cfg(not(loom))]
        let table = table();
        #[cfg(loom)]
        let table = &*self.table;
        let slot = self.slot.get();
        if (slot as usize) < FAIR_SLOTS {
            table.free.fetch_or(1 << slot, Release);
            if table.wanted.load(Relaxed) != 0 {
                announce(table);
                self.owed.set(true);
            }
        }
        // Not under loom, whose statics are gone before the main thread's thread-locals (the
        // models' threads settle when they release; the exit of a thread is not modelled).
        #[cfg(not(loom))]
        if self.owed.get() {
            sys_futex::wake_one(&table.turn);
        }
    }
}

#[cfg(not(loom))]
crate::sync::thread_local! {
    static MY_SLOT: MySlot = const {
        MySlot {
            slot: Cell::new(UNCLAIMED),
            last: Cell::new(UNCLAIMED),
            owed: Cell::new(false),
            waits: Cell::new(0),
            draw: Cell::new(0),
        }
    };
}

#[cfg(loom)]
crate::sync::thread_local! {
    static MY_SLOT: MySlot = MySlot {
        slot: Cell::new(UNCLAIMED),
        last: Cell::new(UNCLAIMED),
        owed: Cell::new(false),
        waits: Cell::new(0),
        draw: Cell::new(0),
        table: SLOTS.clone(),
    };
}

/// How many of its waits at a fair gate a thread makes in one slot before it moves to another
/// ([`move_now_and_then`]).
#[cfg_attr(loom, allow(dead_code))]
pub const WAITS_PER_MOVE: u32 = 8;

/// [`WAITS_PER_MOVE`], or under loom what the model set with `testing::fair_moves`: by default
/// no move at all, since each move multiplies the interleavings of every fair gate model; the
/// models `gated_fair_*_moving` move at every wait.
#[inline]
fn waits_per_move() -> u32 {
    #[cfg(not(loom))]
    {
        WAITS_PER_MOVE
    }
    #[cfg(loom)]
    {
        crate::testing::fair_waits_per_move()
    }
}

/// Called by a thread about to wait at a fair gate ([`Gated`](super::Gated) over
/// [`Fair`](super::Fair)), when it waits in no fair lock's round-robin: on every
/// [`WAITS_PER_MOVE`]th call it moves to a slot drawn at random among the free ones, and gives
/// its own back. A thread without a slot draws its first one here.
///
/// Why: slots are handed out once per thread, so which thread follows which in the
/// round-robin is fixed while they keep them. With threads pinned to CPUs, a thread whose
/// predecessor in slot order runs on its own CPU is granted the gate asleep on a CPU that its
/// granter goes on using, and waits for it at every turn, while its granter barges on, so
/// some threads get a fraction of the acquisitions of others (docs/design.md, "The gate").
/// Moving spreads those turns over all threads, as a FIFO queue's changing order does.
///
/// What it costs the order: a thread that moves may land ahead of the scan, and so be granted
/// twice in one turn of another waiter. Between two moves it makes [`WAITS_PER_MOVE`] waits,
/// each ended by a grant while anyone else waits (a fair lock with waiters is never free), so
/// it moves at most once during another thread's wait: each other slot holder passes a waiter
/// at most twice. (Its waits at other fair gates count too, so a thread that waits at several
/// may pass a waiter once more for every [`WAITS_PER_MOVE`] waits it made elsewhere
/// meanwhile.) A thread that moves while it holds another fair lock starts that lock's next
/// scan from its new slot, as a thread of seed 003 that migrated scans from its new CPU.
///
/// The slot is only ever held by one thread: the new one is claimed with a compare-and-swap
/// on the free set (Acquire, after its last holder's Release), and the old one given back
/// after. A wake-up still on its way to the old slot's signal reaches its next holder as a
/// spurious one, as for a slot given back ([`give_back_if_wanted`]).
pub fn move_now_and_then() {
    let every = waits_per_move();
    if every == 0 {
        return;
    }
    let table = table();
    let _ = MY_SLOT.try_with(|mine| {
        let slot = mine.slot.get();
        let held = (slot as usize) < FAIR_SLOTS;
        if held {
            let waits = mine.waits.get() + 1;
            if waits < every {
                mine.waits.set(waits);
                return;
            }
            mine.waits.set(0);
        }
        let free = table.free.load(Relaxed) & claimable();
        if free == 0 {
            return;
        }
        // Seeded from the free set, not an address: the same run draws the same slots (loom
        // replays its executions), and threads that come at different times draw differently.
        let mut state = mine.draw.get();
        if state == 0 {
            state = (free ^ u64::from(slot)) | 1 << 63;
        }
        let (state, drawn) = splitmix64(state);
        mine.draw.set(state);
        // Under loom the lowest, so that two threads drawing at once pick the same slot and
        // the models meet the race that the compare-and-swap below settles.
        let new = if cfg!(loom) {
            free.trailing_zeros()
        } else {
            nth_set_bit(free, (drawn % u64::from(free.count_ones())) as u32)
        };
        // Acquire: the slot's last holder gave it back with Release, after its last use of the
        // signal word. A failure (another thread claimed or gave back a slot meanwhile) leaves
        // us where we are until the next move.
        if table.free.compare_exchange(free, free & !(1 << new), Acquire, Relaxed).is_ok() {
            mine.slot.set(new as u8);
            if held {
                table.free.fetch_or(1 << slot, Release);
            }
        }
    });
}

/// One step of splitmix64: the next state, and its output.
fn splitmix64(state: u64) -> (u64, u64) {
    let state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (state, z ^ (z >> 31))
}

/// The index of the `n`th set bit of `bits` (counting from 0 at the lowest); `bits` has more
/// than `n` set.
fn nth_set_bit(mut bits: u64, n: u32) -> u32 {
    for _ in 0..n {
        bits &= bits - 1;
    }
    bits.trailing_zeros()
}

fn claim() -> u8 {
    let free = &table().free;
    let mut seen = free.load(Relaxed);
    while seen & claimable() != 0 {
        let slot = (seen & claimable()).trailing_zeros();
        match free.compare_exchange_weak(seen, seen & !(1 << slot), Acquire, Relaxed) {
            Ok(_) => return slot as u8,
            Err(now) => seen = now,
        }
    }
    UNCLAIMED
}

/// The slots a thread may claim: all of them, or under loom the first few a model allows
/// (`testing::fair_slots`).
#[inline]
fn claimable() -> u64 {
    #[cfg(not(loom))]
    {
        ALL_FREE
    }
    #[cfg(loom)]
    {
        crate::testing::fair_slots_claimable().map_or(ALL_FREE, |n| {
            assert!(n <= FAIR_SLOTS, "a fair lock has {FAIR_SLOTS} slots");
            (1u64 << n) - 1
        })
    }
}

/// Counts this thread among those waiting without a slot until dropped.
pub struct Wanting(());

/// Counts this thread among the waiters without a slot, whom threads with one give theirs to.
pub fn wanting() -> Wanting {
    table().wanted.fetch_add(1, Relaxed);
    Wanting(())
}

impl Drop for Wanting {
    fn drop(&mut self) {
        table().wanted.fetch_sub(1, Relaxed);
    }
}

/// Gives this thread's slot back if a thread is waiting without one. Call only between waits:
/// this thread's bit set in no lock's word. The count is read relaxed: a slot given back a
/// little late, or once when nobody takes it, changes who waits in the round-robin, never
/// whether the lock is correct.
#[inline]
pub fn give_back_if_wanted() {
    let table = table();
    if table.wanted.load(Relaxed) == 0 {
        return;
    }
    let _ = MY_SLOT.try_with(|mine| {
        let slot = mine.slot.get();
        if (slot as usize) < FAIR_SLOTS {
            mine.slot.set(UNCLAIMED);
            mine.last.set(slot);
            // Release: our last reads of the slot's signal happen-before its next holder's
            // first write (that holder claims with Acquire).
            table.free.fetch_or(1 << slot, Release);
            announce(table);
            mine.owed.set(true);
        }
    });
}

/// Counts an event on [`turn`]; `Release`: the change it announces (a slot freed, a lock's
/// word cleared) is seen by a waiter that reads the new count with `Acquire`.
fn announce(table: &Slots) {
    table.turn.fetch_add(1, Release);
}

/// The word threads without a slot sleep on (module docs).
#[inline]
pub fn turn() -> &'static AtomicU32 {
    &table().turn
}

/// Makes the wake-up this thread owes for a slot it announced ([`give_back_if_wanted`]), if
/// it owes one. Call where a system call lengthens no critical section of the lock: at the
/// end of a release, before a wait, or after a wait that ended without the lock.
#[inline]
pub fn settle() {
    let _ = MY_SLOT.try_with(|mine| {
        if mine.owed.replace(false) {
            sys_futex::wake_one(&table().turn);
        }
    });
}

/// Announces that a fair lock whose word said threads without a slot wait for it is free,
/// and wakes them all: each looks at its own lock again, and sleeps again if that is not the
/// one freed.
pub fn lock_freed() {
    let table = table();
    announce(table);
    sys_futex::wake_all(&table.turn);
}

/// After a thread without a slot stops waiting without taking one (it took the lock while it
/// was free, or timed out): if a slot is free and others still want one, the wake-up that
/// may have been meant for that slot goes to the next sleeper, owed until this thread
/// [`settle`]s.
pub fn pass_on() {
    let table = table();
    if table.free.load(Relaxed) & claimable() != 0 && table.wanted.load(Relaxed) > 1 {
        announce(table);
        let _ = MY_SLOT.try_with(|mine| mine.owed.set(true));
    }
}

/// Where a hand-over by this thread starts its round-robin scan: bit `s + 1` for the slot `s`
/// it holds or last held, 0 if it never held one. Claims nothing.
#[inline]
pub fn position() -> usize {
    MY_SLOT
        .try_with(|mine| {
            let slot = if (mine.slot.get() as usize) < FAIR_SLOTS { mine.slot.get() } else { mine.last.get() };
            if (slot as usize) < FAIR_SLOTS {
                slot as usize + 1
            } else {
                0
            }
        })
        .unwrap_or(0)
}

/// This thread's slot, claimed on first use; `None` while all slots are taken (or during
/// thread teardown).
#[inline]
pub fn mine() -> Option<usize> {
    MY_SLOT
        .try_with(|mine| {
            if mine.slot.get() == UNCLAIMED {
                mine.slot.set(claim());
            }
            let slot = mine.slot.get();
            (slot != UNCLAIMED).then_some(slot as usize)
        })
        .ok()
        .flatten()
}

#[inline]
pub fn signal(slot: usize) -> &'static AtomicU32 {
    &table().signals[slot]
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering as O};

    /// Threads that move to new slots, many at once, never hold the same slot: each records
    /// itself as its slot's owner after every call, having cleared its entry before the call,
    /// so two threads given one slot find each other there. (Other tests' threads hold slots
    /// too; they are not in the table, and the moves only draw free slots.)
    #[test]
    fn threads_that_move_never_share_a_slot() {
        static OWNER: [AtomicUsize; FAIR_SLOTS] = [const { AtomicUsize::new(0) }; FAIR_SLOTS];
        let threads = 12;
        let moved = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for me in 1..=threads {
                let moved = &moved;
                s.spawn(move || {
                    let mut before = mine().expect("12 threads find a free slot among 62");
                    for _ in 0..20_000 {
                        OWNER[before].store(0, O::SeqCst);
                        move_now_and_then();
                        let after = mine().expect("a move keeps a slot");
                        let other = OWNER[after].swap(me, O::SeqCst);
                        assert_eq!(other, 0, "threads {me} and {other} both hold slot {after}");
                        if after != before {
                            moved.fetch_add(1, O::Relaxed);
                        }
                        before = after;
                    }
                    OWNER[before].store(0, O::SeqCst);
                });
            }
        });
        // 20 000 calls each, a move every WAITS_PER_MOVE: most succeed.
        assert!(moved.into_inner() > threads * 20_000 / WAITS_PER_MOVE as usize / 2);
    }

    #[test]
    fn the_nth_set_bit_counts_from_the_lowest() {
        assert_eq!(nth_set_bit(0b1011_0100, 0), 2);
        assert_eq!(nth_set_bit(0b1011_0100, 1), 4);
        assert_eq!(nth_set_bit(0b1011_0100, 3), 7);
        assert_eq!(nth_set_bit(1 << 61, 0), 61);
    }
}
