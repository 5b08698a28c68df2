//! The scorecard's vocabulary: a seed's headline [`Claim`], this document's [`Finding`] for
//! it, and the [`Verdict`]. Each experiment checks the claims its rows can speak to
//! ([`Experiment::scorecard`](crate::experiments::Experiment::scorecard)); docs/scorecard.md
//! explains every claim, the figure compared and the rule that gives the verdict.
//!
//! The seeds ran on other machines (UltraSPARC T1/T2, a hyper-threaded Pentium 4, NUMA
//! servers of the early 2000s), so a claim is checked by its *shape*: a ratio between two
//! treatments measured in the same run, or an order, never an absolute time. A verdict is
//! only as firm as its interval: `reproduced` and `differs` both need the interval on one
//! side of the claim's range.

use super::caveat::{self, Caveat, Concern};
use super::Context;
use crate::results::format::number;
use crate::results::rows::{RowType, Transfers};
use crate::results::ScorecardLine;

/// A seed's headline claim, as the seed states it.
#[derive(Clone, Copy, Debug)]
pub struct Claim {
    /// Stable key (`002-linux-loop-smt`), the same in results.json and docs/scorecard.md.
    pub id: &'static str,
    /// The seed: `000` to `004` (docs/sources.md).
    pub seed: &'static str,
    /// Where in the seed: a table, figure, section or slide.
    pub source: &'static str,
    /// The claim, in words.
    pub claim: &'static str,
    /// The seed's own figure, with its unit and conditions.
    pub paper: &'static str,
    /// What a machine must have for the claim to be tested on it, where a machine can lack it
    /// ([`needs`]); empty where every machine can test it. A `cannot test here` line names it.
    pub needs: &'static [&'static str],
    /// What re-measurement settles the claim when this document leaves it `unsettled`;
    /// `None` for a figure without an interval, which more repetitions cannot narrow.
    pub remeasure: Option<Remeasure>,
}

/// A claim's re-measurement: its experiment, run again at the report's settings restricted
/// to the rows the claim reads, with more repetitions (`spinlab report`'s settling,
/// docs/scorecard.md). The restriction is in the common options' own words, as the command
/// line takes them: `[("locks", "ttas:spin,fair:spin"), ("threads", "cpus")]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Remeasure {
    /// The experiment's name.
    pub experiment: &'static str,
    /// Common options (long names without dashes) and their values.
    pub options: &'static [(&'static str, &'static str)],
}

impl Claim {
    /// [`Claim::needs`] in words (`two SMT siblings of one core and WAITPKG (Intel) or
    /// MONITORX (AMD)`); `None` where every machine can test the claim.
    pub fn needs_words(&self) -> Option<String> {
        (!self.needs.is_empty()).then(|| self.needs.join(" and "))
    }
}

/// What a claim can need of a machine, in the words a `cannot test here` line says.
pub mod needs {
    /// A core with two hardware threads, both usable.
    pub const SMT: &str = "two SMT siblings of one core";
    /// Two physical cores, seen as such (bare metal, or virtual CPUs the host keeps on
    /// distinct cores).
    pub const TWO_CORES: &str = "two CPUs on distinct physical cores";
    /// Two NUMA nodes, each with usable CPUs (or two groups declared by `SPINLAB_TOPOLOGY`).
    pub const NUMA: &str = "two NUMA nodes";
    /// A user-mode monitor wait.
    pub const MONITOR_WAIT: &str = "WAITPKG (Intel) or MONITORX (AMD)";
}

/// A figure measured here and its 95% interval: none (the figure is exact, or came from one
/// repetition), `value ± half-width`, or the ends `[low, high]` where the interval is not
/// symmetric about the figure (a ratio's, whose scale is multiplicative).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The value.
    pub value: f64,
    /// Its interval.
    pub interval: Interval,
}

/// An [`Estimate`]'s 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Interval {
    /// None: the figure is exact, or came from one repetition.
    Exact,
    /// `value ± half-width`; an infinite half-width is an unbounded interval.
    Within(f64),
    /// The ends, `low <= value <= high`; `high` is infinite when the interval is unbounded
    /// above.
    Between(f64, f64),
}

impl Estimate {
    /// A figure with no interval.
    pub fn exact(value: f64) -> Estimate {
        Estimate { value, interval: Interval::Exact }
    }

