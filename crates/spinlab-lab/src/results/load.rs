//! Reading a results document back: `spinlab compare` and `spinlab report --from`.

use super::{Results, SCHEMA};
use crate::error::LabError;
use serde_json::Value;
use std::path::Path;

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
    serde_json::from_value(value)
        .map_err(|e| LabError::usage(format!("{shown}: a {SCHEMA} document with a malformed part: {e}")))
}
