//! Barriers by name, one of the two things seed 001's experiments measure: `barrier:POLICY`
//! (spinlab's sense-reversing [`Barrier`] over every policy), and the references `std`
//! (`std::sync::Barrier`) and `pthread` (`pthread_barrier_t`). The references keep the
//! semantics of spinlab's barrier (one leader per phase), so an experiment can swap one for
//! another by name.

use crate::table::{add_algorithm, policy_list, Algorithm, Entry, Kind, Table};
use core::cell::UnsafeCell;
use spinlab::barrier::{Barrier, Compact};
use spinlab::wait::Wait;
use std::num::NonZeroU32;

/// The reference barriers, measured beside spinlab's.
pub const REFERENCE_BARRIERS: [&str; 2] = ["std", "pthread"];

/// A barrier reached by name.
pub trait DynBarrier: Send + Sync {
    /// Waits until every party has arrived in this phase; `true` for exactly one thread per
    /// phase (the leader).
    fn wait(&self) -> bool;
    /// How many threads each phase waits for.
    fn parties(&self) -> usize;
}

/// Barriers: `barrier:POLICY` and the references, each a [`DynBarrier`] for a number of
/// parties when built.
#[derive(Clone, Copy, Debug)]
pub struct Barriers;

/// One barrier the registry can build.
pub type BarrierEntry = Entry<Barriers>;

/// What a barrier entry says beyond the facts every entry carries.
#[derive(Clone, Debug)]
pub struct BarrierFacts {
    /// The barrier in memory the caller provides (`barrier:POLICY` only: its [`Compact`]
    /// form); `None` for the references, which keep their own memory.
    pub ops: Option<RawBarrierOps>,
}

/// The verbs of a barrier stored in caller-provided memory of `size` bytes aligned to
/// `align`: spinlab's sense-reversing barrier as [`Compact`], its two words side by side. It
/// owns nothing, so the memory may be reused as soon as no thread is inside `wait`.
#[derive(Clone, Copy, Debug)]
pub struct RawBarrierOps {
    /// Bytes of storage the barrier needs.
    pub size: usize,
    /// Alignment the storage needs.
    pub align: usize,
    /// Writes a new barrier for `parties` threads. # Safety: `at` is valid for `size` bytes and
    /// aligned to `align`.
    pub init: unsafe fn(at: *mut u8, parties: NonZeroU32),
    /// Waits until every party has arrived in this phase; `true` for exactly one thread per
    /// phase. # Safety: `at` holds a barrier written by `init`.
    pub wait: unsafe fn(at: *const u8) -> bool,
}

fn in_place<W: Wait>() -> RawBarrierOps {
    RawBarrierOps {
        size: size_of::<Compact<W>>(),
        align: align_of::<Compact<W>>(),
        init: |at, parties| match Compact::<W>::new(parties.get() as usize) {
            // SAFETY: the `RawBarrierOps` contract: room for the barrier at `at`.
            Ok(barrier) => unsafe { (at as *mut Compact<W>).write(barrier) },
            Err(e) => unreachable!("{e}: every non-zero u32 is a valid party count"),
        },
        // SAFETY: the `RawBarrierOps` contract: a live barrier at `at`, only ever shared.
        wait: |at| unsafe { &*(at as *const Compact<W>) }.wait().is_leader(),
    }
}

impl<W: Wait> DynBarrier for Barrier<W> {
    #[inline]
    fn wait(&self) -> bool {
        Barrier::wait(self).is_leader()
    }
    fn parties(&self) -> usize {
        Barrier::parties(self)
    }
}

fn spinlab_barrier<W: Wait>(parties: NonZeroU32) -> Box<dyn DynBarrier> {
    match Barrier::<W>::new(parties.get() as usize) {
        Ok(barrier) => Box::new(barrier),
        Err(e) => unreachable!("{e}: every non-zero u32 is a valid party count"),
    }
}

/// spinlab's sense-reversing barrier, over every policy.
struct SenseReversing;

impl Algorithm<Barriers> for SenseReversing {
    const NAME: &'static str = "barrier";

    fn over<W: Wait>() -> (BarrierFacts, fn(NonZeroU32) -> Box<dyn DynBarrier>) {
        (BarrierFacts { ops: Some(in_place::<W>()) }, spinlab_barrier::<W>)
    }
}

/// Every barrier: `barrier:POLICY` for every policy, then the references. `parties` is
/// non-zero by type: a barrier for no thread could never release anyone.
///
/// ```
/// use spinlab_registry::BARRIERS;
/// use std::num::NonZeroU32;
/// let one = NonZeroU32::new(1).unwrap();
/// for name in ["barrier:futex", "std", "pthread"] {
///     assert!(BARRIERS.build(name, one).unwrap().wait(), "alone, every wait leads");
/// }
/// let err = BARRIERS.build("barrier:nap", one).err().unwrap().to_string();
/// assert!(err.contains("barrier:POLICY") && err.contains("spin-park") && err.contains("pthread"));
/// ```
pub static BARRIERS: Table<Barriers> = Table::new();

impl Kind for Barriers {
    type Built = Box<dyn DynBarrier>;
    type Args = NonZeroU32;
    type Facts = BarrierFacts;
    type Ops = RawBarrierOps;

    fn rows() -> Vec<BarrierEntry> {
        let mut rows = Vec::new();
        add_algorithm::<Barriers, SenseReversing>(&mut rows);
        rows.push(Entry::reference("std", BarrierFacts { ops: None }, StdBarrier::boxed));
        rows.push(Entry::reference("pthread", BarrierFacts { ops: None }, PthreadBarrier::boxed));
        rows
    }

