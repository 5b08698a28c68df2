//! One herd repetition: the threads released by a barrier each round take the lock for a
//! short section, or with no lock write a line of their own; called off past a limit.

use super::Herd;
use crate::error::LabError;
use crate::lockbox::LockBox;
use crate::measure::pin::pin_or_die;
use crate::measure::team::{spawn_team, StartLine};
use crate::measure::work::{spin, SharedLines};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// One repetition: wall seconds, and the threads' user and system CPU seconds.
pub(super) struct Times {
    pub(super) wall_s: f64,
    pub(super) user_s: f64,
    pub(super) sys_s: f64,
    pub(super) lost_updates: u64,
    /// Acquisitions made, and whether the repetition was called off before all were.
    pub(super) done: u64,
    pub(super) called_off: bool,
}

/// CPU time of one thread, in seconds.
#[derive(Clone, Copy)]
pub(super) struct CpuTimes {
    pub(super) user_s: f64,
    pub(super) sys_s: f64,
}

impl CpuTimes {
    /// The calling thread's, so far.
    pub(super) fn of_this_thread() -> CpuTimes {
        // SAFETY: rusage is plain data; getrusage fills it.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: RUSAGE_THREAD on the calling thread, `u` is valid.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        CpuTimes { user_s: secs(u.ru_utime), sys_s: secs(u.ru_stime) }
    }

    /// What was used between `earlier` and these.
    pub(super) fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes { user_s: self.user_s - earlier.user_s, sys_s: self.sys_s - earlier.sys_s }
    }
}

/// What one herd thread reports: when it finished, the CPU time it used, and how many
/// sections it ran.
pub(super) struct Finished {
    pub(super) at: Instant,
    pub(super) cpu: CpuTimes,
    pub(super) done: u64,
}

/// One repetition under `lock`, or, with `None`, the floor: the same threads, barrier and
/// busy work, where each section writes a line of the thread's own instead of taking the lock
/// and writing the shared one. No lock can make the herd finish sooner than that: it only adds
/// the sections' serialisation and the hand-overs between them.
///
/// With `limit`, the repetition is called off once it has run that long: every thread stops
/// taking the lock (a thread already waiting for it still gets it once) and goes through the
/// remaining barriers, so the team ends. The threads check a shared flag before each section,
/// the floor's too, so every treatment pays the same load.
pub(super) fn herd_rep(
    lock: Option<&LockBox>,
    cpus: &[usize],
    herd: &Herd,
    cs_iterations: u64,
    lines: &SharedLines,
    limit: Option<Duration>,
) -> Result<Times, LabError> {
    let n = cpus.len();
    let line = StartLine::new(n);
    let round = Barrier::new(n);
    let own_lines = SharedLines::new(n);
    let call_off = AtomicBool::new(false);
    let finished = AtomicUsize::new(0);
    let main = std::thread::current();
    lines.reset();
    let worker = |i: usize| {
        pin_or_die(cpus[i]);
        let cpu_at_start = CpuTimes::of_this_thread();
        let mut seed = i as u64 + 1;
        let mut done = 0u64;
        if !line.arrive() {
            return None;
        }
        for _ in 0..herd.rounds {
            round.wait();
            for _ in 0..herd.per_round {
                if call_off.load(Relaxed) {
                    break;
                }
                match lock {
                    Some(lock) => {
                        lock.lock();
                        lines.touch();
                        seed = spin(cs_iterations, seed);
                        // SAFETY: acquired just above.
                        unsafe { lock.unlock() };
                    }
                    None => {
                        own_lines.touch_one(i);
                        seed = spin(cs_iterations, seed);
                    }
                }
                done += 1;
            }
        }
        black_box(seed);
        let at = Instant::now();
        if finished.fetch_add(1, AcqRel) + 1 == n {
            main.unpark();
        }
        Some(Finished { at, cpu: CpuTimes::of_this_thread().since(cpu_at_start), done })
    };
    let (started, results, called_off) = std::thread::scope(|scope| {
        // The round barrier is only reached past the start line, which a refused thread calls
        // off: no thread waits at it for one that never started.
        let handles = spawn_team(scope, &line, n, &worker)?;
        line.open();
        let started = Instant::now();
        let called_off = limit.is_some_and(|l| call_off_at(started + l, &finished, n, &call_off));
        let results: Vec<Finished> = handles
            .into_iter()
            .map(|h| h.join().expect("a herd thread panicked").expect("the start line was opened"))
            .collect();
        Ok::<_, LabError>((started, results, called_off))
    })?;
    Ok(Times::of(&results, started, lock.is_some().then_some(lines), called_off))
}

/// Waits until every one of the `n` threads has finished or `deadline` has passed, and at
/// the deadline tells them to stop taking the lock; returns whether it did.
pub(super) fn call_off_at(deadline: Instant, finished: &AtomicUsize, n: usize, call_off: &AtomicBool) -> bool {
    // Parked, not polling: the last thread to finish unparks this one.
    while finished.load(Acquire) < n {
        let now = Instant::now();
        if now >= deadline {
            call_off.store(true, Relaxed);
            return true;
        }
        std::thread::park_timeout(deadline - now);
    }
    false
}

impl Times {
    /// The repetition's times from its threads' results; `locked`: the shared lines the lock
    /// guarded, whose touches count the lost updates.
    pub(super) fn of(results: &[Finished], started: Instant, locked: Option<&SharedLines>, called_off: bool) -> Times {
        let end = results.iter().map(|r| r.at).max().unwrap_or(started);
        let done: u64 = results.iter().map(|r| r.done).sum();
        let lost_updates = match locked {
            Some(lines) => lines.total().map_or(0, |seen| done.saturating_sub(seen)),
            None => 0,
        };
        Times {
            wall_s: end.saturating_duration_since(started).as_secs_f64(),
            user_s: results.iter().map(|r| r.cpu.user_s).sum(),
            sys_s: results.iter().map(|r| r.cpu.sys_s).sum(),
            lost_updates,
            done,
            called_off,
        }
    }
}
