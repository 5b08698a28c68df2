//! Tables for the terminal: chosen columns of a run's rows, skipped rows with their reason.

use super::Row;
use comfy_table::{presets::UTF8_FULL_CONDENSED, CellAlignment, ContentArrangement, Table};
use serde_json::Value;

/// One column: the row key it shows and its heading.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// The row key.
    pub key: &'static str,
    /// The heading.
    pub header: &'static str,
}

/// A column.
pub const fn col(key: &'static str, header: &'static str) -> Column {
    Column { key, header }
}

/// Groups digits in threes: `1234567` → `1 234 567`.
fn grouped(n: i128) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(ch);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// A number as a person reads it: whole numbers grouped, others to a sensible precision.
pub fn format_number(x: f64) -> String {
    if !x.is_finite() {
        return "-".to_string();
    }
    let a = x.abs();
    if a >= 1000.0 || (x.fract() == 0.0 && a < 1e15) {
        grouped(x.round() as i128)
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

fn format_value(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "-".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => grouped(i as i128),
            None => format_number(n.as_f64().unwrap_or(f64::NAN)),
        },
        Some(Value::Bool(b)) => b.to_string(),
        Some(v) => v.to_string(),
    }
}

/// The rows under the columns, with a `note` column for skipped rows' reasons.
pub fn render(rows: &[Row], columns: &[Column]) -> String {
    table(rows, columns).to_string()
}

/// The same, at most `width` characters wide: cells that would make a line longer are
/// wrapped within their column, except the first column's (a row's name stays whole).
pub fn render_within(rows: &[Row], columns: &[Column], width: usize) -> String {
    let mut table = table(rows, columns);
    table.set_width(u16::try_from(width).unwrap_or(u16::MAX));
    if let Some(first) = table.column_mut(0) {
        first.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
    }
    table.to_string()
}

fn table(rows: &[Row], columns: &[Column]) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic);
    let any_skipped = rows.iter().any(Row::is_skipped);
    let mut header: Vec<&str> = columns.iter().map(|c| c.header).collect();
    if any_skipped {
        header.push("note");
    }
    table.set_header(header);
    for row in rows {
        let mut cells: Vec<String> = columns.iter().map(|c| format_value(row.get(c.key))).collect();
        if any_skipped {
            cells.push(row.text("skipped").map(|s| format!("skipped: {s}")).unwrap_or_default());
        }
        table.add_row(cells);
    }
    for (i, c) in columns.iter().enumerate() {
        let numeric = rows.iter().any(|r| matches!(r.get(c.key), Some(Value::Number(_))));
        if let Some(column) = table.column_mut(i) {
            column.set_cell_alignment(if numeric { CellAlignment::Right } else { CellAlignment::Left });
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(format_number(1234567.4), "1 234 567");
        assert_eq!(format_number(12.345), "12.35");
        assert_eq!(format_number(0.99871), "0.9987");
        assert_eq!(format_number(250.0), "250");
        assert_eq!(format_number(f64::NAN), "-");
    }

    #[test]
    fn skipped_rows_show_their_reason() {
        let rows = vec![
            Row::new().with("placement", "core").with("ns", 40.5),
            Row::new().with("placement", "smt").skipped("no SMT"),
        ];
        let text = render(&rows, &[col("placement", "placement"), col("ns", "one-way ns")]);
        assert!(text.contains("skipped: no SMT") && text.contains("40.50"), "{text}");
    }

    #[test]
    fn a_table_held_to_a_width_wraps_its_cells_instead_of_its_lines() {
        let long = "a reason long enough that one line of the table could not hold it beside its name";
        let rows = vec![Row::new().with("name", "ttas:spin").with("why", long)];
        let columns = [col("name", "name"), col("why", "why not")];
        assert!(render(&rows, &columns).lines().any(|l| l.chars().count() > 60));
        let text = render_within(&rows, &columns, 60);
        assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
        assert!(text.contains("ttas:spin") && text.contains("beside its"), "{text}");
    }
}
