//! The verdict: the recommendation as one table, one line per situation, giving the choice,
//! its figure, the runner-up and the margin between them; the reasoning folds beneath each
//! line. Below it, each caveat of a whole pass, said once and numbered; a line or a claim read
//! from that pass carries its number. Both for the page and for the terminal.

use super::escape::escape;
use super::lines;
use super::recommend::{Advice, NO_RECOMMENDATION};
use crate::reading::caveat::{self, Caveat};
use crate::results::Results;

/// The marks of `caveats` among the document's pass caveats `all` (`[1]`, `[2]`), and
/// whether any caveat is of the figure's own rows alone.
pub fn marks(all: &[Caveat], caveats: &[Caveat]) -> (Vec<usize>, bool) {
    let mut numbers: Vec<usize> = caveats.iter().filter_map(|c| caveat::number(all, c)).collect();
    numbers.dedup();
    (numbers, caveats.iter().any(|c| c.pass.is_none()))
}

/// `[1] [2]` as links to the caveats under the verdict.
pub fn html_marks(numbers: &[usize]) -> String {
    numbers
        .iter()
        .map(|n| format!(" <a class=\"mark\" href=\"#caveat-{n}\" title=\"caveat {n}, under the verdict\">[{n}]</a>"))
        .collect()
}

/// The page's verdict section.
pub fn html(results: &Results, advice: &[Advice]) -> String {
    let all = caveat::pass_caveats(results);
    let mut out = String::from("<h2 id=\"verdict\">Verdict</h2>\n");
    out.push_str(
        "<p>One line per situation, from this run's numbers: what to use, its figure, the best of the other \
         candidates, and the margin: the choice's figure over the runner-up's, turned so that above 1 the choice \
         measured better (for wait policies' interference, the difference in percentage points), with its 95% \
         interval. <em>Within the interval</em>: the two tie on this run and a fixed order chose. Open a line's \
         reasoning for the ties, the intervals and the caveats.</p>\n",
    );
    out.push_str(
        "<table class=\"verdict\">\n<tr><th>situation</th><th>use</th><th>figure</th><th>runner-up</th>\
         <th>margin</th><th>reasoning</th></tr>\n",
    );
    for a in advice {
        out.push_str(&line(&all, a));
    }
    out.push_str("</table>\n");
    out.push_str(&pass_caveats_html(results, &all));
    out
}

fn line(all: &[Caveat], a: &Advice) -> String {
    let (numbers, _) = marks(all, &a.caveats);
    let figure = a.figure.as_ref().map_or(String::new(), |f| f.words());
    let (runner_up, margin) = a.runner_up.as_ref().map_or((String::new(), String::new()), |r| {
        (format!("{} ({})", r.name, r.figure.value_words()), r.margin.words())
    });
    let mut why = format!("<p>{}</p>", escape(&a.why));
    for c in &a.caveats {
        match caveat::number(all, c) {
            Some(n) => why.push_str(&format!(
                "<p class=\"warn\">caveat <a href=\"#caveat-{n}\">[{n}]</a>: {} {}</p>",
                escape(&c.experiment),
                c.brief()
            )),
            None => why.push_str(&format!("<p class=\"warn\">caveat: {}</p>", escape(&c.text()))),
        }
    }
    let own = if a.caveats.iter().any(|c| c.pass.is_none()) { " <span class=\"mark\">!</span>" } else { "" };
    if a.choice == NO_RECOMMENDATION {
        return format!(
            "<tr class=\"verdict-line missing\" data-situation=\"{0}\"><td>{0}</td><td class=\"choice\">{1}</td>\
             <td class=\"figure\" colspan=\"4\">{2}</td></tr>\n",
            escape(&a.situation),
            escape(&a.choice),
            escape(&a.why),
        );
    }
    format!(
        "<tr class=\"verdict-line\" data-situation=\"{0}\"><td>{0}</td><td class=\"choice\">{1}{2}{own}</td>\
         <td class=\"figure\">{3}</td><td class=\"runner-up\">{4}</td><td class=\"margin\">{5}</td>\
         <td class=\"why\"><details><summary>why</summary>{why}</details></td></tr>\n",
        escape(&a.situation),
        escape(&a.choice),
        html_marks(&numbers),
        escape(&figure),
        escape(&runner_up),
        escape(&margin),
    )
}

