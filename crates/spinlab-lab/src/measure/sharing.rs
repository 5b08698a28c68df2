//! Whether two CPUs share one physical core right now.
//!
//! A virtual machine's CPUs are threads of the host, which may run two of them on the two
//! hardware threads of one core and, minutes later, on two cores. The guest sees no SMT either
//! way, yet a register-bound workload beside a spinning waiter runs at nearly full speed at
//! one moment and at nearly half speed minutes later, while a memory-bound one does not move
//! (docs/interference.md, the shared-core probe under "Measurement decisions"). So the
//! interference experiment probes for it before and after each `core` row and tags it
//! (`core_shared`), and the scorecard reads only those measured on two cores.
//!
//! The probe: a register-only `add` loop (the `add` workload, which keeps an x86 core's
//! integer ports busy) on one CPU, alone and beside the same loop on the other CPU, in
//! alternating pairs, each timed by its own thread's CPU clock so that other processes'
//! turns on the CPU do not count. Two cores run both loops at full speed; two hardware threads
//! of one core split the ports, and each loop slows by about half.

use super::clock::thread_cpu_s;
use super::partner::{with_partner, Announced};
use super::pin::with_pinned;
use super::stats::Summary;
use crate::error::LabError;
use crate::workloads::{single, units_for};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::time::{Duration, Instant};

/// A slowdown above which the two CPUs are taken to share a core: far above what a busy
/// neighbour on another core costs a register-only loop (a few percent of turbo frequency), far
/// below what sharing the ports costs it (about 100%).
pub const SHARED_CORE_PCT: f64 = 25.0;

/// Pairs of calls the probe times.
const PAIRS: usize = 5;

/// How long one probe call runs.
const CALL: Duration = Duration::from_millis(5);

/// The probe, with its call calibrated once.
pub struct BusyNeighbour {
    /// Units of the `add` loop per call: about [`CALL`] on the CPU it was calibrated on.
    units: u64,
}

impl BusyNeighbour {
    /// A probe whose call is calibrated on `cpu`.
    pub fn calibrated_on(cpu: usize) -> BusyNeighbour {
        let units = with_pinned(cpu, || {
            units_for(CALL, |units| {
                let started = Instant::now();
                black_box(single::add(units, 1));
                started.elapsed()
            })
        });
        BusyNeighbour { units }
    }

    /// The `add` loop's slowdown on `cpu`, in percent, while the same loop runs on `other`:
    /// the median of `PAIRS` alternating pairs, by CPU time.
    pub fn slowdown_pct(&self, cpu: usize, other: usize) -> Result<f64, LabError> {
        with_pinned(cpu, || {
            let call = || {
                let cpu_before = thread_cpu_s();
                black_box(single::add(self.units, 1));
                thread_cpu_s() - cpu_before
            };
            let mut ratios = Vec::with_capacity(PAIRS);
            for pair in 0..PAIRS {
                let mut alone = 0.0;
                if pair % 2 == 0 {
                    alone = call();
                }
                let busy = beside_busy_loop(other, call)?;
                if pair % 2 == 1 {
                    alone = call();
                }
                if alone > 0.0 {
                    ratios.push(busy / alone);
                }
            }
            Ok(100.0 * (Summary::of(&ratios).map_or(1.0, |s| s.median) - 1.0))
        })
    }
}

/// Runs `call` on this thread while a busy `add` loop runs on `other`, once the loop is going.
fn beside_busy_loop(other: usize, call: impl FnOnce() -> f64) -> Result<f64, LabError> {
    let going = Announced::new();
    let stop = AtomicBool::new(false);
    let busy = || {
        going.announce();
        while !stop.load(Relaxed) {
            black_box(single::add(64, 1));
        }
    };
    let sides = with_partner(other, busy, || {
        going.wait_for(1, false);
        let seconds = call();
        stop.store(true, Relaxed);
        seconds
    })?;
    Ok(sides.main)
}
