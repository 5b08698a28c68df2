//! Each program's metric read from its own output, and each program's check that a run
//! computed what it should. The tests read real output of each program, kept in
//! tests/fixtures/apps/.

use super::suite::{Context, THREADPOOL_CHECKSUM};
use std::io::{BufWriter, Read, Write};
use std::path::Path;

/// One run's output.
#[derive(Clone, Debug, Default)]
pub struct Output {
    /// What it wrote to stdout.
    pub stdout: String,
    /// What it wrote to stderr.
    pub stderr: String,
    /// Spawn to reap, in seconds.
    pub wall_s: f64,
}

/// The first number after `label` on the first line that holds it (a word with its
/// punctuation and unit trimmed: `0.7102s` is 0.7102).
fn number_after(text: &str, label: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.contains(label))?;
    let rest = &line[line.find(label)? + label.len()..];
    rest.split_whitespace().find_map(|w| w.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok())
}

/// `number_after`, or a line naming what was missing.
fn field(text: &str, label: &str, program: &str) -> Result<f64, String> {
    number_after(text, label).ok_or_else(|| format!("{program} printed no `{}`", label.trim()))
}

/// The run's own wall time (pigz prints nothing).
pub fn wall(out: &Output) -> Result<f64, String> {
    Ok(out.wall_s)
}

/// sysbench's `total time:` (`0.7102s`).
pub fn sysbench_total_time(out: &Output) -> Result<f64, String> {
    field(&out.stdout, "total time:", "sysbench")
}

/// sysbench's events over its total time.
pub fn sysbench_events_per_s(out: &Output) -> Result<f64, String> {
    let events = field(&out.stdout, "total number of events:", "sysbench")?;
    let time = sysbench_total_time(out)?;
    if time > 0.0 {
        Ok(events / time)
    } else {
        Err(format!("sysbench reported a total time of {time} s"))
    }
}

fn sysbench_events(out: &Output, expected: u64) -> Result<(), String> {
    let events = field(&out.stdout, "total number of events:", "sysbench")?;
    if events == expected as f64 {
        Ok(())
    } else {
        Err(format!("sysbench ran {events} events, not {expected}"))
    }
}

/// `sysbench mutex` runs one event per thread.
pub fn sysbench_events_equal_threads(out: &Output, ctx: &Context) -> Result<(), String> {
    sysbench_events(out, u64::from(ctx.threads))
}

/// `sysbench threads --events=2000` runs 2000 events.
pub fn sysbench_events_2000(out: &Output, _: &Context) -> Result<(), String> {
    sysbench_events(out, 2000)
}

/// cache_bench's `Rough parallel ops/sec = N`.
pub fn cache_bench_ops(out: &Output) -> Result<f64, String> {
    field(&out.stdout, "Rough parallel ops/sec", "cache_bench")
}

/// cache_bench's latency histogram counts every operation of every thread.
pub fn cache_bench_count(out: &Output, ctx: &Context) -> Result<(), String> {
    let per_thread = field(&out.stdout, "Ops per thread", "cache_bench")?;
    let count = field(&out.stdout, "Count:", "cache_bench")?;
    let expected = per_thread * f64::from(ctx.threads);
    if count == expected {
        Ok(())
    } else {
        Err(format!("cache_bench counted {count} operations, not {expected}"))
    }
}

/// The line of db_bench's result (`readrandom   :      59.388 micros/op 123718 ops/sec …`).
fn db_bench_result(out: &Output) -> Result<&str, String> {
    out.stdout
        .lines()
        .find(|l| l.contains(" micros/op ") && l.contains(" ops/sec"))
        .ok_or_else(|| "db_bench printed no result line (`… micros/op … ops/sec`)".to_string())
}

/// db_bench's `N ops/sec`.
pub fn db_bench_ops(out: &Output) -> Result<f64, String> {
    let line = db_bench_result(out)?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "ops/sec").filter(|&i| i > 0).ok_or("db_bench: no ops/sec")?;
    words[at - 1].parse().map_err(|_| format!("db_bench: `{}` is not a number of ops/sec", words[at - 1]))
}