/// Each caveat of a whole pass, once, numbered, naming the pass and linking to its figure.
fn pass_caveats_html(results: &Results, all: &[Caveat]) -> String {
    if all.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<div class=\"caveats\">\n<p>Caveats of whole passes, each said once: a line or claim marked [n] was read \
         from that pass, and its figures may not hold.</p>\n<ul>\n",
    );
    for (i, c) in all.iter().enumerate() {
        let run = c.pass.and_then(|p| results.runs.get(p));
        let name = run.map_or(c.experiment.clone(), caveat::pass_name);
        out.push_str(&format!(
            "<li id=\"caveat-{n}\" class=\"warn\">[{n}] <a href=\"#exp-{}\">{}</a>, {}: {}</li>\n",
            escape(&c.experiment),
            escape(&name),
            c.brief(),
            escape(&c.words),
            n = i + 1
        ));
    }
    out.push_str("</ul>\n</div>\n");
    out
}

/// The terminal's verdict: a header, one line per situation, and what the marks mean.
pub fn terminal(advice: &[Advice], all: &[Caveat]) -> Vec<String> {
    let mut rows = vec![["situation", "use", "figure", "runner-up", "margin", ""].map(String::from).to_vec()];
    let mut own = false;
    for a in advice {
        let (numbers, own_here) = marks(all, &a.caveats);
        own |= own_here;
        let mut flags: Vec<String> = numbers.iter().map(|n| format!("[{n}]")).collect();
        if own_here {
            flags.push("*".to_string());
        }
        if a.choice == NO_RECOMMENDATION {
            // Nothing measured: the reason runs on where the figures would be.
            rows.push(vec![a.brief.clone(), a.choice.clone(), a.why.clone()]);
            continue;
        }
        let (runner_up, margin) =
            a.runner_up.as_ref().map_or((String::new(), String::new()), |r| (r.name.clone(), r.margin.brief()));
        rows.push(vec![
            a.brief.clone(),
            a.choice.clone(),
            a.figure.as_ref().map_or(String::new(), |f| f.brief()),
            runner_up,
            margin,
            flags.join(""),
        ]);
    }
    let mut out = vec!["verdict (this run's numbers; the reasoning of each line is in index.html):".to_string()];
    out.extend(lines::columns(&rows));
    let mut key = "margin: the choice over the runner-up, above 1 better; tied: within the 95% intervals".to_string();
    if !all.is_empty() {
        key.push_str("; [n]: caveat n");
    }
    if own {
        key.push_str("; *: a caveat of the line's own rows");
    }
    out.extend(lines::wrap(&format!("({key})"), "  ", "   "));
    out
}

