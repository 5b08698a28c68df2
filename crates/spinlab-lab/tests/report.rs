//! `spinlab report` end to end: the three files, the document's schema, one figure per
//! experiment, the verdict and the terminal summary, and the page as a browser renders it.
//!
//! The measuring test runs the report on the smallest settings (`--smoke`); its numbers are
//! noise and nothing here reads them. The other tests draw the report of a canned document
//! (tests/fixtures/report/results.json: a smoke run of a 2-CPU guest, plus hand-made barrier
//! and spr rows so that every chart kind is drawn, and no `recommendation[]`, as an older
//! build's documents have none). The browser test needs Chromium (Debian package `chromium`;
//! `scripts/test`, the README's test command, installs it); it lays the page out and measures,
//! in a script run on a copy of the page, every legend against every series mark.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn spinlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spinlab"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spinlab-report-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every experiment, in the order a report runs and shows them: `experiments::all`, as
/// `spinlab list --json` gives it.
fn all_experiments() -> Vec<String> {
    let out = spinlab().args(["list", "--json"]).output().unwrap();
    assert!(out.status.success(), "list failed: {}", String::from_utf8_lossy(&out.stderr));
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names = listing["experiments"].as_array().expect("list --json has experiments");
    names.iter().map(|n| n.as_str().unwrap().to_string()).collect()
}

/// One smoke report, shared by the tests that read it.
fn smoke_report() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch("smoke");
        let out = spinlab().args(["report", "--smoke", "--quiet", "--out"]).arg(&dir).output().unwrap();
        assert!(out.status.success(), "report failed: {}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("verdict (this run's numbers"), "{stdout}");
        dir
    })
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `<figure class="experiment" data-experiment="NAME">` per experiment, in order.
fn figures_in(html: &str) -> Vec<String> {
    html.split("data-experiment=\"").skip(1).map(|s| s.split('"').next().unwrap().to_string()).collect()
}

fn experiments_in(doc: &Value) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for run in doc["runs"].as_array().unwrap() {
        let name = run["experiment"].as_str().unwrap().to_string();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

#[test]
fn report_on_tiny_settings_writes_the_three_files_with_one_figure_per_experiment() {
    let dir = smoke_report();
    for file in ["results.json", "results.csv", "index.html"] {
        let len = std::fs::metadata(dir.join(file)).map(|m| m.len()).unwrap_or(0);
        assert!(len > 0, "{file} missing or empty");
    }
    let doc = read_json(&dir.join("results.json"));
    let experiments = experiments_in(&doc);
    let expected = all_experiments();
    assert_eq!(expected.first().map(String::as_str), Some("floor"), "the machine's floors first");
    assert_eq!(experiments, expected, "every experiment, in the order experiments::all runs them");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert_eq!(figures_in(&html), experiments, "one figure per experiment");
    for name in &experiments {
        let section = html.split(&format!("id=\"exp-{name}\"")).nth(1).unwrap().split("</section>").next().unwrap();
        assert!(
            section.contains("<svg") || section.contains("class=\"note\""),
            "{name}: neither a chart nor a reason why not"
        );
    }
    assert!(html.contains("id=\"verdict\"") && html.contains("id=\"machine\""));
    // The cost of moving a line, taken around every run (two usable CPUs or more), and its
    // range at the top of the page.
    if doc["machine"]["allowed_cpus"].as_str().is_some_and(|c| c.contains([',', '-'])) {
        for run in doc["runs"].as_array().unwrap() {
            for key in ["line_transfer_before_ns", "line_transfer_after_ns"] {
                assert!(run["params"][key].as_f64().is_some_and(|ns| ns > 0.0), "{}: {key}", run["experiment"]);
            }
        }
        assert!(html.contains("One-way cache-line transfer between two CPUs during this run"));
    }
    // (`xmlns="http://www.w3.org/2000/svg"` names a namespace; nothing is fetched from it.)
    for link in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(link), "the page must not load anything from the network: {link}");
    }
    // CSV: a header and one line per row.
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let rows: usize = doc["runs"].as_array().unwrap().iter().map(|r| r["rows"].as_array().unwrap().len()).sum();
    assert!(csv.starts_with("experiment,"));
    assert_eq!(csv.lines().count(), rows + 1);
}

