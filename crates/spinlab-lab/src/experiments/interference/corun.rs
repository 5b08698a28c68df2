//! The waiters of a co-run: N threads wait on a word with one policy, pinned beside the
//! active workload's CPU, each counting its re-reads and sleeps, until the harness releases them.

use super::{LOCKED, LOCKED_SLEEPERS, SETTLE, UNLOCKED};
use crate::error::LabError;
use crate::experiments::lab::Lab;
use crate::machine::Placement;
use crate::measure::clock::{cpu_clock_s, now, this_thread_cpu_clock};
use crate::measure::partner::{with_partners, Announced};
use spinlab::sys::futex::FutexWait;
use spinlab::wait::{visit_policies, Episode, PolicyVisitor, Spun, Unavailable, Wait};
use spinlab::CachePadded;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering::*};

/// What one waiter saw.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct WaiterReport {
    /// Counter ticks from the start of its wait to the harness's release.
    pub(super) waited_ticks: u64,
    /// Iterations of the policy's loop (each one re-read of the word).
    pub(super) iterations: u64,
    /// Times it went to sleep.
    pub(super) sleeps: u64,
}

/// One co-run: `waiter_cpus.len()` waiters wait with the policy while the calling thread runs
/// `active`; then the harness releases the word and joins them.
pub(super) type CoRun = fn(waiter_cpus: &[usize], active: &mut dyn FnMut()) -> Result<CoRunReport, LabError>;

/// What one co-run saw besides the active call's own times.
pub(super) struct CoRunReport {
    pub(super) waiters: Vec<WaiterReport>,
    /// CPU seconds all the waiters used while the active call ran.
    pub(super) waiters_cpu_s: f64,
}

/// What one wait on the word took.
pub(super) struct Waited {
    /// Iterations of the policy's loop.
    pub(super) iterations: u64,
    /// Times the waiter went to sleep.
    pub(super) sleeps: u64,
}

/// Waits as a thread blocked in `Ttas<W>` does, until the word reads `UNLOCKED`.
pub(super) fn wait_like_ttas<W: Wait>(word: &AtomicU32) -> Waited {
    let mut episode = Episode::new(None);
    let (mut iterations, mut sleeps) = (0u64, 0u64);
    loop {
        let seen = word.load(Relaxed);
        if seen == UNLOCKED {
            break;
        }
        match W::spin(word, seen, &mut episode) {
            Spun::Changed => {}
            Spun::TimedOut => unreachable!("no deadline"),
            Spun::Exhausted => {
                // TTAS's park: mark that a sleeper may exist, sleep while it holds.
                iterations += episode.iterations() as u64;
                episode.restart_spinning();
                if word.swap(LOCKED_SLEEPERS, Acquire) == UNLOCKED {
                    // Released in between. Undo the mark, and wake anyone who saw it and
                    // went to sleep on it (nobody else will: the harness has released).
                    word.store(UNLOCKED, Release);
                    W::wake_all(word);
                    break;
                }
                if W::sleep(word, LOCKED_SLEEPERS, None) != FutexWait::ValueChanged {
                    sleeps += 1;
                }
            }
        }
    }
    Waited { iterations: iterations + episode.iterations() as u64, sleeps }
}

/// Releases the word as TTAS's unlock does: wakes sleepers only if one may exist (all of
/// them, since none of them will hand the lock on).
pub(super) fn release<W: Wait>(word: &AtomicU32) {
    if word.swap(UNLOCKED, Release) == LOCKED_SLEEPERS {
        W::wake_all(word);
    }
}

pub(super) fn co_run<W: Wait>(waiter_cpus: &[usize], active: &mut dyn FnMut()) -> Result<CoRunReport, LabError> {
    let word = CachePadded::new(AtomicU32::new(LOCKED));
    let arrived = Announced::new();
    let released_at = CachePadded::new(AtomicU64::new(0));
    // Each waiter's CPU-time clock, published before it announces itself.
    let clocks: Vec<AtomicI32> = waiter_cpus.iter().map(|_| AtomicI32::new(0)).collect();
    let waiter = |i: usize| {
        clocks[i].store(this_thread_cpu_clock(), Relaxed);
        arrived.announce();
        let wait_began = now();
        let waited = wait_like_ttas::<W>(&word);
        WaiterReport {
            waited_ticks: released_at.load(Acquire).saturating_sub(wait_began),
            iterations: waited.iterations,
            sleeps: waited.sleeps,
        }
    };
    // Returns the CPU seconds all the waiters used while the active call ran.
    let harness = || {
        arrived.wait_for(waiter_cpus.len(), false);
        std::thread::sleep(SETTLE);
        // The waiters are all waiting (they leave only once the word is released below), so
        // their clocks are live; `wait_for` acquired the announcements that follow their stores.
        let waiters_cpu = || clocks.iter().map(|c| cpu_clock_s(c.load(Relaxed))).sum::<f64>();
        let before = waiters_cpu();
        active();
        let used = waiters_cpu() - before;
        released_at.store(now(), Release);
        release::<W>(&word);
        used
    };
    // If a waiter cannot start, the ones that did leave once the word is released.
    let sides = with_partners(waiter_cpus, waiter, || release::<W>(&word), harness)?;
    Ok(CoRunReport { waiters: sides.partner, waiters_cpu_s: sides.main })
}

/// A policy as this experiment sees it.
#[derive(Clone, Copy)]
pub(super) struct Policy {
    pub(super) name: &'static str,
    pub(super) availability: Result<(), Unavailable>,
    pub(super) co_run: CoRun,
}

pub(super) fn policies() -> Vec<Policy> {
    struct Collect(Vec<Policy>);
    impl PolicyVisitor for Collect {
        fn visit<W: Wait>(&mut self) {
            self.0.push(Policy { name: W::NAME, availability: W::availability(), co_run: co_run::<W> });
        }
    }
    let mut c = Collect(Vec::new());
    visit_policies(&mut c);
    c.0
}

/// Where the active thread and the waiters run at one placement.
pub(super) struct CoRunCpus {
    pub(super) active: usize,
    pub(super) waiters: Vec<usize>,
}

/// The CPUs of the active thread and of `waiters` waiters at `placement`.
pub(super) fn cpus_at(lab: &Lab, placement: Placement, waiters: usize) -> Result<CoRunCpus, String> {
    let cpus = lab.topology.placement_cpus(placement)?;
    let active = cpus[0];
    if placement == Placement::SameCpu {
        return Ok(CoRunCpus { active, waiters: vec![active; waiters] });
    }
    // The other CPUs at this placement, round-robin: with more waiters than CPUs (three
    // waiters, one other core), waiters share a CPU, time-sliced among themselves.
    let others: Vec<usize> = cpus.iter().copied().filter(|&c| c != active).collect();
    Ok(CoRunCpus { active, waiters: (0..waiters).map(|i| others[i % others.len()]).collect() })
}

pub(super) fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

/// The mean interval between two reads of the watched word in one co-run's reports (its
/// waiters'), in ticks; `None` if they never read it.
pub(super) fn reread_ticks(reports: &[WaiterReport]) -> Option<f64> {
    let waited: u64 = reports.iter().map(|r| r.waited_ticks).sum();
    let iterations: u64 = reports.iter().map(|r| r.iterations).sum();
    (iterations > 0).then(|| waited as f64 / iterations as f64)
}
