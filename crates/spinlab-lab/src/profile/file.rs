//! The `spinlab.profile/1` file the preload library writes per process (docs/profile.md), as
//! types: every key a reader relies on is a field, so a file that lacks one is refused when
//! read rather than shown as zero.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The format name in every file.
pub const FORMAT: &str = "spinlab.profile/1";

/// One process's profile.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Profile {
    /// Always [`FORMAT`].
    pub format: String,
    pub pid: u32,
    pub parent_pid: u32,
    /// The executable's path.
    pub program: String,
    pub argv: Vec<String>,
    /// The lock its mutexes ran under, or `pthread` for glibc's.
    pub lock: String,
    /// `CLOCK_MONOTONIC` when the library started in this process and when the file was
    /// written, in ns.
    pub started_ns: u64,
    pub ended_ns: u64,
    /// Holds are timed once every this many acquisitions.
    pub hold_sample_every: u64,
    pub untracked_acquisitions: u64,
    /// Ordered by total wait, most first.
    pub sites: Vec<Site>,
}

/// Every object created (or first contended) at one place in the program.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Site {
    /// `mutex`, `spin`, `rwlock`, `cond`, `barrier`, `c11-mutex` or `glibc-mutex`.
    pub kind: String,
    /// Which stack `stack` is: `init`, `contended` or `none`.
    pub site: String,
    /// Innermost first.
    pub stack: Vec<Frame>,
    pub objects: u64,
    pub acquisitions: u64,
    pub contended: u64,
    pub owner_changes: u64,
    pub wait: Histogram,
    pub hold: Histogram,
    pub spin_ns: Option<u64>,
    pub yield_ns: Option<u64>,
    pub sleep_ns: Option<u64>,
    pub wakes: Option<u64>,
    pub wakes_empty: Option<u64>,
    pub max_waiters: u64,
    pub waiter_ns: u64,
    pub contended_ns: u64,
    pub cond: Option<CondCounts>,
    pub rwlock: Option<RwlockCounts>,
    pub top_objects: Vec<Object>,
}

/// One frame of a site's stack.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Frame {
    /// The instruction's address in the process.
    pub address: u64,
    /// The file it was mapped from, if known.
    pub module: Option<String>,
    /// Its offset in that file's mapping.
    pub offset: Option<u64>,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// Durations in log2 buckets.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Histogram {
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    /// `[upper_ns, count]`, ascending, the empty buckets left out.
    pub buckets: Vec<(u64, u64)>,
}

/// A condition variable site's counts.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct CondCounts {
    pub waits: u64,
    pub timed_waits: u64,
    pub timed_out: u64,
    /// Returns no signal accounts for; `None` where the condition variable cannot tell.
    pub spurious: Option<u64>,
    pub signals: u64,
    pub broadcasts: u64,
}

/// A reader-writer lock site's counts.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct RwlockCounts {
    pub reads: u64,
    pub writes: u64,
    pub read_contended: u64,
    pub write_contended: u64,
    pub read_wait_ns: u64,
    pub write_wait_ns: u64,
}

/// One object of a site.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Object {
    pub address: u64,
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ns: u64,
    pub max_wait_ns: u64,
    pub hold_ns: u64,
}

impl Profile {
    /// Reads one file, or says in one line why it is not a profile.
    pub fn read(path: &Path) -> Result<Profile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        let profile: Profile =
            serde_json::from_str(&text).map_err(|e| format!("{} is not a {FORMAT} file: {e}", path.display()))?;
        if profile.format != FORMAT {
            return Err(format!("{} has format `{}`; this spinlab reads {FORMAT}", path.display(), profile.format));
        }
        Ok(profile)
    }

    /// The wall time the library saw, in seconds.
    pub fn seconds(&self) -> f64 {
        self.ended_ns.saturating_sub(self.started_ns) as f64 * 1e-9
    }
}

impl Site {
    /// The innermost frame with a function name, or failing that the innermost frame.
    pub fn place(&self) -> Option<&Frame> {
        self.stack.iter().find(|f| f.function.is_some()).or(self.stack.first())
    }

    /// The site in a few words: its innermost named frame and that frame's caller,
    /// `make_queue (pool.c:31) ← main (pool.c:88)` (a lock made inside a wrapper, such as a
    /// C++ mutex class's constructor, is told apart by the caller), `libfoo.so+0x1a2b`, or
    /// what it groups when no stack was taken.
    pub fn name(&self) -> String {
        let Some(place) = self.place() else { return "(static, never contended)".to_string() };
        let at = self.stack.iter().position(|f| std::ptr::eq(f, place)).unwrap_or(0);
        match self.stack[at + 1..].iter().find(|f| f.function.is_some() && f.function != place.function) {
            Some(caller) => format!("{} ← {}", place.describe(), caller.describe()),
            None => place.describe(),
        }
    }

