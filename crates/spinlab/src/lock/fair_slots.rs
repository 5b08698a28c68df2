//! The fair lock's thread slots: [`FAIR_SLOTS`] process-wide slots, one per thread that has
//! had to wait on a [`Fair`](super::Fair) lock, each with its own padded signal word. A thread
//! claims a slot the first time it waits and returns it when it exits; bit `s + 1` of every
//! fair lock's word belongs to the thread holding slot `s`.

use super::fair::FAIR_SLOTS;
use crate::padded::CachePadded;
use crate::sync::{AtomicU32, AtomicU64, Ordering::*};
use core::cell::Cell;

struct Slots {
    /// Bit `s` is set while slot `s` is unclaimed.
    free: AtomicU64,
    signals: [CachePadded<AtomicU32>; FAIR_SLOTS],
}

const ALL_FREE: u64 = (1u64 << FAIR_SLOTS) - 1;

#[cfg(not(loom))]
fn table() -> &'static Slots {
    static SLOTS: Slots =
        Slots { free: AtomicU64::new(ALL_FREE), signals: [const { CachePadded::new(AtomicU32::new(0)) }; FAIR_SLOTS] };
    &SLOTS
}

// Under loom the table is a per-execution static, and loom drops its statics *before* the
// main thread's thread-locals: a `MySlot` dropped then must not reach the table through
// the static, so each one holds the table by `Arc`.
#[cfg(loom)]
loom::lazy_static! {
    static ref SLOTS: loom::sync::Arc<Slots> = loom::sync::Arc::new(Slots {
        free: AtomicU64::new(ALL_FREE),
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
        }
    }
}

#[cfg(not(loom))]
crate::sync::thread_local! {
    static MY_SLOT: MySlot = const { MySlot { slot: Cell::new(UNCLAIMED) } };
}

#[cfg(loom)]
crate::sync::thread_local! {
    static MY_SLOT: MySlot = MySlot { slot: Cell::new(UNCLAIMED), table: SLOTS.clone() };
}

fn claim() -> u8 {
    let free = &table().free;
    let mut seen = free.load(Relaxed);
    while seen != 0 {
        let slot = seen.trailing_zeros();
        match free.compare_exchange_weak(seen, seen & !(1 << slot), Acquire, Relaxed) {
            Ok(_) => return slot as u8,
            Err(now) => seen = now,
        }
    }
    UNCLAIMED
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
