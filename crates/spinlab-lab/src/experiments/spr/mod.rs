//! `spinlab run spr`: speculative precomputation (seed 001 §4.4, Fig. 5).
//!
//! A computation is cut into units. Serially, one thread computes them in order. Under SPR a
//! helper thread runs one unit ahead: while the worker computes unit `u`, the helper
//! precomputes the addresses of unit `u + 1` and touches them, so they are in a shared cache
//! when the worker gets there; then both meet at a barrier, which throttles the helper so it
//! never runs further ahead and pollutes the cache. Per barrier: `speedup` over the serial run,
//! and `worker_sync_pct`, the share of the worker's time spent in the barrier (Fig. 5c's
//! *synch*). Every SPR run's result is compared with the serial one (`equal_to_serial`).
//!
//! Seed 001 put the helper on the worker's sibling hyper-thread; without SMT the helper runs on
//! another core, and what it brings in reaches the worker through the shared last-level cache
//! (or a cache-to-cache transfer) rather than through a shared L1/L2 (docs/spr.md).

pub mod spmv;
pub mod tc;

use super::barrier::{parse_barriers, Barriers};
use super::lab::Lab;
use super::options::Common;
use super::settings::{Length, Step};
use super::wakeup::{add_summary, placement_pairs, PairAt};
use super::Experiment;
use crate::error::LabError;
use crate::machine::Placement;
use crate::measure::clock::now;
use crate::measure::memory::check_room;
use crate::measure::partner::with_partner;
use crate::measure::pin::with_pinned;
use crate::measure::{interleave, Clock, Rep};
use crate::reading::plot::{self, Axis, Scale};
use crate::reading::scorecard::{needs, why_missing, Claim, Estimate, Finding, Observed, Remeasure};
use crate::reading::{distinct_by, measured_as, Context, Panel};
use crate::results::rows::SprRow;
use crate::results::table::{col, Column};
use crate::results::{Row, Run};
use crate::select::{self, Bounds};
use clap::Args;
use spinlab_registry::{self as registry, DynBarrier};
use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Instant;

/// A computation cut into units, for the serial worker, the SPR worker and the helper.
pub trait Kernel: Sync {
    /// The result (and the state the worker updates).
    type Out: Send;
    /// The state before the first unit (not timed).
    fn fresh(&self) -> Self::Out;
    /// How many units.
    fn units(&self) -> usize;
    /// The worker computes `unit`.
    fn compute(&self, out: &mut Self::Out, unit: usize);
    /// The helper touches what `unit` will need; `out` is the address of the worker's state
    /// (which the helper may only prefetch, never read). Returns a value to keep the work.
    fn prefetch(&self, out: usize, unit: usize) -> u64;
    /// The address the helper is given.
    fn out_addr(out: &Self::Out) -> usize;
    /// Whether two results are the same, bit for bit.
    fn equal(a: &Self::Out, b: &Self::Out) -> bool;
}

/// One run of a kernel: how long it took, and its result.
pub struct Ran<Out> {
    /// Wall seconds.
    pub seconds: f64,
    /// The worker's share of that time spent in the barrier, in percent (0 for a serial run).
    pub sync_pct: f64,
    /// The result.
    pub out: Out,
}

/// The serial run on `cpu`.
pub fn serial<K: Kernel>(kernel: &K, cpu: usize) -> Ran<K::Out> {
    with_pinned(cpu, || {
        let mut out = kernel.fresh();
        let started = Instant::now();
        for u in 0..kernel.units() {
            kernel.compute(&mut out, u);
        }
        Ran { seconds: started.elapsed().as_secs_f64(), sync_pct: 0.0, out }
    })
}

/// One SPR run: the worker on `cpus.0`, the helper on `cpus.1`, meeting at `barrier` after
/// every unit. Seconds, the worker's share of time in the barrier (percent), the result.
pub fn spr<K: Kernel>(
    kernel: &K,
    barrier: &dyn DynBarrier,
    cpus: (usize, usize),
    clock: &Clock,
) -> Result<Ran<K::Out>, LabError> {
    let units = kernel.units();
    let mut out = kernel.fresh();
    let addr = K::out_addr(&out);
    let start = std::sync::Barrier::new(2);
    let helper = || {
        let mut sink = 0u64;
        start.wait();
        for u in 0..units {
            if u + 1 < units {
                sink = sink.wrapping_add(kernel.prefetch(addr, u + 1));
            }
            barrier.wait();
        }
        black_box(sink);
    };
    let worker = || {
        with_pinned(cpus.0, || {
            start.wait();
            let started = Instant::now();
            let mut in_barrier = 0u64;
            for u in 0..units {
                kernel.compute(&mut out, u);
                let arrived = now();
                barrier.wait();
                in_barrier += clock.corrected(arrived, now());
            }
            let seconds = started.elapsed().as_secs_f64();
            let sync_pct = 100.0 * clock.ns(in_barrier as f64) * 1e-9 / seconds.max(1e-12);
            Ran { seconds, sync_pct, out }
        })
    };
    Ok(with_partner(cpus.1, helper, worker)?.main)
}

