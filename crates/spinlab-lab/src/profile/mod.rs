//! `spinlab profile`: where a program waits. The program runs once under one lock through
//! the preload library with `SPINLAB_STATS_FILE` set, so each of its processes writes its
//! profile (`spinlab.profile/1`, [`file`]) at exit; spinlab then writes, into `--out`:
//!
//! - `index.html` (`page`): per process, the top sites by total wait as bars, each site's
//!   wait and hold histograms, its counts and its stack;
//! - `profile.pb.gz` (`pprof`): the same sites as a pprof profile;
//! - `raw/profile.PID.json`: the files themselves;
//!
//! and prints the top sites of each process. `--from` draws the same outputs from files kept
//! from an earlier run. See docs/profile.md.

mod file;
mod page;
mod pprof;

pub(crate) use file::{files_of, Profile};

use crate::app;
use crate::error::LabError;
use crate::select::LockChoice;
use clap::Args;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `spinlab profile`'s options.
#[derive(Args, Clone, Debug)]
pub struct ProfileOptions {
    /// The lock the program's mutexes run under: ALGORITHM:POLICY, parking_lot, pthread
    /// (glibc's own, profiled through the library) or `default`
    #[arg(long, value_name = "LOCK", default_value = "default", value_parser = parse_lock)]
    pub lock: LockArg,
    /// The directory for index.html, profile.pb.gz and raw/ (made if missing)
    #[arg(long, value_name = "DIR", default_value = "spinlab-profile")]
    pub out: PathBuf,
    /// How many sites of each process to show, 1 to 1000
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = parse_top)]
    pub top: usize,
    /// Draw the outputs from these profile files (raw/profile.PID.json of an earlier run)
    /// instead of running a program
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with = "command")]
    pub from: Vec<PathBuf>,
    /// The program and its arguments, after `--`
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// A `--lock` value: one lock the preload library can run.
#[derive(Clone, Debug)]
pub struct LockArg(pub LockChoice);

fn parse_lock(text: &str) -> Result<LockArg, String> {
    let locks = app::parse_locks(text)?.0;
    match <[LockChoice; 1]>::try_from(locks) {
        Ok([lock]) => Ok(LockArg(lock)),
        Err(_) => {
            Err(format!("`{text}` names more than one lock; give one (`spinlab app --profile` compares several)"))
        }
    }
}

fn parse_top(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!("`{text}` is not a site count; accepted: 1 to 1000")),
    }
}

/// Runs `spinlab profile`.
pub fn run(options: &ProfileOptions) -> Result<(), LabError> {
    let raw = options.out.join("raw");
    let (profiles, command, status) = if options.from.is_empty() {
        if options.command.is_empty() {
            return Err(LabError::usage(
                "no command to profile; give it after `--` (spinlab profile [--lock LOCK] -- COMMAND [ARGS...]), \
                 or draw from saved files with --from FILE...",
            ));
        }
        std::fs::create_dir_all(&raw).map_err(|e| LabError::usage(format!("cannot make {}: {e}", raw.display())))?;
        for old in files_of(&raw.join("profile")).map_err(LabError::failed)? {
            let _ = std::fs::remove_file(old);
        }
        let status = run_under(&options.command, &options.lock.0, &raw.join("profile"))?;
        let files = files_of(&raw.join("profile")).map_err(LabError::failed)?;
        let profiles =
            files.iter().map(|f| Profile::read(f)).collect::<Result<Vec<_>, _>>().map_err(LabError::failed)?;
        (profiles, options.command.join(" "), Some(status))
    } else {
        let profiles =
            options.from.iter().map(|f| Profile::read(f)).collect::<Result<Vec<_>, _>>().map_err(LabError::usage)?;
        let command = profiles.first().map(|p| p.argv.join(" ")).unwrap_or_default();
        (profiles, command, None)
    };
    write_outputs(&options.out, &command, &profiles, options.top)?;
    print!("{}", terminal(&profiles, options.top));
    println!(
        "spinlab profile: {} process(es); wrote {} and {}",
        profiles.len(),
        options.out.join("index.html").display(),
        options.out.join("profile.pb.gz").display()
    );
    match status {
        Some(status) if !status.success() => Err(LabError::failed(format!(
            "`{}` exited with {status}; its profile is written all the same",
            options.command[0]
        ))),
        _ => Ok(()),
    }
}