/// The terminal's list of pass caveats, each once on one line, in at most `budget` lines: one
/// line per pass where there are more caveats than that, or a count where there are more
/// passes too.
pub fn terminal_caveats(results: &Results, all: &[Caveat], budget: usize) -> Vec<String> {
    if all.is_empty() {
        return Vec::new();
    }
    let name = |c: &Caveat| c.pass.and_then(|p| results.runs.get(p)).map_or(c.experiment.clone(), caveat::pass_name);
    let mut lines = vec!["caveats of whole passes, each said once:".to_string()];
    let said = |i: usize, c: &Caveat| format!("[{}] {}, {}: {}", i + 1, name(c), c.brief(), c.words);
    let wrapped: Vec<String> =
        all.iter().enumerate().flat_map(|(i, c)| lines::wrap(&said(i, c), "  ", "      ")).collect();
    if wrapped.len() < budget {
        lines.extend(wrapped);
        return lines;
    }
    if all.len() < budget {
        lines.extend(all.iter().enumerate().map(|(i, c)| lines::cut(&format!("  {}", said(i, c)))));
        return lines;
    }
    let mut passes: Vec<(String, Vec<usize>, Vec<&str>)> = Vec::new();
    for (i, c) in all.iter().enumerate() {
        match passes.iter_mut().find(|(n, ..)| *n == name(c)) {
            Some((_, numbers, briefs)) => {
                numbers.push(i + 1);
                briefs.push(c.brief());
            }
            None => passes.push((name(c), vec![i + 1], vec![c.brief()])),
        }
    }
    if passes.len() < budget {
        for (pass, numbers, briefs) in passes {
            let numbers: Vec<String> = numbers.iter().map(usize::to_string).collect();
            lines.push(lines::cut(&format!("  [{}] {pass}: {}", numbers.join(", "), briefs.join(", "))));
        }
    } else {
        lines.push(format!("  [1]-[{}]: caveats of {} passes, each said in index.html", all.len(), passes.len()));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::advice::{Figure, Margin, RunnerUp, Unit};
    use crate::reading::scorecard::Estimate;
    use crate::results::{Run, UNDER_LOAD};

    fn loaded_document() -> Results {
        let mut results = Results::new(&serde_json::json!({"allowed_cpus": "0-1"}));
        let mut run = Run::new("contention");
        run.param("cs_ns", 100).param(UNDER_LOAD, "other processes used 35% of the CPUs");
        results.runs.push(run);
        results
    }

    fn chosen(all: &[Caveat]) -> Advice {
        let est = |value| Estimate::within(value, value * 0.05);
        let runner_up = RunnerUp {
            name: "ttas:spin".to_string(),
            figure: Figure::new(est(3.5e6), Unit::Acquisitions, ""),
            margin: Margin::higher(&est(2.3e6), &est(3.5e6), true).unwrap(),
        };
        let mut line =
            Advice::new("short critical section, threads <= CPUs", "short cs, <= CPUs", "std".into(), "w".into())
                .chosen_by(Figure::new(est(2.3e6), Unit::Acquisitions, "at 2 threads"), Some(runner_up));
        line.caveats = all.to_vec();
        line
    }

    #[test]
    fn a_line_gives_its_figure_runner_up_and_margin_and_points_to_its_pass_caveat() {
        let results = loaded_document();
        let all = caveat::pass_caveats(&results);
        let advice = [chosen(&all), Advice::missing("herd", "herd, > CPUs", "not measured".into())];
        let page = html(&results, &advice);
        let row = page.split("data-situation=\"short").nth(1).unwrap().split("</tr>").next().unwrap();
        assert!(row.contains("<td class=\"choice\">std <a class=\"mark\" href=\"#caveat-1\""), "{row}");
        assert!(row.contains("2.3M acquisitions/s at 2 threads"), "{row}");
        assert!(
            row.contains("ttas:spin (3.5M acquisitions/s)") && row.contains("0.657x, within the interval"),
            "{row}"
        );
        assert!(row.contains("<details><summary>why</summary>"), "{row}");
        // The pass's caveat in full once, under the table; the line only points to it.
        assert_eq!(page.matches("other processes used 35% of the CPUs").count(), 1, "{page}");
        assert!(page.contains(
            "<li id=\"caveat-1\" class=\"warn\">[1] <a href=\"#exp-contention\">contention \
                               (critical section 100 ns)</a>, under load"
        ));
        let text = terminal(&advice, &all);
        assert!(text[2].contains("short cs, <= CPUs") && text[2].contains("0.657x, tied") && text[2].ends_with("[1]"));
        assert!(text[3].starts_with("  herd, > CPUs") && text[3].contains(NO_RECOMMENDATION), "{text:?}");
        let listed = terminal_caveats(&results, &all, 5);
        assert_eq!(
            listed[1],
            "  [1] contention (critical section 100 ns), under load: other processes used 35% of the CPUs"
        );
        assert_eq!(terminal_caveats(&results, &all, 1)[1], "  [1]-[1]: caveats of 1 passes, each said in index.html");
    }
}
