//! Values measured once, on first use, and kept without a lock: the spin calibration, the
//! counter's rate, the CPU's features, the machine's topology.
//!
//! Every thread that finds the value missing measures it itself, and the first to store it
//! wins. A blocking once-cell (`std::sync::OnceLock`) would hold back every thread that asks
//! while another measures, and in a process forked at that moment it holds them back for ever:
//! the measuring thread is the parent's, and the child has no such thread. Waiters ask for
//! these values inside their waits, so the child of a program that forks while one of its
//! threads waits for the first time would hang at its own first wait.

use core::marker::PhantomData;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering::*};

/// A number measured on first use; 0 stands for "not measured yet", so a measurement of 0 is
/// kept as 1. Reading it is one load, and nothing is allocated.
pub struct MeasuredNumber(AtomicU64);

impl MeasuredNumber {
    /// Not measured yet.
    pub const fn new() -> Self {
        MeasuredNumber(AtomicU64::new(0))
    }

    /// The number, measured by `measure` if no thread has stored it yet.
    #[inline]
    pub fn get(&self, measure: impl FnOnce() -> u64) -> u64 {
        // Relaxed: the number is the whole value; nothing else is published with it.
        match self.0.load(Relaxed) {
            0 => self.measure(measure),
            number => number,
        }
    }

    #[cold]
    fn measure(&self, measure: impl FnOnce() -> u64) -> u64 {
        let number = measure().max(1);
        match self.0.compare_exchange(0, number, Relaxed, Relaxed) {
            Ok(_) => number,
            Err(first) => first,
        }
    }
}

impl Default for MeasuredNumber {
    fn default() -> Self {
        Self::new()
    }
}

/// A value measured on first use and kept, boxed, for the life of the process (for statics:
/// [`Measured::get`] takes `&'static self`). A thread that loses the race drops its own
/// measurement and returns the winner's.
pub struct Measured<T: 'static> {
    value: AtomicPtr<T>,
    owns: PhantomData<Box<T>>,
}

impl<T: 'static> Measured<T> {
    /// Not measured yet.
    pub const fn new() -> Self {
        Measured { value: AtomicPtr::new(core::ptr::null_mut()), owns: PhantomData }
    }

    /// The value, measured by `measure` if no thread has stored it yet.
    #[inline]
    pub fn get(&'static self, measure: impl FnOnce() -> T) -> &'static T {
        // Acquire: the winner's writes to the value happen before this thread reads it.
        let value = self.value.load(Acquire);
        if value.is_null() {
            return self.measure(measure);
        }
        // SAFETY: a stored pointer came from `Box::into_raw` and is never freed.
        unsafe { &*value }
    }

    #[cold]
    fn measure(&'static self, measure: impl FnOnce() -> T) -> &'static T {
        let fresh = Box::into_raw(Box::new(measure()));
        // Release: our writes to the value happen before a reader's Acquire load of it.
        match self.value.compare_exchange(core::ptr::null_mut(), fresh, Release, Acquire) {
            // SAFETY: stored, so never freed.
            Ok(_) => unsafe { &*fresh },
            Err(first) => {
                // SAFETY: `fresh` was never shared; `first` was stored, so never freed.
                unsafe {
                    drop(Box::from_raw(fresh));
                    &*first
                }
            }
        }
    }
}

impl<T: 'static> Default for Measured<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;
    use std::sync::{mpsc, Barrier};
    use std::time::{Duration, Instant};

    #[test]
    fn the_first_stored_measurement_stands() {
        static NUMBER: MeasuredNumber = MeasuredNumber::new();
        assert_eq!(NUMBER.get(|| 7), 7);
        assert_eq!(NUMBER.get(|| panic!("measured once stored")), 7);
        let zero = MeasuredNumber::new();
        assert_eq!(zero.get(|| 0), 1, "0 means not measured: kept as 1");
        assert_eq!(zero.get(|| 5), 1);
        static VALUE: Measured<Vec<u32>> = Measured::new();
        assert_eq!(VALUE.get(|| vec![1, 2]), &[1, 2]);
        assert_eq!(VALUE.get(|| panic!("measured once stored")), &[1, 2]);
    }

    /// Threads that find the value missing at once each measure, and all of them return the
    /// one value that was stored.
    #[test]
    fn racing_threads_all_return_the_winner() {
        static NUMBER: MeasuredNumber = MeasuredNumber::new();
        static VALUE: Measured<u32> = Measured::new();
        let measured = AtomicU32::new(0);
        let start = Barrier::new(4);
        let seen: Vec<(u64, u32)> = std::thread::scope(|s| {
            let runs: Vec<_> = (0..4u32)
                .map(|i| {
                    let (measured, start) = (&measured, &start);
                    s.spawn(move || {
                        start.wait();
                        let number = NUMBER.get(|| {
                            measured.fetch_add(1, Relaxed);
                            10 + i as u64
                        });
                        (number, *VALUE.get(|| 20 + i))
                    })
                })
                .collect();
            runs.into_iter().map(|run| run.join().unwrap()).collect()
        });
        assert!(measured.into_inner() >= 1);
        let (number, value) = seen[0];
        assert!((10..14).contains(&number) && (20..24).contains(&value));
        assert!(seen.iter().all(|&s| s == (number, value)), "{seen:?}");
    }

    /// Forks while another thread is measuring: the child, which has no such thread, measures
    /// for itself and goes on. (A blocking once-cell leaves the child waiting for ever; the
    /// parent kills it after 10 s and the test fails.)
    #[test]
    fn a_child_forked_mid_measurement_measures_for_itself() {
        static NUMBER: MeasuredNumber = MeasuredNumber::new();
        static VALUE: Measured<u64> = Measured::new();
        let (inside, until_forked) = (mpsc::channel::<()>(), mpsc::channel::<()>());
        let (entered, go_on) = (inside.0, until_forked.1);
        std::thread::scope(|s| {
            s.spawn(move || {
                NUMBER.get(|| {
                    VALUE.get(|| {
                        entered.send(()).unwrap();
                        go_on.recv().unwrap();
                        3
                    });
                    3
                })
            });
            inside.1.recv().unwrap();
            // SAFETY: the child calls only what is safe after a fork in a threaded process
            // here: the cells' own code (atomics, malloc, which glibc keeps fork-safe) and
            // `_exit`.
            let child = unsafe { libc::fork() };
            if child == 0 {
                let ok = NUMBER.get(|| 4) == 4 && *VALUE.get(|| 4) == 4;
                // SAFETY: ends the child without running the parent's exit handlers.
                unsafe { libc::_exit(if ok { 0 } else { 1 }) };
            }
            assert!(child > 0, "fork failed");
            let mut status = 0;
            let until = Instant::now() + Duration::from_secs(10);
            // SAFETY: waits for our own child without blocking.
            while unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) } == 0 {
                if Instant::now() > until {
                    // SAFETY: kills and reaps our own child.
                    unsafe {
                        libc::kill(child, libc::SIGKILL);
                        libc::waitpid(child, &mut status, 0);
                    }
                    panic!("the child waited for a measurement its parent's thread was making");
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child status {status}");
            until_forked.0.send(()).unwrap();
        });
        assert_eq!(NUMBER.get(|| 5), 3, "the parent keeps its own measurement");
        assert_eq!(*VALUE.get(|| 5), 3);
    }
}
