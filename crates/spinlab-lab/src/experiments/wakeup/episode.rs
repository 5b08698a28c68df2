//! The episode both seed 001 scenarios share: a worker's matrix multiply while a waiter waits
//! at a rendezvous (an event here, a barrier in `spinlab run barrier`), stamped so that Twork,
//! Twakeup and Tcall can be read, and the medians of a repetition's episodes.

use super::add_summary;
use crate::error::LabError;
use crate::measure::clock::{fenced_interval, fenced_now, fenced_overhead, now};
use crate::measure::partner::{with_partner, Announced};
use crate::measure::pin::with_pinned;
use crate::measure::{Clock, Series};
use crate::results::Row;
use spinlab::wait::Wait;
use spinlab::Event;
use spinlab_registry::DynEvent;
use std::hint::black_box;
use std::time::Instant;

/// A dense N×N floating-point matrix multiply, `c = a·b`: the unit of work of seed 001's
/// experiments (512×512 in Table 1, 10×10 in the barrier pseudo-benchmark). Each thread owns
/// its own matrices.
pub struct Matmul {
    n: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Matmul {
    /// An `n`×`n` multiply with fixed, non-trivial inputs.
    pub fn new(n: usize) -> Matmul {
        let a = (0..n * n).map(|i| 1.0 + (i % 7) as f64 * 0.125).collect();
        let b = (0..n * n).map(|i| 0.5 + (i % 5) as f64 * 0.25).collect();
        Matmul { n, a, b, c: vec![0.0; n * n] }
    }

    /// The matrix size.
    pub fn n(&self) -> usize {
        self.n
    }

    /// One multiply (i-k-j order, so the inner loop streams rows); returns a corner of the
    /// product so the work cannot be optimised away.
    #[inline(never)]
    pub fn run(&mut self) -> f64 {
        let n = self.n;
        let (a, b) = (black_box(&self.a), black_box(&self.b));
        self.c.fill(0.0);
        for i in 0..n {
            let row = &mut self.c[i * n..(i + 1) * n];
            for k in 0..n {
                let aik = a[i * n + k];
                for (c, b) in row.iter_mut().zip(&b[k * n..(k + 1) * n]) {
                    *c += aik * b;
                }
            }
        }
        black_box(self.c[n * n - 1])
    }

    /// The size whose multiply takes about `target_s` here: times a 64×64 multiply and scales
    /// by the cube (at least 8).
    pub fn size_for(target_s: f64) -> usize {
        let mut m = Matmul::new(64);
        m.run();
        let best = (0..5)
            .map(|_| {
                let started = Instant::now();
                m.run();
                started.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
            .max(1e-9);
        ((64.0 * (target_s / best).cbrt()).round() as usize).max(8)
    }
}

/// The two sides of a two-thread rendezvous: the waiter (seed 001's lightweight thread) and
/// the notifier (the worker). For an event they are `wait` and `notify_one`; for a barrier
/// both are the barrier's `wait`.
pub trait Rendezvous: Sync {
    /// The waiting side.
    fn wait(&self);
    /// The notifying side.
    fn notify(&self);
}

impl<W: Wait> Rendezvous for Event<W> {
    #[inline]
    fn wait(&self) {
        Event::wait(self)
    }
    #[inline]
    fn notify(&self) {
        self.notify_one()
    }
}

impl Rendezvous for Box<dyn DynEvent> {
    fn wait(&self) {
        (**self).wait()
    }
    fn notify(&self) {
        self.notify_one()
    }
}

/// One episode's cycle counts: the worker's computation, notify-to-running, the notify call.
#[derive(Clone, Copy, Debug)]
pub struct Stamps {
    /// The worker's computation.
    pub work: u64,
    /// From just before the notify call to just after the waiter's wait returned (`None`
    /// without a waiter).
    pub wakeup: Option<u64>,
    /// The notify call (`None` without a waiter).
    pub call: Option<u64>,
}

/// The worker's side of one episode, in counter ticks.
struct Notified {
    /// The computation.
    work: u64,
    /// Just before the notify call.
    notify_called: u64,
    /// The notify call.
    call: u64,
}

/// `rounds` episodes of Fig. 2b: the waiter (pinned to `cpus.1`) says it is about to wait and
/// waits on `rv`; the worker (the calling thread, pinned to `cpus.0` for the duration) sees
/// that, computes `work`, and notifies. With `rv` `None` the worker computes alone.
pub fn episodes<R: Rendezvous + ?Sized>(
    rv: Option<&R>,
    cpus: (usize, usize),
    rounds: usize,
    work: &mut Matmul,
    clock: &Clock,
) -> Result<Vec<Stamps>, LabError> {
    let Some(rv) = rv else {
        return Ok(with_pinned(cpus.0, || {
            (0..rounds)
                .map(|_| {
                    let work_started = now();
                    work.run();
                    Stamps { work: clock.corrected(work_started, now()), wakeup: None, call: None }
                })
                .collect()
        }));
    };
    let armed = Announced::new();
    fenced_overhead();
    // The waiter's stamps: just after each wait returned.
    let waiter = || {
        (0..rounds)
            .map(|_| {
                armed.announce();
                rv.wait();
                fenced_now()
            })
            .collect::<Vec<u64>>()
    };
    let worker = || {
        with_pinned(cpus.0, || {
            (0..rounds)
                .map(|r| {
                    armed.wait_for(r + 1, cpus.0 != cpus.1);
                    let work_started = now();
                    work.run();
                    let notify_called = fenced_now();
                    rv.notify();
                    let notify_returned = fenced_now();
                    Notified {
                        work: clock.corrected(work_started, notify_called),
                        notify_called,
                        call: fenced_interval(notify_called, notify_returned),
                    }
                })
                .collect::<Vec<_>>()
        })
    };
    let sides = with_partner(cpus.1, waiter, worker)?;
    Ok(sides
        .main
        .iter()
        .zip(sides.partner)
        .map(|(worker, waiter_running)| Stamps {
            work: worker.work,
            wakeup: Some(fenced_interval(worker.notify_called, waiter_running)),
            call: Some(worker.call),
        })
        .collect())
}

/// One repetition's figures: the median episode of each.
#[derive(Clone, Copy, Debug)]
pub struct Medians {
    /// Twork.
    pub work_s: f64,
    /// Twakeup (NaN without a waiter).
    pub wakeup_ns: f64,
    /// Tcall (NaN without a waiter).
    pub call_ns: f64,
}

/// Per-repetition values from `rounds` episodes: the median episode of each figure (one
/// preempted episode spoils itself, not the repetition), in seconds and nanoseconds.
pub fn medians(stamps: &[Stamps], clock: &Clock) -> Medians {
    fn median(mut xs: Vec<u64>) -> Option<u64> {
        xs.sort_unstable();
        xs.get(xs.len() / 2).copied()
    }
    let ns = |ticks: Option<u64>| ticks.map_or(f64::NAN, |t| clock.ns(t as f64));
    Medians {
        work_s: ns(median(stamps.iter().map(|s| s.work).collect())) * 1e-9,
        wakeup_ns: ns(median(stamps.iter().filter_map(|s| s.wakeup).collect())),
        call_ns: ns(median(stamps.iter().filter_map(|s| s.call).collect())),
    }
}

/// One primitive's Twakeup and Tcall, one value per measured repetition.
#[derive(Clone, Default)]
pub struct WakeFigures {
    wakeup_ns: Vec<f64>,
    call_ns: Vec<f64>,
}

impl WakeFigures {
    /// Adds one measured repetition's.
    pub fn push(&mut self, medians: &Medians) {
        self.wakeup_ns.push(medians.wakeup_ns);
        self.call_ns.push(medians.call_ns);
    }

    /// `row` with their summaries (`twakeup_ns`, …, `tcall_ns`, …).
    pub fn summarized(&self, row: Row) -> Row {
        add_summary(add_summary(row, "twakeup", "ns", &self.wakeup_ns), "tcall", "ns", &self.call_ns)
    }

    /// `row` as an episode experiment writes it: Twork from `twork_s` (one value per
    /// repetition), Twakeup and Tcall, the repetitions, the episodes in each and how the
    /// repetitions stopped.
    pub fn episode_row(&self, row: Row, twork_s: &Series, rounds: usize) -> Row {
        let mut row = self.summarized(add_summary(row, "twork", "s", &twork_s.samples));
        row.set("reps", twork_s.samples.len());
        row.set("episodes_per_rep", rounds);
        row.set("stop", twork_s.verdict);
        row
    }
}

/// Episodes per repetition: enough for about 30 ms of computation, at least 3, at most 50.
pub fn rounds_for(work_s: f64) -> usize {
    ((0.03 / work_s.max(1e-9)).ceil() as usize).clamp(3, 50)
}

/// [`rounds_for`] one episode of `work`, timed once on `cpu`.
pub fn episode_rounds(cpu: usize, work: &mut Matmul) -> usize {
    let per_episode = with_pinned(cpu, || {
        let started = Instant::now();
        work.run();
        started.elapsed().as_secs_f64()
    });
    rounds_for(per_episode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_multiply_computes_the_product() {
        let mut m = Matmul::new(3);
        m.run();
        // c[0][0] = Σk a[0][k]·b[k][0], with a = 1 + (i%7)/8 and b = 0.5 + (i%5)/4.
        let expected = 1.0 * 0.5 + 1.125 * (0.5 + 3.0 * 0.25) + 1.25 * (0.5 + 6.0 % 5.0 * 0.25);
        assert!((m.c[0] - expected).abs() < 1e-12, "{} vs {expected}", m.c[0]);
        assert!(Matmul::size_for(1e-4) >= 8);
    }

    #[test]
    fn every_episode_is_stamped_and_the_waiter_is_released_each_time() {
        let clock = Clock::calibrate();
        let cpu = crate::measure::pin::allowed_cpus()[0];
        let event = Event::<spinlab::wait::Futex>::new();
        let stamps = episodes(Some(&event), (cpu, cpu), 5, &mut Matmul::new(8), &clock).unwrap();
        assert_eq!(stamps.len(), 5);
        assert!(stamps.iter().all(|s| s.wakeup.is_some() && s.call.is_some()));
        assert!(!event.try_wait(), "every notification was taken by its own wait");
        let alone = episodes::<Event>(None, (cpu, cpu), 2, &mut Matmul::new(8), &clock).unwrap();
        assert!(alone.iter().all(|s| s.wakeup.is_none()));
    }
}
