//! Text laid out for the terminal: lines of at most [`COLUMNS`] columns, cut with an ellipsis
//! or wrapped, and tables fitted to them.

/// The most columns a line of the terminal summary takes.
pub const COLUMNS: usize = 100;

/// The width of `text` in columns (one per character: the summary writes no wide ones).
pub fn width(text: &str) -> usize {
    text.chars().count()
}

/// `text` cut to [`COLUMNS`], with an ellipsis where it was cut.
pub fn cut(text: &str) -> String {
    cut_to(text, COLUMNS)
}

fn cut_to(text: &str, columns: usize) -> String {
    if width(text) <= columns {
        return text.to_string();
    }
    let kept: String = text.chars().take(columns.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// `text` in lines of at most [`COLUMNS`]: the first begins with `first`, the rest with `rest`.
pub fn wrap(text: &str, first: &str, rest: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && width(&line) + 1 + width(word) > COLUMNS {
            lines.push(line);
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    lines.push(cut(&line));
    lines
}

/// Rows of cells (the first a header) laid out in columns two spaces apart, indented by two
/// and fitted to [`COLUMNS`]: while the natural widths do not fit, the widest column is cut.
/// A row with fewer cells than the widest has its last cell run on to the end of the line
/// (cut there) rather than widen its column. Empty trailing cells leave no trailing spaces.
pub fn columns(rows: &[Vec<String>]) -> Vec<String> {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    // The cells that set column i's width: those of full rows, and those before a short row's
    // last.
    let sets_width = |row: &Vec<String>, i: usize| row.len() == n || i + 1 < row.len();
    let mut widths: Vec<usize> = (0..n)
        .map(|i| rows.iter().filter(|r| sets_width(r, i)).filter_map(|r| r.get(i)).map(|c| width(c)).max().unwrap_or(0))
        .collect();
    let used = |w: &[usize]| 2 + w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
    while used(&widths) > COLUMNS {
        let Some((widest, _)) = widths.iter().enumerate().max_by_key(|(_, w)| **w) else { break };
        if widths[widest] <= 4 {
            break;
        }
        widths[widest] -= 1;
    }
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, cell)| {
                    if !sets_width(row, i) {
                        return cell.clone();
                    }
                    let cell = cut_to(cell, widths[i]);
                    let pad = widths[i] - width(&cell);
                    format!("{cell}{}", " ".repeat(pad))
                })
                .collect();
            cut(format!("  {}", cells.join("  ")).trim_end())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_too_wide_is_cut_in_its_widest_column_and_text_wraps_at_the_columns() {
        let long = "x".repeat(120);
        let rows = vec![vec!["a".to_string(), "b".to_string()], vec!["short".to_string(), long]];
        let lines = columns(&rows);
        assert!(lines.iter().all(|l| width(l) <= COLUMNS), "{lines:?}");
        assert!(lines[1].starts_with("  short  xxx") && lines[1].ends_with('…'), "{lines:?}");
        assert_eq!(lines[0], "  a      b");
        let text = "word ".repeat(40);
        let wrapped = wrap(&text, "  ", "    ");
        assert!(wrapped.len() == 3 && wrapped.iter().all(|l| width(l) <= COLUMNS), "{wrapped:?}");
        assert!(wrapped[1].starts_with("    word"));
        // A short row's last cell runs on without widening its column.
        let rows = vec![
            vec!["a".to_string(), "b".to_string(), "c".to_string()],
            vec!["aa".to_string(), "a reason longer than any column".to_string()],
        ];
        assert_eq!(columns(&rows), ["  a   b  c", "  aa  a reason longer than any column"]);
    }
}
