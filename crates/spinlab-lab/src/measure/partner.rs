//! The other side of a measurement between CPUs: partner threads, each pinned to its own CPU,
//! that say when they are about to wait, and the measuring thread that waits for them before
//! it acts (wakes them, notifies them, runs beside them).
//!
//! A partner announces itself just before it waits, so the measuring thread never times a
//! wake-up of a thread that was not yet waiting. The count sits on its own cache line: the
//! partners write it and the measuring thread polls it, and neither should disturb the lines
//! being measured.

use super::pin::pin_or_die;
use super::team;
use crate::error::LabError;
use spinlab::CachePadded;
use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::thread::ScopedJoinHandle;

/// How many times the partners have said they are about to wait.
#[derive(Default)]
pub struct Announced {
    count: CachePadded<AtomicUsize>,
}

impl Announced {
    /// None yet.
    pub fn new() -> Announced {
        Announced::default()
    }

    /// Called by a partner just before it waits. One partner announcing once per round makes
    /// the count `r + 1` in round `r`.
    #[inline]
    pub fn announce(&self) {
        // Release: what the partner wrote before announcing is visible to the thread that sees
        // the count.
        self.count.fetch_add(1, Release);
    }

    /// Whether `n` announcements have been made.
    #[inline]
    pub fn reached(&self, n: usize) -> bool {
        self.count.load(Acquire) >= n
    }

    /// Waits for `n` announcements. With `spin_first` (the partners run on other CPUs) it spins
    /// briefly before yielding; without, it yields at once, so that a partner sharing this CPU
    /// gets to run (and a `same-cpu` figure is the switch to it, not this loop's spin).
    pub fn wait_for(&self, n: usize, spin_first: bool) {
        let mut spins = if spin_first { 0 } else { u32::MAX };
        while !self.reached(n) {
            if spins < 2000 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// What the two sides of a measurement returned.
pub struct Sides<M, P> {
    /// The measuring (calling) thread's result.
    pub main: M,
    /// The partner's result, or each partner's in order.
    pub partner: P,
}

/// Runs `partner` on a second thread pinned to `cpu` while `main` runs on the calling thread
/// (pinned where the caller pinned it), then joins the partner. A partner that panics panics
/// the caller with the same message.
pub fn with_partner<M, P: Send>(
    cpu: usize,
    partner: impl FnOnce() -> P + Send,
    main: impl FnOnce() -> M,
) -> Result<Sides<M, P>, LabError> {
    std::thread::scope(|scope| {
        let handle = team::spawn(scope, move || {
            pin_or_die(cpu);
            partner()
        })?;
        let main = main();
        Ok(Sides { main, partner: joined(handle) })
    })
}

/// Runs `partner(i)` on one thread per CPU of `cpus`, thread `i` pinned to `cpus[i]`, while
/// `main` runs on the calling thread, then joins them. If the OS refuses a thread, `call_off`
/// runs (it must let the partners already started finish: they are joined before this
/// returns) and the refusal is returned.
pub fn with_partners<M, P: Send>(
    cpus: &[usize],
    partner: impl Fn(usize) -> P + Sync,
    call_off: impl FnOnce(),
    main: impl FnOnce() -> M,
) -> Result<Sides<M, Vec<P>>, LabError> {
    let partner = &partner;
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(cpus.len());
        for (i, &cpu) in cpus.iter().enumerate() {
            let started = team::spawn_nth(scope, i, cpus.len(), move || {
                pin_or_die(cpu);
                partner(i)
            });
            match started {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    call_off();
                    return Err(e);
                }
            }
        }
        let main = main();
        Ok(Sides { main, partner: handles.into_iter().map(joined).collect() })
    })
}

fn joined<T>(handle: ScopedJoinHandle<'_, T>) -> T {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::pin::allowed_cpus;

    #[test]
    fn partners_run_on_their_cpus_and_the_main_side_waits_for_their_announcements() {
        let cpus = allowed_cpus();
        let spread: Vec<usize> = (0..3).map(|i| cpus[i % cpus.len()]).collect();
        let announced = Announced::new();
        let sides = with_partners(
            &spread,
            |i| {
                announced.announce();
                (i, allowed_cpus())
            },
            || {},
            || {
                announced.wait_for(3, false);
                announced.reached(3)
            },
        )
        .unwrap();
        assert!(sides.main);
        for (i, (index, pinned)) in sides.partner.into_iter().enumerate() {
            assert_eq!(index, i);
            assert_eq!(pinned, vec![spread[i]], "partner {i} runs only on its CPU");
        }
        let one = with_partner(cpus[0], allowed_cpus, || 7).unwrap();
        assert_eq!((one.main, one.partner), (7, vec![cpus[0]]));
    }

    #[test]
    fn a_partners_panic_reaches_the_caller_with_its_message() {
        let cpu = allowed_cpus()[0];
        let caught = std::panic::catch_unwind(|| with_partner(cpu, || panic!("partner broke"), || ()));
        let message = caught.err().and_then(|p| p.downcast_ref::<&str>().map(|s| s.to_string()));
        assert_eq!(message.as_deref(), Some("partner broke"));
    }
}
