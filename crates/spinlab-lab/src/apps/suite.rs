//! The suite's programs, one declaration each (docs/apps.md says how to add one).
//!
//! A command line's words may hold placeholders, replaced before each run: `{threads}` (the
//! entry's thread count), `{dir}` (the entry's temporary folder, made fresh for the suite's
//! run and removed after it) and `{port}` (the server's port, chosen free for each run).

use super::metric::{self, Output};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which way a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// A throughput: more is better.
    Higher,
    /// A time: less is better.
    Lower,
}

impl Better {
    /// Its name in the rows (`higher`, `lower`).
    pub fn name(self) -> &'static str {
        match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
        }
    }
}

/// What a program is measured by.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// Its name in the rows and the report (`events_per_s`).
    pub name: &'static str,
    /// Its unit (`events/s`).
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// Reads it from one run's output.
    pub parse: fn(&Output) -> Result<f64, String>,
}

/// What an entry's commands are run with.
#[derive(Clone, Debug)]
pub struct Context {
    /// The entry's temporary folder (`{dir}`).
    pub dir: PathBuf,
    /// The entry's thread count (`{threads}`).
    pub threads: u32,
    /// The server's port (`{port}`), when the entry has a server.
    pub port: Option<u16>,
    /// The size of generated input files, in bytes (`--input-mb`).
    pub input_bytes: u64,
}

impl Context {
    /// `words` with the placeholders replaced.
    pub fn expand(&self, words: &[&str]) -> Vec<String> {
        let port = self.port.map_or_else(String::new, |p| p.to_string());
        words
            .iter()
            .map(|w| {
                w.replace("{threads}", &self.threads.to_string())
                    .replace("{dir}", &self.dir.display().to_string())
                    .replace("{port}", &port)
            })
            .collect()
    }
}

/// How the suite knows a server is ready for its load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ready {
    /// A TCP connection to `127.0.0.1:{port}` succeeds.
    Connects,
    /// At once (a server that needs no port).
    Started,
}

/// A server the suite starts before each run of the load and stops after it. Under a lock,
/// the server is what runs through the preload library; the load runs plain.
#[derive(Clone, Copy, Debug)]
pub struct Server {
    /// Its command line, with placeholders.
    pub command: &'static [&'static str],
    /// When it is ready for the load.
    pub ready: Ready,
}

/// One program of the suite.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// Its name in `--programs`, the rows and the report.
    pub name: &'static str,
    /// The Debian packages that provide its programs.
    pub packages: &'static [&'static str],
    /// The executables it needs (each looked up in `PATH`).
    pub binaries: &'static [&'static str],
    /// The threads it runs (`{threads}`).
    pub threads: u32,
    /// Made once in `{dir}` before its runs, untimed and without the library (a database, an
    /// input file); why not, when it fails.
    pub prepare: fn(&Context) -> Result<(), String>,
    /// A server to start first, if any.
    pub server: Option<Server>,
    /// The command line measured (the load, when there is a server), with placeholders.
    pub command: &'static [&'static str],
    /// What it is measured by.
    pub metric: Metric,
    /// Whether one run computed what it should; why not, when it did not.
    pub check: fn(&Output, &Context) -> Result<(), String>,
    /// The longest one run may take, whatever `--timeout` says: the load is bounded in count
    /// by its command line and in time by this.
    pub time_limit: Duration,
}

/// Nothing to prepare.
pub fn nothing(_: &Context) -> Result<(), String> {
    Ok(())
}

/// The CPython workload, kept beside this file.
pub const THREADPOOL_PY: &str = include_str!("threadpool.py");

/// The checksum `threadpool.py 8 100000` prints: the sum of its hashes of 0..100000, whatever
/// order the workers took them in.
pub const THREADPOOL_CHECKSUM: u64 = 107_375_643_367_216;

