//! Reading a results document back: `spinlab compare` and `spinlab report --from` (which also
//! joins the documents of one machine measured in parts).

use super::{Results, SCHEMA};
use crate::error::LabError;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Reads a results document, refusing anything that is not `spinlab.results/1`.
pub fn load(path: &Path) -> Result<Results, LabError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| LabError::usage(format!("{shown}: cannot be read: {e}")))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| LabError::usage(format!("{shown}: not a spinlab results document: not JSON ({e})")))?;
    match value.get("schema") {
        Some(Value::String(s)) if s == SCHEMA => {}
        Some(Value::String(s)) if s.starts_with("spinlab.results/") => {
            return Err(LabError::usage(format!("{shown}: schema version `{s}`; this spinlab reads `{SCHEMA}` only")))
        }
        _ => {
            return Err(LabError::usage(format!(
                "{shown}: not a spinlab results document (no \"schema\": \"{SCHEMA}\"); give a file written by \
                 `spinlab run … --json` or `spinlab report`"
            )))
        }
    }
    let results: Results = serde_json::from_value(value)
        .map_err(|e| LabError::usage(format!("{shown}: a {SCHEMA} document with a malformed part: {e}")))?;
    for run in &results.runs {
        super::rows::check(run)
            .map_err(|e| LabError::usage(format!("{shown}: a {SCHEMA} document with a malformed row: {e}")))?;
    }
    super::read::check(&results)
        .map_err(|e| LabError::usage(format!("{shown}: a {SCHEMA} document with a malformed part: {e}")))?;
    Ok(results)
}

/// The parts of a machine card that say which machine it is. The card also holds figures
/// measured at start-up, such as the TSC's frequency, which differ a little between two runs
/// on the same machine.
const MACHINE_IDENTITY: &[&str] =
    &["cpu_model", "logical_cpus", "allowed_cpus", "topology", "wait_features", "kernel", "spinlab_version"];

/// The run parameter, in a document joined from several, that gives the command line of the
/// document the run came from.
pub const FROM_COMMAND: &str = "from_command";

/// Reads one document, or joins several made on one machine by the same spinlab (a report
/// measured in parts, `--only` at a time): their runs in the order given, each stamped with
/// [`FROM_COMMAND`]. Refused when two documents come from different machines, or when two
/// hold runs of the same experiment (a reader would not know which to believe).
pub fn load_together(paths: &[PathBuf]) -> Result<Results, LabError> {
    let Some((first_path, rest)) = paths.split_first() else {
        return Err(LabError::usage("give at least one results document".to_string()));
    };
    let mut joined = load(first_path)?;
    if rest.is_empty() {
        return Ok(joined);
    }
    stamp_command(&mut joined);
    for path in rest {
        let mut next = load(path)?;
        if let Some(key) = MACHINE_IDENTITY.iter().find(|k| joined.machine.get(**k) != next.machine.get(**k)) {
            return Err(LabError::usage(format!(
                "{}: measured on another machine than {} (its `{key}` differs); give another machine's document \
                 with --beside",
                path.display(),
                first_path.display()
            )));
        }
        if let Some(run) = next.runs.iter().find(|r| joined.runs.iter().any(|j| j.experiment == r.experiment)) {
            return Err(LabError::usage(format!(
                "{}: its `{}` runs would stand beside another document's; give each experiment from one document",
                path.display(),
                run.experiment
            )));
        }
        stamp_command(&mut next);
        joined.created_unix_s = joined.created_unix_s.max(next.created_unix_s);
        joined.runs.append(&mut next.runs);
        joined.remeasured.append(&mut next.remeasured);
    }
    joined.command = std::env::args().collect();
    Ok(joined)
}

/// Stamps every run of `document` with the command line that made it.
fn stamp_command(document: &mut Results) {
    let command = document.command.join(" ");
    for run in &mut document.runs {
        run.param(FROM_COMMAND, command.as_str());
    }
}