/// Row keys that docs/results.md documents for `experiment`: every `key` in backquotes of its
/// section, plus the summary keys a documented `NAME_UNIT` implies.
fn documented_keys(doc_md: &str, experiment: &str) -> Option<Vec<String>> {
    let section = doc_md.split(&format!("## `{experiment}`")).nth(1)?.split("\n## ").next()?;
    let mut keys: Vec<String> = Vec::new();
    for piece in section.split('`').skip(1).step_by(2) {
        keys.push(piece.to_string());
    }
    Some(keys)
}

fn is_documented(key: &str, keys: &[String]) -> bool {
    if keys.iter().any(|k| k == key) {
        return true;
    }
    // `X_median_UNIT`, `X_sd_UNIT`, … of a documented `X_UNIT` (or `median_UNIT` of `UNIT`).
    for part in ["median", "sd", "ci95", "min", "max"] {
        if let Some(base) = key.strip_prefix(&format!("{part}_")) {
            if keys.iter().any(|k| k == base) {
                return true;
            }
        }
        if let Some((name, unit)) = key.split_once(&format!("_{part}_")) {
            if keys.iter().any(|k| *k == format!("{name}_{unit}")) {
                return true;
            }
        }
    }
    false
}

#[test]
fn results_json_validates_against_the_documented_schema() {
    let dir = smoke_report();
    let doc = read_json(&dir.join("results.json"));
    let docs_md = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results.md")).unwrap();
    let all_keys: Vec<String> = docs_md.split('`').skip(1).step_by(2).map(str::to_string).collect();
    // The document.
    assert_eq!(doc["schema"], "spinlab.results/1");
    assert!(doc["command"].as_array().is_some_and(|c| c.iter().all(Value::is_string)));
    assert!(doc["created_unix_s"].is_u64());
    for key in ["cpu_model", "logical_cpus", "allowed_cpus", "topology", "wait_features", "tsc", "absent"] {
        assert!(doc["machine"].get(key).is_some(), "machine.{key} missing");
    }
    // Runs and rows.
    for run in doc["runs"].as_array().unwrap() {
        let name = run["experiment"].as_str().unwrap();
        assert!(run["params"].is_object() && run["elapsed_s"].is_f64() && run["rows"].is_array(), "{name}");
        for key in ["maiv_pct", "min_reps", "max_reps", "load_average_start", "load_average_end"] {
            // An experiment with two stopping rules names them `min_reps_3a`, `min_reps_3b`.
            let params = run["params"].as_object().unwrap();
            let present = params.keys().any(|k| k == key || k.starts_with(&format!("{key}_")));
            assert!(present, "{name}: params.{key} missing (docs/results.md, A run)");
        }
        let keys =
            documented_keys(&docs_md, name).unwrap_or_else(|| panic!("docs/results.md has no section for `{name}`"));
        for row in run["rows"].as_array().unwrap() {
            let row = row.as_object().expect("a row is an object");
            if let Some(why) = row.get("skipped") {
                assert!(why.as_str().is_some_and(|w| !w.is_empty()), "{name}: a skipped row says why");
            }
            for (key, value) in row {
                assert!(!value.is_object() || key == "per_group", "{name}.{key}: rows are flat");
                let common = ["skipped", "reps", "stop"].contains(&key.as_str());
                // Sections refer to each other ("as in contention"): a key documented in another
                // experiment's section counts.
                let documented = is_documented(key, &keys) || is_documented(key, &all_keys);
                assert!(common || documented, "{name}: row key `{key}` is not in docs/results.md");
            }
        }
    }
}

