//! The skeleton an experiment's `run` shares when it makes one run: a progress bar named
//! after the experiment while the rows are measured, then the run given its rows and the time
//! it took.

use super::lab::Lab;
use crate::error::LabError;
use crate::measure::Progress;
use crate::results::{Row, Run};
use std::time::Instant;

/// Measures `run`'s rows with `measure`, under a progress bar of `steps` steps, and returns
/// the run with them and the time since `started` (the start of the experiment's `run`, so
/// the time includes its planning). On an error the bar is dropped unfinished, as the run is.
pub fn one_run(
    lab: &Lab,
    started: Instant,
    mut run: Run,
    steps: u64,
    measure: impl FnOnce(&Progress) -> Result<Vec<Row>, LabError>,
) -> Result<Vec<Run>, LabError> {
    let progress = lab.progress(&run.experiment, steps);
    let rows = measure(&progress)?;
    progress.finish();
    run.rows = rows;
    run.elapsed_s = started.elapsed().as_secs_f64();
    Ok(vec![run])
}
