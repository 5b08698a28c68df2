//! `spinlab list`: every name the registry knows, by kind, with availability on this CPU and
//! the reason where a name is unavailable, and where each kind's names are accepted.
//!
//! The rows come from the registry's own tables (`spinlab::registry`), so a name is listed if
//! and only if the registry builds it; tests/cli.rs checks both directions.

use crate::results::table::{self, col, Column};
use crate::results::Row;
use crate::select::DEFAULT_LOCK;
use serde_json::{json, Value};
use spinlab::registry::{self, Entry, Origin, RwFairness};
use spinlab::wait::Unavailable;

/// The registry, one list of rows per kind of name.
pub struct Listing {
    /// Locks (`ALGORITHM:POLICY` and the references): key `lock`.
    pub locks: Vec<Row>,
    /// Wait policies: key `wait`.
    pub waits: Vec<Row>,
    /// Barriers (`barrier:POLICY`, `std`, `pthread`): key `barrier`.
    pub barriers: Vec<Row>,
    /// Wait/notify events (`event:POLICY`, `std`, `pthread`): key `event`.
    pub events: Vec<Row>,
    /// Reader-writer locks (`rw-writer:POLICY`, `rw-phase:POLICY` and the references): key
    /// `rwlock`.
    pub rwlocks: Vec<Row>,
}

/// One kind's table: what the names are, where they are accepted, and the columns shown.
struct Kind {
    title: &'static str,
    accepted_by: &'static str,
    columns: &'static [Column],
}

const LOCKS: Kind = Kind {
    title: "locks",
    accepted_by: "--locks of `spinlab run` and `spinlab app`, SPINLAB_LOCK of the preload library, \
                  spinlab_mutex_init in C",
    columns: &[
        col("lock", "lock"),
        col("origin", "origin"),
        col("default", "default"),
        col("fair", "fair"),
        col("may_sleep", "may sleep"),
        col("timed", "timed lock"),
        col("oversubscribed", "threads > CPUs"),
        col("available", "available"),
        col("unavailable", "why not"),
    ],
};

const WAITS: Kind = Kind {
    title: "wait policies",
    accepted_by: "--waits of `spinlab run`, and the POLICY of every ALGORITHM:POLICY, barrier:POLICY, \
                  event:POLICY and rw-*:POLICY name",
    columns: &[
        col("wait", "wait"),
        col("may_sleep", "may sleep"),
        col("leaves_cpu", "leaves its CPU"),
        col("available", "available"),
        col("unavailable", "why not"),
    ],
};

const BARRIERS: Kind = Kind {
    title: "barriers",
    accepted_by: "--barriers of `spinlab run barrier` and `spinlab run spr`, spinlab_barrier_init in C",
    columns: &[
        col("barrier", "barrier"),
        col("origin", "origin"),
        col("may_sleep", "may sleep"),
        col("available", "available"),
        col("unavailable", "why not"),
    ],
};

const EVENTS: Kind = Kind {
    title: "wait/notify events",
    accepted_by: "spinlab::registry::new_event in Rust; `spinlab run wakeup` measures event:POLICY for \
                  each of its --waits",
    columns: &[
        col("event", "event"),
        col("origin", "origin"),
        col("may_sleep", "may sleep"),
        col("available", "available"),
        col("unavailable", "why not"),
    ],
};

const RWLOCKS: Kind = Kind {
    title: "reader-writer locks",
    accepted_by: "spinlab_rwlock_init in C, spinlab::registry::new_rwlock in Rust",
    columns: &[
        col("rwlock", "rwlock"),
        col("origin", "origin"),
        col("fairness", "fairness"),
        col("may_sleep", "may sleep"),
        col("available", "available"),
        col("unavailable", "why not"),
    ],
};

fn origin(o: Origin) -> &'static str {
    match o {
        Origin::Reference => "reference",
        Origin::Spinlab => "spinlab",
    }
}

/// `available`, and `unavailable` with the reason where it is not.
fn with_availability(mut row: Row, availability: Result<(), Unavailable>) -> Row {
    row.set("available", availability.is_ok());
    if let Err(why) = availability {
        row.set("unavailable", why.to_string());
    }
    row
}

