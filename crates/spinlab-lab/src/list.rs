//! `spinlab list`: every name the registry knows, by kind, with availability on this CPU and
//! the reason where a name is unavailable, and where each kind's names are accepted.
//!
//! The rows come from the registry's own tables (`spinlab_registry`), so a name is listed if
//! and only if the registry builds it; tests/cli.rs checks both directions.
//!
//! Each name has two rows. The full row carries every field and is what `--json` prints and
//! `--wide` tabulates. The brief row carries what a user needs to pick a name (its fairness in
//! a word or two, its bytes in place, whether it sleeps, how it takes oversubscription, and whether it runs here
//! with the missing feature) and is the default table, which is held to [`BRIEF_WIDTH`]
//! columns.

use crate::results::table::{self, col, Column};
use crate::results::Row;
use crate::select::DEFAULT_LOCK;
use serde_json::{json, Value};
use spinlab::wait::Unavailable;
use spinlab_registry::{self as registry, Entry, Origin, RwFairness};

/// The widest line of the default `spinlab list`, in columns.
pub const BRIEF_WIDTH: usize = 100;

/// The default table's last line.
const WIDE_HINT: &str = "`spinlab list --wide` shows every field: each lock's bound in full, how it times a \
                         lock, and why a name is unavailable here; `--json` gives the same as JSON.";

/// How much of each name `spinlab list` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// The columns needed to pick a name, within [`BRIEF_WIDTH`] columns.
    Brief,
    /// Every field, as `--json` has them.
    Wide,
}

/// One name: every field, and the few the default table shows.
struct Listed {
    full: Row,
    brief: Row,
}

/// The registry, one list of names per kind.
pub struct Listing {
    /// Locks (`ALGORITHM:POLICY` and the references): key `lock`.
    locks: Vec<Listed>,
    /// Wait policies: key `wait`.
    waits: Vec<Listed>,
    /// Barriers (`barrier:POLICY`, `std`, `pthread`): key `barrier`.
    barriers: Vec<Listed>,
    /// Wait/notify events (`event:POLICY`, `std`, `pthread`): key `event`.
    events: Vec<Listed>,
    /// Reader-writer locks (`rw-writer:POLICY`, `rw-phase:POLICY` and the references): key
    /// `rwlock`.
    rwlocks: Vec<Listed>,
}

/// One kind's table: what the names are, where they are accepted, and the columns shown.
struct Kind {
    title: &'static str,
    accepted_by: &'static str,
    brief: &'static [Column],
    wide: &'static [Column],
}