#[test]
fn report_from_a_document_redraws_it_and_bad_options_fail_clearly() {
    let dir = scratch("from");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/results.json");
    let out = spinlab().args(["report", "--quiet", "--from"]).arg(&fixture).arg("--out").arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let doc = read_json(&fixture);
    assert_eq!(figures_in(&html), experiments_in(&doc));
    for name in experiments_in(&doc) {
        let section = html.split(&format!("id=\"exp-{name}\"")).nth(1).unwrap().split("</section>").next().unwrap();
        assert!(section.contains("<svg"), "{name}: no chart drawn from the fixture");
    }
    // The wake-up figure carries the latency-vs-interference scatter.
    assert!(html.contains("wake-up latency vs interference"));

    let out = spinlab().args(["report", "--only", "floor,nope"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("`nope` is not an experiment") && err.lines().count() == 1, "{err}");
}

/// `report --from DOCUMENT` into a fresh folder: the folder and the terminal summary.
fn report_from(document: &Path, name: &str) -> (PathBuf, String) {
    let dir = scratch(name);
    let out = spinlab().args(["report", "--quiet", "--from"]).arg(document).arg("--out").arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (dir, String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn the_terminal_summary_fits_in_40_lines_of_100_columns() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/results.json");
    let machine = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/machines/kvm-xeon-16/results.json");
    for (document, name) in [(&fixture, "summary-fixture"), (&machine, "summary-machine")] {
        let (dir, stdout) = report_from(document, name);
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(lines.len() <= 40, "{name}: {} lines:\n{stdout}", lines.len());
        let widest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(widest <= 100, "{name}: a line of {widest} columns:\n{stdout}");
        // The verdict, a line per situation of the document's recommendation, its choice on it.
        let doc = read_json(&dir.join("results.json"));
        let recommendation = doc["recommendation"].as_array().expect("results.json has the recommendation");
        assert!(recommendation.len() >= 10, "{name}: {} lines", recommendation.len());
        let verdict = stdout.split("verdict (").nth(1).expect("a verdict");
        let verdict_lines: Vec<&str> = verdict.lines().skip(2).take(recommendation.len()).collect();
        for (line, entry) in verdict_lines.iter().zip(recommendation) {
            let choice = entry["choice"].as_str().unwrap();
            assert!(line.contains(choice), "{name}: {choice} not on {line:?}");
        }
        // The scorecard in brief, and where the files are.
        assert!(stdout.contains("scorecard: ") && stdout.contains(" claims: "), "{name}: {stdout}");
        for file in ["index.html", "results.json", "results.csv"] {
            assert!(stdout.contains(&dir.join(file).display().to_string()), "{name}: {file}");
        }
    }
}

#[test]
fn results_json_gives_each_line_its_figure_runner_up_and_margin_and_an_older_document_still_renders() {
    // The fixture has no recommendation[], as an older build's documents have none: it
    // renders, its verdict drawn from its runs.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/results.json");
    assert!(read_json(&fixture).get("recommendation").is_none(), "the fixture stands for an older document");
    let (dir, _) = report_from(&fixture, "recommendation");
    let doc = read_json(&dir.join("results.json"));
    let lines = doc["recommendation"].as_array().unwrap();
    let chosen: Vec<&Value> = lines.iter().filter(|l| l["choice"] != "no recommendation").collect();
    assert!(!chosen.is_empty());
    for line in &chosen {
        let situation = line["situation"].as_str().unwrap();
        let figure = &line["figure"];
        assert!(figure["value"].is_f64() && figure["unit"].is_string() && figure["text"].is_string(), "{situation}");
        let runner_up = &line["runner_up"];
        assert!(runner_up["name"].is_string() && runner_up["figure"]["value"].is_f64(), "{situation}: {line}");
        let margin = &runner_up["margin"];
        assert!(["x", "points"].contains(&margin["unit"].as_str().unwrap()), "{situation}: {margin}");
        assert!(margin["value"].is_f64() && margin["tied"].is_boolean(), "{situation}: {margin}");
        let text = margin["text"].as_str().unwrap();
        assert_eq!(text.contains("within the interval"), margin["tied"] == true, "{situation}: {text}");
        assert!(line["why"].as_str().is_some_and(|w| !w.is_empty()), "{situation}: the reasoning in full");
    }
    // A document with the recommendation in it loads and draws the same verdict again.
    let (again, _) = report_from(&dir.join("results.json"), "recommendation-again");
    assert_eq!(read_json(&again.join("results.json"))["recommendation"], doc["recommendation"]);
}

#[test]
fn report_from_joins_the_parts_of_one_machine_and_refuses_other_machines_and_repeated_experiments() {
    let dir = scratch("join");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/results.json");
    let whole = read_json(&fixture);
    let runs = whole["runs"].as_array().unwrap();
    // Two documents as `report --only` would write them: the floor alone, then the rest, each
    // with its own command line and a TSC frequency measured a little differently.
    let part = |runs: Vec<Value>, command: &str, tsc_hz: u64| {
        let mut doc = whole.clone();
        doc["runs"] = Value::from(runs);
        doc["command"] = serde_json::json!(["spinlab", "report", "--only", command]);
        doc["machine"]["tsc"]["frequency_hz"] = Value::from(tsc_hz);
        doc
    };
    let (floor, rest): (Vec<Value>, Vec<Value>) = runs.iter().cloned().partition(|r| r["experiment"] == "floor");
    assert!(!floor.is_empty() && !rest.is_empty(), "the fixture has a floor run and others");
    let write = |name: &str, doc: &Value| {
        let path = dir.join(name);
        std::fs::write(&path, serde_json::to_string(doc).unwrap()).unwrap();
        path
    };
    let a = write("a.json", &part(floor.clone(), "floor", 2_100_000_000));
    let b = write("b.json", &part(rest.clone(), "rest", 2_100_300_000));

    let report = |from: &[&Path], out: &str| {
        let mut cmd = spinlab();
        cmd.args(["report", "--quiet"]);
        for f in from {
            cmd.arg("--from").arg(f);
        }
        cmd.arg("--out").arg(dir.join(out)).output().unwrap()
    };
    let out = report(&[&a, &b], "joined");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let joined = read_json(&dir.join("joined/results.json"));
    let experiments: Vec<&str> =
        joined["runs"].as_array().unwrap().iter().map(|r| r["experiment"].as_str().unwrap()).collect();
    let expected: Vec<&str> = floor.iter().chain(&rest).map(|r| r["experiment"].as_str().unwrap()).collect();
    assert_eq!(experiments, expected, "every run, in the order of the documents given");
    for run in joined["runs"].as_array().unwrap() {
        let command = run["params"]["from_command"].as_str().unwrap();
        let part = if run["experiment"] == "floor" { "floor" } else { "rest" };
        assert_eq!(command, format!("spinlab report --only {part}"), "each run names the command that made it");
    }
    // The joined document's scorecard is the whole one's: the same runs make the same claims.
    let out = report(&[&fixture], "whole");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let verdicts = |doc: &Value| -> Vec<(String, String)> {
        let lines = doc["scorecard"].as_array().unwrap().iter();
        lines.map(|l| (l["id"].as_str().unwrap().to_string(), l["here"].as_str().unwrap().to_string())).collect()
    };
    assert_eq!(verdicts(&joined), verdicts(&read_json(&dir.join("whole/results.json"))));

    let mut other = part(rest.clone(), "rest", 2_100_000_000);
    other["machine"]["cpu_model"] = Value::from("Big CPU");
    let other = write("other.json", &other);
    let again = write("again.json", &part(floor, "floor", 2_100_000_000));
    for (second, says) in
        [(&other, "measured on another machine than"), (&again, "its `floor` runs would stand beside")]
    {
        let out = report(&[&a, second], "refused");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says) && err.lines().count() == 1, "{err}");
    }
}