/// The barriers measured when `--barriers` is not given.
pub const SPR_BARRIERS: &[&str] = &[
    "barrier:pause",
    "barrier:futex",
    "barrier:spin-park",
    "barrier:umwait",
    "barrier:mwaitx",
    "barrier:wfe",
    "pthread",
];

/// The applications.
pub const APPS: [&str; 2] = ["spmv", "tc"];

/// A list of applications.
#[derive(Clone, Debug)]
pub struct Apps(pub Vec<&'static str>);

fn parse_apps(text: &str) -> Result<Apps, String> {
    let mut out = Vec::new();
    for item in select::split_list(text)? {
        match APPS.iter().find(|a| **a == item) {
            Some(a) if !out.contains(a) => out.push(*a),
            Some(_) => {}
            None => return Err(format!("unknown application `{item}`; accepted: {}", APPS.join(", "))),
        }
    }
    Ok(Apps(out))
}

/// `--spmv-cols`: x up to 800 MB of f64.
pub const SPMV_COLS: Bounds = Bounds::new(1, 100_000_000);
/// `--spmv-rows`.
pub const SPMV_ROWS: Bounds = Bounds::new(1, 10_000_000);
/// `--spmv-per-row`.
pub const SPMV_PER_ROW: Bounds = Bounds::new(1, 64);
/// `--spmv-block-rows`.
pub const SPMV_BLOCK_ROWS: Bounds = Bounds::new(1, 1_000_000);
/// The most non-zeroes the spmv matrix may hold (rows × per-row): 3 GiB of values and column
/// indices. The default shape (x twice the last-level cache, a sixteenth as many rows, 8 per
/// row) stays below it on caches up to 2 GiB.
pub const SPMV_MAX_NONZEROES: u64 = 1 << 28;
/// `--tc-vertices`: an adjacency matrix up to 64 MiB, copied once per run.
pub const TC_VERTICES: Bounds = Bounds::new(1, 8192);
/// `--tc-edges`.
pub const TC_EDGES: Bounds = Bounds::new(1, 10_000_000);

/// Options of `spinlab run spr` (no `Default`: its derived form would zero clap's defaults).
#[derive(Args, Clone, Debug)]
#[group(skip)]
pub struct Spr {
    /// Barriers throttling the helper, comma-separated: barrier:POLICY, pthread, std (default:
    /// seed 001's three, spin-loops as barrier:pause, pthreads, mwmon as the monitor waits,
    /// and spinlab's futex and spin-park); `spinlab list` shows every barrier name
    #[arg(long, value_name = "LIST", value_parser = parse_barriers)]
    pub barriers: Option<Barriers>,
    /// Applications, comma-separated: spmv (sparse matrix-vector multiply), tc (transitive
    /// closure)
    #[arg(long, value_name = "LIST", value_parser = parse_apps)]
    pub apps: Option<Apps>,
    /// spmv: columns, the length of x (default: x is twice the last-level cache), within
    /// [`SPMV_COLS`]
    #[arg(long, value_name = "N", value_parser = |s: &str| SPMV_COLS.parse::<usize>(s), allow_hyphen_values = true,
          help = SPMV_COLS.help("spmv: columns, the length of x (default: x is twice the last-level cache)"))]
    pub spmv_cols: Option<usize>,
    /// spmv: rows (default: a sixteenth of the columns), within [`SPMV_ROWS`] and
    /// [`SPMV_MAX_NONZEROES`]
    #[arg(long, value_name = "N", value_parser = |s: &str| SPMV_ROWS.parse::<usize>(s), allow_hyphen_values = true,
          help = SPMV_ROWS.help(&format!("spmv: rows (default: a sixteenth of the columns), with rows × per-row \
                                          at most {SPMV_MAX_NONZEROES}")))]
    pub spmv_rows: Option<usize>,
    /// spmv: non-zeroes per row, within [`SPMV_PER_ROW`]
    #[arg(long, value_name = "N", default_value = "8", value_parser = |s: &str| SPMV_PER_ROW.parse::<usize>(s),
          allow_hyphen_values = true, help = SPMV_PER_ROW.help("spmv: non-zeroes per row"))]
    pub spmv_per_row: usize,
    /// spmv: rows per unit (the helper runs this far ahead), within [`SPMV_BLOCK_ROWS`]
    #[arg(long, value_name = "N", default_value = "1024", value_parser = |s: &str| SPMV_BLOCK_ROWS.parse::<usize>(s),
          allow_hyphen_values = true, help = SPMV_BLOCK_ROWS.help("spmv: rows per unit (the helper runs this far ahead)"))]
    pub spmv_block_rows: usize,
    /// tc: vertices (seed 001: 1600), within [`TC_VERTICES`]
    #[arg(long, value_name = "N", default_value = "1600", value_parser = |s: &str| TC_VERTICES.parse::<usize>(s),
          allow_hyphen_values = true, help = TC_VERTICES.help("tc: vertices (seed 001: 1600)"))]
    pub tc_vertices: usize,
    /// tc: edges (seed 001: 25000), within [`TC_EDGES`]
    #[arg(long, value_name = "N", default_value = "25000", value_parser = |s: &str| TC_EDGES.parse::<usize>(s),
          allow_hyphen_values = true, help = TC_EDGES.help("tc: edges (seed 001: 25000)"))]
    pub tc_edges: usize,
    /// tc: tile side, 8, 16, 32 or 64 (seed 001: 16)
    #[arg(long, value_name = "N", default_value = "16", value_parser = tile_side, allow_hyphen_values = true)]
    pub tc_block: usize,
}

