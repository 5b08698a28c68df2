//! A reader of the repository alone can resolve everything it cites: every "seed NNN" in the
//! README, the docs and the crates has its entry in docs/sources.md, no markdown link leads
//! out of the repository (or to a file or heading that is not there), and no file names a
//! path outside it. And every feature a crate declares gates something.

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
    let this_file = root().join("crates/spinlab/tests/sources.rs");
    let mut found = Vec::new();
    // This file's own examples name them.
    for (path, text) in text_files().into_iter().filter(|(path, _)| *path != this_file) {
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