    /// A figure with the half-width `ci95`.
    pub fn within(value: f64, ci95: f64) -> Estimate {
        Estimate { value, interval: Interval::Within(ci95) }
    }

    /// A figure with the interval `[low, high]`.
    pub fn between(value: f64, low: f64, high: f64) -> Estimate {
        Estimate { value, interval: Interval::Between(low.min(value), high.max(value)) }
    }

    /// A figure with the half-width `ci95`, or without an interval.
    pub fn with_ci95(value: f64, ci95: Option<f64>) -> Estimate {
        match ci95 {
            Some(ci95) => Estimate::within(value, ci95),
            None => Estimate::exact(value),
        }
    }

    /// A row's figure and its interval (`X_UNIT`, `X_ci95_UNIT`), when the row has a finite
    /// figure; an interval that is absent, `null` or not finite leaves the figure without one.
    pub fn of(value: Option<f64>, ci95: Option<f64>) -> Option<Estimate> {
        let value = value.filter(|v| v.is_finite())?;
        Some(Estimate::with_ci95(value, ci95.filter(|c| c.is_finite())))
    }

    /// Whether the figure has an interval.
    pub fn has_interval(&self) -> bool {
        self.interval != Interval::Exact
    }

    /// The interval's longer side from the figure: its half-width where it is symmetric, what
    /// results.json's `ci95` and the tie of two figures use; `None` without an interval.
    pub fn ci95(&self) -> Option<f64> {
        match self.interval {
            Interval::Exact => None,
            Interval::Within(half) => Some(half),
            Interval::Between(low, high) => Some((self.value - low).max(high - self.value)),
        }
    }

    /// [`Estimate::ci95`], where a figure without an interval is taken as the point itself.
    pub fn half_width(&self) -> f64 {
        self.ci95().unwrap_or_default()
    }

    /// The interval's ends.
    pub fn low(&self) -> f64 {
        match self.interval {
            Interval::Exact => self.value,
            Interval::Within(half) => self.value - half,
            Interval::Between(low, _) => low,
        }
    }

    /// See [`Estimate::low`].
    pub fn high(&self) -> f64 {
        match self.interval {
            Interval::Exact => self.value,
            Interval::Within(half) => self.value + half,
            Interval::Between(_, high) => high,
        }
    }

    /// `scale * self + offset`, its interval with it (a ratio as a percentage change).
    pub fn affine(&self, scale: f64, offset: f64) -> Estimate {
        let at = |x: f64| scale * x + offset;
        let value = at(self.value);
        match self.interval {
            Interval::Exact => Estimate::exact(value),
            Interval::Within(half) => Estimate::within(value, scale.abs() * half),
            Interval::Between(low, high) => Estimate::between(value, at(low).min(at(high)), at(low).max(at(high))),
        }
    }

    /// `self / other`, with Fieller's interval for a ratio of two independent estimates.
    /// `None` when `other` is not positive; without an interval when neither figure has one.
    ///
    /// With g = (other's half-width / other)², the interval is
    /// (q ± √(a²(1 − g) + q²b²) / other) / (1 − g) for q = self / other and half-widths a and b:
    /// not symmetric about q, longer above, as a ratio's spread is. A symmetric interval
    /// about q would reach below zero for a ratio of two positive figures whose denominator
    /// is uncertain. When other's interval reaches zero (g ≥ 1) the ratio is unbounded above:
    /// the interval runs from self's low end over other's high end to infinity, and no
    /// verdict rests on it. First-order propagation would give such a ratio a finite
    /// interval, and a verdict, from a denominator that one stalled repetition can drag
    /// towards zero.
    pub fn ratio(&self, other: &Estimate) -> Option<Estimate> {
        if other.value <= 0.0 || !other.value.is_finite() {
            return None;
        }
        let q = self.value / other.value;
        if !self.has_interval() && !other.has_interval() {
            return Some(Estimate::exact(q));
        }
        let (a, b) = (self.half_width(), other.half_width());
        let g = (b / other.value).powi(2);
        if g >= 1.0 || !a.is_finite() {
            return Some(Estimate::between(q, self.low().max(0.0) / other.high(), f64::INFINITY));
        }
        let centre = q / (1.0 - g);
        let half = (a.powi(2) * (1.0 - g) + q * q * b.powi(2)).sqrt() / (other.value * (1.0 - g));
        Some(Estimate::between(q, centre - half, centre + half))
    }