fn tile_side(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(b) if tc::TILE_SIDES.contains(&b) => Ok(b),
        _ => Err(format!("`{text}` is not a tile side; accepted: {:?}", tc::TILE_SIDES)),
    }
}

const COLUMNS: &[Column] = &[
    col(APP, "app"),
    col(BARRIER, "barrier"),
    col(PLACEMENT, "placement"),
    col("time_s", "time s"),
    col("time_sd_s", "±sd"),
    col(SPEEDUP, "speedup"),
    col("worker_sync_pct", "worker sync %"),
    col("equal_to_serial", "= serial"),
    col("reps", "reps"),
];

/// The serial row's `barrier`.
pub const SERIAL: &str = "serial";

/// Rows for one application: serial and every barrier, interleaved, at every placement.
fn measure_app<K: Kernel>(
    app: &str,
    kernel: &K,
    entries: &[&'static registry::BarrierEntry],
    pairs: &[PairAt],
    lab: &Lab,
    common: &Common,
) -> Result<Vec<Row>, LabError> {
    let rule = common.rule(3, 5)?;
    let runnable: Vec<&registry::BarrierEntry> = entries.iter().copied().filter(|e| e.availability.is_ok()).collect();
    let progress = lab.progress(&format!("spr {app}"), pairs.len() as u64);
    let mut rows = Vec::new();
    for (placement, pair) in pairs {
        progress.step(&format!("{app}, {placement}"));
        let base = |barrier: &str| Row::new().with(APP, app).with(BARRIER, barrier).with(PLACEMENT, placement.name());
        let cpus = match pair {
            Ok(c) => *c,
            Err(why) => {
                rows.push(base(SERIAL).skipped(why.clone()));
                rows.extend(entries.iter().map(|e| base(&e.name).skipped(why.clone())));
                progress.inc();
                continue;
            }
        };
        let reference = serial(kernel, cpus.0).out;
        let built: Vec<Box<dyn DynBarrier>> = runnable
            .iter()
            .map(|e| e.build(NonZeroU32::new(2).expect("2 is not zero")).map_err(|e| LabError::failed(e.to_string())))
            .collect::<Result<_, _>>()?;
        let mut sync: Vec<Vec<f64>> = vec![Vec::new(); built.len()];
        let mut equal = vec![true; built.len()];
        // Treatment 0 is the serial run, 1.. the barriers.
        let series = interleave(built.len() + 1, &rule, Some(&progress), |i, rep| {
            if i == 0 {
                return Ok(serial(kernel, cpus.0).seconds);
            }
            let ran = spr(kernel, &*built[i - 1], cpus, &lab.clock)?;
            if !K::equal(&ran.out, &reference) {
                equal[i - 1] = false;
            }
            if rep != Rep::Warmup {
                sync[i - 1].push(ran.sync_pct);
            }
            Ok(ran.seconds)
        })?;
        let serial_s = crate::measure::Summary::of(&series[0].samples).map(|s| s.mean);
        let cpu_text = format!("{},{}", cpus.0, cpus.1);
        let mut row = add_summary(base(SERIAL).with("cpus", cpu_text.as_str()), "time", "s", &series[0].samples);
        row.set(SPEEDUP, 1.0);
        row.set("worker_sync_pct", 0.0);
        row.set("equal_to_serial", true);
        rows.push(row);
        let mut next = 0;
        for e in entries {
            let row = base(&e.name).with("cpus", cpu_text.as_str());
            if let Err(why) = e.availability {
                rows.push(row.skipped(why.to_string()));
                continue;
            }
            let i = next;
            next += 1;
            let mut row = add_summary(row, "time", "s", &series[i + 1].samples);
            if let (Some(serial_s), Some(t)) = (serial_s, row.number("time_s")) {
                row.set(SPEEDUP, serial_s / t);
            }
            row.set("worker_sync_pct", crate::measure::Summary::of(&sync[i]).map(|s| s.mean));
            row.set("equal_to_serial", equal[i]);
            row.set("stop", series[i + 1].verdict);
            if !equal[i] {
                eprintln!("warning: spr {app} with {} computed a result different from the serial run", e.name);
            }
            rows.push(row);
        }
        progress.inc();
    }
    progress.finish();
    Ok(rows)
}

/// The spmv matrix's size.
#[derive(Clone, Copy)]
struct SpmvShape {
    rows: usize,
    cols: usize,
}

impl Spr {
    /// The spmv columns: given, or x twice the largest last-level cache (32 MiB assumed when
    /// the OS does not say).
    fn spmv_cols(&self, lab: &Lab) -> usize {
        self.spmv_cols.unwrap_or_else(|| {
            let llc = lab.topology.llcs.iter().filter_map(|g| g.size_bytes).max().unwrap_or(32 << 20);
            (2 * llc as usize) / std::mem::size_of::<f64>()
        })
    }

    /// The spmv matrix's rows and columns, or a usage error when it would hold more than
    /// [`SPMV_MAX_NONZEROES`].
    fn spmv_shape(&self, lab: &Lab) -> Result<SpmvShape, LabError> {
        let cols = self.spmv_cols(lab);
        let rows = self.spmv_rows.unwrap_or((cols / 16).max(1));
        let nonzeroes = (rows as u64).saturating_mul(self.spmv_per_row as u64);
        if nonzeroes > SPMV_MAX_NONZEROES {
            return Err(LabError::usage(format!(
                "{} rows × --spmv-per-row {} is {nonzeroes} non-zeroes; accepted: at most {SPMV_MAX_NONZEROES} \
                 (give fewer --spmv-rows, or fewer per row)",
                if self.spmv_rows.is_some() { "--spmv-rows" } else { "the default" },
                self.spmv_per_row
            )));
        }
        Ok(SpmvShape { rows, cols })
    }
}

impl Experiment for Spr {
    fn name(&self) -> &'static str {
        "spr"
    }

    fn about(&self) -> &'static str {
        "Speculative precomputation: a helper thread throttled by a barrier (seed 001)"
    }

    fn uses(&self) -> &'static [&'static str] {
        &["placement"]
    }

    fn columns(&self) -> &'static [Column] {
        COLUMNS
    }

    fn run(&self, lab: &Lab, common: &Common) -> Result<Vec<Run>, LabError> {
        let started = Instant::now();
        let names: Vec<&'static str> = self.barriers.as_ref().map_or_else(|| SPR_BARRIERS.to_vec(), |b| b.0.clone());
        let entries: Vec<&'static registry::BarrierEntry> = names
            .iter()
            .map(|n| registry::BARRIERS.info(n).map_err(|e| LabError::usage(e.to_string())))
            .collect::<Result<_, _>>()?;
        let apps = self.apps.as_ref().map_or_else(|| APPS.to_vec(), |a| a.0.clone());
        // Checked before anything runs, not when spmv's turn comes; `None` when spmv is not run.
        let spmv_shape = if apps.contains(&"spmv") { Some(self.spmv_shape(lab)?) } else { None };
        let placements =
            common.placement.as_ref().map_or_else(|| vec![Placement::Smt, Placement::Core], |p| p.0.clone());
        let pairs = placement_pairs(lab, &placements);
        let rule = common.rule(3, 5)?;

        let mut run = Run::new(self.name());
        run.param("barriers", &names)
            .param("apps", &apps)
            .param("placements", placements.iter().map(|p| p.name()).collect::<Vec<_>>())
            .stopping_rule(&rule)
            .param("helper", "one unit ahead, throttled by the barrier after every unit");
        let mut rows = Vec::new();
        for app in apps {
            match (app, spmv_shape) {
                ("spmv", Some(SpmvShape { rows: rows_n, cols })) => {
                    let nonzeroes = rows_n as u64 * self.spmv_per_row as u64;
                    // Row starts, column indices, values, x, and the worker's y.
                    let bytes = (rows_n as u64 + 1) * 8 + nonzeroes * 12 + cols as u64 * 8 + rows_n as u64 * 8;
                    check_room(bytes, "the spmv matrix and vectors")?;
                    let kernel = Spmv::generate(rows_n, cols, self.spmv_per_row, self.spmv_block_rows, 0x5eed);
                    run.param("spmv_rows", rows_n)
                        .param("spmv_cols", cols)
                        .param("spmv_per_row", self.spmv_per_row)
                        .param("spmv_block_rows", self.spmv_block_rows)
                        .param("spmv_units", kernel.units())
                        .param("spmv_bytes", kernel.bytes());
                    rows.extend(measure_app(app, &kernel, &entries, &pairs, lab, common)?);
                }
                ("tc", _) => {
                    // The adjacency matrix, padded to whole tiles, and the worker's copy of it.
                    let side = self.tc_vertices.div_ceil(self.tc_block) * self.tc_block;
                    check_room(2 * (side as u64).pow(2), "the tc adjacency matrices")?;
                    let kernel = Closure::generate(self.tc_vertices, self.tc_edges, self.tc_block, 0x5eed);
                    run.param("tc_vertices", kernel.vertices())
                        .param("tc_edges", self.tc_edges)
                        .param("tc_block", self.tc_block)
                        .param("tc_units", kernel.units())
                        .param("tc_bytes", kernel.adjacency().len());
                    rows.extend(measure_app(app, &kernel, &entries, &pairs, lab, common)?);
                }
                (other, _) => return Err(LabError::failed(format!("spr has no kernel for `{other}`"))),
            }
        }
        run.rows = rows;
        run.elapsed_s = started.elapsed().as_secs_f64();
        Ok(vec![run])
    }

    fn report_steps(&self, length: Length, _cpus: usize) -> Vec<Step> {
        let spr = match length {
            Length::Full => self.clone(),
            Length::Short => Spr { tc_vertices: 800, tc_edges: 12_500, ..self.clone() },
            Length::Smoke => Spr {
                spmv_cols: Some(20_000),
                spmv_rows: Some(3_000),
                spmv_block_rows: 64,
                tc_vertices: 100,
                tc_edges: 400,
                barriers: Some(Barriers(vec!["barrier:pause", "pthread"])),
                ..self.clone()
            },
        };
        let c = length.common(&spr, 3, 5, 0);
        vec![Step::new(spr, c, "spr: speculative precomputation")]
    }

    fn figures(&self, _ctx: &Context<'_>, runs: &[&Run]) -> Vec<Result<Panel, String>> {
        chart(&measured_as::<SprRow>(runs))
    }

    fn scorecard(&self, ctx: &Context<'_>) -> Vec<Finding> {
        vec![tc_speedup(ctx)]
    }
}

