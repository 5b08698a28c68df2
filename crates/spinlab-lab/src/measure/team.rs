//! Starting the threads of a measurement when the OS may refuse one.
//!
//! Every thread the lab starts goes through [`std::thread::Builder`], whose `spawn` returns
//! the OS's refusal (a process or user thread limit, no memory for a stack) instead of
//! panicking as `thread::spawn` does; the refusal becomes a one-line usage error saying how
//! many threads had started. Threads that must start together wait at a [`StartLine`]
//! rather than a `std::sync::Barrier`: a barrier waits for every party forever, so threads
//! already started would wait for one that never came; the line can be called off.

use crate::error::LabError;
use std::io;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::{Builder, Scope, ScopedJoinHandle};

// The phases of a measured window, in one word that each thread of a measurement reads as it
// goes (contention's acquisitions, floor's `yield-forfeit`).
/// The window has not opened yet.
pub const STARTING: u8 = 0;
/// The window is open: what a thread does now counts.
pub const MEASURING: u8 = 1;
/// The window has closed: threads leave their loops.
pub const STOPPED: u8 = 2;

/// Where the threads of one measurement wait until all of them are running.
pub struct StartLine {
    threads: usize,
    state: Mutex<Line>,
    changed: Condvar,
}

struct Line {
    arrived: usize,
    call: Call,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Call {
    Waiting,
    Go,
    CalledOff,
}

impl StartLine {
    /// A line for `threads` threads.
    pub fn new(threads: usize) -> StartLine {
        StartLine { threads, state: Mutex::new(Line { arrived: 0, call: Call::Waiting }), changed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, Line> {
        // The state is two plain fields, consistent at every unlock: a panic elsewhere while
        // holding the lock cannot leave it half-written.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Called by each thread at its start: waits until [`StartLine::open`] lets every thread go
    /// together (`true`), or the start is [called off](StartLine::call_off) (`false`: the
    /// thread must leave without measuring).
    pub fn arrive(&self) -> bool {
        let mut line = self.lock();
        line.arrived += 1;
        self.changed.notify_all();
        while line.call == Call::Waiting {
            line = self.changed.wait(line).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        line.call == Call::Go
    }

    /// Called by the thread that started the others, once all of them were started: waits
    /// until every one has arrived, then lets them all go.
    pub fn open(&self) {
        let mut line = self.lock();
        while line.arrived < self.threads && line.call == Call::Waiting {
            line = self.changed.wait(line).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        if line.call == Call::Waiting {
            line.call = Call::Go;
        }
        self.changed.notify_all();
    }

    /// Sends every thread that has arrived, or will, away without measuring.
    pub fn call_off(&self) {
        self.lock().call = Call::CalledOff;
        self.changed.notify_all();
    }
}

/// The error for a thread the OS would not start: which one, of how many, and why.
fn refused(index: usize, total: usize, e: &io::Error) -> LabError {
    LabError::usage(format!(
        "the system refused to start thread {} of {total} ({e}); run fewer threads, or raise the \
         process limits (ulimit -u, ulimit -v)",
        index + 1
    ))
}

/// Starts one scoped thread (the second party of a two-thread measurement), or returns the
/// OS's refusal as a usage error.
pub fn spawn<'scope, 'env, T: Send + 'scope>(
    scope: &'scope Scope<'scope, 'env>,
    body: impl FnOnce() -> T + Send + 'scope,
) -> Result<ScopedJoinHandle<'scope, T>, LabError> {
    Builder::new().spawn_scoped(scope, body).map_err(|e| {
        LabError::usage(format!(
            "the system refused to start a second thread ({e}); raise the process limits (ulimit -u, ulimit -v)"
        ))
    })
}

/// Starts thread `index` (from 0) of `total`, or returns the OS's refusal as a usage error
/// naming it. The caller must see that the threads it started before do not wait for this
/// one ([`spawn_team`] does, with a [`StartLine`]).
pub fn spawn_nth<'scope, 'env, T: Send + 'scope>(
    scope: &'scope Scope<'scope, 'env>,
    index: usize,
    total: usize,
    body: impl FnOnce() -> T + Send + 'scope,
) -> Result<ScopedJoinHandle<'scope, T>, LabError> {
    Builder::new().spawn_scoped(scope, body).map_err(|e| refused(index, total, &e))
}

/// Starts `count` scoped threads running `body(i)`, each of which must call `line.arrive()`
/// before it measures and leave at once when that returns `false`. If the OS refuses one,
/// the line is called off and the error returned; the scope then joins the threads that did
/// start, which leave from the line.
pub fn spawn_team<'scope, 'env, T, F>(
    scope: &'scope Scope<'scope, 'env>,
    line: &'scope StartLine,
    count: usize,
    body: &'scope F,
) -> Result<Vec<ScopedJoinHandle<'scope, T>>, LabError>
where
    T: Send + 'scope,
    F: Fn(usize) -> T + Sync,
{
    spawn_team_with(scope, line, count, body, |_| Builder::new())
}

/// [`spawn_team`] with the builder of each thread given (tests make one impossible).
fn spawn_team_with<'scope, 'env, T, F>(
    scope: &'scope Scope<'scope, 'env>,
    line: &'scope StartLine,
    count: usize,
    body: &'scope F,
    builder: impl Fn(usize) -> Builder,
) -> Result<Vec<ScopedJoinHandle<'scope, T>>, LabError>
where
    T: Send + 'scope,
    F: Fn(usize) -> T + Sync,
{
    let mut handles = Vec::with_capacity(count);
    for i in 0..count {
        match builder(i).spawn_scoped(scope, move || body(i)) {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                line.call_off();
                return Err(refused(i, count, &e));
            }
        }
    }
    Ok(handles)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    #[test]
    fn a_team_starts_together_and_measures() {
        let line = StartLine::new(4);
        let measured = AtomicUsize::new(0);
        let body = |i: usize| {
            if !line.arrive() {
                return None;
            }
            measured.fetch_add(1, Relaxed);
            Some(i)
        };
        let got: Vec<Option<usize>> = std::thread::scope(|s| {
            let handles = spawn_team(s, &line, 4, &body).unwrap();
            line.open();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(got, [Some(0), Some(1), Some(2), Some(3)]);
        assert_eq!(measured.load(Relaxed), 4);
    }

    #[test]
    fn a_refused_thread_sends_the_started_ones_home_instead_of_hanging() {
        let line = StartLine::new(4);
        let measured = AtomicUsize::new(0);
        let body = |_: usize| {
            if line.arrive() {
                measured.fetch_add(1, Relaxed);
            }
        };
        // The third thread asks for a 64 TiB stack, which no mmap grants.
        let impossible = |i: usize| if i == 2 { Builder::new().stack_size(1 << 46) } else { Builder::new() };
        let err = std::thread::scope(|s| spawn_team_with(s, &line, 4, &body, impossible).map(|_| ()).unwrap_err());
        let text = err.to_string();
        assert_eq!(err.exit_code(), 2);
        assert!(text.contains("refused to start thread 3 of 4") && !text.contains('\n'), "{text}");
        assert_eq!(measured.load(Relaxed), 0, "threads that started must not measure");
    }
}