/// db_bench's `(F of N found)`: every key read was found in the database it was filled with.
pub fn db_bench_all_found(out: &Output, _: &Context) -> Result<(), String> {
    let line = db_bench_result(out)?;
    let inside = line.rsplit_once('(').map(|(_, r)| r).ok_or("db_bench printed no `(F of N found)`")?;
    let words: Vec<&str> = inside.split_whitespace().collect();
    match words.as_slice() {
        [found, "of", total, ..] if found == total => Ok(()),
        [found, "of", total, ..] => Err(format!("db_bench found {found} of {total} keys")),
        _ => Err("db_bench printed no `(F of N found)`".to_string()),
    }
}

/// memcslap's `Time to set N keys by T threads: S seconds.` as `(N, T, S)`.
fn memcslap_set(out: &Output) -> Result<(f64, f64, f64), String> {
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("Time to set") && l.contains(" threads:"))
        .ok_or("memcslap printed no `Time to set N keys by T threads`")?;
    let numbers: Vec<f64> = line.split_whitespace().filter_map(|w| w.trim_end_matches(':').parse().ok()).collect();
    match numbers.as_slice() {
        [keys, threads, seconds] => Ok((*keys, *threads, *seconds)),
        _ => Err(format!("memcslap: cannot read `{line}`")),
    }
}

/// memcslap's keys set per second.
pub fn memcslap_rate(out: &Output) -> Result<f64, String> {
    let (keys, _, seconds) = memcslap_set(out)?;
    if seconds > 0.0 {
        Ok(keys / seconds)
    } else {
        Err(format!("memcslap set {keys} keys in {seconds} s"))
    }
}

/// Every thread of memcslap set every key, with no error from the server.
pub fn memcslap_all_set(out: &Output, _: &Context) -> Result<(), String> {
    if let Some(line) = out.stderr.lines().chain(out.stdout.lines()).find(|l| l.contains("Fatal error")) {
        return Err(format!("memcslap: {}", line.trim()));
    }
    let (keys, threads, _) = memcslap_set(out)?;
    let per_thread = number_after(&out.stdout, "Time to generate").ok_or("memcslap printed no `Time to generate`")?;
    if keys == threads * per_thread {
        Ok(())
    } else {
        Err(format!("memcslap set {keys} keys, not {threads} threads × {per_thread}"))
    }
}

/// threadpool.py's `ops_per_s`.
pub fn threadpool_rate(out: &Output) -> Result<f64, String> {
    field(&out.stdout, "ops_per_s ", "threadpool.py")
}

/// threadpool.py's checksum, against the one its items give.
pub fn threadpool_checksum(out: &Output, _: &Context) -> Result<(), String> {
    let line =
        out.stdout.lines().find_map(|l| l.strip_prefix("checksum ")).ok_or("threadpool.py printed no checksum")?;
    match line.trim().parse::<u64>() {
        Ok(THREADPOOL_CHECKSUM) => Ok(()),
        Ok(other) => Err(format!("threadpool.py's checksum is {other}, not {THREADPOOL_CHECKSUM}")),
        Err(_) => Err(format!("threadpool.py's checksum `{line}` is not a number")),
    }
}

/// A word-salad stream, the same for every run: words of 2 to 9 letters from 16 drawn from a
/// fixed generator, so pigz finds repeats to compress (about 2.4:1) and work in every block.
pub fn pigz_input(bytes: u64, out: &mut impl Write) -> std::io::Result<()> {
    // SplitMix64 from a fixed seed.
    let mut state: u64 = 0x5eed_f919;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let words: Vec<Vec<u8>> = (0..4000)
        .map(|_| {
            let len = 2 + next() % 8;
            (0..len).map(|_| b'a' + (next() % 16) as u8).collect()
        })
        .collect();
    let mut written = 0u64;
    let mut line = Vec::with_capacity(1024);
    while written < bytes {
        line.clear();
        for i in 0..64 {
            if i > 0 {
                line.push(b' ');
            }
            line.extend_from_slice(&words[(next() % words.len() as u64) as usize]);
        }
        line.push(b'\n');
        let take = line.len().min((bytes - written) as usize);
        out.write_all(&line[..take])?;
        written += take as u64;
    }
    Ok(())
}