/// What a lock does when threads outnumber CPUs: a lock that hands over in order waits, at
/// every hand-over, for the next thread in line to be scheduled (see `spinlab::lock`).
fn oversubscribed_behaviour(e: &registry::LockEntry) -> &'static str {
    if e.fair {
        "collapses: hands over in order, to threads that may not be running"
    } else {
        "holds up: a running thread takes a free lock"
    }
}

/// The row of a barrier or an event: the facts every registry entry carries.
fn waiting_row(kind: &str, e: &impl Entry) -> Row {
    let row = Row::new()
        .with(kind, e.name())
        .with("wait", e.policy())
        .with("origin", origin(e.origin()))
        .with("may_sleep", e.may_sleep());
    with_availability(row, e.availability())
}

fn fairness(f: RwFairness) -> &'static str {
    match f {
        RwFairness::WriterPreferring => "writer-preferring",
        RwFairness::PhaseFair => "phase-fair",
        RwFairness::ReaderPreferring => "reader-preferring",
        RwFairness::Unspecified => "unspecified",
    }
}

impl Listing {
    /// Every registry entry of every kind, in the registry's order.
    pub fn gather() -> Listing {
        let locks = registry::locks()
            .iter()
            .map(|e| {
                let row = Row::new()
                    .with("lock", &e.name)
                    .with("algorithm", e.algorithm)
                    .with("wait", e.policy)
                    .with("origin", origin(e.origin))
                    .with("fair", e.fair)
                    .with("bound", e.bound)
                    .with("may_sleep", e.may_sleep)
                    .with("timed", if e.timed_native { "native" } else { "polls try_lock" })
                    .with("default", e.name == DEFAULT_LOCK)
                    .with("oversubscribed", oversubscribed_behaviour(e));
                with_availability(row, e.availability)
            })
            .collect();
        let waits = spinlab::wait::policies()
            .iter()
            .map(|p| {
                let row =
                    Row::new().with("wait", p.name).with("may_sleep", p.may_sleep).with("leaves_cpu", p.leaves_cpu);
                with_availability(row, p.availability)
            })
            .collect();
        let barriers = registry::barriers().iter().map(|e| waiting_row("barrier", e)).collect();
        let events = registry::events().iter().map(|e| waiting_row("event", e)).collect();
        let rwlocks = registry::rwlocks()
            .iter()
            .map(|e| {
                let row = Row::new()
                    .with("rwlock", &e.name)
                    .with("algorithm", e.algorithm)
                    .with("wait", e.policy)
                    .with("origin", origin(e.origin))
                    .with("fairness", fairness(e.fairness))
                    .with("may_sleep", e.may_sleep);
                with_availability(row, e.availability)
            })
            .collect();
        Listing { locks, waits, barriers, events, rwlocks }
    }

    /// `spinlab list --json`: the keys `locks` and `waits` as before, `barriers`, `events` and
    /// `rwlocks`, the experiments, and the aliases.
    pub fn to_json(&self) -> Value {
        json!({
            "locks": self.locks,
            "waits": self.waits,
            "barriers": self.barriers,
            "events": self.events,
            "rwlocks": self.rwlocks,
            "experiments": crate::experiments::all().iter().map(|e| e.name()).collect::<Vec<_>>(),
            "aliases": {"default": DEFAULT_LOCK},
        })
    }

    /// `spinlab list`: one table per kind, each under a heading saying where its names go.
    pub fn render(&self) -> String {
        let alias = format!("`default` is an alias of {DEFAULT_LOCK}\n");
        let tables = [
            (&LOCKS, &self.locks, alias.as_str()),
            (&WAITS, &self.waits, ""),
            (&BARRIERS, &self.barriers, ""),
            (&EVENTS, &self.events, ""),
            (&RWLOCKS, &self.rwlocks, ""),
        ];
        let mut text = String::new();
        for (kind, rows, note) in tables {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&format!("{} ({} names; taken by {}):\n", kind.title, rows.len(), kind.accepted_by));
            text.push_str(note);
            text.push_str(&table::render(rows, kind.columns));
        }
        text.push('\n');
        text
    }
}