const TC_SPEEDUP: Claim = Claim {
    id: "001-spr-tc-speedup",
    seed: "001",
    source: "§4.4, Fig. 5a",
    claim: "a prefetching helper on the sibling hardware thread, throttled by an MWAIT barrier, speeds up \
            transitive closure",
    paper: "1.35x over serial for TC with mwmon (1.07x to 1.35x over four applications, 1.17x on average); \
            pthreads 3.6% and spin-loops 15% behind mwmon on average",
    needs: &[needs::SMT],
    remeasure: Some(Remeasure { experiment: "spr", options: &[("placement", "smt")] }),
};

/// The barriers seed 001 throttled its helper with, best first: MONITOR/MWAIT's successors,
/// then pthreads (3.6% behind on average).
const TC_BARRIERS: &[&str] = &["barrier:umwait", "barrier:mwaitx", "pthread"];

/// Transitive closure's speedup with the helper on the worker's sibling, under the first of
/// [`TC_BARRIERS`] measured.
fn tc_speedup(ctx: &Context<'_>) -> Finding {
    let smt = Placement::Smt.name();
    let rows: Vec<SprRow> = ctx.measured_as();
    let rows_words = format!("spr, app tc at {smt}: speedup with {}", TC_BARRIERS.join(", or "));
    let found = TC_BARRIERS.iter().find_map(|b| {
        rows.iter()
            .find(|r| {
                r.app.as_deref() == Some("tc") && r.placement.as_deref() == Some(smt) && r.barrier.as_deref() == Some(b)
            })
            .and_then(|r| Some((*b, r.speedup?)))
    });
    let Some((barrier, value)) = found else {
        let needs: [&dyn Fn(&SprRow) -> bool; 2] =
            [&|r| r.placement.as_deref() == Some(smt), &|r| r.barrier.as_deref() == Some("barrier:umwait")];
        return Finding::without(&TC_SPEEDUP, &rows_words, why_missing(ctx, &needs));
    };
    let observed =
        Observed { here: Estimate::exact(value), unit: "x", detail: format!("with {barrier}"), rows: rows_words };
    let reason = "today's caches and hardware prefetchers leave a helper thread less to prefetch than the \
                  2008 Xeon's did";
    Finding::judged(&TC_SPEEDUP, ctx, "spr", observed, (1.1, f64::INFINITY), reason)
}

