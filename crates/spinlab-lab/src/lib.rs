//! The spinlab lab: the `spinlab` command's library half.
//!
//! - [`machine`]: topology from sysfs, wait features, clocks and counters (`spinlab info`).
//! - [`measure`]: the measurement core every experiment shares: pinning, warm-up and
//!   interleaved repetition, the FAME stopping rule, statistics, timer-overhead correction,
//!   calibrated busy work, progress.
//! - [`results`]: the `spinlab.results/1` document, its JSON/CSV writers and tables.
//! - [`experiments`]: the [`Experiment`](experiments::Experiment) trait and one file per
//!   experiment.
//! - [`select`]: parsing lock, policy, thread and placement lists.
//! - [`list`]: `spinlab list`, every registry name by kind, with availability.
//! - [`lockbox`]: a registry lock on cache lines of its own.
//! - [`workloads`]: seed 000's active workloads, sized from the caches.
//! - [`report`]: `spinlab report`, every experiment into an HTML report with a recommendation.
//! - [`compare`]: `spinlab compare`, two results documents side by side.
//! - [`app`]: `spinlab app`, a real program under each lock through the preload library.
//! - [`profile`]: `spinlab profile`, where a program waits: its lock sites, from the preload
//!   library's statistics, as a page, a pprof file and a table.
//! - [`apps`]: `spinlab apps`, a suite of real programs, each by its own metric, against glibc.
//! - [`cli`]: the command line.
#![warn(missing_docs)]

pub mod app;
pub mod apps;
pub mod cli;
pub mod compare;
pub mod error;
pub mod experiments;
pub mod list;
pub mod lockbox;
pub mod machine;
pub mod measure;
pub mod profile;
pub mod reading;
pub mod report;
pub mod results;
pub mod select;
pub mod workloads;

pub use error::LabError;