    fn expected() -> String {
        format!(
            "a barrier is barrier:POLICY with POLICY one of {}, or a reference barrier: {}",
            policy_list(),
            REFERENCE_BARRIERS.join(", ")
        )
    }

    fn in_place(facts: &BarrierFacts) -> Option<(&RawBarrierOps, usize, usize)> {
        facts.ops.as_ref().map(|ops| (ops, ops.size, ops.align))
    }
}

/// `std::sync::Barrier`, which does not say how many parties it has.
struct StdBarrier {
    barrier: std::sync::Barrier,
    parties: usize,
}

impl StdBarrier {
    fn boxed(parties: NonZeroU32) -> Box<dyn DynBarrier> {
        let parties = parties.get() as usize;
        Box::new(StdBarrier { barrier: std::sync::Barrier::new(parties), parties })
    }
}

impl DynBarrier for StdBarrier {
    fn wait(&self) -> bool {
        self.barrier.wait().is_leader()
    }
    fn parties(&self) -> usize {
        self.parties
    }
}

/// A `pthread_barrier_t` (glibc's futex barrier), initialised where it lives: it must not move
/// once initialised, and a boxed value does not.
struct PthreadBarrier {
    barrier: UnsafeCell<libc::pthread_barrier_t>,
    parties: u32,
}

// SAFETY: pthread barriers are made to be shared between threads; the cell only gives libc the
// mutable pointer it asks for.
unsafe impl Sync for PthreadBarrier {}
// SAFETY: the barrier is only moved as a whole inside its box, which does not move it.
unsafe impl Send for PthreadBarrier {}

impl PthreadBarrier {
    fn boxed(parties: NonZeroU32) -> Box<dyn DynBarrier> {
        let barrier = Box::new(PthreadBarrier {
            // SAFETY: all-zero bytes are a valid (if uninitialised) value of this plain C
            // struct; `pthread_barrier_init` below initialises it in place.
            barrier: UnsafeCell::new(unsafe { core::mem::zeroed() }),
            parties: parties.get(),
        });
        // SAFETY: a valid pointer to the barrier's final location; default attributes.
        let r = unsafe { libc::pthread_barrier_init(barrier.barrier.get(), core::ptr::null(), parties.get()) };
        assert_eq!(r, 0, "pthread_barrier_init({parties}) failed with error {r}");
        barrier
    }
}

impl DynBarrier for PthreadBarrier {
    fn wait(&self) -> bool {
        // SAFETY: an initialised barrier (see `boxed`), alive for the call.
        unsafe { libc::pthread_barrier_wait(self.barrier.get()) == libc::PTHREAD_BARRIER_SERIAL_THREAD }
    }
    fn parties(&self) -> usize {
        self.parties as usize
    }
}

impl Drop for PthreadBarrier {
    fn drop(&mut self) {
        // SAFETY: initialised, and nobody waits on it any more (we are being dropped).
        unsafe { libc::pthread_barrier_destroy(self.barrier.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Origin;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    #[test]
    fn every_policy_has_a_barrier_and_the_references_follow() {
        let (names, policies) = (BARRIERS.names(), spinlab::wait::policies());
        assert_eq!(names.len(), policies.len() + REFERENCE_BARRIERS.len());
        for policy in &policies {
            let name = format!("barrier:{}", policy.name);
            assert!(names.contains(&name.as_str()), "{name} missing");
        }
        assert_eq!(&names[names.len() - REFERENCE_BARRIERS.len()..], REFERENCE_BARRIERS);
    }

    #[test]
    fn unknown_names_list_what_is_accepted() {
        let one = NonZeroU32::new(1).unwrap();
        let text = BARRIERS.build("barrier:nope", one).err().unwrap().to_string();
        for accepted in ["`barrier:nope`", "barrier:POLICY", "futex", "umwait", "std", "pthread"] {
            assert!(text.contains(accepted), "{text}");
        }
    }

    #[test]
    fn every_spinlab_barrier_runs_in_sixteen_bytes_of_the_callers_memory() {
        const THREADS: usize = 3;
        const PHASES: usize = 200;
        for entry in BARRIERS.entries().iter().filter(|e| e.availability.is_ok()) {
            let Some(ops) = entry.facts.ops else {
                assert_eq!(entry.origin, Origin::Reference, "{} has no in-place form", entry.name);
                continue;
            };
            assert_eq!((ops.size, ops.align), (16, 8), "{}", entry.name);
            if !entry.may_sleep && entry.policy != Some("yield") {
                continue; // pure spinners with more threads than this machine may have CPUs
            }
            let mut room = [0u64; 2];
            let at = room.as_mut_ptr().cast::<u8>();
            // SAFETY: 16 bytes aligned to 8, as the ops ask.
            unsafe { (ops.init)(at, NonZeroU32::new(THREADS as u32).unwrap()) };
            let at = at as usize;
            let (arrived, leaders) = (AtomicUsize::new(0), AtomicUsize::new(0));
            std::thread::scope(|s| {
                for _ in 0..THREADS {
                    s.spawn(|| {
                        for phase in 1..=PHASES {
                            arrived.fetch_add(1, Relaxed);
                            // SAFETY: the barrier written above, alive until the scope ends.
                            if unsafe { (ops.wait)(at as *const u8) } {
                                leaders.fetch_add(1, Relaxed);
                            }
                            assert!(arrived.load(Relaxed) >= THREADS * phase, "{}: left early", entry.name);
                        }
                    });
                }
            });
            assert_eq!(leaders.into_inner(), PHASES, "{}: one leader per phase", entry.name);
        }
    }
}
