//! CSV: every row of every run, one line each, under the union of their keys (first seen,
//! first column), with an `experiment` column first. Arrays and objects (`per_thread`,
//! `per_group`) are written as compact JSON inside one quoted cell.

use super::Results;
use serde_json::Value;

fn cell(value: Option<&Value>) -> String {
    let text = match value {
        None | Some(Value::Null) => return String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v @ (Value::Array(_) | Value::Object(_))) => v.to_string(),
        Some(v) => v.to_string(),
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// The document as CSV text.
pub fn to_csv(results: &Results) -> String {
    let mut columns: Vec<String> = vec!["experiment".to_string()];
    for run in &results.runs {
        for row in &run.rows {
            for key in row.0.keys() {
                if !columns.contains(key) {
                    columns.push(key.clone());
                }
            }
        }
    }
    let mut out = columns.iter().map(|c| cell(Some(&Value::String(c.clone())))).collect::<Vec<_>>().join(",");
    out.push('\n');
    for run in &results.runs {
        for row in &run.rows {
            let cells: Vec<String> = columns
                .iter()
                .map(|c| {
                    if c == "experiment" {
                        cell(Some(&Value::String(run.experiment.clone())))
                    } else {
                        cell(row.get(c))
                    }
                })
                .collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Row, Run};

    #[test]
    fn rows_flatten_under_the_union_of_keys() {
        let mut results = Results::new(&serde_json::json!({}));
        let mut run = Run::new("contention");
        run.rows.push(Row::new().with("lock", "std").with("threads", 2).with("per_thread", vec![1, 2]));
        run.rows.push(Row::new().with("lock", "a,b").with("skipped", "say \"no\""));
        results.runs.push(run);
        let csv = to_csv(&results);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "experiment,lock,threads,per_thread,skipped");
        assert_eq!(lines[1], "contention,std,2,\"[1,2]\",");
        assert_eq!(lines[2], "contention,\"a,b\",,,\"say \"\"no\"\"\"");
    }
}