/// Writes `{dir}/input` for pigz, `ctx.input_bytes` long.
pub fn write_pigz_input(ctx: &Context) -> Result<(), String> {
    let path = ctx.dir.join("input");
    let file = std::fs::File::create(&path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    let mut out = BufWriter::new(file);
    pigz_input(ctx.input_bytes, &mut out)
        .and_then(|()| out.flush())
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

/// `{dir}/input.gz` decompresses (by `pigz -d`, run plain) to `{dir}/input` byte for byte.
pub fn pigz_round_trip(_: &Output, ctx: &Context) -> Result<(), String> {
    let packed = ctx.dir.join("input.gz");
    let mut child = std::process::Command::new("pigz")
        .args(["-d", "-c"])
        .arg(&packed)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run pigz -d: {e}"))?;
    let unpacked = child.stdout.take().ok_or("pigz -d gave no output")?;
    let same = same_bytes(unpacked, &ctx.dir.join("input"));
    let status = child.wait().map_err(|e| format!("waiting for pigz -d: {e}"))?;
    same?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("pigz -d {} failed: {status}", packed.display()))
    }
}

/// Whether `stream` holds exactly the bytes of the file at `path`; where they differ, if not.
fn same_bytes(mut stream: impl Read, path: &Path) -> Result<(), String> {
    let mut file = std::fs::File::open(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
    let (mut a, mut b) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    let mut offset = 0u64;
    loop {
        let n = read_full(&mut stream, &mut a).map_err(|e| format!("reading pigz -d: {e}"))?;
        let m = read_full(&mut file, &mut b).map_err(|e| format!("reading {}: {e}", path.display()))?;
        if let Some(i) = (0..n.min(m)).find(|&i| a[i] != b[i]) {
            return Err(format!("the decompressed output differs from the input at byte {}", offset + i as u64));
        }
        if n != m {
            return Err(format!(
                "the decompressed output is {} bytes where the input is {}",
                offset + n as u64,
                offset + m as u64
            ));
        }
        if n == 0 {
            return Ok(());
        }
        offset += n as u64;
    }
}

/// Reads until `buf` is full or the stream ends.
fn read_full(stream: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match stream.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    macro_rules! fixture {
        ($name:literal) => {
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/apps/", $name))
        };
    }

    fn stdout(text: &str) -> Output {
        Output { stdout: text.to_string(), ..Output::default() }
    }

    fn ctx(threads: u32) -> Context {
        Context { dir: PathBuf::from("/nonexistent"), threads, port: None, input_bytes: 0 }
    }

    #[test]
    fn sysbench_mutex_is_its_total_time_and_one_event_per_thread() {
        let out = stdout(fixture!("sysbench-mutex.stdout"));
        assert_eq!(sysbench_total_time(&out), Ok(0.7102));
        assert_eq!(sysbench_events_equal_threads(&out, &ctx(8)), Ok(()));
        assert_eq!(sysbench_events_equal_threads(&out, &ctx(4)), Err("sysbench ran 8 events, not 4".to_string()));
    }

    #[test]
    fn sysbench_threads_is_its_events_per_second() {
        let out = stdout(fixture!("sysbench-threads.stdout"));
        let rate = sysbench_events_per_s(&out).unwrap();
        assert!((rate - 2000.0 / 1.2817).abs() < 1e-6, "{rate}");
        assert_eq!(sysbench_events_2000(&out, &ctx(8)), Ok(()));
        assert!(sysbench_events_per_s(&stdout("")).unwrap_err().contains("total number of events"));
    }

    #[test]
    fn cache_bench_is_its_parallel_ops_and_counts_every_operation() {
        let out = stdout(fixture!("cache_bench.stdout"));
        assert_eq!(cache_bench_ops(&out), Ok(number_after(&out.stdout, "ops/sec").unwrap()));
        assert!(cache_bench_ops(&out).unwrap() > 1000.0);
        assert_eq!(cache_bench_count(&out, &ctx(8)), Ok(()));
        assert!(cache_bench_count(&out, &ctx(16)).unwrap_err().contains("not 800000"));
    }

    #[test]
    fn db_bench_is_its_ops_per_second_with_every_key_found() {
        let out = stdout(fixture!("db_bench-readrandom.stdout"));
        assert_eq!(db_bench_ops(&out), Ok(123718.0));
        assert_eq!(db_bench_all_found(&out, &ctx(8)), Ok(()));
        let out = stdout(fixture!("db_bench-readwhilewriting.stdout"));
        assert_eq!(db_bench_ops(&out), Ok(65515.0));
        assert_eq!(db_bench_all_found(&out, &ctx(8)), Ok(()));
        let lost = stdout(&out.stdout.replace("(20000 of 20000 found)", "(19990 of 20000 found)"));
        assert_eq!(db_bench_all_found(&lost, &ctx(8)), Err("db_bench found 19990 of 20000 keys".to_string()));
    }

    #[test]
    fn memcslap_is_its_sets_per_second_and_a_refused_connection_fails_the_check() {
        let out = stdout(fixture!("memcslap.stdout"));
        let (keys, threads, seconds) = memcslap_set(&out).unwrap();
        assert_eq!((keys, threads), (80000.0, 8.0));
        assert_eq!(memcslap_rate(&out), Ok(keys / seconds));
        assert_eq!(memcslap_all_set(&out, &ctx(8)), Ok(()));
        let refused = Output {
            stdout: fixture!("memcslap-refused.stdout").to_string(),
            stderr: fixture!("memcslap-refused.stderr").to_string(),
            wall_s: 0.0,
        };
        let why = memcslap_all_set(&refused, &ctx(8)).unwrap_err();
        assert!(why.starts_with("memcslap: Fatal error") && why.contains("CONNECTION FAILURE"), "{why}");
    }

    #[test]
    fn threadpool_is_its_items_per_second_and_its_checksum_is_the_items() {
        let out = stdout(fixture!("threadpool.stdout"));
        assert_eq!(threadpool_rate(&out), Ok(65242.2));
        assert_eq!(threadpool_checksum(&out, &ctx(8)), Ok(()));
        let wrong = stdout(&out.stdout.replace("checksum 1", "checksum 2"));
        assert!(threadpool_checksum(&wrong, &ctx(8)).unwrap_err().contains("not 107375643367216"));
    }

    #[test]
    fn the_pigz_input_is_the_same_every_time_and_compressible() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        pigz_input(100_000, &mut a).unwrap();
        pigz_input(100_000, &mut b).unwrap();
        assert_eq!(a.len(), 100_000);
        assert_eq!(a, b);
        // Sixteen letters, a space and a newline: at most 18 distinct bytes.
        let mut seen = [false; 256];
        a.iter().for_each(|&x| seen[x as usize] = true);
        assert!(seen.iter().filter(|&&s| s).count() <= 18);
    }

    #[test]
    fn a_stream_that_differs_from_the_file_is_refused_with_where() {
        let dir = std::env::temp_dir().join(format!("spinlab-same-bytes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("input");
        std::fs::write(&path, b"abcdef").unwrap();
        assert_eq!(same_bytes(&b"abcdef"[..], &path), Ok(()));
        assert_eq!(
            same_bytes(&b"abXdef"[..], &path),
            Err("the decompressed output differs from the input at byte 2".into())
        );
        assert!(same_bytes(&b"abc"[..], &path).unwrap_err().contains("is 3 bytes where the input is 6"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