    /// Whether the interval has an end (see [`Estimate::ratio`]).
    pub fn bounded(&self) -> bool {
        self.low().is_finite() && self.high().is_finite()
    }

    /// Where the interval lies against the range `[low, high]`.
    pub fn against(&self, low: f64, high: f64) -> Side {
        if self.high() < low {
            Side::Below
        } else if self.low() > high {
            Side::Above
        } else if self.low() >= low && self.high() <= high {
            Side::Inside
        } else {
            Side::Straddles
        }
    }
}

/// Where an interval lies against a claim's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Wholly below the range.
    Below,
    /// Wholly inside it.
    Inside,
    /// Overlapping an end of it: the repetitions cannot tell.
    Straddles,
    /// Wholly above it.
    Above,
}

/// What this document says about a claim.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The figure falls in the claim's range.
    Reproduced,
    /// The figure falls outside it: by how much, and the likely reason.
    Differs(Side, String),
    /// The figure's interval overlaps an end of the range: more repetitions would tell.
    Unsettled(String),
    /// This machine lacks what the claim needs (SMT, a second NUMA node, an instruction, …).
    CannotTest(String),
    /// The rows the claim needs are not in this document (experiment not run, or run with
    /// other settings).
    NotMeasured(String),
}

impl Verdict {
    /// Its name in results.json and the tables.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Differs(..) => "differs",
            Verdict::Unsettled(_) => "unsettled",
            Verdict::CannotTest(_) => "cannot test here",
            Verdict::NotMeasured(_) => "not measured",
        }
    }

    /// Why, in words (empty for `Reproduced`).
    pub fn why(&self) -> &str {
        match self {
            Verdict::Reproduced => "",
            Verdict::Differs(_, w) | Verdict::Unsettled(w) | Verdict::CannotTest(w) | Verdict::NotMeasured(w) => w,
        }
    }

    /// The verdict for `here` against the claim's range `[low, high]`; `differs` says which
    /// way and gives `reason`.
    pub fn judge(here: &Estimate, low: f64, high: f64, reason: &str) -> Verdict {
        // A one-sided claim ("far later", "a small multiple") has one end: its range runs to
        // infinity, or up from zero for a figure that cannot be negative.
        let range = if !high.is_finite() {
            format!("the claim is at least {}", number(low))
        } else if low == 0.0 {
            format!("the claim is at most {}", number(high))
        } else {
            format!("the claim's range is {} to {}", number(low), number(high))
        };
        if !here.bounded() {
            return Verdict::Unsettled(format!(
                "the 95% interval is unbounded: the interval of the ratio's denominator reaches zero ({range})"
            ));
        }
        match here.against(low, high) {
            Side::Inside => Verdict::Reproduced,
            Side::Straddles => Verdict::Unsettled(format!("the 95% interval overlaps an end of the range ({range})")),
            Side::Below => Verdict::Differs(Side::Below, format!("below: {range}; {reason}")),
            Side::Above => Verdict::Differs(Side::Above, format!("above: {range}; {reason}")),
        }
    }
}

/// What a claim's figure was computed from: the figure, its unit, the figures behind it and
/// the rows they came from.
#[derive(Clone, Debug)]
pub struct Observed {
    /// The figure compared with the claim.
    pub here: Estimate,
    /// Its unit in words (`%`, `x`).
    pub unit: &'static str,
    /// The figures behind it.
    pub detail: String,
    /// The rows.
    pub rows: String,
}

/// The mean of several figures (the seeds average over workloads), its interval from the
/// figures' intervals taken as independent, each side from the same side of every figure's.
pub fn mean_of(figures: &[Estimate]) -> Option<Estimate> {
    if figures.is_empty() {
        return None;
    }
    let n = figures.len() as f64;
    let value = figures.iter().map(|e| e.value).sum::<f64>() / n;
    if figures.iter().all(|e| !e.has_interval()) {
        return Some(Estimate::exact(value));
    }
    let side = |reach: fn(&Estimate) -> f64| figures.iter().map(|e| reach(e).powi(2)).sum::<f64>().sqrt() / n;
    let (below, above) = (side(|e| e.value - e.low()), side(|e| e.high() - e.value));
    if figures.iter().all(|e| matches!(e.interval, Interval::Exact | Interval::Within(_))) {
        return Some(Estimate::within(value, above));
    }
    Some(Estimate::between(value, value - below, value + above))
}

