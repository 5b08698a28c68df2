//! A reader of the repository alone can resolve everything it cites: every "seed NNN" in the
//! README, the docs and the crates has its entry in docs/sources.md, no markdown link leads
//! out of the repository (or to a file or heading that is not there), and no file names a
//! path outside it. Every feature a crate declares gates something. And the tree speaks of
//! the project as it is: no words of the work that made it, dates only where they stamp a
//! figure, pages short enough to read, and module docs short enough to hold a design.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the workspace root exists")
}

/// Every text file a reader of the repository sees: README.md and everything under docs/,
/// crates/, include/, scripts/ and .ci/, without build output.
fn text_files() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, files: &mut Vec<(PathBuf, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if entry.file_name() != "target" {
                    walk(&path, files);
                }
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                files.push((path, text)); // binary files (images) are not read
            }
        }
    }
    let root = root();
    let mut files = Vec::new();
    for top in ["README.md", "docs", "crates", "include", "scripts", ".ci"] {
        let path = root.join(top);
        if path.is_dir() {
            walk(&path, &mut files);
        } else {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            files.push((path, text));
        }
    }
    assert!(files.len() > 100, "found only {} files under {}", files.len(), root.display());
    files
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// The seed numbers `text` cites, with their line numbers: "seed 001", "Seed 003's",
/// "seeds 000 and 003", "seeds 000/002", "seeds 000, 001 or 004".
fn cited_seeds(text: &str) -> Vec<(usize, String)> {
    /// The three digits at the start of `text`, if it starts with exactly three.
    fn number(text: &str) -> Option<&str> {
        let digits = text.bytes().take_while(u8::is_ascii_digit).count();
        (digits == 3).then(|| &text[..3])
    }
    let mut cited = Vec::new();
    for (line_number, line) in text.lines().enumerate() {
        let lower = line.to_ascii_lowercase();
        for (at, _) in lower.match_indices("seed") {
            if lower[..at].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric()) {
                continue; // part of a longer word
            }
            let rest = lower[at + "seed".len()..].strip_prefix('s').unwrap_or(&lower[at + "seed".len()..]);
            let mut rest = rest.trim_start_matches(' ');
            while let Some(n) = number(rest) {
                cited.push((line_number + 1, n.to_string()));
                rest = &rest[3..];
                let Some(next) = [", and ", ", or ", ", ", " and ", " or ", "/", " & "]
                    .iter()
                    .find_map(|separator| rest.strip_prefix(separator))
                    .filter(|next| number(next).is_some())
                else {
                    break;
                };
                rest = next;
            }
        }
    }
    cited
}

/// `text` with each link `[words](target)` replaced by its words, as it is rendered.
fn link_words(text: &str) -> String {
    let mut rendered = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some((words, after)) = rest[open + 1..].split_once("](") else { break };
        let Some(close) = after.find(')') else { break };
        rendered.push_str(&rest[..open]);
        rendered.push_str(words);
        rest = &after[close + 1..];
    }
    rendered.push_str(rest);
    rendered
}

