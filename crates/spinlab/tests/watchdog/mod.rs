//! A watchdog for the tests whose failure is a hang (a lost wake-up, a starved thread, a timed
//! wait that ignores its deadline): a hang should fail the run with a message that names what
//! hung, not stall CI until its own timeout.

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

/// Aborts the test process if it is still alive `limit` after the watchdog was set, first
/// naming the test that set it and `what` it was doing. Dropping the watchdog calls it off.
///
/// Aborting is the only way out of a test whose threads are stuck in a lock. The message goes
/// straight to stderr: `eprintln!` would go to the test harness's capture, which the abort
/// discards unprinted.
pub struct Watchdog {
    /// Dropped with the watchdog, which ends its thread's wait with `Disconnected`.
    _call_off: mpsc::Sender<()>,
}

impl Watchdog {
    pub fn new(limit: Duration, what: String) -> Self {
        // The test harness runs each test on a thread named after it.
        let test = std::thread::current().name().unwrap_or("a test").to_owned();
        let (call_off, called_off) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = called_off.recv_timeout(limit) {
                let _ = writeln!(std::io::stderr(), "watchdog: {test}: no progress in {limit:?}: {what}");
                std::process::abort();
            }
        });
        Watchdog { _call_off: call_off }
    }
}