const LOCKS: Kind = Kind {
    title: "locks",
    accepted_by: "--locks of `spinlab run` and `spinlab app`, SPINLAB_LOCK of the preload library, \
                  spinlab_mutex_init in C",
    brief: &[
        col("lock", "lock"),
        col("fairness", "fairness"),
        col("bytes", "bytes"),
        col("may_sleep", "sleeps"),
        col("oversubscribed", "threads > CPUs"),
        col("available", "available"),
    ],
    wide: &[
        col("lock", "lock"),
        col("algorithm", "algorithm"),
        col("wait", "wait"),
        col("origin", "origin"),
        col("default", "default"),
        col("fair", "fair"),
        col("bound", "bound"),
        col("bytes", "bytes"),
        col("uncontended", "uncontended"),
        col("per_waiter", "per waiter"),
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
    brief: &[
        col("wait", "wait"),
        col("may_sleep", "may sleep"),
        col("leaves_cpu", "leaves its CPU"),
        col("available", "available"),
    ],
    wide: &[
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
    brief: &[
        col("name", "barrier"),
        col("origin", "origin"),
        col("may_sleep", "may sleep"),
        col("available", "available"),
    ],
    wide: &[
        col("barrier", "barrier"),
        col("wait", "wait"),
        col("origin", "origin"),
        col("may_sleep", "may sleep"),
        col("available", "available"),
        col("unavailable", "why not"),
    ],
};

const EVENTS: Kind = Kind {
    title: "wait/notify events",
    accepted_by: "spinlab_registry::EVENTS in Rust; `spinlab run wakeup` measures event:POLICY for \
                  each of its --waits",
    brief: &[
        col("name", "event"),
        col("origin", "origin"),
        col("may_sleep", "may sleep"),
        col("available", "available"),
    ],
    wide: &[
        col("event", "event"),
        col("wait", "wait"),
        col("origin", "origin"),
        col("may_sleep", "may sleep"),
        col("available", "available"),
        col("unavailable", "why not"),
    ],
};

const RWLOCKS: Kind = Kind {
    title: "reader-writer locks",
    accepted_by: "spinlab_rwlock_init in C, spinlab_registry::RWLOCKS in Rust",
    brief: &[
        col("rwlock", "rwlock"),
        col("origin", "origin"),
        col("fairness", "fairness"),
        col("may_sleep", "may sleep"),
        col("available", "available"),
    ],
    wide: &[
        col("rwlock", "rwlock"),
        col("algorithm", "algorithm"),
        col("wait", "wait"),
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

/// The default table's `available`: `yes`, or what this CPU lacks, without the
/// parenthesised detail (the CPUID bit) that `--wide` gives.
fn available_in_brief(availability: Result<(), Unavailable>) -> String {
    match availability {
        Ok(()) => "yes".to_string(),
        // The feature's own name, the last word before any parenthesis (`MWAITX` of "AMD
        // MONITORX/MWAITX"): `--wide` gives the rest.
        Err(why) => {
            let feature = why.needs.split(" (").next().unwrap_or(why.needs);
            format!("needs {}", feature.rsplit([' ', '/']).next().unwrap_or(feature))
        }
    }
}

/// What a lock does when threads outnumber CPUs: a lock that hands over in order waits, at
/// every hand-over, for the next thread in line to be scheduled (see `spinlab::lock`).
/// Returns the word the default table shows and the sentence `--wide` and `--json` give.
fn oversubscribed_behaviour(e: &registry::LockEntry) -> (&'static str, &'static str) {
    if e.facts.fair {
        ("collapses", "collapses: hands over in order, to threads that may not be running")
    } else if e.facts.restricts {
        ("restricts", "restricts: about one thread per CPU waits in the queue, the others sleep, so hand-overs go to running threads")
    } else if e.facts.hands_over {
        ("convoys", "convoys: hands over to a chosen waiter, which may not be running")
    } else {
        ("holds up", "holds up: a running thread takes a free lock")
    }
}

/// A lock's fairness guarantee in a word or two, recognised by the opening words of the
/// registry's `bound`, which `--wide` and `--json` give in full. Order matters: a gated
/// queue's bound also bounds the head's bypass. A bound none of these opens is shown cut
/// short; a unit test keeps every registered bound recognised.
const FAIRNESS_IN_BRIEF: &[(&str, &str)] = &[
    ("none", "none"),
    ("FIFO", "FIFO"),
    ("waiters in queue order", "queue order"),
    ("waiters in the gate's order", "queue order"),
    ("round-robin", "round-robin"),
    ("eventual fairness", "eventual"),
    ("a running waiter passed over for at most", "bypass bound"),
    ("on up to", "bypass bound"),
    ("overtaken at most once", "bypass bound"),
    ("waiters of the holder's NUMA node first", "node first"),
    ("NUMA nodes take turns", "node turns"),
    ("MCS queue order among about one thread per CPU", "restricted"),
];

/// The longest a bound none of [`FAIRNESS_IN_BRIEF`] recognises is shown, in characters.
const UNRECOGNISED_BOUND_CHARS: usize = 16;

fn fairness_in_brief(bound: &str) -> String {
    match FAIRNESS_IN_BRIEF.iter().find(|(opening, _)| bound.starts_with(opening)) {
        Some((_, brief)) => brief.to_string(),
        None if bound.chars().count() <= UNRECOGNISED_BOUND_CHARS => bound.to_string(),
        None => format!("{}…", bound.chars().take(UNRECOGNISED_BOUND_CHARS - 1).collect::<String>()),
    }
}

/// The rows of a barrier or an event: the facts every registry entry carries. The brief row
/// names it under `name`, whatever its kind.
fn waiting_listed<K: registry::Kind>(kind: &str, e: &Entry<K>) -> Listed {
    let full = Row::new()
        .with(kind, e.name.as_str())
        .with("wait", e.policy)
        .with("origin", origin(e.origin))
        .with("may_sleep", e.may_sleep);
    let brief = Row::new()
        .with("name", e.name.as_str())
        .with("origin", origin(e.origin))
        .with("may_sleep", e.may_sleep)
        .with("available", available_in_brief(e.availability));
    Listed { full: with_availability(full, e.availability), brief }
}

fn fairness(f: RwFairness) -> &'static str {
    match f {
        RwFairness::WriterPreferring => "writer-preferring",
        RwFairness::PhaseFair => "phase-fair",
        RwFairness::ReaderPreferring => "reader-preferring",
        RwFairness::Unspecified => "unspecified",
    }
}

/// Breaks `text` at spaces into lines of at most `width` characters (a longer word keeps a
/// line of its own), the lines after the first indented by two spaces.
fn wrapped(text: &str, width: usize) -> String {
    let mut lines: Vec<String> = vec![String::new()];
    for word in text.split(' ') {
        let line = lines.last_mut().expect("starts with one line");
        let taken = line.chars().count();
        if taken == 0 || taken + 1 + word.chars().count() <= width {
            if taken > 0 {
                line.push(' ');
            }
            line.push_str(word);
        } else {
            lines.push(format!("  {word}"));
        }
    }
    lines.join("\n")
}

impl Listing {
    /// Every registry entry of every kind, in the registry's order.
    pub fn gather() -> Listing {
        let locks = registry::LOCKS
            .entries()
            .iter()
            .map(|e| {
                let (oversubscribed_brief, oversubscribed) = oversubscribed_behaviour(e);
                let full = Row::new()
                    .with("lock", &e.name)
                    .with("algorithm", e.facts.algorithm)
                    .with("wait", e.policy)
                    .with("origin", origin(e.origin))
                    .with("fair", e.facts.fair)
                    .with("bound", e.facts.bound)
                    .with("bytes", e.facts.ops.size)
                    .with("uncontended", e.facts.uncontended)
                    .with("per_waiter", e.facts.per_waiter)
                    .with("may_sleep", e.may_sleep)
                    .with("timed", if e.facts.timed_native { "native" } else { "polls try_lock" })
                    .with("default", e.name == DEFAULT_LOCK)
                    .with("oversubscribed", oversubscribed);
                let brief = Row::new()
                    .with("lock", &e.name)
                    .with("fairness", fairness_in_brief(e.facts.bound))
                    .with("bytes", e.facts.ops.size)
                    .with("may_sleep", e.may_sleep)
                    .with("oversubscribed", oversubscribed_brief)
                    .with("available", available_in_brief(e.availability));
                Listed { full: with_availability(full, e.availability), brief }
            })
            .collect();
        let waits = spinlab::wait::policies()
            .iter()
            .map(|p| {
                let full =
                    Row::new().with("wait", p.name).with("may_sleep", p.may_sleep).with("leaves_cpu", p.leaves_cpu);
                let brief = full.clone().with("available", available_in_brief(p.availability));
                Listed { full: with_availability(full, p.availability), brief }
            })
            .collect();
        let barriers = registry::BARRIERS.entries().iter().map(|e| waiting_listed("barrier", e)).collect();
        let events = registry::EVENTS.entries().iter().map(|e| waiting_listed("event", e)).collect();
        let rwlocks = registry::RWLOCKS
            .entries()
            .iter()
            .map(|e| {
                let full = Row::new()
                    .with("rwlock", &e.name)
                    .with("algorithm", e.facts.algorithm)
                    .with("wait", e.policy)
                    .with("origin", origin(e.origin))
                    .with("fairness", fairness(e.facts.fairness))
                    .with("may_sleep", e.may_sleep);
                let brief = Row::new()
                    .with("rwlock", &e.name)
                    .with("origin", origin(e.origin))
                    .with("fairness", fairness(e.facts.fairness))
                    .with("may_sleep", e.may_sleep)
                    .with("available", available_in_brief(e.availability));
                Listed { full: with_availability(full, e.availability), brief }
            })
            .collect();
        Listing { locks, waits, barriers, events, rwlocks }
    }

    /// `spinlab list --json`: every field of every name under `locks`, `waits`, `barriers`,
    /// `events` and `rwlocks`, the experiments, and the aliases.
    pub fn to_json(&self) -> Value {
        fn full(names: &[Listed]) -> Vec<&Row> {
            names.iter().map(|n| &n.full).collect()
        }
        json!({
            "locks": full(&self.locks),
            "waits": full(&self.waits),
            "barriers": full(&self.barriers),
            "events": full(&self.events),
            "rwlocks": full(&self.rwlocks),
            "experiments": crate::experiments::all().iter().map(|e| e.name()).collect::<Vec<_>>(),
            "aliases": {"default": DEFAULT_LOCK},
        })
    }

    /// `spinlab list` (brief) or `spinlab list --wide`: one table per kind, each under a
    /// heading saying where its names go.
    pub fn render(&self, detail: Detail) -> String {
        let references: Vec<&str> = self
            .locks
            .iter()
            .filter(|n| n.full.text("origin") == Some(origin(Origin::Reference)))
            .filter_map(|n| n.full.text("lock"))
            .collect();
        let lock_note =
            format!("`default` is an alias of {DEFAULT_LOCK}; the reference locks are {}", references.join(", "));
        let tables = [
            (&LOCKS, &self.locks, Some(lock_note.as_str())),
            (&WAITS, &self.waits, None),
            (&BARRIERS, &self.barriers, None),
            (&EVENTS, &self.events, None),
            (&RWLOCKS, &self.rwlocks, None),
        ];
        let mut text = String::new();
        for (kind, names, note) in tables {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            let heading = format!("{} ({} names; taken by {}):", kind.title, names.len(), kind.accepted_by);
            for line in std::iter::once(heading.as_str()).chain(note) {
                text.push_str(&wrapped(line, BRIEF_WIDTH));
                text.push('\n');
            }
            let table = match detail {
                Detail::Brief => {
                    let rows: Vec<Row> = names.iter().map(|n| n.brief.clone()).collect();
                    table::render_within(&rows, kind.brief, BRIEF_WIDTH)
                }
                Detail::Wide => {
                    let rows: Vec<Row> = names.iter().map(|n| n.full.clone()).collect();
                    table::render(&rows, kind.wide)
                }
            };
            text.push_str(&table);
        }
        if detail == Detail::Brief {
            text.push_str("\n\n");
            text.push_str(&wrapped(WIDE_HINT, BRIEF_WIDTH));
        }
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_bound_has_a_fairness_in_brief() {
        for e in registry::LOCKS.entries() {
            assert!(
                FAIRNESS_IN_BRIEF.iter().any(|(opening, _)| e.facts.bound.starts_with(opening)),
                "{}: no brief fairness for the bound `{}`; add its opening words to FAIRNESS_IN_BRIEF",
                e.name,
                e.facts.bound
            );
        }
    }

    #[test]
    fn an_unrecognised_bound_is_cut_short_not_dropped() {
        assert_eq!(fairness_in_brief("FIFO in the queue; passed over at most once"), "FIFO");
        assert_eq!(fairness_in_brief("lottery"), "lottery");
        let cut = fairness_in_brief("a lottery among the waiters, weighted by age");
        assert!(cut.starts_with("a lottery") && cut.ends_with('…'), "{cut}");
        assert_eq!(cut.chars().count(), UNRECOGNISED_BOUND_CHARS);
    }

    #[test]
    fn wrapped_lines_keep_to_the_width_and_every_word() {
        let text = "locks (131 names; taken by --locks of `spinlab run` and `spinlab app`, SPINLAB_LOCK of \
                    the preload library, spinlab_mutex_init in C):";
        let lines = wrapped(text, 40);
        assert!(lines.lines().all(|l| l.chars().count() <= 40), "{lines}");
        assert!(lines.lines().skip(1).all(|l| l.starts_with("  ")), "{lines}");
        assert_eq!(lines.split_whitespace().collect::<Vec<_>>(), text.split_whitespace().collect::<Vec<_>>());
        assert_eq!(wrapped("short", 40), "short");
    }

    #[test]
    fn the_missing_feature_is_named_without_its_cpuid_bit() {
        let why = Unavailable { policy: "umwait", needs: "WAITPKG (umonitor/umwait, CPUID.7.0:ECX[5])" };
        assert_eq!(available_in_brief(Err(why)), "needs WAITPKG");
        assert_eq!(available_in_brief(Ok(())), "yes");
    }
}