#[test]
fn the_scorecard_lists_every_claim_and_takes_another_machine_as_a_column() {
    let dir = scratch("scorecard");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/results.json");
    // Another machine's document, as docs/machines/NAME/results.json holds it: the fixture on a
    // CPU with SMT, whose interference run measured the Linux loop on the sibling.
    let mut other = read_json(&fixture);
    other["machine"]["cpu_model"] = Value::from("Big CPU");
    let sibling = |active: &str, behaviour: &str, pct: f64| {
        serde_json::json!({"lock": "ttas:spin", "wait": "spin", "active": active, "behaviour": behaviour,
                           "placement": "smt", "waiters": 1, "cpu_slowdown_pct": pct, "cpu_slowdown_ci95_pct": 1.0})
    };
    let interference = other["runs"].as_array_mut().unwrap().iter_mut().find(|r| r["experiment"] == "interference");
    let rows = interference.expect("the fixture has an interference run")["rows"].as_array_mut().unwrap();
    rows.retain(|r| r["placement"] != "smt");
    rows.extend([sibling("mbv-int", "multiple", 40.0), sibling("hash", "multiple", 44.0)]);
    let big = dir.join("machines/big");
    std::fs::create_dir_all(&big).unwrap();
    std::fs::write(big.join("results.json"), serde_json::to_string(&other).unwrap()).unwrap();

    let out = dir.join("out");
    let run = spinlab()
        .args(["report", "--quiet", "--from"])
        .arg(&fixture)
        .arg("--beside")
        .arg(big.join("results.json"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("machine B: big (Big CPU)"), "{stdout}");

    let doc = read_json(&out.join("results.json"));
    let card = doc["scorecard"].as_array().expect("results.json has the scorecard");
    assert!(card.len() >= 19);
    let verdicts = ["reproduced", "differs", "unsettled", "cannot test here", "not measured"];
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    for line in card {
        let id = line["id"].as_str().unwrap();
        let verdict = line["verdict"].as_str().unwrap();
        assert!(verdicts.contains(&verdict), "{id}: {verdict}");
        assert!(html.contains(&format!("id=\"claim-{id}\"")), "the page lacks {id}");
        // The terminal names every claim judged here (the others it counts).
        if ["reproduced", "differs", "unsettled"].contains(&verdict) {
            assert!(stdout.contains(id), "the terminal lacks {id}, judged {verdict}");
        }
        for key in ["seed", "source", "claim", "paper", "here", "why", "rows"] {
            assert!(line[key].is_string(), "{id}: no {key}");
        }
    }
    assert!(stdout.contains(&format!("scorecard: {} claims: ", card.len())), "{stdout}");
    let smt = card.iter().find(|l| l["id"] == "002-linux-loop-smt").unwrap();
    assert_eq!(smt["verdict"], "cannot test here", "the fixture's guest has no SMT");
    assert!(smt["why"].as_str().unwrap().contains("no SMT"), "{}", smt["why"]);

    let section =
        html.split("id=\"scorecard\"").nth(1).expect("the page has a scorecard").split("</table>").next().unwrap();
    assert!(section.contains("<th>big (Big CPU)</th>"));
    let row = section.split("id=\"claim-002-linux-loop-smt\"").nth(1).unwrap().split("</tr>").next().unwrap();
    assert!(row.contains("42 ± 0.707%") && row.contains("reproduced"), "the other machine's column: {row}");

    let missing = spinlab()
        .args(["report", "--quiet", "--from"])
        .arg(&fixture)
        .args(["--beside", "/nonexistent/results.json", "--out"])
        .arg(dir.join("out2"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent/results.json: cannot be read") && err.lines().count() == 1, "{err}");
}

#[test]
fn every_committed_machine_document_draws_as_a_column() {
    let machines = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/machines");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/results.json");
    let mut names: Vec<String> = std::fs::read_dir(&machines)
        .expect("docs/machines holds the other machines' reports")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| machines.join(name).join("results.json").is_file())
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no docs/machines/NAME/results.json");
    for name in names {
        let dir = scratch(&format!("machine-{name}"));
        let out = spinlab()
            .args(["report", "--quiet", "--from"])
            .arg(&fixture)
            .arg("--beside")
            .arg(machines.join(&name).join("results.json"))
            .arg("--out")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(&format!("machine B: {name} (")), "{name}: {stdout}");
        // The terminal's claims (lines that start with a seed's number): the last column is
        // the other machine's verdict.
        let judged = stdout
            .lines()
            .filter(|l| l.trim_start().starts_with("00"))
            .filter(|l| ["reproduced", "differs", "unsettled"].iter().any(|verdict| l.trim_end().ends_with(verdict)));
        assert!(judged.count() > 0, "{name}: its column judges no claim: {stdout}");
    }
}