/// The suite, in the order it runs.
pub const SUITE: &[Entry] = &[
    Entry {
        name: "sysbench-mutex",
        packages: &["sysbench"],
        binaries: &["sysbench"],
        threads: 8,
        prepare: nothing,
        server: None,
        command: &[
            "sysbench",
            "mutex",
            "--threads={threads}",
            "--mutex-num=16",
            "--mutex-locks=1000000",
            "--mutex-loops=50",
            "run",
        ],
        metric: Metric { name: "total_time_s", unit: "s", better: Better::Lower, parse: metric::sysbench_total_time },
        check: metric::sysbench_events_equal_threads,
        time_limit: Duration::from_secs(60),
    },
    Entry {
        name: "sysbench-threads",
        packages: &["sysbench"],
        binaries: &["sysbench"],
        threads: 8,
        prepare: nothing,
        server: None,
        command: &[
            "sysbench",
            "threads",
            "--threads={threads}",
            "--thread-yields=100",
            "--thread-locks=4",
            "--events=2000",
            "--time=0",
            "run",
        ],
        metric: Metric {
            name: "events_per_s",
            unit: "events/s",
            better: Better::Higher,
            parse: metric::sysbench_events_per_s,
        },
        check: metric::sysbench_events_2000,
        time_limit: Duration::from_secs(60),
    },
    Entry {
        name: "rocksdb-cache_bench",
        packages: &["rocksdb-tools"],
        binaries: &["cache_bench"],
        threads: 8,
        prepare: nothing,
        server: None,
        command: &[
            "cache_bench",
            "-threads={threads}",
            "-ops_per_thread=100000",
            "-cache_size=67108864",
            "-value_bytes=1024",
            "-num_shard_bits=2",
        ],
        metric: Metric { name: "ops_per_s", unit: "ops/s", better: Better::Higher, parse: metric::cache_bench_ops },
        check: metric::cache_bench_count,
        time_limit: Duration::from_secs(60),
    },
    Entry {
        name: "rocksdb-readrandom",
        packages: &["rocksdb-tools"],
        binaries: &["db_bench"],
        threads: 8,
        prepare: fill_db,
        server: None,
        command: db_bench_reading!("readrandom"),
        metric: Metric { name: "ops_per_s", unit: "ops/s", better: Better::Higher, parse: metric::db_bench_ops },
        check: metric::db_bench_all_found,
        time_limit: Duration::from_secs(60),
    },
    Entry {
        name: "rocksdb-readwhilewriting",
        packages: &["rocksdb-tools"],
        binaries: &["db_bench"],
        threads: 8,
        prepare: fill_db,
        server: None,
        command: db_bench_reading!("readwhilewriting"),
        metric: Metric { name: "ops_per_s", unit: "ops/s", better: Better::Higher, parse: metric::db_bench_ops },
        check: metric::db_bench_all_found,
        time_limit: Duration::from_secs(60),
    },
    Entry {
        name: "memcached",
        packages: &["memcached", "libmemcached-tools"],
        binaries: &["memcached", "memcslap"],
        threads: 8,
        prepare: nothing,
        server: Some(Server {
            // `-u nobody` only matters as root, where memcached refuses to run without it.
            command: &["memcached", "-t", "{threads}", "-l", "127.0.0.1", "-p", "{port}", "-U", "0", "-u", "nobody"],
            ready: Ready::Connects,
        }),
        command: &["memcslap", "--servers=127.0.0.1:{port}", "--test=set", "--concurrency=8", "--execute-number=10000"],
        metric: Metric { name: "sets_per_s", unit: "sets/s", better: Better::Higher, parse: metric::memcslap_rate },
        check: metric::memcslap_all_set,
        time_limit: Duration::from_secs(60),
    },
    Entry {
        name: "pigz",
        packages: &["pigz"],
        binaries: &["pigz"],
        threads: 8,
        prepare: metric::write_pigz_input,
        server: None,
        // -k keeps the input, -f overwrites the last run's output.
        command: &["pigz", "-p", "{threads}", "-k", "-f", "{dir}/input"],
        metric: Metric { name: "wall_s", unit: "s", better: Better::Lower, parse: metric::wall },
        check: metric::pigz_round_trip,
        time_limit: Duration::from_secs(120),
    },
    Entry {
        name: "cpython-threadpool",
        packages: &["python3"],
        binaries: &["python3"],
        threads: 8,
        prepare: write_threadpool_py,
        server: None,
        command: &["python3", "{dir}/threadpool.py", "{threads}", "100000"],
        metric: Metric { name: "items_per_s", unit: "items/s", better: Better::Higher, parse: metric::threadpool_rate },
        check: metric::threadpool_checksum,
        time_limit: Duration::from_secs(120),
    },
];

