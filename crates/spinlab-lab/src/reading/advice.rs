//! The recommendation's vocabulary: a line of [`Advice`], the [`Topic`] it belongs to, and
//! what one experiment contributes ([`Contribution`]).

use super::Context;
use crate::results::Row;

/// One line of the recommendation.
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    /// The situation: `short critical section, threads <= CPUs`.
    pub situation: String,
    /// What to use, or `no recommendation`.
    pub choice: String,
    /// Why, with the measured figure (or why there is none).
    pub why: String,
}

impl Advice {
    /// A line that recommends nothing, saying why.
    pub fn missing(situation: &str, why: String) -> Advice {
        Advice { situation: situation.to_string(), choice: "no recommendation".to_string(), why }
    }
}

/// What a recommendation line is about. The recommendation lists topics in this order,
/// whichever experiment contributes them: locks first, then wait policies, herds, barriers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Topic {
    /// Which lock, per critical-section length and oversubscription.
    Locks,
    /// Which wait policy, by what co-runners and wake-ups cost.
    WaitPolicies,
    /// Which lock when many threads are released at once.
    Herds,
    /// Which barrier between threads with unequal work.
    Barriers,
}

/// One experiment's part of the recommendation.
pub struct Contribution {
    /// Where its lines go.
    pub topic: Topic,
    /// Its lines, in order.
    pub lines: Vec<Advice>,
}

/// Why an experiment has no usable rows: not run, or every configuration skipped.
pub fn missing_reason(ctx: &Context<'_>, experiment: &str) -> String {
    let rows: Vec<&Row> = ctx.rows_of(experiment);
    if rows.is_empty() {
        return format!("not measured: the {experiment} experiment was not run");
    }
    match rows.iter().find_map(|r| r.text("skipped")) {
        Some(why) if rows.iter().all(|r| r.is_skipped()) => format!("not measured: {experiment} was skipped ({why})"),
        _ => format!("not measured: {experiment} has no rows with the figures this needs"),
    }
}
