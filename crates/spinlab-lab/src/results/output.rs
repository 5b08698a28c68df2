//! Where machine-readable results go: `--json FILE` and `--csv FILE` (`-` for stdout). Each
//! path is checked for writing before anything runs, so a long run never ends in a failure
//! to save it.

use super::{csv, Results};
use crate::error::LabError;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sink {
    /// Standard output.
    Stdout,
    /// A file, created or replaced.
    File(PathBuf),
}

impl Sink {
    /// Checks that `path` can be written (`-` is stdout), without leaving a file behind.
    pub fn check(option: &str, path: &Path) -> Result<Sink, LabError> {
        if path.as_os_str() == "-" {
            return Ok(Sink::Stdout);
        }
        if path.is_dir() {
            return Err(LabError::usage(format!("{option} {}: is a directory; give a file path", path.display())));
        }
        let existed = path.exists();
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| LabError::usage(format!("{option} {}: cannot be written: {e}", path.display())))?;
        if !existed {
            let _ = fs::remove_file(path);
        }
        Ok(Sink::File(path.to_path_buf()))
    }

    fn write(&self, text: &str) -> Result<(), LabError> {
        match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())
                    .and_then(|()| out.flush())
                    .map_err(|e| LabError::failed(format!("writing to stdout: {e}")))
            }
            Sink::File(path) => {
                fs::write(path, text).map_err(|e| LabError::failed(format!("writing {}: {e}", path.display())))
            }
        }
    }
}

/// The machine-readable outputs of one invocation.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// `--json`.
    pub json: Option<Sink>,
    /// `--csv`.
    pub csv: Option<Sink>,
}

impl Outputs {
    /// Checks both paths.
    pub fn check(json: Option<&Path>, csv: Option<&Path>) -> Result<Outputs, LabError> {
        let json = json.map(|p| Sink::check("--json", p)).transpose()?;
        let csv = csv.map(|p| Sink::check("--csv", p)).transpose()?;
        if json == Some(Sink::Stdout) && csv == Some(Sink::Stdout) {
            return Err(LabError::usage("--json - and --csv - both ask for stdout; send one of them to a file"));
        }
        Ok(Outputs { json, csv })
    }

    /// Whether machine-readable output goes to stdout (then tables go to stderr).
    pub fn uses_stdout(&self) -> bool {
        self.json == Some(Sink::Stdout) || self.csv == Some(Sink::Stdout)
    }

    /// Prints `table` where tables go (stdout, or stderr when the document takes stdout),
    /// then writes the document.
    pub fn show_and_write(&self, table: &str, results: &Results) -> Result<(), LabError> {
        if self.uses_stdout() {
            eprint!("{table}");
        } else {
            let mut out = std::io::stdout().lock();
            let _ = std::io::Write::write_all(&mut out, table.as_bytes());
            let _ = std::io::Write::flush(&mut out);
        }
        self.write(results)
    }

    /// Writes the document.
    pub fn write(&self, results: &Results) -> Result<(), LabError> {
        if let Some(sink) = &self.json {
            let mut text = serde_json::to_string_pretty(results).map_err(|e| LabError::failed(e.to_string()))?;
            text.push('\n');
            sink.write(&text)?;
        }
        if let Some(sink) = &self.csv {
            sink.write(&csv::to_csv(results))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritable_paths_are_refused_and_probing_leaves_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("spinlab-output-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("r.json");
        assert_eq!(Sink::check("--json", &file), Ok(Sink::File(file.clone())));
        assert!(!file.exists(), "the probe must not leave a file");
        let err = Sink::check("--json", &dir.join("missing/r.json")).unwrap_err();
        assert!(err.to_string().starts_with("--json ") && err.exit_code() == 2, "{err}");
        assert!(Sink::check("--csv", &dir).unwrap_err().to_string().contains("is a directory"));
        assert_eq!(Sink::check("--json", Path::new("-")), Ok(Sink::Stdout));
        fs::remove_dir_all(&dir).unwrap();
    }
}