/// The command of a db_bench entry that runs `benchmark` over the database [`fill_db`] made.
macro_rules! db_bench_reading {
    ($benchmark:literal) => {
        &[
            "db_bench",
            concat!("-benchmarks=", $benchmark),
            "-use_existing_db=1",
            "-db={dir}/db",
            "-num=200000",
            "-reads=20000",
            "-threads={threads}",
            "-value_size=100",
            "-compression_type=none",
        ]
    };
}
use db_bench_reading;

/// `db_bench fillseq` into `{dir}/db`: the database both db_bench entries read.
fn fill_db(ctx: &Context) -> Result<(), String> {
    let db = ctx.dir.join("db");
    let args = ctx.expand(&[
        "-benchmarks=fillseq",
        "-db={dir}/db",
        "-num=200000",
        "-value_size=100",
        "-compression_type=none",
    ]);
    if db.exists() {
        return Ok(());
    }
    run_quietly(Path::new("db_bench"), &args)
}

fn write_threadpool_py(ctx: &Context) -> Result<(), String> {
    let path = ctx.dir.join("threadpool.py");
    std::fs::write(&path, THREADPOOL_PY).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Runs `program` with `args`, its output discarded; why not, when it fails.
pub(crate) fn run_quietly(program: &Path, args: &[String]) -> Result<(), String> {
    let status = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{} {}` failed: {status}", program.display(), args.join(" ")))
    }
}

/// The entries named in `names` (comma-separated), in the suite's order; or why not.
pub fn pick(names: &str) -> Result<Vec<&'static Entry>, String> {
    let items = crate::select::split_list(names)?;
    let known: Vec<&str> = SUITE.iter().map(|e| e.name).collect();
    if let Some(bad) = items.iter().find(|n| !known.contains(n)) {
        return Err(format!("`{bad}` is not a program of the suite; accepted: {}", known.join(", ")));
    }
    Ok(SUITE.iter().filter(|e| items.contains(&e.name)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_entry_runs_its_threads() {
        for (i, e) in SUITE.iter().enumerate() {
            assert!(SUITE[..i].iter().all(|o| o.name != e.name), "{} declared twice", e.name);
            let words = e.command.iter().chain(e.server.iter().flat_map(|s| s.command.iter()));
            assert!(words.clone().any(|w| w.contains("{threads}")), "{} does not pass its thread count", e.name);
            assert!(e.binaries.contains(&e.command[0]), "{}: {} is not among its binaries", e.name, e.command[0]);
        }
    }

    #[test]
    fn each_db_bench_entry_reads_the_filled_database_with_the_benchmark_it_is_named_after() {
        let readers: Vec<&Entry> = SUITE.iter().filter(|e| e.command[0] == "db_bench").collect();
        assert_eq!(readers.len(), 2);
        for e in readers {
            let benchmark = format!("-benchmarks={}", e.name.trim_start_matches("rocksdb-"));
            assert!(e.command.contains(&benchmark.as_str()), "{}: {:?}", e.name, e.command);
            assert!(e.command.contains(&"-use_existing_db=1") && e.command.contains(&"-db={dir}/db"), "{}", e.name);
        }
    }

    #[test]
    fn placeholders_are_replaced() {
        let ctx = Context { dir: PathBuf::from("/tmp/x"), threads: 8, port: Some(4242), input_bytes: 1 };
        assert_eq!(ctx.expand(&["-p", "{port}", "{dir}/db", "-t={threads}"]), ["-p", "4242", "/tmp/x/db", "-t=8"]);
    }

    #[test]
    fn programs_are_picked_by_name_in_the_suites_order() {
        let picked: Vec<&str> = pick("pigz,sysbench-mutex").unwrap().iter().map(|e| e.name).collect();
        assert_eq!(picked, ["sysbench-mutex", "pigz"]);
        let err = pick("pigz,nginx").unwrap_err();
        assert!(err.starts_with("`nginx` is not a program of the suite; accepted: sysbench-mutex"), "{err}");
    }
}