/// A figure with its interval, in words: `45 ± 3 ns`, `185x [101, 693]`, or `1.7x, interval
/// unbounded`.
pub fn words(e: &Estimate, unit: &str) -> String {
    let value = number(e.value);
    if !e.bounded() {
        return format!("{value}{unit}, interval unbounded");
    }
    match e.interval {
        Interval::Within(half) if half > 0.0 => format!("{value} ± {}{unit}", number(half)),
        Interval::Between(low, high) if high > low => {
            format!("{value}{unit} [{}, {}]", number(low), number(high))
        }
        _ => format!("{value}{unit}"),
    }
}

/// One claim checked against one document.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The claim.
    pub claim: Claim,
    /// The figure compared with the claim's range, when there is one.
    pub here: Option<Estimate>,
    /// The claim's range `[low, high]` the figure was judged against.
    pub range: Option<(f64, f64)>,
    /// The repetitions behind the figure, where the document says: a re-measurement's, or
    /// the most its experiment's runs allowed (`max_reps`).
    pub repetitions: Option<usize>,
    /// The unit of `here` in words (`%`, `x`, `ns`).
    pub unit: &'static str,
    /// The figures behind `here`, in words (`spin 45 ± 3 ns, pthread-cond 40 ± 5 µs`).
    pub detail: String,
    /// Which rows: experiment and configuration.
    pub rows: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Set when a run behind the figure ran under load (the run's `under_load` words).
    pub under_load: Option<String>,
    /// Set when the machine moved a cache line at a different cost before and after a run
    /// behind the figure (`spinlab report` measures it around every run), or before and after
    /// the rows behind it where they carry their own transfers ([`Finding::read_from`]).
    pub machine_moved: Option<String>,
    /// A figure of the machine itself measured in the same rounds as the figure, which the
    /// figure follows ([`Finding::beside`]): where two documents' differ, their figures
    /// compare two states of the machine (`spinlab compare` says so beside its mark).
    pub machine_state: Option<MachineState>,
    /// The experiment whose runs the figure came from (empty where there is no figure).
    pub experiment: String,
    /// `under_load` and `machine_moved` as [`Caveat`]s: those of a whole run, which the report
    /// says once at that run, and those of the rows behind the figure alone.
    pub caveats: Vec<Caveat>,
}

/// A figure of the machine measured beside a finding's figure: its name in words, its unit
/// and its estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MachineState {
    /// What was measured, in words (`uncontended floor`).
    pub name: &'static str,
    /// Its unit (`ns`).
    pub unit: &'static str,
    /// Its value and interval.
    pub estimate: Estimate,
}

impl MachineState {
    /// `2.79 ± 0.01 ns`.
    pub fn figure(&self) -> String {
        words(&self.estimate, &format!(" {}", self.unit))
    }

    /// `uncontended floor 2.79 ± 0.01 ns`.
    pub fn text(&self) -> String {
        format!("{} {}", self.name, self.figure())
    }
}

impl Finding {
    /// A finding with no figure (the claim cannot be tested here, or was not measured).
    pub fn without(claim: &Claim, rows: &str, verdict: Verdict) -> Finding {
        Finding {
            claim: *claim,
            here: None,
            range: None,
            repetitions: None,
            unit: "",
            detail: String::new(),
            rows: rows.to_string(),
            verdict,
            under_load: None,
            machine_moved: None,
            machine_state: None,
            experiment: String::new(),
            caveats: Vec::new(),
        }
    }

    /// A finding with a figure, judged against the claim's range `[low, high]` (`reason`:
    /// the likely reason it differs, used only when it does), marked when a run of
    /// `experiment` ran under load.
    pub fn judged(
        claim: &Claim,
        ctx: &Context<'_>,
        experiment: &str,
        measured: Observed,
        range: (f64, f64),
        reason: &str,
    ) -> Finding {
        Finding {
            claim: *claim,
            here: Some(measured.here),
            range: Some(range),
            repetitions: None,
            unit: measured.unit,
            verdict: Verdict::judge(&measured.here, range.0, range.1, reason),
            detail: measured.detail,
            rows: measured.rows,
            under_load: load_of(ctx, experiment),
            machine_moved: ctx.runs_of(experiment).iter().find_map(|r| r.machine_moved()),
            machine_state: None,
            experiment: experiment.to_string(),
            caveats: caveat::of_runs(ctx, ctx.runs_of(experiment)),
        }
    }