/// The anchors GitHub gives the headings of a markdown file.
fn anchors(markdown: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter_map(|line| line.strip_prefix('#'))
        .map(|heading| {
            link_words(heading.trim_start_matches('#'))
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// The numbers docs/sources.md has an entry (a "## seed NNN" heading) for.
fn sources_entries() -> BTreeSet<String> {
    let sources = std::fs::read_to_string(root().join("docs/sources.md")).expect("docs/sources.md exists");
    sources.lines().filter_map(|line| line.strip_prefix("## seed ")).map(|n| n.trim().to_string()).collect()
}

#[test]
fn the_citation_scanner_reads_every_form_the_code_uses() {
    let text = "Seed 001's barriers; seed 000 §V.D\nseeds 000 and 003, seeds 000/002; seed 004's 8192\n\
                (seeds 001, 002 or 004) the seeds' locks; a seed 42; reseed 005";
    let found: Vec<_> = cited_seeds(text).into_iter().map(|(line, n)| format!("{line}:{n}")).collect();
    assert_eq!(found, ["1:001", "1:000", "2:000", "2:003", "2:000", "2:002", "2:004", "3:001", "3:002", "3:004"]);
}

#[test]
fn every_cited_seed_has_an_entry_in_docs_sources_md() {
    let entries = sources_entries();
    assert!(!entries.is_empty(), "docs/sources.md has no `## seed NNN` entries");
    let mut cited = BTreeSet::new();
    let mut unresolved = Vec::new();
    for (path, text) in text_files() {
        for (line, number) in cited_seeds(&text) {
            if !entries.contains(&number) {
                unresolved.push(format!("{}:{line}: seed {number}", relative(&path)));
            }
            cited.insert(number);
        }
    }
    assert!(unresolved.is_empty(), "cited, but docs/sources.md has no entry for:\n{}", unresolved.join("\n"));
    // The scan found the citations there are (the code cites all five), so a pass means
    // something.
    assert_eq!(cited, entries, "docs/sources.md lists a seed that nothing cites, or the scan missed one");
}

/// The targets of the links in a markdown file, outside fenced code: inline links and
/// images, `[text](target)`, and reference definitions, `[label]: target`.
fn link_targets(markdown: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    let mut fenced = false;
    for (line_number, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (at, _) in line.match_indices("](") {
            let rest = &line[at + 2..];
            let target = match rest.strip_prefix('<') {
                Some(angled) => angled.split('>').next().unwrap_or_default(),
                None => rest.split([')', ' ']).next().unwrap_or_default(),
            };
            targets.push((line_number + 1, target.to_string()));
        }
        let trimmed = line.trim_start();
        if let Some(definition) = trimmed.strip_prefix('[').and_then(|rest| rest.split_once("]: ")) {
            targets.push((line_number + 1, definition.1.split(' ').next().unwrap_or_default().to_string()));
        }
    }
    targets
}

/// `path` with `.` and `..` resolved by name, as a link is.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

#[test]
fn no_markdown_link_leaves_the_repository_or_misses_its_target() {
    let root = root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for (path, text) in text_files().into_iter().filter(|(path, _)| path.extension().is_some_and(|e| e == "md")) {
        for (line, target) in link_targets(&text) {
            let place = format!("{}:{line}: {target}", relative(&path));
            if ["http://", "https://", "mailto:"].iter().any(|scheme| target.starts_with(scheme)) {
                continue; // the web, not a file
            }
            checked += 1;
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let resolved =
                if file.is_empty() { path.clone() } else { lexically_normal(&path.parent().unwrap().join(file)) };
            if file.starts_with('/') || !resolved.starts_with(&root) {
                broken.push(format!("{place} (outside the repository)"));
            } else if !resolved.exists() {
                broken.push(format!("{place} (no such file)"));
            } else if !anchor.is_empty() {
                let markdown = std::fs::read_to_string(&resolved).unwrap_or_default();
                if !anchors(&markdown).contains(anchor) {
                    broken.push(format!("{place} (no such heading)"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked >= 3, "found only {checked} links to files: is the scan reading the docs?");
}

#[test]
fn the_link_checker_refuses_links_out_of_the_repository() {
    let markdown = "See [the design](../shared/DESIGN.md) and ![x](docs/report.png).\n```\n[a](../b)\n```\n\
                    [seeds]: ../../seeds/INDEX.md\n";
    let targets: Vec<String> = link_targets(markdown).into_iter().map(|(_, target)| target).collect();
    assert_eq!(targets, ["../shared/DESIGN.md", "docs/report.png", "../../seeds/INDEX.md"]);
    let readme = root().join("README.md");
    assert!(!lexically_normal(&readme.parent().unwrap().join("../shared/DESIGN.md")).starts_with(root()));
    let headings = anchors("## seed 000\n# `spinlab app`: a real program\n# herd ([seed 004](sources.md#seed-004))\n");
    assert_eq!(headings, BTreeSet::from(["seed-000", "spinlab-app-a-real-program", "herd-seed-004"].map(String::from)));
}

#[test]
fn no_file_names_a_path_outside_the_repository() {
    let outside = ["../shared", "DESIGN.md", "STYLE.md", "seeds/"];
    let mut found = Vec::new();
    // This file's own examples name them.
    for (path, text) in text_files().into_iter().filter(|(path, _)| *path != this_file()) {
        for (line_number, line) in text.lines().enumerate() {
            for name in outside.iter().filter(|name| line.contains(*name)) {
                found.push(format!("{}:{}: {name}", relative(&path), line_number + 1));
            }
        }
    }
    assert!(found.is_empty(), "names outside the repository (cite docs/sources.md instead):\n{}", found.join("\n"));
}

#[test]
fn every_feature_a_crate_declares_gates_something() {
    let files = text_files();
    let mut unused = Vec::new();
    for (manifest, text) in files.iter().filter(|(path, _)| path.file_name().is_some_and(|n| n == "Cargo.toml")) {
        let Some(section) = text.split("\n[features]\n").nth(1) else { continue };
        let features = section.lines().take_while(|line| !line.starts_with('[')).filter_map(|line| {
            let name = line.split('=').next()?.trim();
            (!name.is_empty() && !name.starts_with('#') && name != "default").then_some(name)
        });
        let crate_dir = manifest.parent().unwrap();
        for feature in features {
            let gate = format!("feature = \"{feature}\"");
            let used = files.iter().any(|(path, text)| path.starts_with(crate_dir) && text.contains(&gate));
            if !used {
                unused.push(format!("{}: {feature}", relative(manifest)));
            }
        }
    }
    assert!(unused.is_empty(), "features that no `cfg(feature = …)` reads:\n{}", unused.join("\n"));
}

/// This file, which names the words it refuses.
fn this_file() -> PathBuf {
    root().join("crates/spinlab/tests/sources.rs")
}

/// Whether `lower` holds `word` with no letter or digit on either side.
fn has_word(lower: &str, word: &str) -> bool {
    lower.match_indices(word).any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let after = lower[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Whether `lower` holds `word` followed by a number (`word 10`, `word #10`).
fn has_numbered(lower: &str, word: &str) -> bool {
    lower.match_indices(word).any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let rest = lower[at + word.len()..].trim_start_matches('s');
        let rest = rest.strip_prefix(' ').map(|r| r.trim_start_matches('#'));
        !before.is_some_and(char::is_alphanumeric) && rest.is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// The work-log words in `line`, if any: what tells of how the project was made rather than
/// what it is. Such history belongs in the commit messages.
fn process_words(line: &str) -> Option<&'static str> {
    let lower = line.to_lowercase();
    if has_word(&lower, "session") || has_word(&lower, "sessions") {
        return Some("a work session");
    }
    if has_numbered(&lower, "issue") {
        return Some("a tracker number");
    }
    let narration = [
        "an earlier version",
        "an earlier build",
        "an earlier default",
        "an earlier protocol",
        "an earlier design",
        "the default until",
        "it used to",
        "this used to",
        "was lent",
    ];
    if let Some(phrase) = narration.iter().find(|phrase| lower.contains(*phrase)) {
        return Some(phrase);
    }
    let dated = |rest: &str| {
        rest.len() >= 5 && rest.as_bytes()[..4].iter().all(u8::is_ascii_digit) && rest.as_bytes()[4] == b'-'
    };
    ["until ", "since ", "from "]
        .iter()
        .any(|p| lower.match_indices(p).any(|(at, _)| dated(&lower[at + p.len()..])))
        .then_some("a dated narrative")
}

/// The dates (`YYYY-MM-DD`) in `line` that are not part of a timestamp (`YYYY-MM-DD HH:MM`).
fn dates(line: &str) -> usize {
    let bytes = line.as_bytes();
    let shape = |at: usize| {
        let digits =
            |range: std::ops::Range<usize>| range.into_iter().all(|i| bytes.get(i).is_some_and(u8::is_ascii_digit));
        digits(at..at + 4)
            && bytes.get(at + 4) == Some(&b'-')
            && digits(at + 5..at + 7)
            && bytes.get(at + 7) == Some(&b'-')
            && digits(at + 8..at + 10)
            && !bytes.get(at + 10).is_some_and(u8::is_ascii_digit)
            && (at == 0 || !bytes[at - 1].is_ascii_digit())
    };
    let timestamp = |at: usize| {
        let time = line.get(at + 10..at + 16).unwrap_or_default().as_bytes();
        time.len() == 6 && time[0] == b' ' && time[3] == b':' && [1, 2, 4, 5].iter().all(|&i| time[i].is_ascii_digit())
    };
    (0..bytes.len()).filter(|&at| line.is_char_boundary(at) && shape(at) && !timestamp(at)).count()
}

/// Whether `path` is prose or code that a reader reads (markdown, Rust, C, shell), not data.
fn is_read_text(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or_default();
    matches!(ext, "md" | "rs" | "c" | "h" | "sh" | "py" | "toml")
        || (ext.is_empty() && !name.starts_with('.'))
        || name == "run"
}

#[test]
fn the_process_scanner_knows_work_log_words_from_plain_ones() {
    for line in [
        "The thirty-ninth session measured it",
        "see issue 10",
        "issues #11 and 12",
        "the default until 2026-11-25",
        "(An earlier version slept here.)",
        "It used to abort",
        "since 2026-11-27 the gate",
    ] {
        assert!(process_words(line).is_some(), "{line}");
    }
    for line in [
        "a waiter that is no longer queued",
        "an earlier release's sleeper",
        "the issue is that a waiter sleeps",
        "sessionless",
        "the value used to index",
        "glibc 2.36, from 2 threads, from 2000 ns",
        "(attempt 2; the machine moved under the first)",
    ] {
        assert_eq!(process_words(line), None, "{line}");
    }
    assert_eq!(dates("| 1.02x | `cargo bench` | 2-CPU guest | 2026-12-02 |"), 1);
    assert_eq!(dates("`2026-04-01 12:34 UTC` from seconds"), 0);
    assert_eq!(dates("build 20261-12-02, x12026-12-021"), 0);
}

#[test]
fn the_tree_speaks_of_the_project_not_of_how_it_was_made() {
    let mut found = Vec::new();
    for (path, text) in text_files().into_iter().filter(|(path, _)| *path != this_file() && is_read_text(path)) {
        let markdown = path.extension().is_some_and(|e| e == "md");
        for (line_number, line) in text.lines().enumerate() {
            let place = format!("{}:{}", relative(&path), line_number + 1);
            if let Some(what) = process_words(line) {
                found.push(format!("{place}: {what}: {}", line.trim()));
            }
            // A date stamps a figure, and figures stand in tables: a date elsewhere dates a story.
            if dates(line) > 0 && !(markdown && line.trim_start().starts_with('|')) {
                found.push(format!("{place}: a date outside a table of figures: {}", line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "the history belongs in the commit messages:\n{}", found.join("\n"));
}

#[test]
fn every_page_is_short_enough_to_be_a_reference() {
    let limits = [("README.md", 8 * 1024), ("docs/contention.md", 30 * 1024)];
    let mut over = Vec::new();
    let mut pages = 0;
    for (path, text) in text_files().into_iter().filter(|(path, _)| path.extension().is_some_and(|e| e == "md")) {
        let name = relative(&path);
        let limit = limits.iter().find(|(page, _)| *page == name).map_or(40 * 1024, |&(_, limit)| limit);
        pages += 1;
        if text.len() > limit {
            over.push(format!("{name}: {} bytes, over {limit}", text.len()));
        }
    }
    assert!(pages >= 10, "found only {pages} pages");
    assert!(over.is_empty(), "pages too long to read as a reference:\n{}", over.join("\n"));
}

#[test]
fn every_module_doc_holds_a_design_in_a_few_lines() {
    const MOST: usize = 40;
    let mut long = Vec::new();
    let mut modules = 0;
    for (path, text) in text_files().into_iter().filter(|(path, _)| path.extension().is_some_and(|e| e == "rs")) {
        // Inner attributes (`#![cfg(loom)]`) may stand before the docs.
        let opening = |line: &&str| line.starts_with("//!") || line.starts_with("#![") || line.trim().is_empty();
        let lines = text.lines().take_while(opening);
        let doc = lines.filter(|line| line.starts_with("//!")).count();
        modules += usize::from(doc > 0);
        if doc > MOST {
            long.push(format!("{}: {doc} lines of module docs", relative(&path)));
        }
    }
    assert!(modules >= 50, "found only {modules} module docs");
    assert!(long.is_empty(), "module docs over {MOST} lines (the rest belongs in docs/):\n{}", long.join("\n"));
}

/// The sections that `text` cites in words, as code does where rustdoc cannot link:
/// `docs/NAME.md, "Heading"` or `NAME.md's "Heading"`, with their line numbers.
fn cited_sections(text: &str) -> Vec<(usize, String, String)> {
    let mut cited = Vec::new();
    for (line_number, line) in text.lines().enumerate() {
        for (at, _) in line.match_indices(".md") {
            let rest = &line[at + 3..];
            let Some(quoted) = [", \"", "'s \"", " \"", " (\""].iter().find_map(|p| rest.strip_prefix(p)) else {
                continue;
            };
            let Some((heading, _)) = quoted.split_once('"') else { continue };
            let start = line[..at].rfind(|c: char| !(c.is_alphanumeric() || "/_-.".contains(c))).map_or(0, |i| i + 1);
            cited.push((line_number + 1, line[start..at + 3].to_string(), heading.to_string()));
        }
    }
    cited
}

#[test]
fn every_section_cited_in_words_is_there() {
    let root = root();
    let mut missing = Vec::new();
    let mut checked = 0;
    for (path, text) in text_files().into_iter().filter(|(path, _)| *path != this_file()) {
        for (line, file, heading) in cited_sections(&text) {
            let name = file.trim_start_matches("docs/");
            let page =
                [root.join("docs").join(name), path.parent().unwrap().join(name)].into_iter().find(|p| p.is_file());
            let Some(page) = page else {
                missing.push(format!("{}:{line}: {file} (no such page)", relative(&path)));
                continue;
            };
            checked += 1;
            let markdown = std::fs::read_to_string(&page).unwrap_or_default();
            let headings: BTreeSet<String> = markdown
                .lines()
                .filter(|l| l.starts_with('#'))
                .map(|l| link_words(l.trim_start_matches('#')).trim().to_lowercase())
                .collect();
            if !headings.contains(&heading.to_lowercase()) {
                missing.push(format!("{}:{line}: {file}, \"{heading}\" (no such heading)", relative(&path)));
            }
        }
    }
    assert!(missing.is_empty(), "sections cited that are not there:\n{}", missing.join("\n"));
    assert!(checked >= 5, "found only {checked} sections cited in words");
}

#[test]
fn the_section_scanner_reads_every_form_the_code_uses() {
    let text = "(docs/design.md, \"The gate\") and herd.md's \"How it measures\"; see report.md \"X\"\n\
                docs/c.md (\"Status codes\"), a file.md, plain";
    let found: Vec<String> = cited_sections(text).into_iter().map(|(l, f, h)| format!("{l}:{f}:{h}")).collect();
    assert_eq!(
        found,
        ["1:docs/design.md:The gate", "1:herd.md:How it measures", "1:report.md:X", "2:docs/c.md:Status codes"]
    );
}