/// Chromium's name on this machine.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success()))
}

#[test]
fn the_report_renders_in_headless_chromium_without_errors() {
    let browser = chromium().expect(
        "Chromium is needed to check the report renders: install the Debian package `chromium` \
         (apt-get install -y chromium); scripts/test, the README's test command, installs it",
    );
    let dir = scratch("chromium");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/results.json");
    let out = spinlab().args(["report", "--quiet", "--from"]).arg(&fixture).arg("--out").arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let png = dir.join("shot.png");
    let url = format!("file://{}", dir.join("index.html").display());
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,2000",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(&url)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {log}");
    // Console messages (script errors, blocked loads: the page's content security policy
    // refuses anything not inline) appear as `INFO:CONSOLE` lines.
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "the page logged: {console:#?}");

    let decoder = png::Decoder::new(std::fs::File::open(&png).expect("no screenshot written"));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), (1280, 2000));
    let channels = info.line_size / info.width as usize;
    let non_white = pixels[..info.buffer_size()].chunks(channels).filter(|p| p[..3].iter().any(|&c| c < 200)).count();
    let share = non_white as f64 / f64::from(info.width * info.height);
    // Text, tables and the first charts: a few percent of the pixels at least.
    assert!(share > 0.01, "the screenshot is (nearly) blank: {:.3}% ink", share * 100.0);

    // The browser parsed every chart: as many <svg> elements in its DOM as the file has.
    let dom = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--dump-dom"])
        .arg(format!("--user-data-dir={}", dir.join("profile2").display()))
        .arg(&url)
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.matches("<svg").count() >= 9);
    assert_eq!(dom.matches("<svg").count(), html.matches("<svg").count());

    // Laid out by the browser: no legend covers a series, and the verdict has a row per
    // situation with a choice in each. A copy of the page runs a script that measures both (the
    // page itself allows no script) and writes what it found into the DOM.
    let doc = read_json(&dir.join("results.json"));
    let situations = doc["recommendation"].as_array().unwrap().len();
    let policy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";
    assert!(html.contains(policy), "the page's content security policy changed: update this test");
    let checked = html
        .replace(policy, &format!("{policy}; script-src 'unsafe-inline'"))
        .replace("</body>", &format!("{LEGEND_CONTROL}<script>{LAYOUT_CHECK}</script>\n</body>"));
    std::fs::write(dir.join("check.html"), checked).unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--window-size=1280,2000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile3").display()))
        .arg(format!("file://{}", dir.join("check.html").display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let found = dom
        .split("<pre id=\"spinlab-check\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| panic!("the check wrote nothing: {}", String::from_utf8_lossy(&out.stderr)));
    let field = |key: &str| -> &str {
        found.split(' ').find_map(|f| f.strip_prefix(&format!("{key}="))).unwrap_or_else(|| panic!("{key}: {found}"))
    };
    let count = |key: &str| field(key).parse::<usize>().unwrap();
    // Every chart with a legend: the floor's, contention's, herd's, the wake-up bars and the
    // scatter, barrier's and spr's.
    assert!(count("legends") >= 8, "{found}");
    assert!(count("marks") >= 50, "series marks measured: {found}");
    assert_eq!(field("overlaps"), "", "a legend covers these series: {found}");
    assert_eq!(count("outside"), 0, "a legend runs out of its chart: {found}");
    // The control, a legend drawn over a point on purpose, shows the check sees an overlap.
    assert_eq!(field("control"), "1", "{found}");
    assert_eq!((count("rows"), count("chosen")), (situations, situations), "verdict rows, with a choice: {found}");
}

/// A chart whose legend covers its one point: the layout check must find this overlap.
const LEGEND_CONTROL: &str = "<div class=\"panel\" id=\"legend-control\"><svg xmlns=\"http://www.w3.org/2000/svg\" \
    width=\"100\" height=\"100\"><g class=\"series\" data-series=\"control\"><circle cx=\"50\" cy=\"50\" r=\"4\"/></g>\
    <g class=\"legend\"><rect x=\"40\" y=\"40\" width=\"30\" height=\"20\"/></g></svg></div>";

/// Measures, in the browser, every chart's legend against every mark of its series (their
/// bounding boxes), and the verdict's rows; writes `legends=N marks=N outside=N overlaps=…
/// control=N rows=N chosen=N` into `<pre id="spinlab-check">`.
const LAYOUT_CHECK: &str = r#"
(function () {
  const box = (e) => e.getBoundingClientRect();
  const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  let legends = 0, marks = 0, outside = 0, control = 0;
  const overlaps = [];
  for (const svg of document.querySelectorAll('.panel > svg')) {
    const isControl = svg.parentElement.id === 'legend-control';
    const frame = box(svg);
    const items = [];
    for (const e of svg.querySelectorAll('g.series *')) {
      const b = box(e);
      if (e.tagName !== 'g' && (b.width > 0 || b.height > 0)) items.push([e, b]);
    }
    if (!isControl) marks += items.length;
    for (const legend of svg.querySelectorAll('g.legend')) {
      const l = box(legend);
      if (!isControl) {
        legends += 1;
        if (l.left < frame.left - 0.5 || l.right > frame.right + 0.5 || l.top < frame.top - 0.5 || l.bottom > frame.bottom + 0.5) outside += 1;
      }
      for (const [e, b] of items) {
        if (!meet(l, b)) continue;
        if (isControl) { control += 1; continue; }
        const title = svg.querySelector('text') ? svg.querySelector('text').textContent.trim() : '?';
        overlaps.push(title + ':' + e.closest('g.series').dataset.series);
      }
    }
  }
  const rows = [...document.querySelectorAll('table.verdict tr.verdict-line')];
  const chosen = rows.filter((r) => r.querySelector('td.choice') && r.querySelector('td.choice').textContent.trim() !== '').length;
  const pre = document.createElement('pre');
  pre.id = 'spinlab-check';
  pre.textContent = `legends=${legends} marks=${marks} outside=${outside} overlaps=${overlaps.join('|').replace(/ /g, '_')} control=${control} rows=${rows.length} chosen=${chosen}`;
  document.body.appendChild(pre);
})();
"#;

#[test]
fn report_from_a_document_with_the_suite_draws_real_programs_and_one_without_does_not() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/apps/results.json");
    let (dir, stdout) = report_from(&fixture, "from-apps");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    let section = html.split("<section id=\"exp-apps\">").nth(1).expect("the section real programs");
    let section = section.split("</section>").next().unwrap();
    assert!(section.contains("<h2>real programs</h2>") && section.contains("<svg"), "a heading and a chart");
    assert!(section.contains("best on memcached: "), "the best lock per program");
    assert!(section.contains("default (adaptive:pause-yield-park): "), "the default's verdict");
    assert!(section.contains("title=\"run 1: the server exited during the load"), "the failed lock, with why");
    assert_eq!(figures_in(&html).iter().filter(|f| *f == "apps").count(), 1, "drawn once, not also as a figure");
    let line = stdout.lines().find(|l| l.starts_with("real programs: default (")).expect("the verdict in the summary");
    assert!(line.chars().count() <= 100, "{line}");
    assert!(stdout.lines().count() <= 40, "{stdout}");

    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/results.json");
    let (dir, stdout) = report_from(&fixture, "from-no-apps");
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(!html.contains("exp-apps") && !stdout.contains("real programs"), "no suite, no section");
}