    /// Names a figure of the machine measured in the same rounds as this finding's figure,
    /// one the figure follows (the uncontended floor beside uncontended lock costs).
    pub fn beside(mut self, state: Option<MachineState>) -> Finding {
        self.machine_state = state;
        self
    }

    /// Judges the machine's moves by the transfers `row` carries, where it carries any: a
    /// contention or interference row measures them around its own configuration, which the
    /// run measured again while the machine moved under it, so the run's moves elsewhere do not
    /// touch it.
    pub fn read_from(self, row: &impl Transfers) -> Finding {
        self.read_from_rows(&[row])
    }

    /// [`Finding::read_from`] for a figure taken from several rows: where every one carries
    /// transfers of its own, the machine moved under the figure if it moved under any of them.
    pub fn read_from_rows<R: Transfers>(mut self, rows: &[&R]) -> Finding {
        if !rows.is_empty() && rows.iter().all(|r| r.transfers().is_some()) {
            self.machine_moved = rows.iter().find_map(|r| r.machine_moved());
            self.caveats.retain(|c| c.concern != Concern::Moved);
            let experiment = self.experiment.clone();
            self.caveats.extend(self.machine_moved.clone().map(|words| Caveat {
                pass: None,
                concern: Concern::Moved,
                experiment,
                words,
            }));
        }
        self
    }

    /// About how many more repetitions would settle an `unsettled` figure. Its interval's
    /// half-width shrinks as 1/√n, so the side that overlaps an end of the range, h from the
    /// figure at d from that end, needs n·(h/d)² repetitions to clear it. `None` when the
    /// figure is settled, its interval unbounded, the repetitions unknown, or the figure sits
    /// on the end itself (no count of repetitions would tell).
    pub fn more_repetitions(&self) -> Option<usize> {
        if !matches!(self.verdict, Verdict::Unsettled(_)) {
            return None;
        }
        let (here, (low, high), n) = (self.here?, self.range?, self.repetitions?);
        if !here.bounded() {
            return None;
        }
        let end = [low, high]
            .into_iter()
            .filter(|e| e.is_finite() && here.low() <= *e && *e <= here.high())
            .min_by(|a, b| (a - here.value).abs().total_cmp(&(b - here.value).abs()))?;
        let distance = (here.value - end).abs();
        let half = if end > here.value { here.high() - here.value } else { here.value - here.low() };
        if distance <= 0.0 || !half.is_finite() {
            return None;
        }
        let needed = (n as f64 * (half / distance).powi(2)).ceil();
        Some((needed as usize).saturating_sub(n).max(1))
    }

    /// This machine's figure with its interval: `0.52 ± 0.04x`.
    pub fn value_text(&self) -> String {
        self.here.map_or("-".to_string(), |e| words(&e, self.unit))
    }

    /// This machine's figure in words: `0.52 ± 0.04x (spin 45 ns, …)`.
    pub fn figure_text(&self) -> String {
        if self.detail.is_empty() {
            self.value_text()
        } else {
            format!("{} ({})", self.value_text(), self.detail)
        }
    }

    /// The finding as a results.json entry.
    pub fn entry(&self) -> ScorecardLine {
        ScorecardLine {
            id: self.claim.id.to_string(),
            seed: self.claim.seed.to_string(),
            source: self.claim.source.to_string(),
            claim: self.claim.claim.to_string(),
            paper: self.claim.paper.to_string(),
            value: self.here.map(|e| e.value),
            ci95: self.here.map(|e| e.half_width()),
            low: self.here.filter(|e| e.has_interval() && e.bounded()).map(|e| e.low()),
            high: self.here.filter(|e| e.has_interval() && e.bounded()).map(|e| e.high()),
            unit: self.unit.to_string(),
            here: self.figure_text(),
            verdict: self.verdict.name().to_string(),
            why: self.verdict.why().to_string(),
            rows: self.rows.clone(),
            under_load: self.under_load.clone(),
            machine_moved: self.machine_moved.clone(),
            needs: self.claim.needs_words(),
            repetitions: self.repetitions,
            more_repetitions: self.more_repetitions(),
            tested_in: Vec::new(),
        }
    }
}