use crate::results::keys::{BARRIER, PLACEMENT};
use spmv::Spmv;
use tc::Closure;

/// The worker's speedup with the helper over the worker alone.
pub const SPEEDUP: &str = "speedup";
/// The application (`spmv`, `tc`).
pub const APP: &str = "app";

fn chart(rows: &[SprRow]) -> Vec<Result<Panel, String>> {
    let rows: Vec<&SprRow> = rows.iter().filter(|r| r.speedup.is_some()).collect();
    let apps = distinct_by(&rows, |r| r.app.clone());
    let barriers = distinct_by(&rows, |r| r.barrier.clone());
    if apps.is_empty() || barriers.is_empty() {
        return Vec::new();
    }
    let groups: Vec<(String, Vec<Option<f64>>)> = barriers
        .iter()
        .map(|b| {
            (
                b.clone(),
                apps.iter()
                    .map(|a| {
                        rows.iter()
                            .find(|r| r.app.as_ref() == Some(a) && r.barrier.as_ref() == Some(b))
                            .and_then(|r| r.speedup)
                    })
                    .collect(),
            )
        })
        .collect();
    let y = Axis::numeric(
        "speedup over the worker alone (x)",
        Scale::Linear,
        groups.iter().flat_map(|g| g.1.iter().flatten().copied()).chain([1.0]),
        true,
    );
    vec![plot::grouped_bars(
        "Speculative precomputation: speedup per barrier",
        &apps,
        "application",
        &y,
        &groups,
        Some((1.0, "no gain")),
    )
    .map(|svg| Panel {
        svg,
        caption: "Seed 001 §4.4: a helper thread prefetches ahead of the worker and is throttled by a barrier; \
                      above 1.0 the helper pays for itself, and the barrier's wait policy decides how much of the \
                      worker's core it takes."
            .to_string(),
    })]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spr_equals_serial<K: Kernel>(kernel: &K) {
        let cpus = crate::measure::pin::allowed_cpus();
        let pair = (cpus[0], *cpus.last().unwrap());
        let reference = serial(kernel, pair.0).out;
        let clock = Clock::calibrate();
        for name in ["barrier:spin", "barrier:futex", "pthread"] {
            let barrier = registry::BARRIERS.build(name, NonZeroU32::new(2).unwrap()).unwrap();
            let ran = spr(kernel, &*barrier, pair, &clock).unwrap();
            assert!(K::equal(&ran.out, &reference), "{name}: SPR result differs from the serial one");
            assert!((0.0..=100.0).contains(&ran.sync_pct), "{}", ran.sync_pct);
        }
    }

    #[test]
    fn spr_results_equal_the_serial_ones() {
        spr_equals_serial(&Spmv::generate(300, 5000, 6, 32, 3));
        spr_equals_serial(&Closure::generate(70, 200, 16, 3));
    }

    #[test]
    fn unknown_applications_are_refused_with_the_list() {
        assert_eq!(parse_apps("tc,spmv,tc").unwrap().0, ["tc", "spmv"]);
        let err = parse_apps("lu").unwrap_err();
        assert!(err.contains("spmv") && err.contains("tc"), "{err}");
    }
}
