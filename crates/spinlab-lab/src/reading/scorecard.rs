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
use serde::{Deserialize, Serialize};

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
}

/// A figure measured here: its value and the half-width of its 95% interval, `None` when the
/// figure has no interval (it is exact, or came from one repetition).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The value.
    pub value: f64,
    /// Half-width of the 95% interval; infinite when the interval is unbounded.
    pub ci95: Option<f64>,
}

impl Estimate {
    /// A figure with no interval.
    pub fn exact(value: f64) -> Estimate {
        Estimate { value, ci95: None }
    }

    /// A figure with the half-width `ci95`.
    pub fn within(value: f64, ci95: f64) -> Estimate {
        Estimate { value, ci95: Some(ci95) }
    }

    /// A row's figure and its interval (`X_UNIT`, `X_ci95_UNIT`), when the row has a finite
    /// figure; an interval that is absent, `null` or not finite leaves the figure without one.
    pub fn of(value: Option<f64>, ci95: Option<f64>) -> Option<Estimate> {
        let value = value.filter(|v| v.is_finite())?;
        Some(Estimate { value, ci95: ci95.filter(|c| c.is_finite()) })
    }

    /// The half-width, where a figure without an interval is taken as the point itself:
    /// what the interval's ends, a ratio's and a mean's intervals, and results.json's `ci95`
    /// (docs/results.md) use.
    pub fn half_width(&self) -> f64 {
        self.ci95.unwrap_or_default()
    }

    /// The interval's ends.
    pub fn low(&self) -> f64 {
        self.value - self.half_width()
    }

    /// See [`Estimate::low`].
    pub fn high(&self) -> f64 {
        self.value + self.half_width()
    }

    /// `self / other`, with Fieller's interval for a ratio of two independent estimates,
    /// made symmetric about the ratio by its longer side. `None` when `other` is not positive;
    /// without an interval when neither figure has one.
    ///
    /// With g = (other's half-width / other)², the interval is
    /// (q ± √(a²(1 − g) + q²b²) / other) / (1 − g) for q = self / other and half-widths a and b.
    /// While g is small that is the first-order propagation, q·√((a/self)² + (b/other)²).
    /// When other's interval reaches zero (g ≥ 1) the ratio is unbounded above: the interval
    /// is infinite, and no verdict rests on it. First-order propagation would give such a
    /// ratio a finite interval, and a verdict, from a denominator that one stalled repetition
    /// can drag towards zero.
    pub fn ratio(&self, other: &Estimate) -> Option<Estimate> {
        if other.value <= 0.0 || !other.value.is_finite() {
            return None;
        }
        let q = self.value / other.value;
        if self.ci95.is_none() && other.ci95.is_none() {
            return Some(Estimate::exact(q));
        }
        let (a, b) = (self.half_width(), other.half_width());
        let g = (b / other.value).powi(2);
        if g >= 1.0 {
            return Some(Estimate::within(q, f64::INFINITY));
        }
        let centre = q / (1.0 - g);
        let half = (a.powi(2) * (1.0 - g) + q * q * b.powi(2)).sqrt() / (other.value * (1.0 - g));
        Some(Estimate::within(q, (q - (centre - half)).max(centre + half - q)))
    }

    /// Whether the interval has an end (see [`Estimate::ratio`]).
    pub fn bounded(&self) -> bool {
        self.ci95.is_none_or(f64::is_finite)
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
        let range = format!("the claim's range is {} to {}", number(low), number(high));
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
/// figures' intervals taken as independent.
pub fn mean_of(figures: &[Estimate]) -> Option<Estimate> {
    if figures.is_empty() {
        return None;
    }
    let n = figures.len() as f64;
    let value = figures.iter().map(|e| e.value).sum::<f64>() / n;
    if figures.iter().all(|e| e.ci95.is_none()) {
        return Some(Estimate::exact(value));
    }
    let ci95 = figures.iter().map(|e| e.half_width().powi(2)).sum::<f64>().sqrt() / n;
    Some(Estimate::within(value, ci95))
}

/// A figure with its interval, in words: `45 ± 3 ns`, or `1.7x, interval unbounded`.
pub fn words(e: &Estimate, unit: &str) -> String {
    match e.ci95 {
        Some(ci95) if !ci95.is_finite() => format!("{}{unit}, interval unbounded", number(e.value)),
        Some(ci95) if ci95 > 0.0 => format!("{} ± {}{unit}", number(e.value), number(ci95)),
        _ => format!("{}{unit}", number(e.value)),
    }
}

/// One claim checked against one document.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The claim.
    pub claim: Claim,
    /// The figure compared with the claim's range, when there is one.
    pub here: Option<Estimate>,
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
            unit: self.unit.to_string(),
            here: self.figure_text(),
            verdict: self.verdict.name().to_string(),
            why: self.verdict.why().to_string(),
            rows: self.rows.clone(),
            under_load: self.under_load.clone(),
            machine_moved: self.machine_moved.clone(),
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
    fn a_mean_of_figures_narrows_its_interval() {
        let m = mean_of(&[Estimate::within(10.0, 4.0), Estimate::within(20.0, 3.0)]).unwrap();
        assert_eq!(m, Estimate::within(15.0, 2.5));
        assert!(mean_of(&[]).is_none());
    }

    #[test]
    fn the_verdict_needs_the_whole_interval_on_one_side() {
        let judge = |value, ci95| Verdict::judge(&Estimate::within(value, ci95), 1.5, 3.0, "why").name();
        assert_eq!(judge(2.0, 0.1), "reproduced");
        assert_eq!(judge(1.4, 0.2), "unsettled");
        assert_eq!(judge(1.0, 0.2), "differs");
        assert_eq!(judge(4.0, 0.5), "differs");
        assert!(Verdict::judge(&Estimate::within(1.0, 0.2), 1.5, 3.0, "older CPU").why().starts_with("below"));
    }
}