/// Runs `command` once under `lock` with each process writing `prefix.PID.json`; its
/// standard streams are the terminal's.
pub(crate) fn run_under(
    command: &[String],
    lock: &LockChoice,
    prefix: &Path,
) -> Result<std::process::ExitStatus, LabError> {
    let preload = app::preload_path()?;
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]);
    app::preload_env(&mut cmd, Some(lock), &preload);
    cmd.env("SPINLAB_STATS_FILE", prefix).env_remove("SPINLAB_STATS");
    cmd.status().map_err(|e| LabError::failed(format!("cannot run `{}`: {e}", command[0])))
}

fn write_outputs(out: &Path, command: &str, profiles: &[Profile], top: usize) -> Result<(), LabError> {
    std::fs::create_dir_all(out).map_err(|e| LabError::usage(format!("cannot make {}: {e}", out.display())))?;
    let write = |name: &str, bytes: &[u8]| {
        let path = out.join(name);
        std::fs::write(&path, bytes).map_err(|e| LabError::failed(format!("writing {}: {e}", path.display())))
    };
    write("index.html", page::page(command, profiles, top).as_bytes())?;
    write("profile.pb.gz", &pprof::encode(profiles))
}

/// Nanoseconds in the largest unit that keeps a digit before the point.
pub(crate) fn duration(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.1} us", ns as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// `part` of `whole` as a percentage, `-` when `whole` is 0.
pub(crate) fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", 100.0 * part as f64 / whole as f64)
    }
}

/// A site's name cut to `width` characters, keeping its start (the innermost frame).
pub(crate) fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let head: String = text.chars().take(width - 1).collect();
    format!("{head}…")
}

/// The top sites of each process, as text within 100 columns.
pub(crate) fn terminal(profiles: &[Profile], top: usize) -> String {
    let mut out = String::new();
    if profiles.is_empty() {
        out.push_str("spinlab profile: no process wrote a profile (the program took no lock)\n");
    }
    for p in profiles {
        let _ = writeln!(
            out,
            "pid {} {} under {}: {} site(s), {:.2} s",
            p.pid,
            p.program,
            p.lock,
            p.sites.len(),
            p.seconds()
        );
        let _ = writeln!(
            out,
            "  {:<38} {:>5} {:>9} {:>6} {:>9} {:>9} {:>8} {:>7}",
            "site", "objs", "acquired", "cont.", "wait", "p99 wait", "p99 hold", "waiters"
        );
        for s in p.sites.iter().take(top) {
            let _ = writeln!(
                out,
                "  {:<38} {:>5} {:>9} {:>6} {:>9} {:>9} {:>8} {:>7}",
                fit(&format!("{} {}", s.kind, s.name()), 38),
                s.objects,
                s.acquisitions,
                share(s.contended, s.acquisitions),
                duration(s.wait.total_ns),
                if s.wait.count > 0 { duration(s.wait.p99_ns) } else { "-".into() },
                if s.hold.count > 0 { duration(s.hold.p99_ns) } else { "-".into() },
                s.mean_waiters().map_or("-".to_string(), |w| format!("{w:.2}")),
            );
        }
    }
    out
}

/// The sites of `profiles` as (name, total wait) by name, summed over processes and over
/// sites of the same name: what `spinlab app --profile` compares between locks.
pub(crate) fn waits_by_site(profiles: &[Profile]) -> Vec<(String, u64)> {
    let mut by: Vec<(String, u64)> = Vec::new();
    for s in profiles.iter().flat_map(|p| &p.sites) {
        // glibc's kinds name the same places: a site compares across locks, pthread included.
        let name = format!("{} {}", s.kind.trim_start_matches("glibc-"), s.name());
        match by.iter_mut().find(|(n, _)| *n == name) {
            Some((_, ns)) => *ns += s.wait.total_ns,
            None => by.push((name, s.wait.total_ns)),
        }
    }
    by.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    by
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_too_long_keep_their_innermost_frame() {
        assert_eq!(fit("short", 10), "short");
        let cut = fit("mutex make_queue (pool.c:31) ← main (pool.c:88)", 28);
        assert_eq!(cut.chars().count(), 28);
        assert_eq!(cut, "mutex make_queue (pool.c:31…");
    }

    #[test]
    fn shares_and_durations() {
        assert_eq!(share(1, 4), "25.0%");
        assert_eq!(share(1, 0), "-");
        assert_eq!(duration(1_500), "1.5 us");
        assert_eq!(duration(2_500_000_000), "2.50 s");
    }

    #[test]
    fn bad_site_counts_say_what_is_accepted() {
        assert!(parse_top("0").unwrap_err().contains("1 to 1000"));
        assert!(parse_top("x").is_err());
        assert_eq!(parse_top("25"), Ok(25));
    }
}