/// The under-load words of the runs of `experiment` in `ctx`, when any ran under load.
pub fn load_of(ctx: &Context<'_>, experiment: &str) -> Option<String> {
    ctx.runs_of(experiment).iter().find_map(|r| r.under_load())
}

/// The reason `R`'s experiment skipped the rows `matches` picks (those at `placement` `smt`:
/// `no SMT: …`), when it did.
pub fn skipped_where<R: RowType>(ctx: &Context<'_>, matches: impl Fn(&R) -> bool) -> Option<String> {
    ctx.rows_as::<R>()
        .into_iter()
        .filter(|r| r.skipped().is_some() && matches(r))
        .find_map(|r| r.skipped().map(str::to_string))
}

/// Picks the rows of `R` a claim needs (those at one placement, of one lock).
pub type Need<'a, R> = Box<dyn Fn(&R) -> bool + 'a>;

/// Why a claim has no figure: the first of `needs` (each picks rows the claim needs) that
/// `R`'s experiment skipped, as the machine's lack; else the rows are simply not in the
/// document.
pub fn why_missing<R: RowType>(ctx: &Context<'_>, needs: &[&dyn Fn(&R) -> bool]) -> Verdict {
    needs
        .iter()
        .find_map(|matches| skipped_where(ctx, matches))
        .map(Verdict::CannotTest)
        .unwrap_or_else(|| Verdict::NotMeasured(ctx.missing_reason(R::EXPERIMENT)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_figure_without_an_interval_has_none() {
        assert_eq!(Estimate::of(Some(50.0), Some(5.0)), Some(Estimate::within(50.0, 5.0)));
        assert_eq!(Estimate::of(Some(50.0), None), Some(Estimate::exact(50.0)));
        assert_eq!(Estimate::of(Some(50.0), Some(f64::NAN)), Some(Estimate::exact(50.0)));
        assert_eq!(Estimate::of(None, Some(5.0)), None);
        // Two exact figures give an exact ratio; one interval is carried through.
        assert_eq!(Estimate::exact(30.0).ratio(&Estimate::exact(10.0)), Some(Estimate::exact(3.0)));
        assert_eq!(words(&Estimate::exact(3.0), "x"), "3x");
        assert_eq!(mean_of(&[Estimate::exact(1.0), Estimate::exact(3.0)]), Some(Estimate::exact(2.0)));
    }

    #[test]
    fn a_ratio_carries_both_intervals_and_none_when_its_denominator_may_be_zero() {
        let a = Estimate::within(30.0, 3.0);
        let b = Estimate::within(10.0, 0.0);
        let r = a.ratio(&b).unwrap();
        assert!((r.value - 3.0).abs() < 1e-12 && (r.half_width() - 0.3).abs() < 1e-12);
        // Fieller, g = 0.01: (3/0.99) ± √(9·0.99 + 9)/(10·0.99) = [2.6028, 3.4578]; the
        // longer side from 3 is 0.4578 (first-order propagation: 0.4243).
        let both = a.ratio(&Estimate::within(10.0, 1.0)).unwrap();
        assert!((both.value - 3.0).abs() < 1e-12 && (both.half_width() - 0.457_75).abs() < 1e-4, "{both:?}");
        // A small denominator interval gives first-order propagation's width.
        let tight = Estimate::within(30.0, 0.3).ratio(&Estimate::within(10.0, 0.1)).unwrap();
        assert!((tight.half_width() - 3.0 * 0.0002f64.sqrt()).abs() < 1e-3, "{tight:?}");
        // A denominator whose interval reaches zero: 67.1 ± 5.0 µs over 39.6 ± 109.5 µs.
        let stalled = Estimate::within(67_148.0, 4_965.0).ratio(&Estimate::within(39_630.0, 109_534.0));
        let stalled = stalled.unwrap();
        assert!(!stalled.bounded(), "{stalled:?}");
        assert_eq!(stalled.against(50.0, 800.0), Side::Straddles);
        assert_eq!(words(&stalled, "x"), "1.69x, interval unbounded");
        assert!(a.ratio(&Estimate::within(0.0, 0.0)).is_none());
    }

    #[test]
    fn a_ratio_whose_denominator_is_uncertain_is_longer_above_and_stays_positive() {
        // A pthread wake-up of 93.3 ± 20.4 µs over a spinning one of 505 ± 369 ns: g = 0.534,
        // (184.8/0.466) ± √(20400²·0.466 + 184.8²·369²)/(505·0.466) = [101, 692]. About
        // the ratio, ± the longer side would reach -324.
        let r = Estimate::within(93_300.0, 20_400.0).ratio(&Estimate::within(505.0, 369.0)).unwrap();
        assert!((r.value - 184.75).abs() < 0.01, "{r:?}");
        assert!((r.low() - 101.3).abs() < 1.0 && (r.high() - 692.4).abs() < 1.0, "{r:?}");
        assert_eq!(words(&r, "x"), "185x [101, 692]");
        assert_eq!(r.against(50.0, f64::INFINITY), Side::Inside, "far later, whatever the interval's width");
        // As a percentage change the ends move with it.
        let pct = Estimate::within(1.5, 0.1).ratio(&Estimate::within(1.0, 0.1)).unwrap().affine(100.0, -100.0);
        assert!(pct.low() < pct.value && pct.value < pct.high() && (pct.value - 50.0).abs() < 1e-9, "{pct:?}");
    }

    #[test]
    fn the_ratio_interval_of_two_normal_samples_covers_the_true_ratio_95_times_in_100() {
        // Ten draws each of N(100, 20) and N(10, 3), means with their t intervals, 4000
        // times: Fieller's interval should hold 100/10 about 95% of the time, and never
        // reach below zero.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut uniform = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut normal = |mean: f64, sd: f64| {
            let (u, v) = (uniform().max(1e-300), uniform());
            mean + sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let estimate = |draws: Vec<f64>| {
            let s = crate::measure::Summary::of(&draws).unwrap();
            Estimate::within(s.mean, s.ci95.unwrap())
        };
        let trials = 4000;
        let mut covered = 0;
        for _ in 0..trials {
            let a = estimate((0..10).map(|_| normal(100.0, 20.0)).collect());
            let b = estimate((0..10).map(|_| normal(10.0, 3.0)).collect());
            let r = a.ratio(&b).unwrap();
            assert!(r.low() > 0.0, "{a:?} / {b:?} = {r:?}");
            covered += usize::from(r.low() <= 10.0 && 10.0 <= r.high());
        }
        let coverage = covered as f64 / trials as f64;
        assert!((0.93..=0.975).contains(&coverage), "coverage {coverage}");
    }

    #[test]
    fn a_mean_of_figures_narrows_its_interval() {
        let m = mean_of(&[Estimate::within(10.0, 4.0), Estimate::within(20.0, 3.0)]).unwrap();
        assert_eq!(m, Estimate::within(15.0, 2.5));
        assert!(mean_of(&[]).is_none());
        // Each side from the same side of every figure's interval.
        let m = mean_of(&[Estimate::between(10.0, 7.0, 14.0), Estimate::within(20.0, 0.0)]).unwrap();
        assert_eq!((m.value, m.low(), m.high()), (15.0, 13.5, 17.0));
    }

    #[test]
    fn the_verdict_needs_the_whole_interval_on_one_side() {
        let judge = |value, ci95| Verdict::judge(&Estimate::within(value, ci95), 1.5, 3.0, "why").name();
        assert_eq!(judge(2.0, 0.1), "reproduced");
        assert_eq!(judge(1.4, 0.2), "unsettled");
        assert_eq!(judge(1.0, 0.2), "differs");
        assert_eq!(judge(4.0, 0.5), "differs");
        assert!(Verdict::judge(&Estimate::within(1.0, 0.2), 1.5, 3.0, "older CPU").why().starts_with("below"));
        // A one-sided claim ("far later": at least 50x) settles on a wide interval above its
        // end, and says it has one end.
        let far_later = Estimate::between(185.0, 101.0, 692.0);
        assert_eq!(Verdict::judge(&far_later, 50.0, f64::INFINITY, "why"), Verdict::Reproduced);
        let short = Verdict::judge(&Estimate::between(20.0, 15.0, 30.0), 50.0, f64::INFINITY, "why");
        assert_eq!(short.why(), "below: the claim is at least 50; why");
        let wide = Verdict::judge(&Estimate::within(7.0, 4.0), 0.0, 6.0, "why");
        assert_eq!(wide.why(), "the 95% interval overlaps an end of the range (the claim is at most 6)");
    }
}