    /// Mean number of threads waiting while any waited.
    pub fn mean_waiters(&self) -> Option<f64> {
        (self.contended_ns > 0).then(|| self.waiter_ns as f64 / self.contended_ns as f64)
    }
}

impl Frame {
    /// `function (file:line)`, `function`, or `module+0xoffset`.
    pub fn describe(&self) -> String {
        let short = |path: &str| Path::new(path).file_name().map_or(path.to_string(), |n| n.to_string_lossy().into());
        match (&self.function, &self.file, self.line) {
            (Some(f), Some(file), Some(line)) => format!("{f} ({}:{line})", short(file)),
            (Some(f), _, _) => f.clone(),
            _ => match (&self.module, self.offset) {
                (Some(m), Some(off)) => format!("{}+{off:#x}", short(m)),
                _ => format!("{:#x}", self.address),
            },
        }
    }
}

/// The files that a run with `SPINLAB_STATS_FILE=PREFIX` left: `PREFIX.<pid>.json`, and
/// `PREFIX.<pid>.<n>.json` for the images an exec put in the same process after the first;
/// by pid, then image.
pub fn files_of(prefix: &Path) -> Result<Vec<PathBuf>, String> {
    let dir = prefix.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let stem = prefix.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut found: Vec<((u64, u64), PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let numbers = name.strip_prefix(&stem)?.strip_prefix('.')?.strip_suffix(".json")?;
            let (pid, image) = match numbers.split_once('.') {
                Some((pid, n)) => (pid.parse::<u64>().ok()?, n.parse::<u64>().ok()?),
                None => (numbers.parse::<u64>().ok()?, 0),
            };
            Some(((pid, image), entry.path()))
        })
        .collect();
    found.sort();
    Ok(found.into_iter().map(|(_, path)| path).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(function: Option<&str>, file: Option<&str>, line: Option<u32>) -> Frame {
        Frame {
            address: 0x1234,
            module: Some("/usr/bin/prog".into()),
            offset: Some(0x234),
            function: function.map(Into::into),
            file: file.map(Into::into),
            line,
        }
    }

    #[test]
    fn a_frame_says_what_it_knows() {
        assert_eq!(frame(Some("worker"), Some("/src/pool.c"), Some(42)).describe(), "worker (pool.c:42)");
        assert_eq!(frame(Some("worker"), None, None).describe(), "worker");
        assert_eq!(frame(None, None, None).describe(), "prog+0x234");
    }

    #[test]
    fn a_site_is_named_by_its_innermost_frame_and_that_frames_caller() {
        let site = |stack: Vec<Frame>| crate::profile::pprof::tests::site("mutex", stack, 1, 1);
        let ctor = frame(Some("rocksdb::port::Mutex::Mutex(bool)"), Some("/src/port.cc"), Some(50));
        let pool = frame(Some("rocksdb::ThreadPoolImpl::Impl::Impl()"), Some("/src/pool.cc"), Some(90));
        let unnamed = frame(None, None, None);
        assert_eq!(
            site(vec![unnamed.clone(), ctor.clone(), ctor.clone(), pool]).name(),
            "rocksdb::port::Mutex::Mutex(bool) (port.cc:50) ← rocksdb::ThreadPoolImpl::Impl::Impl() (pool.cc:90)",
            "the unnamed frame and the repeated function are passed over"
        );
        assert_eq!(site(vec![ctor]).name(), "rocksdb::port::Mutex::Mutex(bool) (port.cc:50)");
        assert_eq!(site(vec![unnamed]).name(), "prog+0x234");
        assert_eq!(site(Vec::new()).name(), "(static, never contended)");
    }

    #[test]
    fn the_files_of_a_prefix_are_its_pids_in_order() {
        let dir = std::env::temp_dir().join(format!("spinlab-profile-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["p.20.json", "p.3.1.json", "p.3.json", "p.x.json", "q.4.json", "p.5.txt", "p.6.y.json"] {
            std::fs::write(dir.join(name), "{}").unwrap();
        }
        let found = files_of(&dir.join("p")).unwrap();
        let names: Vec<_> = found.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["p.3.json", "p.3.1.json", "p.20.json"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
