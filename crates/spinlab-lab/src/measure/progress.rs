//! A progress bar on stderr for anything that takes longer than a second. It stays hidden
//! for the first second (short runs print nothing), when stderr is not a terminal, and
//! under `--quiet`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Progress through a known number of steps (configurations).
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    enabled: bool,
    shown: AtomicBool,
    step: Mutex<String>,
}

impl Progress {
    /// A bar for `total` steps of `what`; `enabled` false hides it for good.
    pub fn new(what: &str, total: u64, enabled: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template("{prefix} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(what.to_string());
        Progress {
            bar,
            started: Instant::now(),
            enabled,
            shown: AtomicBool::new(false),
            step: Mutex::new(String::new()),
        }
    }

    fn maybe_show(&self) {
        if self.enabled && !self.shown.load(Relaxed) && self.started.elapsed() > Duration::from_secs(1) {
            self.shown.store(true, Relaxed);
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.bar.enable_steady_tick(Duration::from_millis(250));
        }
    }

    /// Names the step now running (`ticket:spin, 16 threads`).
    pub fn step(&self, name: &str) {
        if let Ok(mut s) = self.step.lock() {
            *s = name.to_string();
        }
        self.bar.set_message(name.to_string());
        self.maybe_show();
    }

    /// Adds detail to the current step (`repetition 3`).
    pub fn detail(&self, detail: &str) {
        let step = self.step.lock().map(|s| s.clone()).unwrap_or_default();
        self.bar.set_message(if step.is_empty() { detail.to_string() } else { format!("{step}: {detail}") });
        self.maybe_show();
    }

    /// One step done.
    pub fn inc(&self) {
        self.bar.inc(1);
        self.maybe_show();
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
